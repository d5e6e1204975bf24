//! Errors as the API shows them: `{"error": "...", "detail": "..."}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct ApiError {
    #[serde(skip)]
    pub status: StatusCode,
    pub error: &'static str,
    pub detail: String,
    /// Seconds for a `Retry-After` header (a 503 the sender should retry).
    #[serde(skip)]
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(status: StatusCode, error: &'static str, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            error,
            detail: detail.into(),
            retry_after: None,
        }
    }

    pub fn unauthorized(detail: &str) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", detail)
    }

    pub fn bad_request(error: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, error, detail)
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", detail)
    }
}

impl From<longtx_store::StoreError> for ApiError {
    /// The database's own message stays in the log: it can name hosts and
    /// users, which the caller has no business seeing.
    fn from(err: longtx_store::StoreError) -> Self {
        if err.is_pool_timeout() {
            tracing::warn!(error = %err, "no database connection became free in time");
            return Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "overloaded",
                "no database connection became free in time; retry later",
            );
        }
        if err.is_unavailable() {
            // PostgreSQL restarting or failing over: a 503 with Retry-After
            // is what Alertmanager, Datadog and GitHub retry.
            tracing::warn!(error = %err, "the database is unavailable");
            let mut unavailable = Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "database_unavailable",
                "the database is restarting or unreachable; nothing was recorded, retry shortly",
            );
            unavailable.retry_after = Some(5);
            return unavailable;
        }
        tracing::error!(error = %err, "database error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "database_error",
            "the database did not complete the request; nothing was recorded",
        )
    }
}

/// The most of a refusal's detail (which may quote the sender's input) a
/// log line carries.
const LOGGED_DETAIL_CHARS: usize = 200;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_client_error() {
            crate::refusal_log::refused(
                self.status.as_u16(),
                self.error,
                &self.detail,
                LOGGED_DETAIL_CHARS,
            );
        }
        let retry_after = self.retry_after;
        let mut response = (self.status, Json(self)).into_response();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(seconds),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection the server broke (a restart, a failover) is a 503 the
    /// sender retries after the header's seconds, not a 500.
    #[test]
    fn a_database_going_away_is_a_503_with_retry_after() {
        let broken = longtx_store::StoreError::Database(sqlx_io_error());
        let response = ApiError::from(broken).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[axum::http::header::RETRY_AFTER], "5");
    }

    fn sqlx_io_error() -> sqlx::Error {
        sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "the server closed the connection",
        ))
    }
}
