//! The HTTP adapter of longtx: axum routes around the pure core and the
//! store. Handlers parse, ask the core what to do, and make one store call;
//! no handler holds a database connection across anything but the database.

mod api;
mod auth;
mod body;
mod cross_site;
mod dashboard;
mod error;
mod github;
mod host_check;
mod intake;
mod metrics;
mod observations;
mod refusal_log;
mod retired;
mod server;
mod state;

pub use auth::{DashboardAuth, WebhookAuth};
pub use error::ApiError;
pub use github::{GitHubWebhook, MAX_GITHUB_BODY_BYTES};
pub use server::{serve, ServerLimits};
pub use state::{AppState, DispatchInfo, ExtraGauges};

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use tower_http::trace::TraceLayer;

/// Webhook bodies larger than this are refused with 413 before parsing.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Counts every answer by route template and status class, so 5xx from
/// intake (which Alertmanager and Datadog retry) can be alerted on.
async fn count_responses(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let response = next.run(request).await;
    let class = format!("{}xx", response.status().as_u16() / 100);
    longtx_metrics::inc(
        "longtx_http_responses_total",
        "HTTP answers, by route template and status class.",
        &[("route", &route), ("status_class", &class)],
    );
    response
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/webhooks/alertmanager", post(intake::alertmanager))
        .route("/webhooks/datadog", post(intake::datadog))
        .route(
            "/webhooks/github",
            post(github::receive).layer(DefaultBodyLimit::max(MAX_GITHUB_BODY_BYTES)),
        )
        .route("/", get(dashboard::dashboard))
        .route("/jobs/{id}", get(dashboard::job))
        .route("/patterns/{id}", get(dashboard::pattern))
        .route("/api/pr-checks", get(api::pr_checks))
        .route("/api/backlog", get(api::backlog))
        .route("/api/jobs", get(api::list_jobs))
        .route("/api/jobs/{id}", get(api::get_job))
        .route("/api/jobs/{id}/prompt", get(api::get_prompt))
        .route(
            "/api/jobs/{id}/rounds/{round}/prompt",
            get(api::get_round_prompt),
        )
        .route("/api/jobs/{id}/pre-review", post(retired::verdict))
        .route("/api/jobs/{id}/run-report", post(retired::run_report))
        .route("/api/observations", post(observations::receive))
        .route("/api/what-if", get(observations::what_if))
        .route("/api/dispatch", get(api::dispatch_status))
        .route("/api/queue", get(api::queue))
        .route("/api/pause", post(api::pause))
        .route("/api/resume", post(api::resume))
        .route("/metrics", get(metrics::metrics))
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz))
        .route_layer(axum::middleware::from_fn(
            cross_site::refuse_cross_site_writes,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            host_check::refuse_foreign_hosts,
        ))
        .route_layer(axum::middleware::from_fn(count_responses))
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}
