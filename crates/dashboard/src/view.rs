//! From read models to what the templates place: formatted figures, chart
//! geometry, links that are safe to follow.

use crate::charts::{daily_bars, grouped_bars, Grouped, Spark};
use chrono::{DateTime, Utc};
use longtx_core::JobState;
use longtx_store::{Dashboard, JobPage, JobRow};
use serde::{Deserialize, Serialize};

/// What a page needs besides the data: configuration and the request's
/// paging.
#[derive(Debug, Clone)]
pub struct PageSettings {
    pub threshold_seconds: f64,
    pub days: i64,
    /// `None` when no dispatcher runs in this process.
    pub max_per_day: Option<i64>,
    pub dry_run: Option<bool>,
    pub state_filter: Option<String>,
    /// Zero-based.
    pub sources_page: i64,
    pub sources_per_page: i64,
    pub jobs_per_page: i64,
}

#[derive(Debug, Serialize)]
struct SourceView {
    query_source: String,
    /// The other spellings received for it, and the key `/metrics` uses.
    also_sent_as: Vec<String>,
    key: String,
    jobs_href: String,
    alerts: i64,
    worst: String,
    over: bool,
    occurrences: Spark,
    durations: Spark,
}

/// A job as a table row or a page header shows it.
#[derive(Debug, Serialize)]
pub(crate) struct JobView {
    id: i64,
    query_source: String,
    state: String,
    state_reason: Option<String>,
    tables: String,
    alerts: i32,
    max_duration: String,
    pr: Option<Link>,
    run: Option<Link>,
    updated: String,
}

#[derive(Debug, Serialize)]
struct Link {
    text: String,
    /// Only http(s) URLs become links; anything else is shown as text.
    href: Option<String>,
}

#[derive(Debug, Serialize)]
struct StateCount {
    state: String,
    count: i64,
    active: bool,
    selected: bool,
}

#[derive(Debug, Serialize)]
struct WeekRow {
    week: String,
    opened: i64,
    merged: i64,
    closed: i64,
    wontfix: i64,
}

#[derive(Debug, Serialize)]
struct ReviewerRow {
    reviewer: String,
    team: bool,
    requested: i64,
    open: i64,
    /// Width of the load bar, 0..=100.
    bar: f64,
}

