//! The won't-fix decision's state: requests from the label, the worker's
//! claims, and the sources declined this way (in force at once, on every
//! replica, before the ignore-list PR merges).

use crate::{Store, StoreError};
use longtx_core::IgnoreEntry;
use sqlx::Row;
use std::time::Duration;

/// A job whose won't-fix label is to be applied, as claimed by the worker.
#[derive(Debug, Clone)]
pub struct WontfixClaim {
    pub job_id: i64,
    pub query_source: String,
    pub pr_number: u64,
    pub pr_url: String,
    pub base_ref: String,
    pub labeler: String,
    pub run_id: Option<u64>,
    /// Runs of the rounds the decision cancelled, to cancel on GitHub.
    pub round_run_ids: Vec<u64>,
    pub attempts: i32,
}

/// A declined source, and whether its ignore-list PR has merged.
#[derive(Debug, Clone, PartialEq)]
pub struct IgnoredSource {
    pub entry: IgnoreEntry,
    pub job_id: Option<i64>,
    pub merged: bool,
}

/// How a won't-fix request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum WontfixOutcome<'a> {
    Done {
        entry: &'a IgnoreEntry,
        commit: &'a str,
    },
    Refused(&'a str),
    Failed(&'a str),
}

impl Store {
    /// Claims one pending won't-fix request for `lease`.
    pub async fn claim_wontfix(&self, lease: Duration) -> Result<Option<WontfixClaim>, StoreError> {
        let row = sqlx::query(
            "UPDATE jobs SET wontfix_lease_until = now() + make_interval(secs => $1), \
                 wontfix_attempts = wontfix_attempts + 1 \
             WHERE id = (SELECT id FROM jobs \
                         WHERE wontfix_state = 'pending' AND pr_number IS NOT NULL \
                           AND (wontfix_lease_until IS NULL OR wontfix_lease_until < now()) \
                         ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING id, query_source, pr_number, pr_url, pr_base_ref, wontfix_by, run_id, wontfix_attempts, \
                 ARRAY(SELECT r.run_id FROM revision_rounds r WHERE r.job_id = jobs.id AND r.run_id IS NOT NULL \
                         AND r.state = 'cancelled' AND r.state_reason = 'the PR was marked won''t fix') AS round_run_ids",
        )
        .bind(lease.as_secs_f64())
        .fetch_optional(self.pool())
        .await?;
        row.map(|row| {
            Ok(WontfixClaim {
                job_id: row.try_get("id")?,
                query_source: row.try_get("query_source")?,
                pr_number: row.try_get::<i64, _>("pr_number")? as u64,
                pr_url: row
                    .try_get::<Option<String>, _>("pr_url")?
                    .unwrap_or_default(),
                base_ref: row
                    .try_get::<Option<String>, _>("pr_base_ref")?
                    .unwrap_or_default(),
                labeler: row
                    .try_get::<Option<String>, _>("wontfix_by")?
                    .unwrap_or_default(),
                run_id: row.try_get::<Option<i64>, _>("run_id")?.map(|id| id as u64),
                round_run_ids: row
                    .try_get::<Vec<i64>, _>("round_run_ids")?
                    .into_iter()
                    .map(|id| id as u64)
                    .collect(),
                attempts: row.try_get("wontfix_attempts")?,
            })
        })
        .transpose()
    }

    /// Ends a request. `Done` moves the job to `wontfix` and records the
    /// source as ignored, in one transaction.
    pub async fn finish_wontfix(
        &self,
        job_id: i64,
        outcome: WontfixOutcome<'_>,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        match outcome {
            WontfixOutcome::Done { entry, commit } => {
                sqlx::query(
                    "UPDATE jobs SET state = 'wontfix', state_reason = NULL, wontfix_state = 'done', \
                         wontfix_commit = $2, wontfix_detail = NULL, wontfix_lease_until = NULL, \
                         ended_at = COALESCE(ended_at, now()), lease_until = NULL, updated_at = now() \
                     WHERE id = $1",
                )
                .bind(job_id)
                .bind(commit)
                .execute(&mut *tx)
                .await?;
                sqlx::query(
                    "INSERT INTO ignored_sources (query_source, entry, job_id) VALUES ($1, $2, $3) \
                     ON CONFLICT (query_source) DO UPDATE SET entry = EXCLUDED.entry, \
                         job_id = EXCLUDED.job_id, merged = false, added_at = now()",
                )
                .bind(&entry.query_source)
                .bind(sqlx::types::Json(entry))
                .bind(job_id)
                .execute(&mut *tx)
                .await?;
            }
            WontfixOutcome::Refused(detail) | WontfixOutcome::Failed(detail) => {
                let state = if matches!(outcome, WontfixOutcome::Refused(_)) {
                    "refused"
                } else {
                    "failed"
                };
                sqlx::query(
                    "UPDATE jobs SET wontfix_state = $2, wontfix_detail = $3, wontfix_lease_until = NULL, \
                         updated_at = now() WHERE id = $1",
                )
                .bind(job_id)
                .bind(state)
                .bind(detail)
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn ignored_sources(&self) -> Result<Vec<IgnoredSource>, StoreError> {
        let rows = sqlx::query(
            "SELECT entry, job_id, merged FROM ignored_sources ORDER BY added_at, query_source",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(IgnoredSource {
                    entry: row.try_get::<sqlx::types::Json<IgnoreEntry>, _>("entry")?.0,
                    job_id: row.try_get("job_id")?,
                    merged: row.try_get("merged")?,
                })
            })
            .collect()
    }

    /// Forgets declined sources whose PR merged and whose entry the base
    /// branch's list no longer has: someone undid the decision by PR.
    pub async fn forget_ignored(&self, sources: &[String]) -> Result<u64, StoreError> {
        let deleted =
            sqlx::query("DELETE FROM ignored_sources WHERE merged AND query_source = ANY($1)")
                .bind(sources)
                .execute(self.pool())
                .await?
                .rows_affected();
        Ok(deleted)
    }
}

/// In the delivery's transaction: the label asks for won't-fix, unless a
/// request for this job is already pending or done.
pub(crate) async fn request(
    tx: &mut sqlx::PgConnection,
    job_id: i64,
    by: &str,
) -> Result<bool, StoreError> {
    let updated = sqlx::query(
        "UPDATE jobs SET wontfix_state = 'pending', wontfix_by = $2, wontfix_detail = NULL, \
             wontfix_lease_until = NULL, wontfix_attempts = 0, updated_at = now() \
         WHERE id = $1 AND pr_number IS NOT NULL AND state NOT IN ('merged', 'verified', 'regressed') \
           AND (wontfix_state IS NULL OR wontfix_state IN ('refused', 'failed'))",
    )
    .bind(job_id)
    .bind(by)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if updated == 1 {
        // A declined fix gets no more rounds: an open one ends now, and the
        // worker cancels its run on GitHub (`round_run_ids`).
        sqlx::query(&format!(
            "UPDATE revision_rounds SET state = 'cancelled', ended_at = now(), lease_until = NULL, \
                 state_reason = 'the PR was marked won''t fix' \
             WHERE job_id = $1 AND state IN {}",
            crate::rounds::OPEN_ROUND
        ))
        .bind(job_id)
        .execute(&mut *tx)
        .await?;
    }
    Ok(updated == 1)
}

/// In the delivery's transaction: the ignore-list PR of a declined job
/// closed. Merged, the entry now lives on the base branch; closed unmerged,
/// the decision is abandoned and the source is proposed again.
pub(crate) async fn pr_closed(
    tx: &mut sqlx::PgConnection,
    job_id: i64,
    merged: bool,
) -> Result<(), StoreError> {
    let sql = if merged {
        "UPDATE ignored_sources SET merged = true WHERE job_id = $1"
    } else {
        "DELETE FROM ignored_sources WHERE job_id = $1"
    };
    sqlx::query(sql).bind(job_id).execute(&mut *tx).await?;
    Ok(())
}
