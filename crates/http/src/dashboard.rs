//! `GET /` and `GET /jobs/{id}`: the dashboard's HTML pages. One read-only
//! store call per page, then rendering with no connection held.

use crate::state::AppState;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use longtx_core::JobState;
use longtx_dashboard::PageSettings;
use longtx_store::{DashboardQuery, JobFilter};
use serde::Deserialize;

const DAYS: i64 = 30;
const WEEKS: i32 = 12;
const SOURCES_PER_PAGE: i64 = 20;
const JOBS_PER_PAGE: i64 = 50;
const REVIEWERS: i64 = 20;
/// Queued jobs the dashboard lists, in the dispatcher's order.
const QUEUE_ROWS: usize = 10;

#[derive(Debug, Deserialize)]
pub struct DashboardParams {
    state: Option<String>,
    query_source: Option<String>,
    before: Option<i64>,
    sources_page: Option<i64>,
}

pub async fn dashboard(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(params): Query<DashboardParams>,
) -> Response {
    if let Some(refused) = refusal(&state, &headers) {
        return refused;
    }
    let job_state = match params
        .state
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(str::parse::<JobState>)
        .transpose()
    {
        Ok(s) => s,
        Err(e) => {
            return page_error(
                &state,
                StatusCode::BAD_REQUEST,
                "Bad request",
                &e.to_string(),
            )
        }
    };
    if params
        .query_source
        .as_deref()
        .is_some_and(|s| s.chars().any(char::is_control))
    {
        return page_error(
            &state,
            StatusCode::BAD_REQUEST,
            "Bad request",
            "query_source holds control characters",
        );
    }
    let sources_page = params.sources_page.unwrap_or(0).clamp(0, 10_000);
    let query = DashboardQuery {
        days: DAYS as i32,
        sources_per_page: SOURCES_PER_PAGE,
        sources_offset: sources_page * SOURCES_PER_PAGE,
        jobs: JobFilter {
            state: job_state,
            query_source: params.query_source.filter(|s| !s.is_empty()),
            before_id: params.before,
            limit: JOBS_PER_PAGE,
        },
        weeks: WEEKS,
        reviewers: REVIEWERS,
        what_if_days: crate::observations::WHAT_IF_DAYS,
    };
    let data = match state.store.dashboard(&query).await {
        Ok(data) => data,
        Err(err) => return store_error(&state, err),
    };
    let settings = PageSettings {
        state_filter: job_state.map(|s| s.as_str().to_owned()),
        sources_page,
        ..settings(&state)
    };
    let what_if = longtx_core::what_if::project(
        &data.what_if,
        &state.policy,
        &state.ignore_list(),
        state.reviewer_capacity(),
    );
    let queue = match state.store.queue_order(&state.policy, QUEUE_ROWS).await {
        Ok(queue) => queue,
        Err(err) => return store_error(&state, err),
    };
    let backlog = match state.store.branch_backlog().await {
        Ok(backlog) => backlog,
        Err(err) => return store_error(&state, err),
    };
    html(
        &state,
        state
            .pages
            .dashboard(&data, &what_if, &queue, backlog.as_ref(), &settings),
    )
}

pub async fn job(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(refused) = refusal(&state, &headers) {
        return refused;
    }
    let Ok(id) = id.parse::<i64>() else {
        return page_error(
            &state,
            StatusCode::BAD_REQUEST,
            "Bad request",
            "a job id is a whole number",
        );
    };
    let queue = match state.store.queue_place(id, &state.policy).await {
        Ok(queue) => queue,
        Err(err) => return store_error(&state, err),
    };
    match state.store.job_page(id).await {
        Ok(Some(page)) => html(
            &state,
            state.pages.job(&page, queue.as_ref(), &settings(&state)),
        ),
        Ok(None) => page_error(
            &state,
            StatusCode::NOT_FOUND,
            "Not found",
            &format!("There is no job {id}."),
        ),
        Err(err) => store_error(&state, err),
    }
}