pub(crate) fn dashboard_context(data: &Dashboard, settings: &PageSettings) -> tera::Context {
    let mut context = tera::Context::new();
    let threshold = settings.threshold_seconds;
    let sources: Vec<SourceView> = data
        .sources
        .iter()
        .map(|s| SourceView {
            query_source: s.query_source.clone(),
            also_sent_as: s
                .spellings
                .iter()
                .filter(|spelling| **spelling != s.query_source)
                .cloned()
                .collect(),
            key: s.source_key.clone(),
            jobs_href: format!("/?query_source={}", encode(&s.query_source)),
            alerts: s.alerts,
            worst: seconds(s.max_duration_seconds),
            over: s.max_duration_seconds.is_some_and(|d| d > threshold),
            occurrences: daily_bars(
                &s.days
                    .iter()
                    .map(|d| (d.day, Some(d.alerts as f64)))
                    .collect::<Vec<_>>(),
                data.today,
                settings.days,
                None,
                |v| format!("{v} alerts"),
            ),
            durations: daily_bars(
                &s.days
                    .iter()
                    .map(|d| (d.day, d.max_duration_seconds))
                    .collect::<Vec<_>>(),
                data.today,
                settings.days,
                Some(threshold),
                |v| format!("longest {v:.0} s"),
            ),
        })
        .collect();
    let states: Vec<StateCount> = JobState::ALL
        .iter()
        .map(|state| StateCount {
            state: state.as_str().to_owned(),
            count: data
                .jobs_by_state
                .iter()
                .find(|(s, _)| s == state.as_str())
                .map_or(0, |(_, n)| *n),
            active: state.is_active(),
            selected: settings.state_filter.as_deref() == Some(state.as_str()),
        })
        .collect();
    let weeks: Vec<WeekRow> = data
        .weeks
        .iter()
        .map(|w| WeekRow {
            week: w.week.format("%Y-%m-%d").to_string(),
            opened: w.opened,
            merged: w.merged,
            closed: w.closed,
            wontfix: w.wontfix,
        })
        .collect();
    let chart: Grouped = grouped_bars(
        &weeks
            .iter()
            .map(|w| {
                (
                    w.week[5..].to_owned(),
                    vec![w.opened, w.merged, w.closed, w.wontfix],
                )
            })
            .collect::<Vec<_>>(),
        &[
            ("opened", "opened"),
            ("merged", "merged"),
            ("closed", "closed"),
            ("wontfix", "wontfix"),
        ],
    );
    let (merged, decided) = weeks.iter().fold((0, 0), |(m, d), w| {
        (m + w.merged, d + w.merged + w.closed + w.wontfix)
    });
    let most_open = data
        .reviewers
        .iter()
        .map(|r| r.open.max(r.requested))
        .max()
        .unwrap_or(1)
        .max(1);
    let reviewers: Vec<ReviewerRow> = data
        .reviewers
        .iter()
        .map(|r| ReviewerRow {
            reviewer: r.reviewer.clone(),
            team: r.reviewer.starts_with('@'),
            requested: r.requested,
            open: r.open,
            bar: (r.open as f64 / most_open as f64 * 100.0).round(),
        })
        .collect();
    let jobs: Vec<JobView> = data.jobs.iter().map(job_view).collect();

    context.insert("threshold", &format!("{threshold:.0} s"));
    context.insert("days", &settings.days);
    context.insert("today", &data.today.to_string());
    context.insert("sources", &sources);
    context.insert("source_count", &data.source_count);
    context.insert("states", &states);
    context.insert("weeks", &weeks);
    context.insert("week_chart", &chart);
    context.insert(
        "merge_rate",
        &(decided > 0).then(|| format!("{:.0}%", merged as f64 / decided as f64 * 100.0)),
    );
    context.insert("merged_total", &merged);
    context.insert("decided_total", &decided);
    context.insert("reviewers", &reviewers);
    // Fix PRs by the revision rounds they needed: 0, 1, 2, 3 or more.
    let rounds: Vec<(String, i64, u32)> = {
        let most = data
            .prs_by_rounds
            .iter()
            .map(|(_, n)| *n)
            .max()
            .unwrap_or(0)
            .max(1);
        data.prs_by_rounds
            .iter()
            .map(|(rounds, prs)| {
                let label = if *rounds >= 3 {
                    "3 or more".to_owned()
                } else {
                    rounds.to_string()
                };
                (label, *prs, (*prs * 100 / most) as u32)
            })
            .collect()
    };
    context.insert("prs_by_rounds", &rounds);
    // Dollars with cents always shown ($25.90, not tera's $25.9).
    let dollars = |v: f64| format!("${v:.2}");
    context.insert(
        "costs",
        &serde_json::json!({
            "today": dollars(data.costs.today_usd),
            "last_30_days": dollars(data.costs.last_30_days_usd),
            "per_merged_fix": data.costs.per_merged_fix_usd.map(dollars),
            "by_source": data.costs.by_source.iter()
                .map(|(source, cost, jobs)| (source, dollars(*cost), jobs))
                .collect::<Vec<_>>(),
        }),
    );
    context.insert("dispatch", &data.dispatch);
    context.insert("max_per_day", &settings.max_per_day);
    context.insert("dry_run", &settings.dry_run);
    context.insert("jobs", &jobs);
    context.insert("state_filter", &settings.state_filter);
    context.insert("pages", &paging(data, settings));
    context
}

#[derive(Debug, Serialize)]
struct Paging {
    sources_prev: Option<String>,
    sources_next: Option<String>,
    sources_from: i64,
    sources_to: i64,
    jobs_next: Option<String>,
}

