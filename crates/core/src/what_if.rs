//! What a lower threshold would bring: from every source's longest
//! transaction per table in the last days (under the threshold too) and
//! the rates longtx has seen so far, the extra sources, PRs, agent runs,
//! cost and review work per week at each candidate threshold.
//!
//! Pure: the store gathers [`History`], the dashboard shows [`WhatIf`].

use crate::query_source::QuerySource;
use crate::{IgnoreList, IntakePolicy};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The candidates, as fractions of each table's current threshold.
pub const FRACTIONS: [f64; 4] = [1.0, 0.75, 0.5, 0.25];

/// A source's longest transaction on one table over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observation {
    /// Empty when the measurement named no table.
    pub table: String,
    pub query_source: String,
    pub max_seconds: f64,
}

/// What longtx's own jobs did so far: the rates a new source is projected
/// with.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Rates {
    /// Jobs that ended in the rate window, dry runs left out.
    pub ended_jobs: u32,
    /// Of those, the ones that opened a PR.
    pub with_pr: u32,
    /// Of those with a PR, the ones merged (verified or regressed later).
    pub merged: u32,
    /// Revision rounds the jobs with a PR needed, in all.
    pub rounds: u32,
    /// Mean reported agent cost of an ended job, runs and rounds included.
    pub cost_per_job_usd: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct History {
    /// The length of the observation window, in days.
    pub days: u32,
    pub observations: Vec<Observation>,
    pub rates: Rates,
    /// Review requests per person, and how many PRs they were spread over.
    pub reviewer_requests: Vec<(String, u32)>,
    pub reviewed_prs: u32,
    /// Fix PRs merged in the observation window.
    pub merged_in_window: u32,
    /// Open longtx reviews now, per reviewer key (`@org/team` for teams).
    pub open_reviews: Vec<(String, u32)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// `current`, `75%`, `50%`, `25%`.
    pub label: String,
    pub fraction: f64,
    /// Sources at or over this threshold in the window.
    pub alerting_sources: u32,
    /// Of those, the ones under the current threshold: new jobs.
    pub extra_sources: u32,
    /// `None` until longtx has ended a job to learn the rates from.
    pub extra_prs_per_week: Option<f64>,
    pub extra_merges_per_week: Option<f64>,
    /// First runs plus revision rounds.
    pub extra_agent_runs_per_week: Option<f64>,
    pub extra_cost_per_week_usd: Option<f64>,
    /// Extra review requests per week and person, busiest first.
    pub reviewer_load: Vec<(String, f64)>,
    /// Of the fix PRs this threshold would bring at once (its extra
    /// sources), those the free review seats cannot take: they wait.
    pub backlog_prs: Option<f64>,
    /// How long that backlog takes to clear at the current merge rate;
    /// `None` when the rates are unknown or nothing is merged yet.
    pub backlog_weeks: Option<f64>,
}

/// Per table: its current threshold and the extra sources at each
/// candidate. A source over several tables counts on each.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableRow {
    pub table: String,
    pub threshold_seconds: f64,
    pub extra_sources: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIf {
    pub days: u32,
    pub candidates: Vec<Candidate>,
    pub tables: Vec<TableRow>,
    pub pr_per_source: Option<f64>,
    pub merge_rate: Option<f64>,
    pub rounds_per_pr: Option<f64>,
    /// What the team merges now, to hold the extra work against.
    pub merged_per_week: f64,
}

fn ratio(part: u32, whole: u32) -> Option<f64> {
    (whole > 0).then(|| f64::from(part) / f64::from(whole))
}

fn label(fraction: f64) -> String {
    if fraction == 1.0 {
        "current".to_owned()
    } else {
        format!("{:.0}%", fraction * 100.0)
    }
}

/// An observation counted by the source's canonical key: two senders'
/// spellings of one source are one source here, as they are one job.
struct Keyed<'a> {
    table: &'a str,
    key: String,
    max_seconds: f64,
}

