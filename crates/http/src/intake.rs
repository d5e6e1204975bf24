//! `POST /webhooks/alertmanager` and `POST /webhooks/datadog`.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use longtx_core::alert::ReceivedAlert;
use longtx_core::{alertmanager, datadog, AlertOrigin, IgnoreList, IntakePolicy, Outcome};
use longtx_store::{IntakeAction, IntakeRecord, RecordedOutcome};
use serde::Serialize;

pub async fn alertmanager(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    receive(state, AlertOrigin::Alertmanager, request).await
}

pub async fn datadog(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    receive(state, AlertOrigin::Datadog, request).await
}

/// Alerts one request may carry; more is 413 (Alertmanager's `max_alerts`
/// keeps real batches far below: the shipped config says 100).
pub const MAX_ALERTS_PER_REQUEST: usize = 10_000;
/// Results echoed back one by one; the rest are only counted.
pub const MAX_ECHOED_RESULTS: usize = 1_000;
/// Alerts logged one line each; past this, one summary line.
const MAX_LOGGED_ALERTS: usize = 100;
/// Rejected alerts named in `detail`.
const MAX_NAMED_REJECTIONS: usize = 20;

#[derive(Debug, Serialize)]
struct IntakeResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    results: Vec<AlertResult>,
    /// Results past [`MAX_ECHOED_RESULTS`], left out of `results`.
    #[serde(skip_serializing_if = "is_zero")]
    results_omitted: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Serialize)]
struct AlertResult {
    query_source: Option<String>,
    outcome: Outcome,
    job_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

async fn receive(
    state: AppState,
    origin: AlertOrigin,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let started = std::time::Instant::now();
    state.auth.check(headers)?;
    require_json(headers)?;
    let body = crate::body::read_authorised(&parts, body, crate::MAX_BODY_BYTES).await?;
    // Checked before any parser recurses: PostgreSQL's parser, and serde's,
    // fail on deep nesting in ways that are not the sender's to read.
    if longtx_core::json_text::depth(&body, longtx_core::json_text::MAX_DEPTH)
        > longtx_core::json_text::MAX_DEPTH
    {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "too_deep",
            format!(
                "the body nests deeper than {} levels",
                longtx_core::json_text::MAX_DEPTH
            ),
        ));
    }
    let (received, truncated) = parse(origin, &body)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_body", e.to_string()))?;
    if truncated > 0 {
        // Alertmanager dropped these beyond `max_alerts`: they reach no
        // one, so say so where operators look.
        tracing::warn!(truncated, "Alertmanager dropped alerts beyond max_alerts from this batch; it drops the same ones from every notification of the group until the group is smaller: raise max_alerts or split the group");
        longtx_metrics::add(
            "longtx_alertmanager_truncated_alerts_total",
            "Alerts Alertmanager dropped from batches beyond its max_alerts (truncatedAlerts).",
            &[],
            truncated as f64,
        );
    }

    if received.len() > MAX_ALERTS_PER_REQUEST {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_many_alerts",
            format!(
                "{} alerts in one request, at most {MAX_ALERTS_PER_REQUEST}: lower the webhook's max_alerts",
                received.len()
            ),
        ));
    }
    let ignore = state.ignore_list();
    let records: Vec<IntakeRecord> = received
        .iter()
        .map(|alert| to_record(origin, alert, &state.policy, &ignore))
        .collect();
    let outcomes = state
        .store
        .record_alerts(&records, state.policy.cooldown, state.policy.deploy_grace)
        .await?;
    // After the commit, with no connection held: the prompt is rendered in
    // the background so intake answers at database speed.
    if let Some(prompts) = &state.prompts {
        for outcome in outcomes.iter().filter(|o| o.outcome == Outcome::Created) {
            prompts.job_created(outcome.job_id.expect("a created job has an id"));
        }
    }
    // Outcomes come back in the records' order.
    for (record, outcome) in records.iter().zip(&outcomes) {
        // One series per source, whichever sender spelled it how.
        let source = record
            .query_source
            .as_deref()
            .map(longtx_core::query_source::canonical)
            .unwrap_or_else(|| "none".to_owned());
        let source = source.as_str();
        longtx_metrics::inc(
            "longtx_alerts_received_total",
            "Alerts received, by query_source (at most 200, then `other`) and outcome.",
            &[
                ("query_source", source),
                ("outcome", outcome.outcome.as_str()),
            ],
        );
    }
    longtx_metrics::observe(
        "longtx_intake_duration_seconds",
        "Time to answer an accepted webhook, from its arrival to the recorded outcome.",
        &[("origin", origin.as_str())],
        started.elapsed().as_secs_f64(),
    );
    Ok(respond(origin, &records, outcomes))
}

/// The alerts of a body, and how many Alertmanager left out of it.
fn parse(
    origin: AlertOrigin,
    body: &[u8],
) -> Result<(Vec<ReceivedAlert>, u64), longtx_core::alert::BodyError> {
    match origin {
        AlertOrigin::Alertmanager => alertmanager::parse_body(body)
            .map(|(envelope, alerts)| (alerts, envelope.truncated_alerts)),
        AlertOrigin::Datadog => datadog::parse_body(body).map(|alert| (vec![alert], 0)),
    }
}