fn paging(data: &Dashboard, settings: &PageSettings) -> Paging {
    let state = settings
        .state_filter
        .as_deref()
        .map(|s| format!("&state={}", encode(s)))
        .unwrap_or_default();
    let page = settings.sources_page;
    let per = settings.sources_per_page;
    let href = |p: i64| format!("/?sources_page={p}{state}");
    Paging {
        sources_prev: (page > 0).then(|| href(page - 1)),
        sources_next: ((page + 1) * per < data.source_count).then(|| href(page + 1)),
        sources_from: (page * per + 1).min(data.source_count),
        sources_to: ((page + 1) * per).min(data.source_count),
        jobs_next: (data.jobs.len() as i64 >= settings.jobs_per_page)
            .then(|| {
                data.jobs
                    .last()
                    .map(|j| format!("/?before={}{state}", j.id))
            })
            .flatten(),
    }
}

/// What `jobs.reviewers` holds, as the reviewer worker records it.
#[derive(Debug, Default, Deserialize)]
struct ReviewRecord {
    source: Option<String>,
    #[serde(default)]
    requested: Vec<Requested>,
    #[serde(default)]
    skipped: Vec<(String, String)>,
    error: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Requested {
    reviewer: ReviewerRef,
    reason: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct ReviewerRef {
    kind: String,
    name: String,
}

#[derive(Debug, Serialize)]
struct EventView {
    received: String,
    origin: String,
    table: Option<String>,
    duration: String,
    outcome: String,
    detail: Option<String>,
}

pub(crate) fn job_context(page: &JobPage, settings: &PageSettings) -> tera::Context {
    let job = &page.job;
    let mut context = tera::Context::new();
    let record: ReviewRecord = job
        .reviewers
        .clone()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    let events: Vec<EventView> = page
        .events
        .iter()
        .map(|e| EventView {
            received: time(e.received_at),
            origin: e.origin.clone(),
            table: e.table_name.clone(),
            duration: seconds(e.duration_seconds),
            outcome: e.outcome.clone(),
            detail: e.detail.clone(),
        })
        .collect();
    let alert_links: Vec<Link> = job
        .alert_links
        .iter()
        .map(|l| link(l.clone(), Some(l)))
        .collect();
    // (at, outcome, dry run, run id, the request as sent or as it would
    // have been: its token is already redacted when stored).
    let dispatches: Vec<(String, String, bool, Option<i64>, String)> = page
        .dispatches
        .iter()
        .map(|d| {
            let request = serde_json::to_string_pretty(&d.request).unwrap_or_default();
            (
                time(d.created_at),
                d.outcome.clone(),
                d.dry_run,
                d.run_id,
                request,
            )
        })
        .collect();
    context.insert("job", &job_view(job));
    context.insert("threshold", &format!("{:.0} s", settings.threshold_seconds));
    context.insert("first_seen", &time(job.first_seen_at));
    context.insert("last_seen", &time(job.last_seen_at));
    context.insert("created", &time(job.created_at));
    context.insert("ended", &job.ended_at.map(time));
    context.insert("dispatched", &job.dispatched_at.map(time));
    context.insert("dispatch_attempts", &job.dispatch_attempts);
    context.insert("pr_opened", &job.pr_opened_at.map(time));
    context.insert("alert_links", &alert_links);
    context.insert("events", &events);
    context.insert("prompt", &page.prompt);
    context.insert("prompt_revision", &job.prompt_revision);
    context.insert("prompt_error", &job.prompt_error);
    context.insert("prompt_truncation", &job.prompt_truncation);
    context.insert("dispatches", &dispatches);
    let rounds: Vec<RoundView> = page.rounds.iter().map(round_view).collect();
    context.insert("rounds", &rounds);
    let verdicts: Vec<(String, String, String, Vec<String>)> = page
        .verdicts
        .iter()
        .map(|v| {
            let verdict: Option<longtx_core::pre_review::Verdict> =
                serde_json::from_value(v.verdict.clone()).ok();
            (
                time(v.received_at),
                v.head_sha.chars().take(12).collect(),
                verdict
                    .as_ref()
                    .map(|v| longtx_core::pre_review::outcome_word(v.verdict).to_owned())
                    .unwrap_or_else(|| v.outcome.clone()),
                verdict
                    .as_ref()
                    .map(longtx_core::pre_review::verdict_lines)
                    .unwrap_or_default(),
            )
        })
        .collect();
    context.insert("verdicts", &verdicts);
    let requests: Vec<(String, String, String, String)> = page
        .requests
        .iter()
        .map(|r| {
            let answer = r
                .answer
                .as_deref()
                .map(|a| a.lines().skip(1).collect::<Vec<_>>().join(" "))
                .unwrap_or_else(|| format!("({})", r.state));
            (
                time(r.created_at),
                r.login.clone(),
                format!("{} ({})", r.kind, r.source),
                answer,
            )
        })
        .collect();
    context.insert("requests", &requests);
    context.insert("reviewers_state", &job.reviewers_state);
    context.insert("reviewer_source", &record.source);
    context.insert("reviewers_requested", &record.requested);
    context.insert("reviewers_skipped", &record.skipped);
    context.insert("reviewers_error", &record.error);
    context.insert("pre_review_state", &job.pre_review_state);
    context.insert(
        "pre_review_verdict",
        &job.pre_review_verdict
            .as_ref()
            .map(|v| serde_json::to_string_pretty(v).unwrap_or_default()),
    );
    context.insert(
        "recurrences",
        &(job.recurrence_count > 0).then(|| {
            format!(
                "{} alert(s) after the job ended, longest {}, last {}",
                job.recurrence_count,
                seconds(job.recurrence_max_seconds),
                job.last_recurrence_at.map(time).unwrap_or_default()
            )
        }),
    );
    context.insert(
        "cost",
        &(page.cost.runs > 0).then(|| {
            let mut extra = String::new();
            if page.cost.acus > 0.0 {
                extra.push_str(&format!(", {:.1} ACUs", page.cost.acus));
            }
            if page.cost.tokens > 0 {
                extra.push_str(&format!(", {} tokens", page.cost.tokens));
            }
            format!(
                "${:.2} over {} run(s), {} turns{extra}",
                page.cost.cost_usd, page.cost.runs, page.cost.turns,
            )
        }),
    );
    context.insert("timeline", &crate::timeline::timeline(page));
    context.insert("verified", &job.verified_at.map(time));
    context.insert("regressed", &job.regressed_at.map(time));
    context.insert("regressed_from", &job.regressed_from);
    context.insert("hold_reason", &job.hold_reason);
    context.insert("patch_check", &patch_check_view(job.patch_check.as_ref()));
    context.insert("wontfix_state", &job.wontfix_state);
    context.insert("wontfix_by", &job.wontfix_by);
    context.insert("wontfix_detail", &job.wontfix_detail);
    context.insert("wontfix_commit", &job.wontfix_commit);
    context
}

#[derive(Serialize)]
struct RoundView {
    round: i32,
    trigger: String,
    requested_by: Option<String>,
    state: String,
    reason: Option<String>,
    findings: Vec<String>,
    run: Link,
    started: String,
    ended: Option<String>,
}

/// One line on a job's impact and place: "impact 36.97 (over 5.26,
/// recurrence 0.71, waiters 31), 3rd of 5 in the queue: 1 schema change
/// and 3 queries waited behind it; ...".
pub(crate) fn impact_line(place: &longtx_store::QueuePlace) -> String {
    let i = &place.impact;
    let at = match place.position {
        Some(p) => format!("{p} of {} in the queue", place.of),
        None => "not in the queue now".to_owned(),
    };
    format!(
        "impact {:.1} (over the threshold {:.1}, recurrence {:.1}, waiters {:.1}), {at}: {}",
        i.score, i.over, i.recurrence, i.waiting, i.why
    )
}

#[derive(Debug, Serialize)]
pub(crate) struct QueueRow {
    position: usize,
    job_id: i64,
    query_source: String,
    score: String,
    priority: String,
    why: String,
}

/// The queue's first rows, in the dispatcher's order.
pub(crate) fn queue_rows(queue: &[longtx_store::QueuePlace]) -> Vec<QueueRow> {
    queue
        .iter()
        .map(|q| QueueRow {
            position: q.position.unwrap_or(0),
            job_id: q.job_id,
            query_source: q.query_source.clone(),
            score: format!("{:.1}", q.impact.score),
            priority: format!("{:.1}", q.priority),
            why: q.impact.why.clone(),
        })
        .collect()
}

fn round_view(r: &longtx_store::RoundRow) -> RoundView {
    let findings: Vec<longtx_core::revision::Finding> =
        serde_json::from_value(r.findings.clone()).unwrap_or_default();
    RoundView {
        round: r.round,
        trigger: r.trigger.replace('_', " "),
        requested_by: r.requested_by.clone(),
        state: r.state.clone(),
        reason: r.state_reason.clone(),
        findings: findings.iter().map(|f| f.one_line()).collect(),
        run: link(
            r.run_url.clone().unwrap_or_else(|| "-".to_owned()),
            r.run_url.as_deref(),
        ),
        started: time(r.created_at),
        ended: r.ended_at.map(time),
    }
}

fn job_view(job: &JobRow) -> JobView {
    JobView {
        id: job.id,
        query_source: job.query_source.clone(),
        state: job.state.clone(),
        state_reason: job.state_reason.clone(),
        tables: job.tables.join(", "),
        alerts: job.alert_count,
        max_duration: seconds(job.max_duration_seconds),
        pr: job
            .pr_number
            .map(|n| link(format!("#{n}"), job.pr_url.as_deref())),
        run: job
            .run_id
            .map(|id| link(format!("run {id}"), job.run_url.as_deref())),
        updated: time(job.updated_at),
    }
}

fn link(text: String, href: Option<&str>) -> Link {
    let safe = href.filter(|h| {
        let lower = h.to_ascii_lowercase();
        lower.starts_with("https://") || lower.starts_with("http://")
    });
    Link {
        text,
        href: safe.map(str::to_owned),
    }
}

fn seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.0} s"))
}