/// A source that would never open a job (excluded, ignored, or not a
/// source at all) adds nothing whatever its duration.
fn counts(source: &str, policy: &IntakePolicy, ignore: &IgnoreList) -> bool {
    let Ok(parsed) = QuerySource::parse(source) else {
        return false;
    };
    let key = parsed.key();
    let excluded = policy
        .exclude
        .iter()
        .any(|p| crate::glob::matches(&crate::query_source::canonical_pattern(p), &key));
    !excluded && ignore.matching(&parsed).is_none()
}

/// `capacity`: what reviewers are held to (`None` when nobody is asked:
/// no backlog is projected then).
pub fn project(
    history: &History,
    policy: &IntakePolicy,
    ignore: &IgnoreList,
    capacity: Option<crate::reviewers::Capacity>,
) -> WhatIf {
    let observations: Vec<Keyed> = history
        .observations
        .iter()
        .filter(|o| o.max_seconds.is_finite() && counts(&o.query_source, policy, ignore))
        .map(|o| Keyed {
            table: &o.table,
            key: crate::query_source::canonical(&o.query_source),
            max_seconds: o.max_seconds,
        })
        .collect();
    let threshold = |table: &str| policy.threshold_for((!table.is_empty()).then_some(table));
    let alerting = |fraction: f64| -> BTreeSet<&str> {
        observations
            .iter()
            .filter(|o| o.max_seconds >= fraction * threshold(o.table))
            .map(|o| o.key.as_str())
            .collect()
    };
    let current = alerting(1.0);
    let weeks = f64::from(history.days.max(1)) / 7.0;
    let merged_per_week = f64::from(history.merged_in_window) / weeks;
    let free_seats = capacity.map(|c| free_review_seats(history, c));
    let rates = &history.rates;
    let pr_per_source = ratio(rates.with_pr, rates.ended_jobs);
    let merge_rate = ratio(rates.merged, rates.with_pr);
    let rounds_per_pr = ratio(rates.rounds, rates.with_pr);
    let candidates = FRACTIONS
        .iter()
        .map(|&fraction| {
            let at = alerting(fraction);
            let extra = at.difference(&current).count() as u32;
            let new_jobs_per_week = f64::from(extra) / weeks;
            let prs = pr_per_source.map(|rate| new_jobs_per_week * rate);
            // The sources over this threshold in the window come in at once
            // when it is lowered; free seats take some, the rest queue and
            // drain at what the team merges now.
            let backlog_prs = pr_per_source
                .zip(free_seats)
                .map(|(rate, free)| (f64::from(extra) * rate - free).max(0.0));
            let backlog_weeks = backlog_prs.and_then(|backlog| {
                if backlog == 0.0 {
                    Some(0.0)
                } else {
                    (merged_per_week > 0.0).then(|| backlog / merged_per_week)
                }
            });
            let reviewer_load = match prs {
                Some(prs) if history.reviewed_prs > 0 && extra > 0 => {
                    let mut load: Vec<(String, f64)> = history
                        .reviewer_requests
                        .iter()
                        .map(|(who, n)| {
                            (
                                who.clone(),
                                prs * f64::from(*n) / f64::from(history.reviewed_prs),
                            )
                        })
                        .collect();
                    load.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                    load
                }
                _ => Vec::new(),
            };
            Candidate {
                label: label(fraction),
                fraction,
                alerting_sources: at.len() as u32,
                extra_sources: extra,
                extra_prs_per_week: prs,
                extra_merges_per_week: prs.zip(merge_rate).map(|(p, m)| p * m),
                extra_agent_runs_per_week: prs
                    .zip(rounds_per_pr)
                    .map(|(p, r)| new_jobs_per_week + p * r),
                extra_cost_per_week_usd: rates.cost_per_job_usd.map(|c| new_jobs_per_week * c),
                reviewer_load,
                backlog_prs,
                backlog_weeks,
            }
        })
        .collect();
    WhatIf {
        days: history.days,
        candidates,
        tables: table_rows(&observations, &current, &threshold),
        pr_per_source,
        merge_rate,
        rounds_per_pr,
        merged_per_week,
    }
}

/// Review seats free now: for each reviewer of longtx PRs in the window,
/// their capacity less their open reviews.
fn free_review_seats(history: &History, capacity: crate::reviewers::Capacity) -> f64 {
    let open = |key: &str| {
        history
            .open_reviews
            .iter()
            .find(|(k, _)| k == key)
            .map_or(0, |(_, n)| i64::from(*n))
    };
    history
        .reviewer_requests
        .iter()
        .map(|(key, _)| {
            let cap = if key.starts_with('@') {
                capacity.team
            } else {
                capacity.user
            };
            (cap - open(key)).max(0) as f64
        })
        .sum()
}

