//! Reading a request's body only once the request is authorised. The
//! handlers take the raw request and call [`read_authorised`] after their
//! token or signature checks, so an unauthenticated client never makes
//! longtx buffer (or wait for) a single byte of its body; a declared
//! `Content-Length` over the route's cap is refused before any is read.
//!
//! Bodies that must be read to be authenticated (GitHub's, whose signature
//! covers the body) draw on one server-wide budget of bytes in flight,
//! reserved before the first byte is read and held until the handler ends
//! ([`read_to_verify`]). Many large forged deliveries at once then wait for
//! the budget (and time out at the request deadline) instead of each
//! holding megabytes: memory is bounded by the budget, not by the number of
//! connections. Bodies behind the token are already authorised and skip
//! the budget, so forged deliveries never delay an authorised alert.

use crate::error::ApiError;
use crate::server::{BodyCut, RequestDeadline};
use axum::body::{Body, Bytes};
use axum::http::{header, request::Parts, StatusCode};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The bytes of request bodies the server may hold at once, in KiB.
#[derive(Debug, Clone)]
pub(crate) struct BodyBudget {
    permits: Arc<Semaphore>,
    total_kib: u32,
}

impl BodyBudget {
    pub(crate) fn new(bytes: usize) -> Self {
        let total_kib = kib(bytes).clamp(1, Semaphore::MAX_PERMITS as u32);
        BodyBudget {
            permits: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
        }
    }
}

fn kib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
}

/// A body read in full, with its share of the budget held until dropped.
pub(crate) struct AuthorisedBody {
    bytes: Bytes,
    _budget: Option<OwnedSemaphorePermit>,
}

impl std::ops::Deref for AuthorisedBody {
    type Target = Bytes;
    fn deref(&self) -> &Bytes {
        &self.bytes
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("the body is larger than {limit} bytes"),
    )
}

/// The body, at most `limit` bytes, read now that the request's token
/// passed: 413 for a declared or actual size over the limit, 408 when it
/// does not arrive within the request deadline or keep up the minimum rate.
pub(crate) async fn read_authorised(
    parts: &Parts,
    body: Body,
    limit: usize,
) -> Result<AuthorisedBody, ApiError> {
    let expected = expected_size(parts, limit)?;
    let bytes = collect(body, expected, limit, |_| {}).await?;
    Ok(AuthorisedBody {
        bytes,
        _budget: None,
    })
}

/// The body of a request whose signature covers it, at most `limit` bytes,
/// read within the server's body budget, each chunk given to `digest` (the
/// HMAC) as it arrives: as [`read_authorised`], and 503 when the budget
/// stays spent until the request's deadline.
pub(crate) async fn read_to_verify(
    parts: &Parts,
    body: Body,
    limit: usize,
    digest: impl FnMut(&[u8]),
) -> Result<AuthorisedBody, ApiError> {
    let expected = expected_size(parts, limit)?;
    let budget = match parts.extensions.get::<BodyBudget>() {
        Some(budget) => Some(reserve(budget, expected, parts).await?),
        None => None,
    };
    let bytes = collect(body, expected, limit, digest).await?;
    Ok(AuthorisedBody {
        bytes,
        _budget: budget,
    })
}

/// The declared size (413 when over `limit`), or `limit` for a body of
/// unknown length, which may be that large.
fn expected_size(parts: &Parts, limit: usize) -> Result<usize, ApiError> {
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(n) if n > limit as u64 => Err(too_large(limit)),
        Some(n) => Ok(n as usize),
        None => Ok(limit),
    }
}

async fn reserve(
    budget: &BodyBudget,
    bytes: usize,
    parts: &Parts,
) -> Result<OwnedSemaphorePermit, ApiError> {
    // Never more than the whole budget, or a large body would wait forever.
    let wanted = kib(bytes).clamp(1, budget.total_kib);
    let deadline = parts
        .extensions
        .get::<RequestDeadline>()
        .map(|d| d.0)
        .unwrap_or_else(|| tokio::time::Instant::now() + std::time::Duration::from_secs(10));
    let permits = budget.permits.clone();
    match tokio::time::timeout_at(deadline, permits.acquire_many_owned(wanted)).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => {
            tracing::warn!(
                bytes,
                "the body budget stayed spent until the request's deadline; answered 503"
            );
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "longtx is reading as many request bodies as it holds at once; retry shortly",
            ))
        }
    }
}

/// Reads the body into one buffer of the declared size (a single
/// allocation, which the allocator hands back to the system once freed).
async fn collect(
    mut body: Body,
    expected: usize,
    limit: usize,
    mut digest: impl FnMut(&[u8]),
) -> Result<Bytes, ApiError> {
    use http_body::Body as _;
    let mut buffer = Vec::with_capacity(expected.min(limit));
    loop {
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => return Ok(Bytes::from(buffer)),
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    if buffer.len() + data.len() > limit {
                        return Err(too_large(limit));
                    }
                    digest(data);
                    buffer.extend_from_slice(data);
                }
            }
            Some(Err(e)) => return Err(unreadable(&e)),
        }
    }
}

fn unreadable(e: &axum::Error) -> ApiError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cause {
        if let Some(cut) = err.downcast_ref::<BodyCut>() {
            return ApiError::new(StatusCode::REQUEST_TIMEOUT, "body_timeout", cut.to_string());
        }
        cause = err.source();
    }
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "unreadable_body",
        "the body could not be read",
    )
}