fn time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// Percent-encodes a query value (tera then escapes the `&` for HTML).
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_links_are_followable() {
        assert!(link("x".into(), Some("https://github.com/o/r/pull/1"))
            .href
            .is_some());
        assert!(link("x".into(), Some("JavaScript:alert(1)")).href.is_none());
        assert!(link("x".into(), Some("data:text/html,hi")).href.is_none());
        assert!(link("x".into(), None).href.is_none());
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(encode("admin/users#update"), "admin%2Fusers%23update");
        assert_eq!(encode("a&b=<c>"), "a%26b%3D%3Cc%3E");
    }
}

/// longtx's scan of the newest patch, for the job page: whether it left
/// the alerted slow work inside a transaction, and what it added.
#[derive(Debug, Serialize)]
struct PatchCheckView {
    leaves_slow_work: bool,
    held_before: usize,
    still_held: Vec<String>,
    added: Vec<String>,
}

fn patch_check_view(value: Option<&serde_json::Value>) -> Option<PatchCheckView> {
    let check: longtx_core::patch_check::PatchCheck =
        serde_json::from_value(value?.clone()).ok()?;
    let lines = |calls: &[longtx_core::patch_check::CheckedCall]| -> Vec<String> {
        calls
            .iter()
            .map(|c| format!("{} at {}:{}: {}", c.kind, c.path, c.line, c.code))
            .collect()
    };
    Some(PatchCheckView {
        leaves_slow_work: check.leaves_slow_work(),
        held_before: check.held_before,
        still_held: lines(&check.still_held),
        added: lines(&check.added),
    })
}
