//! The read API: jobs, their alert events, health and readiness.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use longtx_core::JobState;
use longtx_store::{AlertEventRow, JobFilter, JobRow};
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize)]
pub struct ListParams {
    state: Option<String>,
    query_source: Option<String>,
    before: Option<i64>,
    limit: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct JobList {
    jobs: Vec<JobRow>,
    /// Pass as `before` to get the next page; absent on the last page.
    next_before: Option<i64>,
}

pub async fn list_jobs(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(params): Query<ListParams>,
) -> Result<Json<JobList>, ApiError> {
    state.auth.check(&headers)?;
    let job_state = params
        .state
        .as_deref()
        .map(str::parse::<JobState>)
        .transpose()
        .map_err(|e| ApiError::bad_request("invalid_state", e.to_string()))?;
    if let Some(bad) = params
        .query_source
        .as_deref()
        .filter(|s| s.chars().any(char::is_control))
    {
        return Err(ApiError::bad_request(
            "invalid_query_source",
            format!(
                "query_source holds control characters ({} bytes)",
                bad.len()
            ),
        ));
    }
    let limit = params.limit.unwrap_or(50).clamp(1, 500);
    let jobs = state
        .store
        .list_jobs(&JobFilter {
            state: job_state,
            query_source: params.query_source,
            before_id: params.before,
            limit,
        })
        .await?;
    let next_before = (jobs.len() as i64 == limit)
        .then(|| jobs.last().map(|j| j.id))
        .flatten();
    Ok(Json(JobList { jobs, next_before }))
}

#[derive(Debug, Serialize)]
pub struct JobDetail {
    job: JobRow,
    /// Newest first, at most 100.
    alert_events: Vec<AlertEventRow>,
    /// Revision rounds, oldest first.
    rounds: Vec<longtx_store::RoundRow>,
    /// Newest first; a dry run's is what longtx would have sent.
    dispatches: Vec<longtx_store::DispatchRecord>,
    /// Its impact and why, and its place while the dispatcher may take it.
    queue: Option<longtx_store::QueuePlace>,
}

fn job_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::bad_request("invalid_id", "a job id is a whole number"))
}

pub async fn get_job(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<JobDetail>, ApiError> {
    state.auth.check(&headers)?;
    let id = job_id(&id)?;
    let (job, alert_events) = state
        .store
        .job_with_events(id, 100)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no job {id}")))?;
    let rounds = state.store.rounds_of(id).await?;
    let dispatches = state.store.dispatches_of(id).await?;
    let queue = state.store.queue_place(id, &state.policy).await?;
    Ok(Json(JobDetail {
        job,
        alert_events,
        rounds,
        dispatches,
        queue,
    }))
}

/// The queued jobs the dispatcher may take, in its order (impact plus the
/// age bonus), each with its score and why; at most 100.
pub async fn queue(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.auth.check(&headers)?;
    let queue = state.store.queue_order(&state.policy, 100).await?;
    let waiting = state.store.capacity_waiting().await?;
    Ok(Json(serde_json::json!({
        "queue": queue,
        "waiting_for_reviewer_capacity": waiting,
    })))
}

/// The newest "long transactions" PR checks: which head commits were
/// checked, how they concluded, and why one was given up.
pub async fn pr_checks(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.auth.check(&headers)?;
    let checks = state.store.recent_pr_checks(100).await?;
    Ok(Json(serde_json::json!({
        "enabled": state.pr_checks.is_some(),
        "checks": checks,
    })))
}

/// The backlog: the newest scan of the default branch, by kind and by
/// source, and what is new since the scan of a week before.
pub async fn backlog(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.auth.check(&headers)?;
    let Some((latest, baseline)) = state.store.branch_backlog().await? else {
        return Ok(Json(serde_json::json!({"scan": null})));
    };
    let backlog = longtx_core::backlog::backlog(&latest, baseline.as_ref());
    let scan = |s: &longtx_core::backlog::BranchScan| {
        serde_json::json!({"branch": s.branch, "commit_sha": s.commit_sha,
            "scanned_at": s.scanned_at, "entry_points": s.entry_points})
    };
    Ok(Json(serde_json::json!({
        "scan": scan(&latest),
        "baseline": baseline.as_ref().map(scan),
        "backlog": backlog,
    })))
}

/// The job's prompt as markdown, with what it was made from in headers.
/// 409 while it is not rendered yet, or when rendering failed (the detail
/// says why: a broken template or catalogue never takes the service down).
pub async fn get_prompt(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = job_id(&id)?;
    let stored = state.store.job_prompt(id).await?;
    // The job's workflow run authenticates with the job's own token, which
    // opens this one prompt, and only while its run goes; people use the
    // webhook token.
    let job_token = stored
        .as_ref()
        .and_then(|s| s.prompt_token.as_deref())
        .is_some_and(|token| crate::auth::bearer_matches(&headers, token));
    admit_run_or_person(&state, &headers, job_token, id, 0).await?;
    let stored = stored.ok_or_else(|| ApiError::not_found(format!("no job {id}")))?;
    match (stored.prompt, stored.prompt_error) {
        (Some(text), _) => Ok((
            [
                (
                    header::CONTENT_TYPE,
                    "text/markdown; charset=utf-8".to_owned(),
                ),
                (
                    HeaderName::from_static("x-longtx-prompt-revision"),
                    stored.prompt_revision.unwrap_or_default(),
                ),
                (
                    HeaderName::from_static("x-longtx-prompt-sha256"),
                    stored.prompt_sha256.unwrap_or_default(),
                ),
            ],
            text,
        )
            .into_response()),
        (None, Some(error)) => Err(ApiError::new(StatusCode::CONFLICT, "prompt_failed", error)),
        (None, None) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "prompt_pending",
            "the prompt is being rendered; retry in a few seconds",
        )),
    }
}

