//! Revision rounds' state. A round is a dispatch like a job's first run: it
//! is claimed under the same lock and caps (see `dispatch.rs`), dispatched
//! with no connection held, and recorded after. Its run's end (webhook or
//! poll) and the branch head read after a good run end it here, with what
//! that means for the job.

use crate::pre_review::schedule;
use crate::{Store, StoreError};
use longtx_core::revision::{Budget, Finding, Trigger};
use longtx_core::JobState;
use serde::Serialize;
use sqlx::Row;
use std::time::Duration;

/// States of a round that is not over.
pub(crate) const OPEN_ROUND: &str = "('queued', 'dispatching', 'running', 'checking')";

/// A round the dispatcher now owns until its lease runs out.
#[derive(Debug, Clone)]
pub struct RoundClaim {
    pub job_id: i64,
    pub round: u32,
    pub query_source: String,
    pub tables: Vec<String>,
    pub max_duration_seconds: Option<f64>,
    pub prompt_token: String,
    pub pr_number: u64,
    pub trigger: Trigger,
    pub requested_by: Option<String>,
    pub findings: Vec<Finding>,
    pub request: String,
    /// The job's first prompt, which the round's prompt builds on.
    pub original_prompt: String,
    /// `None` until the round's prompt is rendered (first claim).
    pub prompt_sha256: Option<String>,
    pub attempts: i32,
    /// When the round's first dispatch claim began.
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// The branch head pinned for the round to start from, once pinned.
    pub base_sha: Option<String>,
}

/// A round to begin.
#[derive(Debug, Clone)]
pub(crate) struct NewRound<'a> {
    pub trigger: Trigger,
    pub request_id: Option<i64>,
    pub requested_by: Option<&'a str>,
    pub mode: &'a str,
    pub head_before: &'a str,
    pub findings: &'a [Finding],
    pub request: &'a str,
}

/// How a round ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundEnd {
    Pushed,
    NoChange,
    /// The patch policy refused what the run proposed.
    Refused,
    Failed,
    Expired,
}

impl RoundEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            RoundEnd::Pushed => "pushed",
            RoundEnd::NoChange => "no_change",
            RoundEnd::Refused => "refused",
            RoundEnd::Failed => "failed",
            RoundEnd::Expired => "expired",
        }
    }
}

/// What ending a round did to its job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundEnded {
    pub end: RoundEnd,
    /// The job's new state, when it moved (closed, or handed to people).
    pub job_moved_to: Option<JobState>,
    /// The new head waits for a pre-review run.
    pub pre_review_scheduled: bool,
}

/// One round, for the job page and the API.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RoundRow {
    pub round: i32,
    pub trigger: String,
    pub requested_by: Option<String>,
    pub state: String,
    pub state_reason: Option<String>,
    pub findings: serde_json::Value,
    pub run_url: Option<String>,
    pub head_before: String,
    pub head_after: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub ended_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// The job's rounds so far (`max` from `LONGTX_MAX_REVISIONS`).
pub(crate) async fn budget(
    tx: &mut sqlx::PgConnection,
    job_id: i64,
    max: u32,
) -> Result<Budget, StoreError> {
    let row = sqlx::query(&format!(
        "SELECT count(*) FILTER (WHERE trigger = 'pre_review' AND state <> 'cancelled') AS ai, \
                count(*) FILTER (WHERE trigger <> 'pre_review' AND state <> 'cancelled') AS human, \
                max(round) FILTER (WHERE state IN {OPEN_ROUND}) AS open, \
                (SELECT revisions_stopped_by IS NOT NULL FROM jobs WHERE id = $1) AS stopped \
         FROM revision_rounds WHERE job_id = $1"
    ))
    .bind(job_id)
    .fetch_one(&mut *tx)
    .await?;
    Ok(Budget {
        ai_rounds: row.try_get::<i64, _>("ai")? as u32,
        human_rounds: row.try_get::<i64, _>("human")? as u32,
        max,
        stopped: row.try_get::<Option<bool>, _>("stopped")?.unwrap_or(false),
        open_round: row.try_get::<Option<i32>, _>("open")?.map(|r| r as u32),
    })
}

