//! Scans of the default branch, for the backlog: one statement to record
//! a scan (and drop the oldest beyond what is kept), one read for the
//! newest scan and its baseline a week before.

use crate::{Store, StoreError};
use longtx_core::backlog::{BacklogFinding, BranchScan, BASELINE_AGE_DAYS};
use sqlx::Row;

/// Scans kept: hourly checks that record at most on a move or once a day.
const KEPT: i64 = 120;

impl Store {
    /// Records a scan of `branch` at `commit_sha`.
    pub async fn record_branch_scan(
        &self,
        branch: &str,
        commit_sha: &str,
        entry_points: usize,
        findings: &[BacklogFinding],
    ) -> Result<(), StoreError> {
        sqlx::query(
            "WITH added AS ( \
                 INSERT INTO branch_scans (branch, commit_sha, entry_points, findings) \
                 VALUES ($1, $2, $3, $4) RETURNING id) \
             DELETE FROM branch_scans WHERE id NOT IN \
                 (SELECT id FROM branch_scans ORDER BY id DESC LIMIT $5 - 1)",
        )
        .bind(branch)
        .bind(commit_sha)
        .bind(entry_points as i32)
        .bind(sqlx::types::Json(findings))
        .bind(KEPT)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The newest scan's commit and age in hours, to skip a scan of a
    /// branch that has not moved.
    pub async fn newest_branch_scan(&self) -> Result<Option<(String, f64)>, StoreError> {
        let row = sqlx::query(
            "SELECT commit_sha, EXTRACT(EPOCH FROM now() - scanned_at)::float8 / 3600 AS hours \
             FROM branch_scans ORDER BY id DESC LIMIT 1",
        )
        .fetch_optional(self.pool())
        .await?;
        Ok(row
            .map(|r| Ok::<_, sqlx::Error>((r.try_get("commit_sha")?, r.try_get("hours")?)))
            .transpose()?)
    }

    /// The newest scan, and the newest one at least a week older than it
    /// (else the oldest kept, when older than the newest): what the backlog
    /// is, and what counts as known.
    pub async fn branch_backlog(
        &self,
    ) -> Result<Option<(BranchScan, Option<BranchScan>)>, StoreError> {
        let rows = sqlx::query(
            "WITH newest AS (SELECT * FROM branch_scans ORDER BY id DESC LIMIT 1), \
             baseline AS ( \
                 (SELECT b.* FROM branch_scans b, newest n \
                  WHERE b.scanned_at <= n.scanned_at - make_interval(days => $1) \
                  ORDER BY b.scanned_at DESC LIMIT 1) \
                 UNION ALL \
                 (SELECT b.* FROM branch_scans b, newest n WHERE b.id < n.id \
                  ORDER BY b.scanned_at ASC LIMIT 1)) \
             SELECT 0 AS role, * FROM newest \
             UNION ALL (SELECT 1 AS role, * FROM baseline LIMIT 1) ORDER BY role",
        )
        .bind(BASELINE_AGE_DAYS as i32)
        .fetch_all(self.pool())
        .await?;
        let mut scans = rows
            .into_iter()
            .map(|r| {
                Ok(BranchScan {
                    branch: r.try_get("branch")?,
                    commit_sha: r.try_get("commit_sha")?,
                    scanned_at: r.try_get("scanned_at")?,
                    entry_points: r.try_get::<i32, _>("entry_points")? as usize,
                    findings: r
                        .try_get::<sqlx::types::Json<Vec<BacklogFinding>>, _>("findings")
                        // A row this build cannot read counts as no findings.
                        .map(|j| j.0)
                        .unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()?
            .into_iter();
        Ok(scans.next().map(|newest| (newest, scans.next())))
    }
}
