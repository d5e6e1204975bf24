//! The what-if section: each candidate threshold as a row of figures a
//! person can hold against what the team merges now.

use longtx_core::what_if::WhatIf;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub(crate) struct WhatIfView {
    days: u32,
    rows: Vec<CandidateRow>,
    tables: Vec<TableView>,
    labels: Vec<String>,
    /// "8 of 10 jobs open a PR, 75% of PRs merge, 0.5 rounds per PR".
    rates: Option<String>,
    merged_per_week: String,
    /// Set when the 50% candidate adds more merges than the team makes now.
    strain: Option<String>,
}

#[derive(Debug, Serialize)]
struct CandidateRow {
    label: String,
    alerting: u32,
    extra: u32,
    prs: String,
    merges: String,
    runs: String,
    cost: String,
    /// The three busiest reviewers' extra review requests per week.
    busiest: String,
    /// Weeks the fix PRs this threshold brings at once would wait for
    /// review seats, at today's merge rate.
    backlog: String,
    over: bool,
}

#[derive(Debug, Serialize)]
struct TableView {
    table: String,
    threshold: String,
    extra: Vec<u32>,
}

fn per_week(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
}

pub(crate) fn view(w: &WhatIf) -> WhatIfView {
    let rows = w
        .candidates
        .iter()
        .map(|c| CandidateRow {
            label: c.label.clone(),
            alerting: c.alerting_sources,
            extra: c.extra_sources,
            prs: per_week(c.extra_prs_per_week),
            merges: per_week(c.extra_merges_per_week),
            runs: per_week(c.extra_agent_runs_per_week),
            cost: c
                .extra_cost_per_week_usd
                .map_or_else(|| "-".to_owned(), |v| format!("${v:.2}")),
            busiest: if c.reviewer_load.is_empty() {
                "-".to_owned()
            } else {
                c.reviewer_load
                    .iter()
                    .take(3)
                    .map(|(who, n)| format!("{who} +{n:.1}"))
                    .collect::<Vec<_>>()
                    .join(" · ")
            },
            backlog: match (c.backlog_prs, c.backlog_weeks) {
                (None, _) => "-".to_owned(),
                (Some(0.0), _) => "none".to_owned(),
                (Some(prs), Some(weeks)) => format!("{weeks:.1} weeks ({prs:.1} PRs)"),
                (Some(prs), None) => format!("{prs:.1} PRs, no merges yet to clear them"),
            },
            over: c
                .extra_merges_per_week
                .is_some_and(|m| m > w.merged_per_week && m > 0.0),
        })
        .collect::<Vec<_>>();
    let rates = w.pr_per_source.map(|p| {
        format!(
            "{:.0}% of jobs open a PR, {} of PRs merge, {} revision rounds per PR",
            p * 100.0,
            w.merge_rate
                .map_or_else(|| "-".to_owned(), |m| format!("{:.0}%", m * 100.0)),
            w.rounds_per_pr
                .map_or_else(|| "-".to_owned(), |r| format!("{r:.1}")),
        )
    });
    let strain = w
        .candidates
        .iter()
        .find(|c| c.label == "50%")
        .and_then(|c| c.extra_merges_per_week)
        .filter(|m| *m > w.merged_per_week)
        .map(|m| {
            format!(
                "At 50% the team would merge {m:.1} more fix PRs a week; it merges {:.1} now.",
                w.merged_per_week
            )
        });
    WhatIfView {
        days: w.days,
        labels: w.candidates.iter().map(|c| c.label.clone()).collect(),
        rows,
        tables: w
            .tables
            .iter()
            .filter(|t| t.extra_sources.iter().any(|n| *n > 0))
            .take(50)
            .map(|t| TableView {
                table: if t.table.is_empty() {
                    "(no table named)".to_owned()
                } else {
                    t.table.clone()
                },
                threshold: format!("{:.0} s", t.threshold_seconds),
                extra: t.extra_sources.clone(),
            })
            .collect(),
        rates,
        merged_per_week: format!("{:.1}", w.merged_per_week),
        strain,
    }
}