/// A prompt fetch: the job's token while the round's run goes (a token
/// read from a log later opens nothing), else a person's API token.
async fn admit_run_or_person(
    state: &AppState,
    headers: &HeaderMap,
    job_token: bool,
    id: i64,
    round: u32,
) -> Result<(), ApiError> {
    if job_token {
        if state.store.prompt_open(id, round).await? {
            return Ok(());
        }
        if state.auth.check(headers).is_err() {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "run_not_going",
                "the job's token opens its prompt only while its run goes",
            ));
        }
        return Ok(());
    }
    state.auth.check(headers)
}

/// A revision round's prompt, for its run (the job's token) or people.
pub async fn get_round_prompt(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, round)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let id = job_id(&id)?;
    let round: u32 = round
        .parse()
        .map_err(|_| ApiError::bad_request("invalid_round", "a round is a whole number"))?;
    let stored = state.store.round_prompt(id, round).await?;
    let job_token = stored
        .as_ref()
        .and_then(|(_, token)| token.as_deref())
        .is_some_and(|token| crate::auth::bearer_matches(&headers, token));
    admit_run_or_person(&state, &headers, job_token, id, round).await?;
    let (prompt, _) =
        stored.ok_or_else(|| ApiError::not_found(format!("no round {round} of job {id}")))?;
    let prompt = prompt.ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            "prompt_pending",
            "the round's prompt is rendered when it is dispatched",
        )
    })?;
    Ok((
        [(header::CONTENT_TYPE, "text/markdown; charset=utf-8")],
        prompt,
    )
        .into_response())
}

/// Today's dispatches against the cap, running agents, and the pause.
pub async fn dispatch_status(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.auth.check(&headers)?;
    let status = state.store.dispatch_status().await?;
    Ok(Json(
        serde_json::json!({ "status": status, "config": state.dispatch }),
    ))
}

pub async fn pause(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    set_paused(state, headers, true).await
}

pub async fn resume(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    set_paused(state, headers, false).await
}

async fn set_paused(
    state: AppState,
    headers: HeaderMap,
    paused: bool,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.auth.check(&headers)?;
    state.store.set_paused(paused).await?;
    tracing::warn!(
        paused,
        "dispatch {}",
        if paused { "paused" } else { "resumed" }
    );
    Ok(Json(serde_json::json!({ "paused": paused })))
}

pub async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok"}))
}

pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<serde_json::Value>) {
    // A worker that keeps dying is as unready as a database that is gone:
    // the work it does is not being done.
    let dying = longtx_pipeline::dying_workers();
    if let Some(worst) = dying.first() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({
                "status": "unavailable",
                "detail": worst.to_string(),
                "dying_workers": dying.iter().map(|d| d.worker).collect::<Vec<_>>(),
            })),
        );
    }
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, Json(serde_json::json!({"status": "ready"}))),
        Err(err) => {
            tracing::warn!(error = %err, "readiness check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(
                    serde_json::json!({"status": "unavailable", "detail": "the database does not answer"}),
                ),
            )
        }
    }
}

pub async fn not_found() -> ApiError {
    ApiError::not_found("no such endpoint")
}

/// A known path with the wrong method: JSON like every other error.
pub async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{method} is not served at {}; webhooks take POST",
            crate::intake::printable(uri.path(), 200)
        ),
    )
}
