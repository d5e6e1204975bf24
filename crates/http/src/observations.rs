//! `POST /api/observations`: a collector's longest transactions per table
//! and source, under the threshold too (webhook token). `GET /api/what-if`:
//! what the candidate thresholds would bring, as the dashboard shows it.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use longtx_core::observation::ObservationBatch;
use longtx_core::what_if::{self, WhatIf};

/// The window the what-if looks back over, as the dashboard's charts.
pub const WHAT_IF_DAYS: i32 = 30;
pub async fn receive(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Result<Json<serde_json::Value>, ApiError> {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    state.auth.check(headers)?;
    let body = crate::body::read_authorised(&parts, body, crate::MAX_BODY_BYTES).await?;
    let batch: ObservationBatch = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request(
            "invalid_observations",
            format!("expected {{\"series\": [{{table, query_source, seconds}}]}}: {e}"),
        )
    })?;
    let observations = batch
        .validate()
        .map_err(|e| ApiError::bad_request("invalid_observations", e.to_string()))?;
    let rows = state.store.record_observations(&observations).await?;
    tracing::info!(series = observations.len(), rows, "observations recorded");
    Ok(Json(serde_json::json!({"recorded": observations.len()})))
}

/// Read fresh each time (scripts compare figures before and after a change).
pub async fn what_if(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<WhatIf>, ApiError> {
    state.auth.check(&headers)?;
    let history = state.store.what_if_history(WHAT_IF_DAYS).await?;
    Ok(Json(what_if::project(
        &history,
        &state.policy,
        &state.ignore_list(),
        state.reviewer_capacity(),
    )))
}
