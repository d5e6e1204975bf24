//! `GET /metrics`: Prometheus text format. Counters and histograms come
//! from the process registry; jobs by state and the pool are read now.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use longtx_core::JobState;
use longtx_metrics::Gauge;

pub async fn metrics(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.auth.check(&headers)?;
    let counts = state.store.jobs_by_state().await?;
    // Every state, zero included, so a rate over a new state starts at 0.
    let jobs = JobState::ALL
        .iter()
        .map(|s| {
            let n = counts
                .iter()
                .find(|(name, _)| name == s.as_str())
                .map_or(0, |(_, n)| *n);
            (vec![("state", s.as_str().to_owned())], n as f64)
        })
        .collect();
    let pool = state.store.pool_stats();
    let gauges = [
        Gauge {
            name: "longtx_jobs",
            help: "Jobs by state.",
            series: jobs,
        },
        Gauge {
            name: "longtx_db_pool_connections",
            help: "Database pool connections: in use, idle, and the configured maximum.",
            series: vec![
                (
                    vec![("state", "in_use".to_owned())],
                    pool.open.saturating_sub(pool.idle as u32) as f64,
                ),
                (vec![("state", "idle".to_owned())], pool.idle as f64),
                (vec![("state", "max".to_owned())], pool.max as f64),
            ],
        },
        Gauge {
            name: "longtx_db_pool_waiting",
            help: "Callers waiting for a database connection right now.",
            series: vec![(vec![], pool.waiting as f64)],
        },
    ];
    let mut gauges = Vec::from(gauges);
    if let Some(extra) = &state.extra_gauges {
        gauges.extend(extra());
    }
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        longtx_metrics::render(&gauges),
    )
        .into_response())
}