/// `GET /patterns/{id}`: one pattern of the catalogue as its Markdown
/// source, where the PR check's annotations link. Only ids the catalogue
/// has are served, so a path never reaches the file system.
pub async fn pattern(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(refused) = refusal(&state, &headers) {
        return refused;
    }
    let Some(dir) = state.patterns_dir.clone() else {
        return page_error(
            &state,
            StatusCode::NOT_FOUND,
            "Not found",
            "No catalogue is served here.",
        );
    };
    let loaded = tokio::task::spawn_blocking(move || longtx_catalog::Catalogue::load(&dir)).await;
    let catalogue = match loaded {
        Ok(Ok(catalogue)) => catalogue,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the catalogue did not load for a pattern page");
            return page_error(
                &state,
                StatusCode::SERVICE_UNAVAILABLE,
                "Unavailable",
                "The pattern catalogue does not load; `longtx patterns lint` says why.",
            );
        }
        Err(_) => {
            return page_error(
                &state,
                StatusCode::INTERNAL_SERVER_ERROR,
                "Error",
                "Reading the catalogue failed.",
            )
        }
    };
    match catalogue.patterns.iter().find(|p| p.id() == id) {
        Some(p) => match std::fs::read_to_string(&p.path) {
            Ok(text) => {
                ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
            }
            Err(_) => page_error(
                &state,
                StatusCode::NOT_FOUND,
                "Not found",
                "That pattern is gone.",
            ),
        },
        None => page_error(
            &state,
            StatusCode::NOT_FOUND,
            "Not found",
            "The catalogue has no such pattern.",
        ),
    }
}

fn settings(state: &AppState) -> PageSettings {
    PageSettings {
        threshold_seconds: state.policy.threshold_seconds,
        days: DAYS,
        max_per_day: state.dispatch.as_ref().map(|d| d.max_per_day),
        dry_run: state.dispatch.as_ref().map(|d| d.dry_run),
        state_filter: None,
        sources_page: 0,
        sources_per_page: SOURCES_PER_PAGE,
        jobs_per_page: JOBS_PER_PAGE,
    }
}

/// `None` when the request may see the pages; else 401 with a Basic
/// challenge, so a browser asks for the token (any user name, the token as
/// password).
fn refusal(state: &AppState, headers: &HeaderMap) -> Option<Response> {
    if state.dashboard_auth.allows(headers) {
        return None;
    }
    crate::refusal_log::refused(
        401,
        "unauthorized",
        "dashboard request without a valid token",
        200,
    );
    let body = state.pages.message(
        "Sign in",
        "This dashboard needs LONGTX_DASHBOARD_TOKEN or LONGTX_WEBHOOK_TOKEN: as the password of Basic auth (any user name) or as a Bearer token.",
    );
    Some(
        (
            StatusCode::UNAUTHORIZED,
            [(
                header::WWW_AUTHENTICATE,
                "Basic realm=\"longtx\", charset=\"UTF-8\"",
            )],
            Html(body),
        )
            .into_response(),
    )
}

fn html(state: &AppState, rendered: Result<String, longtx_dashboard::RenderError>) -> Response {
    match rendered {
        Ok(body) => ([(header::CACHE_CONTROL, "no-store")], Html(body)).into_response(),
        Err(err) => {
            tracing::error!(error = %err, "dashboard rendering failed");
            page_error(
                state,
                StatusCode::INTERNAL_SERVER_ERROR,
                "Error",
                "The page could not be rendered; the log says why.",
            )
        }
    }
}

fn store_error(state: &AppState, err: longtx_store::StoreError) -> Response {
    // The same mapping as the API (503 when the pool is exhausted), as HTML.
    let api = crate::error::ApiError::from(err);
    page_error(state, api.status, "Unavailable", &api.detail)
}

fn page_error(state: &AppState, status: StatusCode, title: &str, detail: &str) -> Response {
    if status.is_client_error() {
        crate::refusal_log::refused(status.as_u16(), "dashboard", detail, 200);
    }
    (status, Html(state.pages.message(title, detail))).into_response()
}
