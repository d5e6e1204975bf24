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
    // A database that is down is itself a figure to report: the rest of
    // the page (process, pool, collector) still answers.
    let counts = match state.store.jobs_by_state().await {
        Ok(counts) => Some(counts),
        Err(err) => {
            tracing::warn!(error = %err, "/metrics: the database did not answer");
            None
        }
    };
    let pool = state.store.pool_stats();
    let mut gauges = vec![
        Gauge {
            name: "longtx_build_info",
            help: "The running build; always 1.",
            series: vec![(vec![("version", env!("CARGO_PKG_VERSION").to_owned())], 1.0)],
        },
        Gauge {
            name: "longtx_db_up",
            help: "1 when longtx's own database answered this scrape.",
            series: vec![(vec![], if counts.is_some() { 1.0 } else { 0.0 })],
        },
        Gauge {
            name: "longtx_db_pool_connections",
            help: "Database pool connections now, in use or idle.",
            series: vec![
                (
                    vec![("state", "in_use".to_owned())],
                    pool.open.saturating_sub(pool.idle as u32) as f64,
                ),
                (vec![("state", "idle".to_owned())], pool.idle as f64),
            ],
        },
        Gauge {
            name: "longtx_db_pool_max_connections",
            help: "The pool's configured maximum (LONGTX_DB_MAX_CONNECTIONS).",
            series: vec![(vec![], pool.max as f64)],
        },
        Gauge {
            name: "longtx_db_pool_waiting",
            help: "Callers waiting for a database connection right now.",
            series: vec![(vec![], pool.waiting as f64)],
        },
    ];
    if let Some(counts) = counts {
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
        gauges.push(Gauge {
            name: "longtx_jobs",
            help: "Jobs by state.",
            series: jobs,
        });
    }
    // The pipeline's figures, read now, only while the database answers.
    if gauges.iter().any(|g| g.name == "longtx_jobs") {
        gauges.extend(pipeline_gauges(&state.store).await);
        gauges.extend(capacity_gauges(&state.store, state.reviewer_capacity()).await);
    }
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

/// Rounds, recurrences and cost, each read now; one that fails is left out
/// (the scrape still answers).
async fn pipeline_gauges(store: &longtx_store::Store) -> Vec<Gauge> {
    let mut gauges = Vec::new();
    if let Ok(rounds) = store.round_counts().await {
        gauges.push(Gauge {
            name: "longtx_revision_rounds",
            help: "Revision rounds by what started them (pre_review, changes_requested, comment) and their state.",
            series: rounds
                .into_iter()
                .map(|(trigger, state, n)| (vec![("trigger", trigger), ("state", state)], n as f64))
                .collect(),
        });
    }
    if let Ok(recurrences) = store.recurrence_counts().await {
        gauges.push(Gauge {
            name: "longtx_recurrences",
            help: "Alerts for a source after its job ended, by that job's state (regressed, verified, merged within the deploy grace, closed...).",
            series: recurrences
                .into_iter()
                .map(|(state, n)| (vec![("job_state", state)], n as f64))
                .collect(),
        });
    }
    if let Ok((today, total)) = store.cost_totals().await {
        gauges.push(Gauge {
            name: "longtx_agent_cost_usd",
            help: "Agent cost the workflow runs reported, US dollars: since midnight UTC, and in all.",
            series: vec![
                (vec![("period", "today".to_owned())], today),
                (vec![("period", "total".to_owned())], total),
            ],
        });
    }
    gauges
}

/// Reviewer capacity: jobs waiting for it, each reviewer's open longtx
/// reviews, and the capacities they are held to (the skew rule compares
/// the two).
async fn capacity_gauges(
    store: &longtx_store::Store,
    capacity: Option<longtx_core::reviewers::Capacity>,
) -> Vec<Gauge> {
    let mut gauges = Vec::new();
    if let Ok(waiting) = store.capacity_waiting().await {
        gauges.push(Gauge {
            name: "longtx_jobs_waiting_reviewer_capacity",
            help: "Queued jobs waiting because every predicted reviewer is at capacity.",
            series: vec![(vec![], waiting as f64)],
        });
    }
    if let Ok(open) = store.open_reviews_by_reviewer().await {
        gauges.push(Gauge {
            name: "longtx_reviewer_open_reviews",
            help: "Open longtx fix PRs each reviewer (a person, or a team as @org/team) was asked to review.",
            series: open
                .into_iter()
                .map(|(key, n)| {
                    let kind = if key.starts_with('@') { "team" } else { "user" };
                    (vec![("reviewer", key), ("kind", kind.to_owned())], n as f64)
                })
                .collect(),
        });
    }
    if let Some(capacity) = capacity {
        gauges.push(Gauge {
            name: "longtx_reviewer_capacity",
            help: "Open longtx reviews one reviewer is asked to hold at once (LONGTX_REVIEWER_CAPACITY, LONGTX_TEAM_CAPACITY).",
            series: vec![
                (vec![("kind", "user".to_owned())], capacity.user as f64),
                (vec![("kind", "team".to_owned())], capacity.team as f64),
            ],
        });
    }
    gauges
}