/// Begins the job's next round, unless one is open already. The caller
/// holds the job's row lock, so the numbering cannot race.
pub(crate) async fn start_round(
    tx: &mut sqlx::PgConnection,
    job_id: i64,
    new: &NewRound<'_>,
) -> Result<Option<u32>, StoreError> {
    let round: Option<i32> = sqlx::query_scalar(
        "INSERT INTO revision_rounds (job_id, round, trigger, request_id, requested_by, mode, head_before, findings, request) \
         SELECT $1, COALESCE(max(round), 0) + 1, $2, $3, $4, $5, $6, $7, $8 FROM revision_rounds WHERE job_id = $1 \
         ON CONFLICT DO NOTHING RETURNING round",
    )
    .bind(job_id)
    .bind(new.trigger.as_str())
    .bind(new.request_id)
    .bind(new.requested_by)
    .bind(new.mode)
    .bind(new.head_before)
    .bind(serde_json::to_value(new.findings).expect("findings serialise"))
    .bind(new.request)
    .fetch_optional(&mut *tx)
    .await?;
    Ok(round.map(|r| r as u32))
}

/// Claims round `round` of `job_id` for dispatching (inside the dispatch
/// claim's transaction).
pub(crate) async fn claim(
    tx: &mut sqlx::PgConnection,
    job_id: i64,
    round: i32,
    lease: Duration,
) -> Result<RoundClaim, StoreError> {
    let r = sqlx::query(
        "WITH claimed AS ( \
             UPDATE revision_rounds SET state = 'dispatching', state_reason = NULL, \
                 lease_until = now() + make_interval(secs => $3::float8), dispatch_attempts = dispatch_attempts + 1, \
                 dispatch_started_at = COALESCE(dispatch_started_at, now()) \
             WHERE job_id = $1 AND round = $2 RETURNING *) \
         SELECT c.round, c.trigger, c.requested_by, c.findings, c.request, c.prompt_sha256, c.dispatch_attempts, \
                c.dispatch_started_at, c.base_sha, \
                j.id, j.query_source, j.tables, j.max_duration_seconds, j.prompt_token, j.pr_number, j.prompt \
         FROM claimed c JOIN jobs j ON j.id = c.job_id",
    )
    .bind(job_id)
    .bind(round)
    .bind(lease.as_secs_f64())
    .fetch_one(&mut *tx)
    .await?;
    let trigger: String = r.try_get("trigger")?;
    let findings: serde_json::Value = r.try_get("findings")?;
    Ok(RoundClaim {
        job_id: r.try_get("id")?,
        round: r.try_get::<i32, _>("round")? as u32,
        query_source: r.try_get("query_source")?,
        tables: r.try_get("tables")?,
        max_duration_seconds: r.try_get("max_duration_seconds")?,
        prompt_token: r
            .try_get::<Option<String>, _>("prompt_token")?
            .unwrap_or_default(),
        pr_number: r.try_get::<Option<i64>, _>("pr_number")?.unwrap_or(0) as u64,
        trigger: Trigger::parse(&trigger).unwrap_or(Trigger::PreReview),
        requested_by: r.try_get("requested_by")?,
        findings: serde_json::from_value(findings).unwrap_or_default(),
        request: r.try_get("request")?,
        original_prompt: r
            .try_get::<Option<String>, _>("prompt")?
            .unwrap_or_default(),
        prompt_sha256: r.try_get("prompt_sha256")?,
        attempts: r.try_get("dispatch_attempts")?,
        started_at: r.try_get("dispatch_started_at")?,
        base_sha: r.try_get("base_sha")?,
    })
}