pub(crate) fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!(
                "send Content-Type: application/json (got {:?})",
                printable(essence, 80)
            ),
        ))
    }
}

/// Applies the pure policy to one received alert.
fn to_record(
    origin: AlertOrigin,
    received: &ReceivedAlert,
    policy: &IntakePolicy,
    ignore: &IgnoreList,
) -> IntakeRecord {
    // Valid JSON that `jsonb` would refuse (`\u0000`, lone surrogates) is
    // kept with those escapes made visible text (json_text::storable).
    let raw = received.raw.get();
    let raw_payload = longtx_core::json_text::storable(raw).unwrap_or_else(|| raw.to_owned());
    match &received.parsed {
        Err(err) => IntakeRecord {
            origin,
            // A rejected value may be hostile: keep a short printable echo.
            query_source: received
                .query_source_hint
                .as_deref()
                .map(|s| printable(s, 256)),
            table: None,
            duration_seconds: None,
            link: None,
            waiters: None,
            raw_payload,
            action: IntakeAction::Record {
                outcome: Outcome::Rejected,
                detail: Some(err.to_string()),
            },
        },
        Ok(alert) => {
            let decision = policy.decide(alert, ignore);
            let action = match decision.outcome() {
                Some(outcome) => IntakeAction::Record {
                    outcome,
                    detail: decision.detail(),
                },
                None => IntakeAction::Enqueue,
            };
            IntakeRecord {
                origin,
                query_source: Some(alert.query_source.as_str().to_owned()),
                table: alert.table.clone(),
                duration_seconds: alert.duration_seconds,
                link: alert.link.clone(),
                waiters: alert.waiters,
                raw_payload,
                action,
            }
        }
    }
}

fn respond(
    origin: AlertOrigin,
    records: &[IntakeRecord],
    outcomes: Vec<RecordedOutcome>,
) -> Response {
    let total = records.len();
    let mut results: Vec<AlertResult> = records
        .iter()
        .zip(outcomes)
        .enumerate()
        .map(|(i, (record, outcome))| {
            if i < MAX_LOGGED_ALERTS {
                tracing::info!(
                    origin = origin.as_str(),
                    query_source = record.query_source.as_deref().unwrap_or(""),
                    job_id = outcome.job_id,
                    outcome = outcome.outcome.as_str(),
                    "alert received"
                );
            }
            AlertResult {
                query_source: record.query_source.clone(),
                outcome: outcome.outcome,
                job_id: outcome.job_id,
                detail: outcome.detail,
            }
        })
        .collect();
    if total > MAX_LOGGED_ALERTS {
        tracing::info!(
            origin = origin.as_str(),
            alerts = total,
            "a large batch received (the first {MAX_LOGGED_ALERTS} alerts logged one by one)"
        );
    }
    let rejected: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.outcome == Outcome::Rejected)
        .map(|(i, _)| i)
        .collect();
    if !rejected.is_empty() {
        longtx_metrics::add(
            "longtx_alerts_rejected_total",
            "Unusable alerts (no query_source, a bad value), by origin.",
            &[("origin", origin.as_str())],
            rejected.len() as f64,
        );
    }
    let omitted = total.saturating_sub(MAX_ECHOED_RESULTS);
    let detail = (!rejected.is_empty()).then(|| {
        let named: Vec<String> = rejected
            .iter()
            .take(MAX_NAMED_REJECTIONS)
            .map(|&i| {
                format!(
                    "alerts[{i}]: {}",
                    results[i].detail.as_deref().unwrap_or("rejected")
                )
            })
            .collect();
        let more = rejected.len().saturating_sub(MAX_NAMED_REJECTIONS);
        let kept = if rejected.len() == total {
            "none was recorded".to_owned()
        } else {
            format!("the other {} were recorded", total - rejected.len())
        };
        format!(
            "{} of {total} alerts rejected, {kept}: {}{}",
            rejected.len(),
            named.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        )
    });
    results.truncate(MAX_ECHOED_RESULTS);
    if let Some(detail) = &detail {
        crate::refusal_log::refused(
            200,
            "alerts_rejected",
            &format!("{}: {detail}", origin.as_str()),
            200,
        );
    }
    // One usable alert makes the delivery a success: Alertmanager counts
    // any non-2xx as a failed notification (and kube-prometheus alerts on
    // it), though the usable alerts were recorded. Only a batch with
    // nothing usable is refused.
    let all_rejected = !rejected.is_empty() && rejected.len() == total;
    let status = if all_rejected {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    (
        status,
        Json(IntakeResponse {
            error: all_rejected.then_some("invalid_alert"),
            detail,
            results,
            results_omitted: omitted,
        }),
    )
        .into_response()
}

/// A short, printable echo of untrusted text for responses and logs.
pub(crate) fn printable(text: &str, max_chars: usize) -> String {
    text.chars()
        .filter(|c| !c.is_control())
        .take(max_chars)
        .collect()
}
