//! `POST /api/jobs/{id}/run-report`: what an agent run cost, from its
//! workflow, with the job's own token. One report per run: a retry
//! replaces it. The reports feed the daily cost cap, the job page and
//! `/metrics`.

use crate::error::ApiError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use longtx_core::run_report::RunReport;
use longtx_store::ReportRecorded;

pub async fn receive(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::bad_request("invalid_id", "a job id is a whole number"))?;
    crate::auth::job_run_only(&state, &headers, id).await?;
    let report: RunReport = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request(
            "invalid_report",
            format!("expected {{run_id, round, agent, cost_usd, turns, acus}}: {e}"),
        )
    })?;
    report
        .validate()
        .map_err(|e| ApiError::bad_request("invalid_report", e.to_string()))?;
    let recorded = state
        .store
        .record_run_report(id, &report)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no job {id}")))?;
    tracing::info!(job_id = id, run_id = report.run_id, cost_usd = ?report.cost_usd, turns = ?report.turns, ?recorded, "run report");
    let (status, outcome) = match recorded {
        ReportRecorded::New => (StatusCode::CREATED, "recorded"),
        ReportRecorded::Replaced => (StatusCode::OK, "replaced"),
    };
    Ok((status, Json(serde_json::json!({"outcome": outcome}))))
}