/// Ends a round and applies what that means for its job:
/// - pushed: the PR's new head is recorded and, where the pre-review is in
///   use, waits for its verdict;
/// - a pre-review round in `on` mode that pushed nothing closes the PR (the
///   agent could not act on the findings); one whose run failed or expired
///   hands the PR to people (a broken run is no judgement of the fix);
/// - anything else leaves the job where it is.
pub(crate) async fn end_round(
    tx: &mut sqlx::PgConnection,
    job_id: i64,
    round: u32,
    end: RoundEnd,
    reason: &str,
    head_after: Option<&str>,
) -> Result<Option<RoundEnded>, StoreError> {
    lock_job(tx, job_id).await?;
    let Some(row) = sqlx::query(&format!(
        "UPDATE revision_rounds SET state = $3, state_reason = $4, head_after = $5, ended_at = now(), lease_until = NULL \
         WHERE job_id = $1 AND round = $2 AND state IN {OPEN_ROUND} RETURNING trigger, mode"
    ))
    .bind(job_id)
    .bind(round as i32)
    .bind(end.as_str())
    .bind(reason)
    .bind(head_after)
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(None);
    };
    let trigger: String = row.try_get("trigger")?;
    let mode: String = row.try_get("mode")?;
    let job = sqlx::query("SELECT state, pre_review_state FROM jobs WHERE id = $1 FOR UPDATE")
        .bind(job_id)
        .fetch_one(&mut *tx)
        .await?;
    let state: JobState = job
        .try_get::<String, _>("state")?
        .parse()
        .map_err(|e: longtx_core::job::UnknownState| sqlx::Error::Decode(e.into()))?;
    let uses_pre_review = job
        .try_get::<Option<String>, _>("pre_review_state")?
        .is_some();
    let open = matches!(state, JobState::PreReview | JobState::InReview);
    let mut ended = RoundEnded {
        end,
        job_moved_to: None,
        pre_review_scheduled: false,
    };
    let ai_round_gates = trigger == "pre_review" && mode == "on" && state == JobState::PreReview;
    match end {
        RoundEnd::Pushed => {
            let head = head_after.unwrap_or_default();
            sqlx::query("UPDATE jobs SET pr_head_sha = $2, updated_at = now() WHERE id = $1")
                .bind(job_id)
                .bind(head)
                .execute(&mut *tx)
                .await?;
            if open && uses_pre_review {
                schedule(tx, job_id, head).await?;
                ended.pre_review_scheduled = true;
            }
        }
        RoundEnd::NoChange if ai_round_gates => {
            sqlx::query(
                "UPDATE jobs SET state = 'rejected_by_review', state_reason = $2, ended_at = now(), updated_at = now(), \
                     pre_review_close = 'pending', pre_review_lease_until = NULL WHERE id = $1",
            )
            .bind(job_id)
            .bind(format!(
                "revision round {round} pushed nothing: the agent could not act on the pre-review's findings"
            ))
            .execute(&mut *tx)
            .await?;
            ended.job_moved_to = Some(JobState::RejectedByReview);
        }
        RoundEnd::Failed | RoundEnd::Expired | RoundEnd::Refused if ai_round_gates => {
            sqlx::query(
                "UPDATE jobs SET state = 'in_review', state_reason = $2, updated_at = now(), \
                     reviewers_state = COALESCE(reviewers_state, 'pending') WHERE id = $1",
            )
            .bind(job_id)
            .bind(format!(
                "revision round {round} ended without a change ({reason}); people are asked"
            ))
            .execute(&mut *tx)
            .await?;
            ended.job_moved_to = Some(JobState::InReview);
        }
        _ => {}
    }
    Ok(Some(ended))
}

