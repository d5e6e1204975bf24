//! The "long transactions" check of pull requests: one request per head
//! commit, claimed by the checker with a lease and recorded once its check
//! run exists. Each call is one statement: nothing here is held while the
//! checker fetches, scans or talks to GitHub.

use crate::{Store, StoreError};
use sqlx::Row;
use std::time::Duration;

/// A head commit to check, as claimed.
#[derive(Debug, Clone, PartialEq)]
pub struct PrCheckClaim {
    pub id: i64,
    pub pr_number: u64,
    pub head_sha: String,
    pub base_ref: String,
    pub base_sha: String,
    pub attempts: i32,
}

/// How a check ended.
#[derive(Debug, Clone, PartialEq)]
pub enum PrCheckEnd {
    Posted {
        check_run_id: u64,
        conclusion: String,
        findings: usize,
    },
    /// The PR's head moved on before this commit could be fetched.
    Superseded,
    Failed(String),
}

/// A request as `/api/pr-checks` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PrCheckRow {
    pub id: i64,
    pub pr_number: i64,
    pub head_sha: String,
    pub state: String,
    pub attempts: i32,
    pub check_run_id: Option<i64>,
    pub conclusion: Option<String>,
    pub findings: Option<i32>,
    pub error: Option<String>,
    pub requested_at: chrono::DateTime<chrono::Utc>,
    pub ended_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl Store {
    /// Asks for a check of `head_sha`; false when that commit was asked
    /// for already (a redelivery, a reopened PR, another PR of the commit).
    /// A check of the same PR still waiting for an older head is
    /// superseded, so a burst of pushes costs one scan, not one per push.
    pub async fn request_pr_check(
        &self,
        pr_number: u64,
        head_sha: &str,
        base_ref: &str,
        base_sha: &str,
    ) -> Result<bool, StoreError> {
        let inserted = sqlx::query(
            "WITH older AS ( \
                 UPDATE pr_checks SET state = 'superseded', lease_until = NULL, ended_at = now() \
                 WHERE pr_number = $1 AND head_sha <> $2 AND state = 'pending') \
             INSERT INTO pr_checks (pr_number, head_sha, base_ref, base_sha) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (head_sha) DO NOTHING",
        )
        .bind(pr_number as i64)
        .bind(head_sha)
        .bind(base_ref)
        .bind(base_sha)
        .execute(self.pool())
        .await?
        .rows_affected();
        Ok(inserted == 1)
    }

    /// Claims the oldest pending check for `lease`.
    pub async fn claim_pr_check(
        &self,
        lease: Duration,
    ) -> Result<Option<PrCheckClaim>, StoreError> {
        let row = sqlx::query(
            "UPDATE pr_checks SET lease_until = now() + make_interval(secs => $1), \
                 attempts = attempts + 1 \
             WHERE id = (SELECT id FROM pr_checks WHERE state = 'pending' \
                           AND (lease_until IS NULL OR lease_until < now()) \
                         ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING id, pr_number, head_sha, base_ref, base_sha, attempts",
        )
        .bind(lease.as_secs_f64())
        .fetch_optional(self.pool())
        .await?;
        row.map(|r| {
            Ok(PrCheckClaim {
                id: r.try_get("id")?,
                pr_number: r.try_get::<i64, _>("pr_number")? as u64,
                head_sha: r.try_get("head_sha")?,
                base_ref: r.try_get("base_ref")?,
                base_sha: r.try_get("base_sha")?,
                attempts: r.try_get("attempts")?,
            })
        })
        .transpose()
        .map_err(StoreError::Database)
    }

    /// Records how check `id` ended.
    pub async fn end_pr_check(&self, id: i64, end: &PrCheckEnd) -> Result<(), StoreError> {
        let (state, run, conclusion, findings, error) = match end {
            PrCheckEnd::Posted {
                check_run_id,
                conclusion,
                findings,
            } => (
                "posted",
                Some(*check_run_id as i64),
                Some(conclusion.as_str()),
                Some(*findings as i32),
                None,
            ),
            PrCheckEnd::Superseded => ("superseded", None, None, None, None),
            PrCheckEnd::Failed(why) => ("failed", None, None, None, Some(why.as_str())),
        };
        sqlx::query(
            "UPDATE pr_checks SET state = $2, check_run_id = COALESCE($3, check_run_id), \
                 conclusion = $4, findings = $5, error = $6, lease_until = NULL, ended_at = now() \
             WHERE id = $1",
        )
        .bind(id)
        .bind(state)
        .bind(run)
        .bind(conclusion)
        .bind(findings)
        .bind(error)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The newest checks, newest first.
    pub async fn recent_pr_checks(&self, limit: i64) -> Result<Vec<PrCheckRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, pr_number, head_sha, state, attempts, check_run_id, conclusion, findings, \
                 error, requested_at, ended_at FROM pr_checks ORDER BY id DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|r| {
                Ok(PrCheckRow {
                    id: r.try_get("id")?,
                    pr_number: r.try_get("pr_number")?,
                    head_sha: r.try_get("head_sha")?,
                    state: r.try_get("state")?,
                    attempts: r.try_get("attempts")?,
                    check_run_id: r.try_get("check_run_id")?,
                    conclusion: r.try_get("conclusion")?,
                    findings: r.try_get("findings")?,
                    error: r.try_get("error")?,
                    requested_at: r.try_get("requested_at")?,
                    ended_at: r.try_get("ended_at")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::Database)
    }
}
