//! Reading a request's body only once the request is authorised. The
//! handlers take the raw request and call [`read_authorised`] after their
//! token or signature checks, so an unauthenticated client never makes
//! longtx buffer (or wait for) a single byte of its body; a declared
//! `Content-Length` over the route's cap is refused before any is read.
//!
//! Every body read draws on one server-wide budget of bytes held, charged
//! as the bytes arrive (not by the declared length) and held until the
//! handler ends. Many large forged deliveries at once then wait for the
//! budget (and time out at the request deadline) instead of each holding
//! megabytes: memory is bounded by the budget, not by the number of
//! connections. Charging by what arrived, not what was declared, matters:
//! a dozen clients declaring 5 MiB and sending 6 kB/s once reserved the
//! whole budget and held a genuine GitHub ping for ten seconds, while what
//! they had actually sent was a few kilobytes. Authorised bodies count too
//! (300 bodies of 1 MiB behind a valid token once took 162 MB).

use crate::error::ApiError;
use crate::server::{BodyCut, RequestDeadline};
use axum::body::{Body, Bytes};
use axum::http::{header, request::Parts, StatusCode};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The bytes of request bodies the server may hold at once, in KiB, and
/// the large bodies it reads at once.
#[derive(Debug, Clone)]
pub(crate) struct BodyBudget {
    permits: Arc<Semaphore>,
    total_kib: u32,
    /// A body declared larger than [`SMALL_BODY`] is read only with one of
    /// these: as many as fit the budget at GitHub's 5 MiB cap. A flood of
    /// large bodies then waits unread (its bytes stay in the kernel), while
    /// small bodies, a GitHub ping or an alert, never wait behind it.
    large_readers: Arc<Semaphore>,
}

/// Bodies declared at most this large are read at once, charged as they
/// arrive; larger ones first take a large reader's place.
pub(crate) const SMALL_BODY: usize = 64 * 1024;
/// What one large reader may hold: GitHub's cap on a delivery.
const LARGE_BODY_SHARE: usize = 5 * 1024 * 1024;

impl BodyBudget {
    pub(crate) fn new(bytes: usize) -> Self {
        let total_kib = kib(bytes).clamp(1, Semaphore::MAX_PERMITS as u32);
        BodyBudget {
            permits: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
            large_readers: Arc::new(Semaphore::new((bytes / LARGE_BODY_SHARE).max(1))),
        }
    }
}

fn kib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
}

