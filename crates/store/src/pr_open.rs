//! longtx opens each fix PR itself once the agent's run has pushed the
//! branch. A job whose run ended well is marked `pr_open_state = pending`
//! (by the `workflow_run` webhook or by the dispatcher's run poll, whichever
//! comes first); the PR opener claims it with a lease, talks to GitHub with
//! no connection held, and records the PR (or `no_pr`) here.

use crate::pulls::{apply, Applied, PrFacts};
use crate::{Store, StoreError};
use longtx_core::github_events::{PrEvent, ReviewGate};
use sqlx::Row;
use std::time::Duration;

/// A job whose PR is to be found or opened, as claimed by the opener.
#[derive(Debug, Clone)]
pub struct PrOpenClaim {
    pub job_id: i64,
    pub query_source: String,
    pub tables: Vec<String>,
    pub max_duration_seconds: Option<f64>,
    pub run_url: Option<String>,
    /// The ref the fix workflow ran on (the PR's base); `None` for jobs
    /// dispatched before longtx recorded it.
    pub dispatch_ref: Option<String>,
    pub attempts: i32,
    /// The run longtx dispatched, whose result is applied.
    pub run_id: Option<i64>,
    /// The commit the run started from (pinned at dispatch).
    pub base_sha: Option<String>,
    /// Set once longtx made round 0's commit.
    pub fix_commit_sha: Option<String>,
    pub agent_summary: Option<String>,
    /// longtx's scan of that commit's patch, when it ran.
    pub patch_check: Option<longtx_core::patch_check::PatchCheck>,
}

/// Marks a job still waiting for its PR as ready to have it opened.
pub(crate) async fn request(tx: &mut sqlx::PgConnection, job_id: i64) -> Result<bool, StoreError> {
    Ok(sqlx::query(
        "UPDATE jobs SET pr_open_state = 'pending', updated_at = now() \
         WHERE id = $1 AND state IN ('dispatching', 'agent_running') AND pr_open_state IS NULL",
    )
    .bind(job_id)
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1)
}

impl Store {
    /// The dispatcher's poll saw the run end well (a lost webhook changes
    /// nothing). True when the job was marked now.
    pub async fn request_pr_open(&self, job_id: i64) -> Result<bool, StoreError> {
        let mut conn = self.acquire().await?;
        request(&mut conn, job_id).await
    }

    /// Claims one job whose PR is to be opened, for `lease`.
    pub async fn claim_pr_open(&self, lease: Duration) -> Result<Option<PrOpenClaim>, StoreError> {
        let row = sqlx::query(
            "UPDATE jobs SET pr_open_lease_until = now() + make_interval(secs => $1), \
                 pr_open_attempts = pr_open_attempts + 1 \
             WHERE id = (SELECT id FROM jobs \
                         WHERE pr_open_state = 'pending' AND state IN ('dispatching', 'agent_running') \
                           AND (pr_open_lease_until IS NULL OR pr_open_lease_until < now()) \
                         ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING id, query_source, tables, max_duration_seconds, run_url, pr_open_attempts, \
                 run_id, base_sha, fix_commit_sha, agent_summary, patch_check, \
                 (SELECT request->>'ref' FROM dispatches d \
                   WHERE d.job_id = jobs.id AND NOT d.dry_run AND d.request ? 'ref' \
                   ORDER BY d.id DESC LIMIT 1) AS dispatch_ref",
        )
        .bind(lease.as_secs_f64())
        .fetch_optional(self.pool())
        .await?;
        row.map(|r| {
            Ok(PrOpenClaim {
                job_id: r.try_get("id")?,
                query_source: r.try_get("query_source")?,
                tables: r.try_get("tables")?,
                max_duration_seconds: r.try_get("max_duration_seconds")?,
                run_url: r.try_get("run_url")?,
                dispatch_ref: r
                    .try_get::<Option<String>, _>("dispatch_ref")?
                    .filter(|r| !r.starts_with('<')),
                attempts: r.try_get("pr_open_attempts")?,
                run_id: r.try_get("run_id")?,
                base_sha: r.try_get("base_sha")?,
                fix_commit_sha: r.try_get("fix_commit_sha")?,
                agent_summary: r.try_get("agent_summary")?,
                patch_check: r
                    .try_get::<Option<sqlx::types::Json<longtx_core::patch_check::PatchCheck>>, _>(
                        "patch_check",
                    )
                    // A value this build cannot read is no check.
                    .unwrap_or(None)
                    .map(|j| j.0),
            })
        })
        .transpose()
        .map_err(StoreError::Database)
    }

    /// The job's PR exists (opened now, or found from an earlier attempt):
    /// its facts and `event` (opened, or closed when found closed) apply as
    /// a webhook delivery would, and the opening is done.
    pub async fn record_pr_opened(
        &self,
        job_id: i64,
        pr: &PrFacts,
        event: &PrEvent,
        gate: ReviewGate,
        pattern: Option<&str>,
    ) -> Result<Applied, StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "UPDATE jobs SET pr_open_state = 'done', pr_open_lease_until = NULL, \
                 fix_pattern = COALESCE($2, fix_pattern) WHERE id = $1",
        )
        .bind(job_id)
        .bind(pattern)
        .execute(&mut *tx)
        .await?;
        let applied = apply(&mut tx, job_id, event, Some(pr), gate).await?;
        tx.commit().await?;
        Ok(applied)
    }

    /// The run pushed nothing to open a PR from: the job ends `no_pr` with
    /// `reason` (which names the run), unless it moved on meanwhile.
    pub async fn record_no_branch(&self, job_id: i64, reason: &str) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE jobs SET state = 'no_pr', state_reason = $2, ended_at = now(), updated_at = now(), \
                 pr_open_state = 'done', pr_open_lease_until = NULL, lease_until = NULL \
             WHERE id = $1 AND state IN ('dispatching', 'agent_running')",
        )
        .bind(job_id)
        .bind(reason)
        .execute(self.pool())
        .await?
        .rows_affected()
            == 1)
    }
}
