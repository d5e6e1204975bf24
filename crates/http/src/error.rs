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
}

impl ApiError {
    pub fn new(status: StatusCode, error: &'static str, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            error,
            detail: detail.into(),
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
        tracing::error!(error = %err, "database error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "database_error",
            "the database did not complete the request; nothing was recorded",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_client_error() {
            tracing::warn!(status = self.status.as_u16(), error = self.error, detail = %self.detail, "request refused");
        }
        (self.status, Json(self)).into_response()
    }
}
