//! What ties an agent run to longtx: the commit each round starts from
//! (pinned before the dispatch), when the dispatch began, the run id, and
//! the commit longtx made from the run's patch. The pipeline reads these
//! in one statement, calls GitHub with no connection held, and records
//! here in another.

use crate::rounds::{end_round, lock_job, RoundEnd, RoundEnded};
use crate::{Store, StoreError};
use chrono::{DateTime, Utc};
use sqlx::Row;

/// A dispatched run as longtx recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchedRun {
    pub run_id: Option<i64>,
    pub started_at: Option<DateTime<Utc>>,
}

/// A round whose run ended well and whose result is to be applied.
#[derive(Debug, Clone)]
pub struct RoundToApply {
    pub job_id: i64,
    pub round: u32,
    pub query_source: String,
    pub run_id: Option<i64>,
    pub run_url: Option<String>,
    /// The head the round started from (pinned at dispatch).
    pub base_sha: String,
    pub pr_number: u64,
    /// Set once longtx made the round's commit.
    pub commit_sha: Option<String>,
}

/// A pre-review whose run goes.
#[derive(Debug, Clone)]
pub struct RunningPreReview {
    pub job_id: i64,
    pub head_sha: String,
    pub run_id: Option<i64>,
    pub started_at: Option<DateTime<Utc>>,
    pub query_source: String,
}