/// Every transaction that changes a round locks its job's row first: the
/// webhook's transaction does (it locks the job, then the round), and a
/// round row locked before its job (a dispatch's FK insert takes a share
/// lock on the job) would deadlock against it.
pub(crate) async fn lock_job(tx: &mut sqlx::PgConnection, job_id: i64) -> Result<(), StoreError> {
    sqlx::query("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE")
        .bind(job_id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// A fix run of round `round` completed (webhook or poll).
pub(crate) async fn run_completed(
    tx: &mut sqlx::PgConnection,
    job_id: i64,
    round: u32,
    success: bool,
    detail: &str,
) -> Result<Option<RoundEnded>, StoreError> {
    lock_job(tx, job_id).await?;
    if success {
        // The branch head is read next (with no connection held).
        sqlx::query(
            "UPDATE revision_rounds SET state = 'checking', state_reason = $3, lease_until = NULL \
             WHERE job_id = $1 AND round = $2 AND state IN ('dispatching', 'running')",
        )
        .bind(job_id)
        .bind(round as i32)
        .bind(detail)
        .execute(&mut *tx)
        .await?;
        return Ok(None);
    }
    end_round(tx, job_id, round, RoundEnd::Failed, detail, None).await
}

impl Store {
    pub async fn set_round_prompt(
        &self,
        job_id: i64,
        round: u32,
        prompt: &str,
        sha256: &str,
    ) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE revision_rounds SET prompt = $3, prompt_sha256 = $4 \
             WHERE job_id = $1 AND round = $2 AND state = 'dispatching'",
        )
        .bind(job_id)
        .bind(round as i32)
        .bind(prompt)
        .bind(sha256)
        .execute(self.pool())
        .await?
        .rows_affected()
            == 1)
    }

    /// The round's run was dispatched (or found): it runs.
    pub async fn record_round_dispatched(
        &self,
        job_id: i64,
        round: u32,
        run_id: Option<i64>,
        run_url: Option<&str>,
        request: &serde_json::Value,
        outcome: &str,
        budget_usd: f64,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        lock_job(&mut tx, job_id).await?;
        let moved = sqlx::query(
            "UPDATE revision_rounds SET state = 'running', run_id = COALESCE($3, run_id), run_url = COALESCE($4, run_url), \
                 dispatched_at = COALESCE(dispatched_at, now()), lease_until = NULL \
             WHERE job_id = $1 AND round = $2 AND state = 'dispatching'",
        )
        .bind(job_id)
        .bind(round as i32)
        .bind(run_id)
        .bind(run_url)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        crate::dispatch::insert_dispatch(&mut tx, job_id, false, request, outcome, run_id).await?;
        crate::budgets::count(
            &mut tx,
            job_id,
            crate::BudgetedRun::Round(round),
            budget_usd,
        )
        .await?;
        tx.commit().await?;
        Ok(moved)
    }

    /// GitHub refused the round's dispatch for good.
    pub async fn record_round_dispatch_failed(
        &self,
        job_id: i64,
        round: u32,
        error: &str,
        request: &serde_json::Value,
    ) -> Result<Option<RoundEnded>, StoreError> {
        let mut tx = self.begin().await?;
        let ended = end_round(&mut tx, job_id, round, RoundEnd::Failed, error, None).await?;
        crate::dispatch::insert_dispatch(
            &mut tx,
            job_id,
            false,
            request,
            &format!("failed: {error}"),
            None,
        )
        .await?;
        tx.commit().await?;
        Ok(ended)
    }

    pub async fn renew_round_lease(
        &self,
        job_id: i64,
        round: u32,
        lease: Duration,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE revision_rounds SET lease_until = now() + make_interval(secs => $3::float8) \
             WHERE job_id = $1 AND round = $2 AND state = 'dispatching'",
        )
        .bind(job_id)
        .bind(round as i32)
        .bind(lease.as_secs_f64())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Rounds whose run goes: (job, round, run id, dispatched more than
    /// `timeout` ago).
    pub async fn running_rounds(
        &self,
        timeout: Duration,
    ) -> Result<Vec<(i64, u32, Option<i64>, bool)>, StoreError> {
        let rows = sqlx::query(
            "SELECT job_id, round, run_id, dispatched_at < now() - make_interval(secs => $1::float8) AS overdue \
             FROM revision_rounds WHERE state = 'running' ORDER BY job_id, round LIMIT 200",
        )
        .bind(timeout.as_secs_f64())
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("job_id")?,
                    r.try_get::<i32, _>("round")? as u32,
                    r.try_get("run_id")?,
                    r.try_get::<Option<bool>, _>("overdue")?.unwrap_or(false),
                ))
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::Database)
    }

    /// The poll saw a round's run complete.
    pub async fn record_round_run_completed(
        &self,
        job_id: i64,
        round: u32,
        success: bool,
        detail: &str,
    ) -> Result<Option<RoundEnded>, StoreError> {
        let mut tx = self.begin().await?;
        let ended = run_completed(&mut tx, job_id, round, success, detail).await?;
        tx.commit().await?;
        Ok(ended)
    }

    /// Ends an open round that outlived the agent timeout.
    pub async fn expire_round(
        &self,
        job_id: i64,
        round: u32,
        reason: &str,
    ) -> Result<Option<RoundEnded>, StoreError> {
        let mut tx = self.begin().await?;
        let ended = end_round(&mut tx, job_id, round, RoundEnd::Expired, reason, None).await?;
        tx.commit().await?;
        Ok(ended)
    }

    /// The branch head after a round's good run: a new head means the
    /// round pushed; the same head (or no branch), that it changed nothing.
    pub async fn record_round_head(
        &self,
        job_id: i64,
        round: u32,
        head: Option<&str>,
    ) -> Result<Option<RoundEnded>, StoreError> {
        let mut tx = self.begin().await?;
        lock_job(&mut tx, job_id).await?;
        let before: Option<String> = sqlx::query_scalar(
            "SELECT head_before FROM revision_rounds WHERE job_id = $1 AND round = $2 AND state = 'checking' FOR UPDATE",
        )
        .bind(job_id)
        .bind(round as i32)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(before) = before else {
            return Ok(None);
        };
        let ended = match head {
            Some(head) if head != before => {
                end_round(
                    &mut tx,
                    job_id,
                    round,
                    RoundEnd::Pushed,
                    "new commits pushed",
                    Some(head),
                )
                .await?
            }
            _ => {
                end_round(
                    &mut tx,
                    job_id,
                    round,
                    RoundEnd::NoChange,
                    "the run pushed no commit",
                    head,
                )
                .await?
            }
        };
        tx.commit().await?;
        Ok(ended)
    }

    /// A round's prompt and its job's token (the run fetches it).
    pub async fn round_prompt(
        &self,
        job_id: i64,
        round: u32,
    ) -> Result<Option<(Option<String>, Option<String>)>, StoreError> {
        let row = sqlx::query(
            "SELECT r.prompt, j.prompt_token FROM revision_rounds r JOIN jobs j ON j.id = r.job_id \
             WHERE r.job_id = $1 AND r.round = $2",
        )
        .bind(job_id)
        .bind(round as i32)
        .fetch_optional(self.pool())
        .await?;
        row.map(|r| Ok((r.try_get("prompt")?, r.try_get("prompt_token")?)))
            .transpose()
            .map_err(StoreError::Database)
    }

    pub async fn rounds_of(&self, job_id: i64) -> Result<Vec<RoundRow>, StoreError> {
        let mut conn = self.acquire().await?;
        rounds_on(&mut conn, job_id).await
    }

    /// Alerts counted against ended jobs, and by the state of those jobs:
    /// for `/metrics` (`merged` recurrences are the ones within the grace).
    pub async fn recurrence_counts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = sqlx::query(
            "SELECT state, sum(recurrence_count)::bigint AS n FROM jobs WHERE recurrence_count > 0 GROUP BY 1 ORDER BY 1",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("state")?, r.try_get("n")?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::Database)
    }

    /// Rounds by what started them and how they stand: for `/metrics`.
    pub async fn round_counts(&self) -> Result<Vec<(String, String, i64)>, StoreError> {
        let rows = sqlx::query(
            "SELECT trigger, state, count(*) AS n FROM revision_rounds GROUP BY 1, 2 ORDER BY 1, 2",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("trigger")?, r.try_get("state")?, r.try_get("n")?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::Database)
    }
}

