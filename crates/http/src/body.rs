//! Reading a request's body only once the request is authorised. The
//! handlers take the raw body and call [`read_authorised`] after their
//! token or signature checks, so an unauthenticated client never makes
//! longtx buffer (or wait for) a single byte of its body; a declared
//! `Content-Length` over the route's cap is refused before any is read.

use crate::error::ApiError;
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, StatusCode};

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("the body is larger than {limit} bytes"),
    )
}

/// The body, at most `limit` bytes, read now that the request passed its
/// checks: 413 for a declared or actual size over the limit, 408 when it
/// does not arrive within the server's body timeout.
pub(crate) async fn read_authorised(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit));
    }
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        let text = format!(
            "{e} {}",
            std::error::Error::source(&e)
                .map(|s| s.to_string())
                .unwrap_or_default()
        );
        if text.contains("length limit") {
            too_large(limit)
        } else if text.contains("timeout") || text.contains("timed out") {
            ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "body_timeout",
                "the body did not arrive in time",
            )
        } else {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "unreadable_body",
                "the body could not be read",
            )
        }
    })
}
