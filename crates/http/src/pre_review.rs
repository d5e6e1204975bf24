//! `POST /api/jobs/{id}/pre-review`: the reviewing workflow's verdict.
//! Authenticated like the prompt fetch (the job's own token, or the API
//! token); applied once per head commit, and only for the PR's current head.

use crate::error::ApiError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use longtx_core::pre_review::{Action, Verdict};
use longtx_store::VerdictApplied;

pub async fn receive(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::bad_request("invalid_id", "a job id is a whole number"))?;
    crate::auth::job_run_only(&state, &headers, id).await?;
    if !state.pre_review_mode.is_enabled() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "pre_review_off",
            "LONGTX_PRE_REVIEW is off: verdicts are not taken",
        ));
    }
    let verdict: Verdict = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request(
            "invalid_verdict",
            format!("expected {{head_sha, addresses_bottleneck, minimal_change, preserves_behaviour, verdict, reasons}}: {e}"),
        )
    })?;
    verdict
        .validate()
        .map_err(|e| ApiError::bad_request("invalid_verdict", e.to_string()))?;
    let applied = state
        .store
        .record_verdict(id, &verdict, state.pre_review_mode, state.max_revisions)
        .await?;
    tracing::info!(job_id = id, head = %verdict.head_sha, verdict = ?verdict.verdict, applied = ?applied, "pre-review verdict");
    let (status, outcome, detail) = match applied {
        VerdictApplied::Moved { from, to, action } => {
            match action {
                Action::RequestReviewers => {
                    if let Some(reviews) = &state.reviews {
                        reviews.poke();
                    }
                }
                Action::Reject | Action::Revise => {
                    if let Some(pre_reviews) = &state.pre_reviews {
                        pre_reviews.poke();
                    }
                }
            }
            (StatusCode::OK, "moved", format!("{from} -> {to}"))
        }
        VerdictApplied::Revising {
            round,
            from,
            state: now,
        } => {
            if now != from {
                if let Some(reviews) = &state.reviews {
                    reviews.poke();
                }
            }
            match round {
                Some(round) => (
                    StatusCode::OK,
                    "revising",
                    format!("revision round {round} is dispatched on the PR's branch"),
                ),
                None => (
                    StatusCode::OK,
                    "revising",
                    "a revision round is open already; it answers first".to_owned(),
                ),
            }
        }
        VerdictApplied::Recorded { state: s } => {
            if let Some(reviews) = &state.reviews {
                reviews.poke();
            }
            (StatusCode::OK, "recorded", format!("the job stays {s}"))
        }
        VerdictApplied::Duplicate => (
            StatusCode::OK,
            "duplicate",
            "a verdict for this head was already applied".to_owned(),
        ),
        VerdictApplied::Stale { current_head } => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "stale_head",
                format!(
                    "the PR's head is now {}; this verdict is kept but not acted on",
                    current_head.as_deref().unwrap_or("unknown")
                ),
            ))
        }
        VerdictApplied::NotAwaiting { state: s } => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "not_awaiting",
                format!("the job is {s}; the verdict is kept but not acted on"),
            ))
        }
        VerdictApplied::UnknownJob => return Err(ApiError::not_found(format!("no job {id}"))),
    };
    Ok((
        status,
        Json(serde_json::json!({"outcome": outcome, "detail": detail})),
    )
        .into_response())
}