impl Store {
    /// Pins the commit round 0 starts from; the one pinned first wins (a
    /// retried dispatch reuses it). `None` when the job is no longer being
    /// dispatched.
    pub async fn pin_job_base(&self, job_id: i64, sha: &str) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "UPDATE jobs SET base_sha = COALESCE(base_sha, $2) WHERE id = $1 AND state = 'dispatching' \
             RETURNING base_sha",
        )
        .bind(job_id)
        .bind(sha)
        .fetch_optional(self.pool())
        .await?)
    }

    /// As [`Store::pin_job_base`], for a revision round.
    pub async fn pin_round_base(
        &self,
        job_id: i64,
        round: u32,
        sha: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "UPDATE revision_rounds SET base_sha = COALESCE(base_sha, $3) \
             WHERE job_id = $1 AND round = $2 AND state = 'dispatching' RETURNING base_sha",
        )
        .bind(job_id)
        .bind(round as i32)
        .bind(sha)
        .fetch_optional(self.pool())
        .await?)
    }

    /// The run longtx dispatched for round `round` of `job_id` (0: the
    /// job's first run); `None` when there was no such dispatch.
    pub async fn dispatched_run(
        &self,
        job_id: i64,
        round: u32,
    ) -> Result<Option<DispatchedRun>, StoreError> {
        let row = if round == 0 {
            sqlx::query(
                "SELECT run_id, dispatch_started_at FROM jobs WHERE id = $1 AND dispatch_started_at IS NOT NULL",
            )
            .bind(job_id)
            .fetch_optional(self.pool())
            .await?
        } else {
            sqlx::query(
                "SELECT run_id, dispatch_started_at FROM revision_rounds \
                 WHERE job_id = $1 AND round = $2 AND dispatch_started_at IS NOT NULL",
            )
            .bind(job_id)
            .bind(round as i32)
            .fetch_optional(self.pool())
            .await?
        };
        row.map(|r| {
            Ok(DispatchedRun {
                run_id: r.try_get("run_id")?,
                started_at: r.try_get("dispatch_started_at")?,
            })
        })
        .transpose()
        .map_err(StoreError::Database)
    }

    /// The job whose pre-review run is `run_id`, with when that pre-review
    /// began; `None` when no pre-review of longtx's has that run.
    pub async fn pre_review_of_run(
        &self,
        run_id: i64,
    ) -> Result<Option<(i64, Option<DateTime<Utc>>)>, StoreError> {
        let row = sqlx::query(
            "SELECT id, pre_review_started_at FROM jobs WHERE pre_review_run_id = $1 AND pre_review_state = 'dispatched'",
        )
        .bind(run_id)
        .fetch_optional(self.pool())
        .await?;
        row.map(|r| Ok((r.try_get("id")?, r.try_get("pre_review_started_at")?)))
            .transpose()
            .map_err(StoreError::Database)
    }

    /// Round 0's commit is made: kept with the agent's summary, so a retry
    /// goes straight to opening the PR.
    pub async fn record_fix_commit(
        &self,
        job_id: i64,
        sha: &str,
        summary: &str,
        check: Option<&longtx_core::patch_check::PatchCheck>,
    ) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE jobs SET fix_commit_sha = $2, agent_summary = $3, patch_check = $4, updated_at = now() \
             WHERE id = $1 AND state IN ('dispatching', 'agent_running') AND pr_open_state = 'pending'",
        )
        .bind(job_id)
        .bind(sha)
        .bind(summary)
        .bind(check.map(sqlx::types::Json))
        .execute(self.pool())
        .await?
        .rows_affected()
            == 1)
    }

    /// longtx's scan of a revision round's patch, once it is committed:
    /// the job shows the newest.
    pub async fn record_patch_check(
        &self,
        job_id: i64,
        check: &longtx_core::patch_check::PatchCheck,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE jobs SET patch_check = $2, updated_at = now() WHERE id = $1")
            .bind(job_id)
            .bind(sqlx::types::Json(check))
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Rounds whose run ended well, oldest first.
    pub async fn rounds_to_apply(&self) -> Result<Vec<RoundToApply>, StoreError> {
        let rows = sqlx::query(
            "SELECT r.job_id, r.round, r.run_id, r.run_url, COALESCE(r.base_sha, r.head_before) AS base_sha, \
                    r.commit_sha, j.pr_number, j.query_source \
             FROM revision_rounds r JOIN jobs j ON j.id = r.job_id \
             WHERE r.state = 'checking' AND (r.apply_next_at IS NULL OR r.apply_next_at <= now()) \
             ORDER BY r.job_id, r.round LIMIT 100",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(RoundToApply {
                    job_id: r.try_get("job_id")?,
                    round: r.try_get::<i32, _>("round")? as u32,
                    query_source: r.try_get("query_source")?,
                    run_id: r.try_get("run_id")?,
                    run_url: r.try_get("run_url")?,
                    base_sha: r.try_get("base_sha")?,
                    pr_number: r.try_get::<Option<i64>, _>("pr_number")?.unwrap_or(0) as u64,
                    commit_sha: r.try_get("commit_sha")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::Database)
    }

    /// Applying round `round` of `job_id` failed for a reason that may pass:
    /// the next try waits 10 s, doubling up to 10 minutes. The attempts so
    /// far.
    pub async fn round_apply_failed(&self, job_id: i64, round: u32) -> Result<i32, StoreError> {
        Ok(sqlx::query_scalar(
            "UPDATE revision_rounds SET apply_attempts = apply_attempts + 1, \
                 apply_next_at = now() + make_interval(secs => LEAST(10 * power(2, apply_attempts), 600)) \
             WHERE job_id = $1 AND round = $2 RETURNING apply_attempts",
        )
        .bind(job_id)
        .bind(round as i32)
        .fetch_optional(self.pool())
        .await?
        .unwrap_or(0))
    }

    /// The round's commit is made: kept before the round ends, so a retry
    /// never commits again.
    pub async fn record_round_commit(
        &self,
        job_id: i64,
        round: u32,
        sha: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE revision_rounds SET commit_sha = $3 WHERE job_id = $1 AND round = $2 AND state = 'checking'",
        )
        .bind(job_id)
        .bind(round as i32)
        .bind(sha)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The patch policy (or the patch itself) refused the round's result.
    pub async fn refuse_round(
        &self,
        job_id: i64,
        round: u32,
        reason: &str,
    ) -> Result<Option<RoundEnded>, StoreError> {
        let mut tx = self.begin().await?;
        lock_job(&mut tx, job_id).await?;
        let ended = end_round(&mut tx, job_id, round, RoundEnd::Refused, reason, None).await?;
        tx.commit().await?;
        Ok(ended)
    }

    /// Pre-reviews whose run was dispatched and whose verdict is not in.
    pub async fn running_pre_reviews(&self) -> Result<Vec<RunningPreReview>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, pre_review_head, pre_review_run_id, pre_review_started_at, query_source FROM jobs \
             WHERE pre_review_state = 'dispatched' AND state IN ('pre_review', 'in_review') ORDER BY id LIMIT 100",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(RunningPreReview {
                    job_id: r.try_get("id")?,
                    head_sha: r.try_get("pre_review_head")?,
                    run_id: r.try_get("pre_review_run_id")?,
                    started_at: r.try_get("pre_review_started_at")?,
                    query_source: r.try_get("query_source")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::Database)
    }

    /// A pre-review run found by name after the dispatch gave no id.
    pub async fn set_pre_review_run(
        &self,
        job_id: i64,
        head: &str,
        run_id: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE jobs SET pre_review_run_id = $3 WHERE id = $1 AND pre_review_head = $2 \
               AND pre_review_state = 'dispatched' AND pre_review_run_id IS NULL",
        )
        .bind(job_id)
        .bind(head)
        .bind(run_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Whether the job's token may fetch round `round`'s prompt now: only
    /// while that round's run (or the job's pre-review run, for round 0's
    /// prompt) is being dispatched or runs.
    pub async fn prompt_open(&self, job_id: i64, round: u32) -> Result<bool, StoreError> {
        let open: Option<bool> = if round == 0 {
            sqlx::query_scalar(
                "SELECT COALESCE(state IN ('dispatching', 'agent_running') \
                     OR (state IN ('pre_review', 'in_review') AND pre_review_state IN ('pending', 'dispatched')), false) \
                 FROM jobs WHERE id = $1",
            )
            .bind(job_id)
            .fetch_optional(self.pool())
            .await?
        } else {
            sqlx::query_scalar(
                "SELECT state IN ('dispatching', 'running') FROM revision_rounds WHERE job_id = $1 AND round = $2",
            )
            .bind(job_id)
            .bind(round as i32)
            .fetch_optional(self.pool())
            .await?
        };
        Ok(open.unwrap_or(false))
    }
}