/// A body read in full, with its share of the budget (and, for a large
/// one, its reader's place) held until dropped.
pub(crate) struct AuthorisedBody {
    bytes: Bytes,
    _budget: Option<OwnedSemaphorePermit>,
    _reader: Option<OwnedSemaphorePermit>,
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
/// does not arrive within the request deadline or keep up the minimum rate,
/// 503 when the server's body budget stays spent until the deadline.
pub(crate) async fn read_authorised(
    parts: &Parts,
    body: Body,
    limit: usize,
) -> Result<AuthorisedBody, ApiError> {
    read_to_verify(parts, body, limit, |_| {}).await
}

/// The body of a request whose signature covers it, at most `limit` bytes,
/// each chunk given to `digest` (the HMAC) as it arrives: as
/// [`read_authorised`].
pub(crate) async fn read_to_verify(
    parts: &Parts,
    body: Body,
    limit: usize,
    digest: impl FnMut(&[u8]),
) -> Result<AuthorisedBody, ApiError> {
    let expected = expected_size(parts, limit)?;
    let deadline = parts
        .extensions
        .get::<RequestDeadline>()
        .map(|d| d.0)
        .unwrap_or_else(|| tokio::time::Instant::now() + std::time::Duration::from_secs(10));
    let budget = parts.extensions.get::<BodyBudget>().cloned();
    let reader = match &budget {
        Some(budget) if expected > SMALL_BODY => Some(large_reader(budget, deadline).await?),
        _ => None,
    };
    let (bytes, held) = collect(body, expected, limit, digest, budget.as_ref(), deadline).await?;
    Ok(AuthorisedBody {
        bytes,
        _budget: held,
        _reader: reader,
    })
}

/// A large reader's place, waiting until `deadline` at most.
async fn large_reader(
    budget: &BodyBudget,
    deadline: tokio::time::Instant,
) -> Result<OwnedSemaphorePermit, ApiError> {
    let readers = budget.large_readers.clone();
    match tokio::time::timeout_at(deadline, readers.acquire_owned()).await {
        Ok(Ok(place)) => Ok(place),
        _ => Err(busy(
            "reading as many large request bodies as it reads at once",
        )),
    }
}

/// 503: the budget stayed spent while the body waited; counted.
fn busy(doing: &str) -> ApiError {
    longtx_metrics::inc(
        "longtx_body_budget_waits_total",
        "Request bodies answered 503 because the body budget stayed spent while they waited.",
        &[],
    );
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy",
        format!("longtx is {doing}; retry shortly"),
    )
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

/// How long a body that holds part of the budget waits for more. Bodies
/// charged as they arrive hold what they read while they wait, so a flood
/// of large bodies could hold the whole budget between them with none able
/// to finish; after this wait a body gives its share back (503) and the
/// others go on.
const MAX_BUDGET_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// `kib` more KiB of the budget, waiting [`MAX_BUDGET_WAIT`] (and until
/// `deadline`) at most.
async fn charge(
    budget: &BodyBudget,
    kib: u32,
    deadline: tokio::time::Instant,
) -> Result<OwnedSemaphorePermit, ApiError> {
    let permits = budget.permits.clone();
    let until = deadline.min(tokio::time::Instant::now() + MAX_BUDGET_WAIT);
    match tokio::time::timeout_at(until, permits.acquire_many_owned(kib)).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => Err(busy("holding as many request bodies as it keeps at once")),
    }
}

/// The most of a body reserved in memory before its bytes arrive: a
/// declared length is the sender's word, not bytes it sent. Above glibc's
/// mmap threshold (fixed at 128 KiB, `process_tuning`), so a large body's
/// buffer is its own mapping from the start and goes back to the system
/// when dropped; the pages are resident only once bytes are written.
const FIRST_ALLOCATION: usize = 256 * 1024;

/// Reads the body, charging `budget` for each KiB as it arrives; the bytes
/// and the budget they hold.
async fn collect(
    mut body: Body,
    expected: usize,
    limit: usize,
    mut digest: impl FnMut(&[u8]),
    budget: Option<&BodyBudget>,
    deadline: tokio::time::Instant,
) -> Result<(Bytes, Option<OwnedSemaphorePermit>), ApiError> {
    use http_body::Body as _;
    let mut buffer = Vec::with_capacity(expected.min(limit).min(FIRST_ALLOCATION));
    let mut held: Option<OwnedSemaphorePermit> = None;
    let mut charged_kib = 0u32;
    loop {
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => return Ok((Bytes::from(buffer), held)),
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    if buffer.len() + data.len() > limit {
                        return Err(too_large(limit));
                    }
                    if let Some(budget) = budget {
                        // Never more than the whole budget, or a body would
                        // wait for ever.
                        let owed = kib(buffer.len() + data.len()).min(budget.total_kib);
                        if owed > charged_kib {
                            let more = charge(budget, owed - charged_kib, deadline).await?;
                            match &mut held {
                                Some(held) => held.merge(more),
                                None => held = Some(more),
                            }
                            charged_kib = owed;
                        }
                    }
                    digest(data);
                    // Once the sender has sent past the first allocation,
                    // grow to the declared size in one step (one mapping,
                    // handed back to the system when freed); past a declared
                    // size that lied, by doubling.
                    if buffer.capacity() - buffer.len() < data.len() {
                        let wanted = expected.min(limit).max(buffer.len() + data.len());
                        buffer.reserve(wanted - buffer.len());
                    }
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
