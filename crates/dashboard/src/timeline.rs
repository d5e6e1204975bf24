//! A job's story in order: alerts, dispatches and rounds, the PR, reviews,
//! the merge, verification, recurrences and cost, from what its page holds.

use chrono::{DateTime, Utc};
use longtx_store::JobPage;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Moment {
    pub at: String,
    /// `alert`, `dispatch`, `round`, `review`, `pr`, `end`, `recurrence`, `cost`.
    pub kind: &'static str,
    pub text: String,
}

pub(crate) fn timeline(page: &JobPage) -> Vec<Moment> {
    let job = &page.job;
    let mut moments: Vec<(DateTime<Utc>, &'static str, String)> = Vec::new();
    let mut push =
        |at: DateTime<Utc>, kind: &'static str, text: String| moments.push((at, kind, text));
    push(job.first_seen_at, "alert", "first alert".to_owned());
    push(job.created_at, "alert", format!("job {} created", job.id));
    if job.last_seen_at > job.first_seen_at {
        push(
            job.last_seen_at,
            "alert",
            format!("last alert ({} in all)", job.alert_count),
        );
    }
    for d in &page.dispatches {
        let run = d.run_id.map(|r| format!(", run {r}")).unwrap_or_default();
        push(
            d.created_at,
            "dispatch",
            format!("dispatch: {}{run}", d.outcome),
        );
    }
    if let (Some(at), Some(n)) = (job.pr_opened_at, job.pr_number) {
        push(at, "pr", format!("PR #{n} opened"));
    }
    for v in &page.verdicts {
        let word = v.verdict["verdict"].as_str().unwrap_or("?").to_owned();
        push(
            v.received_at,
            "review",
            format!(
                "pre-review: {word} (commit {})",
                v.head_sha.chars().take(12).collect::<String>()
            ),
        );
    }
    for q in &page.requests {
        push(
            q.created_at,
            "review",
            format!("@{} asked: {} ({})", q.login, q.kind, q.source),
        );
    }
    for r in &page.rounds {
        push(
            r.created_at,
            "round",
            format!(
                "round {} started ({})",
                r.round,
                r.trigger.replace('_', " ")
            ),
        );
        if let Some(ended) = r.ended_at {
            push(
                ended,
                "round",
                format!("round {} ended: {}", r.round, r.state),
            );
        }
    }
    for c in &page.run_reports {
        let cost = c
            .cost_usd
            .map(|c| format!("${c:.2}"))
            .unwrap_or_else(|| "no cost".to_owned());
        let turns = c.turns.map(|t| format!(", {t} turns")).unwrap_or_default();
        push(
            c.reported_at,
            "cost",
            format!(
                "run {} (round {}) reported {cost}{turns}",
                c.run_id, c.round
            ),
        );
    }
    if let Some(ended) = job.ended_at {
        let state = match job.state.as_str() {
            // The merge is when it ended; verification and regression come later.
            "verified" | "regressed" => "merged",
            other => other,
        };
        push(ended, "end", state.to_owned());
    }
    if let Some(at) = job.first_recurrence_at {
        push(at, "recurrence", "first alert after it ended".to_owned());
    }
    if let Some(at) = job
        .last_recurrence_at
        .filter(|l| Some(*l) != job.first_recurrence_at)
    {
        push(
            at,
            "recurrence",
            format!(
                "last alert after it ended ({} in all)",
                job.recurrence_count
            ),
        );
    }
    if let Some(at) = job.verified_at {
        push(at, "end", "verified: no alert in the window".to_owned());
    }
    if let Some(at) = job.regressed_at {
        push(at, "end", "regressed: the alert came back".to_owned());
    }
    moments.sort_by_key(|(at, _, _)| *at);
    moments
        .into_iter()
        .map(|(at, kind, text)| Moment {
            at: at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
            kind,
            text,
        })
        .collect()
}