fn table_rows(
    observations: &[Keyed],
    current: &BTreeSet<&str>,
    threshold: &dyn Fn(&str) -> f64,
) -> Vec<TableRow> {
    let mut by_table: BTreeMap<&str, Vec<&Keyed>> = BTreeMap::new();
    for o in observations {
        by_table.entry(o.table).or_default().push(o);
    }
    by_table
        .into_iter()
        .map(|(table, seen)| {
            let limit = threshold(table);
            let extra_sources = FRACTIONS
                .iter()
                .map(|f| {
                    seen.iter()
                        .filter(|o| o.max_seconds >= f * limit && !current.contains(o.key.as_str()))
                        .map(|o| o.key.as_str())
                        .collect::<BTreeSet<_>>()
                        .len() as u32
                })
                .collect();
            TableRow {
                table: table.to_owned(),
                threshold_seconds: limit,
                extra_sources,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(table: &str, source: &str, max_seconds: f64) -> Observation {
        Observation {
            table: table.into(),
            query_source: source.into(),
            max_seconds,
        }
    }

    /// Global threshold 100 s, `orders` at 40 s; rates from 10 ended jobs.
    fn seeded() -> (History, IntakePolicy, IgnoreList) {
        let policy = IntakePolicy {
            threshold_seconds: 100.0,
            table_thresholds: [("orders".to_owned(), 40.0)].into(),
            ..IntakePolicy::default()
        };
        let ignore = IgnoreList::parse("- query_source: ReportWorker\n  reason: batch\n").unwrap();
        let history = History {
            days: 30,
            observations: vec![
                seen("orders", "admin/orders#update", 50.0), // over 40: alerts now
                seen("orders", "CartWorker", 35.0),          // 75% of 40 = 30
                seen("", "rake:nightly", 80.0),              // 75% of 100
                seen("users", "rake:nightly", 20.0),
                seen("users", "users#show", 45.0), // 25% only (50% is 50)
                seen("users", "users#update", 120.0), // alerts now
                seen("orders", "unknown", 500.0),  // excluded by default
                seen("users", "ReportWorker", 90.0), // on the ignore list
            ],
            rates: Rates {
                ended_jobs: 10,
                with_pr: 8,
                merged: 6,
                rounds: 4,
                cost_per_job_usd: Some(2.0),
            },
            reviewer_requests: vec![("bob".into(), 2), ("alice".into(), 6)],
            reviewed_prs: 8,
            merged_in_window: 6,
            open_reviews: vec![("alice".into(), 2)],
        };
        (history, policy, ignore)
    }

    const CAPACITY: Option<crate::reviewers::Capacity> =
        Some(crate::reviewers::Capacity { user: 3, team: 10 });

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn extra_sources_and_weekly_work_match_the_hand_computed_figures() {
        let (history, policy, ignore) = seeded();
        let w = project(&history, &policy, &ignore, CAPACITY);
        let extra: Vec<_> = w
            .candidates
            .iter()
            .map(|c| (c.label.as_str(), c.alerting_sources, c.extra_sources))
            .collect();
        assert_eq!(
            extra,
            [
                ("current", 2, 0),
                ("75%", 4, 2),
                ("50%", 4, 2),
                ("25%", 5, 3)
            ]
        );
        // 75%: 2 new sources over 30/7 weeks, 8 of 10 jobs open a PR.
        let c = &w.candidates[1];
        assert!(close(c.extra_prs_per_week, 2.0 * 0.8 * 7.0 / 30.0));
        assert!(close(
            c.extra_merges_per_week,
            2.0 * 0.8 * 7.0 / 30.0 * 0.75
        ));
        // One first run per new job, plus half a round per PR.
        assert!(close(
            c.extra_agent_runs_per_week,
            2.0 * 7.0 / 30.0 + 2.0 * 0.8 * 7.0 / 30.0 * 0.5
        ));
        assert!(close(c.extra_cost_per_week_usd, 2.0 * 7.0 / 30.0 * 2.0));
        // alice was asked on 6 of 8 PRs, bob on 2.
        let prs = 2.0 * 0.8 * 7.0 / 30.0;
        assert_eq!(c.reviewer_load[0].0, "alice");
        assert!(close(Some(c.reviewer_load[0].1), prs * 0.75));
        assert!(close(Some(c.reviewer_load[1].1), prs * 0.25));
        assert!(
            w.candidates[0].reviewer_load.is_empty(),
            "nothing extra at the current threshold"
        );
        assert!((w.merged_per_week - 6.0 * 7.0 / 30.0).abs() < 1e-9);
    }

    #[test]
    fn two_senders_spellings_of_one_source_are_one_source() {
        let (mut history, policy, ignore) = seeded();
        // Alertmanager's label and Datadog's tag for the same action, each
        // on its own table: one source, alerting now, new at no threshold.
        history.observations = vec![
            seen("users", "admin/users#update", 142.5),
            seen("orders", "admin/users_update", 300.0),
            seen("carts", "Admin/Users#Update", 60.0),
        ];
        let w = project(&history, &policy, &ignore, CAPACITY);
        let alerting: Vec<(u32, u32)> = w
            .candidates
            .iter()
            .map(|c| (c.alerting_sources, c.extra_sources))
            .collect();
        assert_eq!(alerting, vec![(1, 0), (1, 0), (1, 0), (1, 0)]);
        assert!(w.tables.iter().all(|t| t.extra_sources == vec![0; 4]));
    }

    #[test]
    fn each_table_is_measured_against_its_own_threshold() {
        let (history, policy, ignore) = seeded();
        let w = project(&history, &policy, &ignore, CAPACITY);
        let rows: Vec<_> = w
            .tables
            .iter()
            .map(|t| {
                (
                    t.table.as_str(),
                    t.threshold_seconds,
                    t.extra_sources.clone(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("", 100.0, vec![0, 1, 1, 1]),
                ("orders", 40.0, vec![0, 1, 1, 1]),
                ("users", 100.0, vec![0, 0, 0, 1]),
            ]
        );
    }

    #[test]
    fn without_an_ended_job_the_work_is_unknown_not_zero() {
        let (mut history, policy, ignore) = seeded();
        history.rates = Rates::default();
        let w = project(&history, &policy, &ignore, CAPACITY);
        assert_eq!(w.candidates[1].extra_sources, 2);
        assert_eq!(w.candidates[1].extra_prs_per_week, None);
        assert_eq!(w.pr_per_source, None);
        assert!(w.candidates[1].reviewer_load.is_empty());
    }

    #[test]
    fn the_backlog_is_what_free_seats_cannot_take_at_the_merge_rate() {
        let (mut history, policy, ignore) = seeded();
        // Free seats: alice 3 - 2 = 1, bob 3 - 0 = 3: 4 in all.
        // 25%: 3 extra sources * 0.8 = 2.4 PRs at once: all seated.
        let w = project(&history, &policy, &ignore, CAPACITY);
        assert!(close(w.candidates[3].backlog_prs, 0.0));
        assert_eq!(w.candidates[3].backlog_weeks, Some(0.0));
        // With alice at 3 and bob at 2 open, one seat is free: 1.4 PRs wait,
        // and the team merges 6 in 30 days (1.4 a week): a week of backlog.
        history.open_reviews = vec![("alice".into(), 3), ("bob".into(), 2)];
        let w = project(&history, &policy, &ignore, CAPACITY);
        assert!(close(w.candidates[3].backlog_prs, 1.4));
        assert!(close(
            w.candidates[3].backlog_weeks,
            1.4 / (6.0 * 7.0 / 30.0)
        ));
        // Nothing merged yet: the backlog never clears at today's rate.
        history.merged_in_window = 0;
        let w = project(&history, &policy, &ignore, CAPACITY);
        assert_eq!(w.candidates[3].backlog_weeks, None);
        // No capacity (nobody is asked): no seats to count.
        assert_eq!(
            project(&history, &policy, &ignore, None).candidates[3].backlog_prs,
            None
        );
    }
}
