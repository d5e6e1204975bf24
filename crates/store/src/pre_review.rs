//! The AI pre-review's state: which head of a fix PR waits for a run, the
//! verdicts received, and the closing of PRs that failed. Dispatching and
//! closing happen between these calls, with no connection held.

use crate::rounds::{budget, start_round, NewRound};
use crate::{Store, StoreError};
use longtx_core::pre_review::{decide, Action, Outcome, PreReviewMode, Verdict};
use longtx_core::revision::{Finding, Trigger};
use longtx_core::JobState;
use sqlx::Row;
use std::time::Duration;

/// A job whose pre-review run is to be dispatched, as the worker claims it.
#[derive(Debug, Clone)]
pub struct PreReviewClaim {
    pub job_id: i64,
    pub query_source: String,
    pub pr_number: u64,
    pub head_sha: String,
    pub tables: Vec<String>,
    pub max_duration_seconds: Option<f64>,
    pub prompt_token: String,
    pub attempts: i32,
    /// When this head's first claim began: only runs created after it count.
    pub started_at: chrono::DateTime<chrono::Utc>,
}

/// A PR to close after the pre-review failed it.
#[derive(Debug, Clone)]
pub struct CloseClaim {
    pub job_id: i64,
    pub pr_number: u64,
    /// Every verdict acted on for this PR, oldest first (one per round).
    pub history: Vec<Verdict>,
    /// Why it ends here (the job's `state_reason`).
    pub why: String,
}

/// What a verdict did.
#[derive(Debug, Clone, PartialEq)]
pub enum VerdictApplied {
    /// The job moved (`pre_review` -> `in_review`, or -> `rejected_by_review`).
    Moved {
        from: JobState,
        to: JobState,
        action: Action,
    },
    /// Recorded; the state stays (a pass for a head already in review).
    Recorded {
        state: JobState,
    },
    /// A revision round begins (`None`: one is open already, which answers
    /// first). `state` is the job's state now (`in_review` in advisory
    /// mode, where people are asked at the same time).
    Revising {
        round: Option<u32>,
        from: JobState,
        state: JobState,
    },
    /// A verdict for this head was already applied.
    Duplicate,
    /// Not the PR's current head: kept for the record, not acted on.
    Stale {
        current_head: Option<String>,
    },
    /// The job no longer waits for a verdict (merged, closed...).
    NotAwaiting {
        state: JobState,
    },
    UnknownJob,
}