pub(crate) async fn rounds_on(
    conn: &mut sqlx::PgConnection,
    job_id: i64,
) -> Result<Vec<RoundRow>, StoreError> {
    Ok(sqlx::query_as::<_, RoundRow>(
        "SELECT round, trigger, requested_by, state, state_reason, findings, run_url, head_before, head_after, \
                created_at, ended_at FROM revision_rounds WHERE job_id = $1 ORDER BY round",
    )
    .bind(job_id)
    .fetch_all(&mut *conn)
    .await?)
}

/// Fix PRs by how many revision rounds they took (3 stands for 3 or more):
/// for the dashboard.
pub(crate) async fn prs_by_rounds(
    conn: &mut sqlx::PgConnection,
) -> Result<Vec<(i32, i64)>, StoreError> {
    let rows = sqlx::query(
        "SELECT LEAST(COALESCE(r.n, 0), 3)::int AS rounds, count(*) AS prs FROM jobs j \
         LEFT JOIN (SELECT job_id, count(*) AS n FROM revision_rounds WHERE state <> 'cancelled' GROUP BY job_id) r \
           ON r.job_id = j.id \
         WHERE j.pr_number IS NOT NULL GROUP BY 1 ORDER BY 1",
    )
    .fetch_all(&mut *conn)
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get("rounds")?, r.try_get("prs")?)))
        .collect::<Result<_, sqlx::Error>>()
        .map_err(StoreError::Database)
}