/// Marks `head` of the job's PR as waiting for a pre-review run, unless it
/// already is (a redelivered event does not dispatch a second run).
pub(crate) async fn schedule(
    tx: &mut sqlx::PgConnection,
    job_id: i64,
    head: &str,
) -> Result<(), StoreError> {
    // A head judged before (a branch that came back to it) is not judged
    // again: alternating two heads must not buy a review per push.
    if crate::budgets::head_judged(tx, job_id, head).await? {
        return Ok(());
    }
    sqlx::query(
        "UPDATE jobs SET pre_review_state = 'pending', pre_review_head = $2, pre_review_attempts = 0, \
             pre_review_lease_until = NULL, pre_review_run_id = NULL, pre_review_since = now(), \
             pre_review_started_at = NULL \
         WHERE id = $1 AND pre_review_head IS DISTINCT FROM $2",
    )
    .bind(job_id)
    .bind(head)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

impl Store {
    /// Claims a head waiting for its pre-review run, unless the daily caps
    /// leave no room for one more run of `caps.pre_review_budget_usd`
    /// (pre-reviews count against the caps like every other run).
    pub async fn claim_pre_review(
        &self,
        lease: Duration,
        caps: crate::Caps,
    ) -> Result<Option<PreReviewClaim>, StoreError> {
        let mut conn = self.acquire().await?;
        let status = crate::dispatch::dispatch_counts(&mut conn).await?;
        if status.paused
            || crate::dispatch::day_is_full(&status, caps, caps.pre_review_budget_usd).is_some()
        {
            return Ok(None);
        }
        let row = sqlx::query(
            "UPDATE jobs SET pre_review_lease_until = now() + make_interval(secs => $1), \
                 pre_review_attempts = pre_review_attempts + 1, \
                 pre_review_started_at = COALESCE(pre_review_started_at, now()) \
             WHERE id = (SELECT id FROM jobs \
                         WHERE pre_review_state = 'pending' AND state IN ('pre_review', 'in_review') \
                           AND pr_number IS NOT NULL AND prompt_token IS NOT NULL \
                           AND (pre_review_lease_until IS NULL OR pre_review_lease_until < now()) \
                         ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING id, query_source, pr_number, pre_review_head, tables, max_duration_seconds, \
                       prompt_token, pre_review_attempts, pre_review_started_at",
        )
        .bind(lease.as_secs_f64())
        .fetch_optional(&mut *conn)
        .await?;
        row.map(|r| {
            Ok(PreReviewClaim {
                job_id: r.try_get("id")?,
                query_source: r.try_get("query_source")?,
                pr_number: r.try_get::<i64, _>("pr_number")? as u64,
                head_sha: r.try_get("pre_review_head")?,
                tables: r.try_get("tables")?,
                max_duration_seconds: r.try_get("max_duration_seconds")?,
                prompt_token: r.try_get("prompt_token")?,
                attempts: r.try_get("pre_review_attempts")?,
                started_at: r.try_get("pre_review_started_at")?,
            })
        })
        .transpose()
        .map_err(StoreError::Database)
    }

    /// Records the run dispatched for `head`; a newer head scheduled
    /// meanwhile stays pending.
    pub async fn record_pre_review_dispatched(
        &self,
        job_id: i64,
        head: &str,
        run_id: Option<u64>,
        budget_usd: f64,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "UPDATE jobs SET pre_review_state = 'dispatched', pre_review_run_id = $3, pre_review_lease_until = NULL \
             WHERE id = $1 AND pre_review_head = $2 AND pre_review_state = 'pending'",
        )
        .bind(job_id)
        .bind(head)
        .bind(run_id.map(|id| id as i64))
        .execute(&mut *tx)
        .await?;
        crate::budgets::count(
            &mut tx,
            job_id,
            crate::BudgetedRun::PreReview { head },
            budget_usd,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Applies a verdict in one transaction: checked against the PR's
    /// current head, once per head, then what `mode` and the PR's rounds so
    /// far (at most `max_revisions` started by the pre-review) call for.
    pub async fn record_verdict(
        &self,
        job_id: i64,
        verdict: &Verdict,
        mode: PreReviewMode,
        max_revisions: u32,
    ) -> Result<VerdictApplied, StoreError> {
        let mut tx = self.begin().await?;
        let Some(row) = sqlx::query(
            "SELECT state, pr_head_sha, pre_review_verdict->>'head_sha' AS judged_head FROM jobs WHERE id = $1 FOR UPDATE",
        )
        .bind(job_id)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(VerdictApplied::UnknownJob);
        };
        let state: JobState = row
            .try_get::<String, _>("state")?
            .parse()
            .map_err(|e: longtx_core::job::UnknownState| sqlx::Error::Decode(e.into()))?;
        let current_head: Option<String> = row.try_get("pr_head_sha")?;
        let judged_head: Option<String> = row.try_get("judged_head")?;
        let json = serde_json::to_value(verdict).expect("a verdict serialises");
        let applied = if current_head.as_deref() != Some(verdict.head_sha.as_str()) {
            VerdictApplied::Stale { current_head }
        } else if judged_head.as_deref() == Some(verdict.head_sha.as_str()) {
            VerdictApplied::Duplicate
        } else if !matches!(state, JobState::PreReview | JobState::InReview) {
            VerdictApplied::NotAwaiting { state }
        } else {
            let budget = budget(&mut tx, job_id, max_revisions).await?;
            let action = decide(mode, verdict, &budget);
            apply_verdict(
                &mut tx, job_id, state, &json, action, verdict, mode, budget.max,
            )
            .await?
        };
        let outcome = match &applied {
            VerdictApplied::Moved { to, .. } => format!("moved to {to}"),
            VerdictApplied::Recorded { .. } => "recorded".to_owned(),
            VerdictApplied::Revising {
                round: Some(round), ..
            } => format!("revision round {round}"),
            VerdictApplied::Revising { round: None, .. } => {
                "revise: a round is open already".to_owned()
            }
            VerdictApplied::Duplicate => "duplicate".to_owned(),
            VerdictApplied::Stale { .. } => "stale head".to_owned(),
            VerdictApplied::NotAwaiting { state } => format!("job is {state}"),
            VerdictApplied::UnknownJob => unreachable!("returned above"),
        };
        let acted = matches!(
            applied,
            VerdictApplied::Moved { .. }
                | VerdictApplied::Recorded { .. }
                | VerdictApplied::Revising { .. }
        );
        sqlx::query("INSERT INTO pre_review_verdicts (job_id, head_sha, verdict, outcome, acted) VALUES ($1, $2, $3, $4, $5)")
            .bind(job_id)
            .bind(&verdict.head_sha)
            .bind(&json)
            .bind(&outcome)
            .bind(acted)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(applied)
    }

    /// Jobs whose current head has waited past `timeout` for a verdict:
    /// (job, head). The caller records a "no verdict" for each.
    pub async fn overdue_pre_reviews(
        &self,
        timeout: Duration,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, pr_head_sha FROM jobs \
             WHERE state = 'pre_review' AND pre_review_state IN ('pending', 'dispatched') \
               AND pr_head_sha IS NOT NULL \
               AND pre_review_since < now() - make_interval(secs => $1) \
             ORDER BY id LIMIT 100",
        )
        .bind(timeout.as_secs_f64())
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("id")?, r.try_get("pr_head_sha")?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::Database)
    }

    pub async fn claim_pre_review_close(
        &self,
        lease: Duration,
    ) -> Result<Option<CloseClaim>, StoreError> {
        let row = sqlx::query(
            "UPDATE jobs SET pre_review_lease_until = now() + make_interval(secs => $1) \
             WHERE id = (SELECT id FROM jobs WHERE pre_review_close = 'pending' AND state = 'rejected_by_review' AND pr_number IS NOT NULL \
                           AND (pre_review_lease_until IS NULL OR pre_review_lease_until < now()) \
                         ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING id, pr_number, pre_review_verdict, state_reason",
        )
        .bind(lease.as_secs_f64())
        .fetch_optional(self.pool())
        .await?;
        let Some(r) = row else { return Ok(None) };
        let job_id: i64 = r.try_get("id")?;
        let mut history = self.verdict_history(job_id).await?;
        if history.is_empty() {
            let last: serde_json::Value = r.try_get("pre_review_verdict")?;
            history.push(serde_json::from_value(last).map_err(|e| sqlx::Error::Decode(e.into()))?);
        }
        Ok(Some(CloseClaim {
            job_id,
            pr_number: r.try_get::<i64, _>("pr_number")? as u64,
            history,
            why: r
                .try_get::<Option<String>, _>("state_reason")?
                .unwrap_or_else(|| "it did not pass all three checks".to_owned()),
        }))
    }

    /// The verdicts acted on for a job, oldest first.
    pub async fn verdict_history(&self, job_id: i64) -> Result<Vec<Verdict>, StoreError> {
        let values: Vec<serde_json::Value> = sqlx::query_scalar(
            "SELECT verdict FROM pre_review_verdicts WHERE job_id = $1 AND acted ORDER BY id",
        )
        .bind(job_id)
        .fetch_all(self.pool())
        .await?;
        Ok(values
            .into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect())
    }

    pub async fn finish_pre_review_close(&self, job_id: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE jobs SET pre_review_close = 'done', pre_review_lease_until = NULL WHERE id = $1")
            .bind(job_id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// The reasons of every round of the source's latest rejected attempt,
    /// for the next attempt's prompt.
    pub async fn rejection_reasons(
        &self,
        query_source: &str,
        before_job: i64,
    ) -> Result<Vec<String>, StoreError> {
        let values: Vec<serde_json::Value> = sqlx::query_scalar(
            "SELECT v.verdict FROM pre_review_verdicts v \
             WHERE v.acted AND v.job_id = (SELECT id FROM jobs WHERE source_key = $1 AND id < $2 \
                   AND state = 'rejected_by_review' ORDER BY id DESC LIMIT 1) \
             ORDER BY v.id",
        )
        .bind(longtx_core::query_source::canonical(query_source))
        .bind(before_job)
        .fetch_all(self.pool())
        .await?;
        let history: Vec<Verdict> = values
            .into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect();
        Ok(longtx_core::pre_review::prompt_note(&history))
    }
}

#[allow(clippy::too_many_arguments)]
async fn apply_verdict(
    tx: &mut sqlx::PgConnection,
    job_id: i64,
    state: JobState,
    json: &serde_json::Value,
    action: Action,
    verdict: &Verdict,
    mode: PreReviewMode,
    max_revisions: u32,
) -> Result<VerdictApplied, StoreError> {
    match action {
        Action::Revise => {
            let findings: Vec<Finding> = verdict
                .reasons
                .iter()
                .map(|r| Finding {
                    file: None,
                    line: None,
                    text: r.clone(),
                })
                .chain(verdict.findings.iter().cloned())
                .collect();
            let round = start_round(
                tx,
                job_id,
                &NewRound {
                    trigger: Trigger::PreReview,
                    request_id: None,
                    requested_by: None,
                    mode: mode_name(mode),
                    head_before: &verdict.head_sha,
                    findings: &findings,
                    request: "",
                },
            )
            .await?;
            // In advisory mode people are asked at once, rounds or not.
            let ask_people = mode == PreReviewMode::Advisory;
            sqlx::query(
                "UPDATE jobs SET pre_review_state = 'judged', pre_review_verdict = $2, pre_review_lease_until = NULL, \
                     state = CASE WHEN $3 THEN 'in_review' ELSE state END, updated_at = now(), \
                     reviewers_state = CASE WHEN $3 THEN COALESCE(reviewers_state, 'pending') ELSE reviewers_state END \
                 WHERE id = $1",
            )
            .bind(job_id)
            .bind(json)
            .bind(ask_people)
            .execute(&mut *tx)
            .await?;
            Ok(VerdictApplied::Revising {
                round,
                from: state,
                state: if ask_people {
                    JobState::InReview
                } else {
                    state
                },
            })
        }
        Action::RequestReviewers => {
            sqlx::query(
                "UPDATE jobs SET pre_review_state = 'judged', pre_review_verdict = $2, pre_review_lease_until = NULL, \
                     state = 'in_review', updated_at = now(), \
                     reviewers_state = COALESCE(reviewers_state, 'pending') \
                 WHERE id = $1",
            )
            .bind(job_id)
            .bind(json)
            .execute(&mut *tx)
            .await?;
            Ok(if state == JobState::PreReview {
                VerdictApplied::Moved {
                    from: state,
                    to: JobState::InReview,
                    action,
                }
            } else {
                VerdictApplied::Recorded { state }
            })
        }
        Action::Reject => {
            let reason = if verdict.verdict == Outcome::Revise {
                format!(
                    "it still needs changes after {max_revisions} revision round{} (LONGTX_MAX_REVISIONS)",
                    if max_revisions == 1 { "" } else { "s" }
                )
            } else {
                let first = longtx_core::pre_review::verdict_lines(verdict)
                    .into_iter()
                    .next()
                    .unwrap_or_default();
                format!(
                    "it was rejected: {}",
                    first.chars().take(300).collect::<String>()
                )
            };
            sqlx::query(
                "UPDATE jobs SET pre_review_state = 'judged', pre_review_verdict = $2, pre_review_lease_until = NULL, \
                     pre_review_close = 'pending', state = 'rejected_by_review', state_reason = $3, \
                     ended_at = now(), updated_at = now() \
                 WHERE id = $1",
            )
            .bind(job_id)
            .bind(json)
            .bind(reason)
            .execute(&mut *tx)
            .await?;
            Ok(VerdictApplied::Moved {
                from: state,
                to: JobState::RejectedByReview,
                action,
            })
        }
    }
}

pub(crate) fn mode_name(mode: PreReviewMode) -> &'static str {
    match mode {
        PreReviewMode::On => "on",
        PreReviewMode::Off => "off",
        PreReviewMode::Advisory => "advisory",
    }
}
