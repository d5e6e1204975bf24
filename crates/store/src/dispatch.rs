//! The dispatcher's state: claims with a lease, caps, the pause switch, and
//! the record of each dispatch. Every method is one short transaction; the
//! GitHub call happens between them with no connection held.

use crate::{Store, StoreError};
use serde::Serialize;
use sqlx::Row;
use std::time::Duration;

/// Serialises claims across replicas so the caps are never overshot.
const CLAIM_LOCK: i64 = 0x6c6f_6e67_7478; // "longtx"

#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Runs sent since midnight UTC (fix runs, rounds and pre-reviews).
    pub max_per_day: i64,
    pub max_running: i64,
    /// `LONGTX_MAX_COST_PER_DAY`: US dollars of agent budget counted since
    /// midnight UTC past which nothing more is dispatched today.
    pub max_cost_per_day: Option<f64>,
    /// `LONGTX_RUN_BUDGET_USD`: what one fix run or round counts.
    pub run_budget_usd: f64,
    /// `LONGTX_PRE_REVIEW_BUDGET_USD`: what one pre-review run counts.
    pub pre_review_budget_usd: f64,
}

/// The budgets the shipped templates give a run (`--max-budget-usd`).
pub const DEFAULT_RUN_BUDGET_USD: f64 = 5.0;
pub const DEFAULT_PRE_REVIEW_BUDGET_USD: f64 = 2.0;

/// A job the caller now owns until `lease` runs out.
#[derive(Debug, Clone)]
pub struct ClaimedJob {
    pub id: i64,
    pub query_source: String,
    pub tables: Vec<String>,
    pub max_duration_seconds: Option<f64>,
    pub prompt_sha256: String,
    pub prompt_token: String,
    /// More than one: an earlier claim may already have dispatched a run,
    /// so look for it before dispatching again.
    pub attempts: i32,
    /// When the first claim began: only runs created after it are ours.
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// The commit pinned for the run to start from, once pinned.
    pub base_sha: Option<String>,
    /// The files its prompt located: whom a fix would ask for review.
    pub located_paths: Vec<String>,
}

#[derive(Debug, Clone)]
pub enum Claim {
    Job(ClaimedJob),
    /// A revision round of a job whose PR is open.
    Round(crate::RoundClaim),
    /// Nothing is waiting.
    Idle,
    /// Jobs wait, and this is why (a cap or the pause).
    Blocked(String),
}

#[derive(Debug, Clone, Serialize)]
pub struct DispatchStatus {
    pub paused: bool,
    /// Jobs dispatched since midnight UTC.
    pub dispatched_today: i64,
    /// Claimed and not yet dispatched: they count against the daily cap.
    pub in_flight: i64,
    /// Dispatching or with an agent running.
    pub running: i64,
    pub queued: i64,
    /// Agent cost reported since midnight UTC, US dollars (each run's
    /// report clamped to its budget): shown, not acted on.
    pub cost_today_usd: f64,
    /// Budgets of the runs sent since midnight UTC: what the cost cap
    /// counts.
    pub budget_today_usd: f64,
}

impl Store {
    /// Claims the next dispatch: a job or revision round whose dispatcher
    /// died (its lease ran out), else a queued round (people wait on its
    /// PR), else the queued job with a prompt that ranks first by impact
    /// and age (`longtx_core::impact`; jobs waiting for reviewer capacity
    /// sit out until something ends or a few minutes pass). Caps and the pause hold back
    /// queued work, whose `state_reason` then says why.
    pub async fn claim_dispatch(
        &self,
        caps: Caps,
        lease: Duration,
        new_token: &str,
        policy: &longtx_core::IntakePolicy,
    ) -> Result<Claim, StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(CLAIM_LOCK)
            .execute(&mut *tx)
            .await?;
        let expired = sqlx::query(
            "SELECT id FROM jobs WHERE state = 'dispatching' AND lease_until < now() \
             ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
        )
        .fetch_optional(&mut *tx)
        .await?;
        let id: Option<i64> = match expired {
            Some(row) => Some(row.try_get("id")?),
            None => {
                // A round waits only while its PR is open.
                sqlx::query(
                    "UPDATE revision_rounds r SET state = 'cancelled', ended_at = now(), \
                         state_reason = 'the PR was no longer open when the round could start' \
                     FROM jobs j WHERE j.id = r.job_id AND r.state = 'queued' \
                       AND j.state NOT IN ('pre_review', 'in_review')",
                )
                .execute(&mut *tx)
                .await?;
                let round = sqlx::query(
                    "SELECT job_id, round, state FROM revision_rounds \
                     WHERE (state = 'dispatching' AND lease_until < now()) OR state = 'queued' \
                     ORDER BY state = 'queued', job_id, round LIMIT 1 FOR UPDATE SKIP LOCKED",
                )
                .fetch_optional(&mut *tx)
                .await?;
                let status = dispatch_counts(&mut tx).await?;
                let blocked = blocked_reason(&status, caps);
                if let Some(r) = &round {
                    let queued = r.try_get::<String, _>("state")? == "queued";
                    if !queued || blocked.is_none() {
                        let claim = crate::rounds::claim(
                            &mut tx,
                            r.try_get("job_id")?,
                            r.try_get("round")?,
                            lease,
                        )
                        .await?;
                        tx.commit().await?;
                        return Ok(Claim::Round(claim));
                    }
                }
                if let Some(reason) = blocked {
                    // Queued jobs and rounds both say why they wait.
                    // (A job held for a person, or for reviewer capacity,
                    // keeps its own reason.)
                    for (table, also) in [
                        (
                            "jobs",
                            "hold_reason IS NULL AND capacity_hold_at IS NULL AND",
                        ),
                        ("revision_rounds", ""),
                    ] {
                        sqlx::query(&format!(
                            "UPDATE {table} SET state_reason = $1 \
                             WHERE {also} state = 'queued' AND state_reason IS DISTINCT FROM $1"
                        ))
                        .bind(&reason)
                        .execute(&mut *tx)
                        .await?;
                    }
                    tx.commit().await?;
                    return Ok(if status.queued > 0 || round.is_some() {
                        Claim::Blocked(reason)
                    } else {
                        Claim::Idle
                    });
                }
                // Highest impact plus age first (core's rank); the claim
                // lock above keeps other dispatchers out meanwhile.
                let ranked = crate::queue::ranked(&mut tx, policy).await?;
                match ranked.first() {
                    Some(first) => {
                        sqlx::query_scalar(
                            "SELECT id FROM jobs WHERE id = $1 AND state = 'queued' FOR UPDATE SKIP LOCKED",
                        )
                        .bind(first.queued.id)
                        .fetch_optional(&mut *tx)
                        .await?
                    }
                    None => None,
                }
            }
        };
        let Some(id) = id else {
            tx.commit().await?;
            return Ok(Claim::Idle);
        };
        let row = sqlx::query(
            "UPDATE jobs SET state = 'dispatching', state_reason = NULL, ended_at = NULL, \
                 lease_until = now() + make_interval(secs => $2::float8), \
                 dispatch_attempts = dispatch_attempts + 1, \
                 prompt_token = COALESCE(prompt_token, $3), updated_at = now(), \
                 dispatch_started_at = COALESCE(dispatch_started_at, now()) \
             WHERE id = $1 \
             RETURNING id, query_source, tables, max_duration_seconds, prompt_sha256, prompt_token, dispatch_attempts, \
                 dispatch_started_at, base_sha, located_paths",
        )
        .bind(id)
        .bind(lease.as_secs_f64())
        .bind(new_token)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Claim::Job(ClaimedJob {
            id: row.try_get("id")?,
            query_source: row.try_get("query_source")?,
            tables: row.try_get("tables")?,
            max_duration_seconds: row.try_get("max_duration_seconds")?,
            prompt_sha256: row
                .try_get::<Option<String>, _>("prompt_sha256")?
                .unwrap_or_default(),
            prompt_token: row
                .try_get::<Option<String>, _>("prompt_token")?
                .unwrap_or_default(),
            attempts: row.try_get("dispatch_attempts")?,
            started_at: row.try_get("dispatch_started_at")?,
            base_sha: row.try_get("base_sha")?,
            located_paths: row.try_get("located_paths")?,
        }))
    }

    /// The dispatch went out (or an earlier one was found): the agent runs.
    /// Only the lease holder's job in `dispatching` moves; a stale worker's
    /// late write changes nothing.
    pub async fn record_dispatched(
        &self,
        id: i64,
        run_id: Option<i64>,
        run_url: Option<&str>,
        request: &serde_json::Value,
        outcome: &str,
        budget_usd: f64,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let moved = sqlx::query(
            "UPDATE jobs SET state = 'agent_running', run_id = COALESCE($2, run_id), run_url = COALESCE($3, run_url), \
                 dispatched_at = COALESCE(dispatched_at, now()), lease_until = NULL, state_reason = NULL, updated_at = now() \
             WHERE id = $1 AND state = 'dispatching'",
        )
        .bind(id)
        .bind(run_id)
        .bind(run_url)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        insert_dispatch(&mut tx, id, false, request, outcome, run_id).await?;
        crate::budgets::count(&mut tx, id, crate::BudgetedRun::Fix, budget_usd).await?;
        tx.commit().await?;
        Ok(moved)
    }

    /// Dry-run mode: what would have been sent is recorded; the job ends.
    pub async fn record_dry_run(
        &self,
        id: i64,
        request: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "UPDATE jobs SET state = 'dry_run', ended_at = now(), lease_until = NULL, dispatched_at = now(), \
                 state_reason = 'dry run: no GitHub credentials configured', updated_at = now() \
             WHERE id = $1 AND state = 'dispatching'",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        insert_dispatch(&mut tx, id, true, request, "dry_run", None).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The dispatch failed for good.
    pub async fn record_dispatch_failed(
        &self,
        id: i64,
        error: &str,
        request: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "UPDATE jobs SET state = 'failed', ended_at = now(), lease_until = NULL, state_reason = $2, updated_at = now() \
             WHERE id = $1 AND state = 'dispatching'",
        )
        .bind(id)
        .bind(error)
        .execute(&mut *tx)
        .await?;
        insert_dispatch(
            &mut tx,
            id,
            false,
            request,
            &format!("failed: {error}"),
            None,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Extends a lease while a dispatcher waits out a rate limit.
    pub async fn renew_lease(&self, id: i64, lease: Duration) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE jobs SET lease_until = now() + make_interval(secs => $2::float8) WHERE id = $1 AND state = 'dispatching'",
        )
        .bind(id)
        .bind(lease.as_secs_f64())
        .execute(self.pool())
        .await?
        .rows_affected()
            == 1)
    }

    pub async fn set_paused(&self, paused: bool) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO service_flags (name, enabled) VALUES ('dispatch_paused', $1) \
             ON CONFLICT (name) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = now()",
        )
        .bind(paused)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn dispatch_status(&self) -> Result<DispatchStatus, StoreError> {
        let mut conn = self.acquire().await?;
        dispatch_counts(&mut conn).await
    }

    /// Jobs whose agent runs: (id, run_id, dispatched more than `timeout` ago).
    pub async fn running_jobs(
        &self,
        timeout: Duration,
    ) -> Result<Vec<(i64, Option<i64>, bool)>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, run_id, dispatched_at < now() - make_interval(secs => $1::float8) AS overdue \
             FROM jobs WHERE state = 'agent_running' ORDER BY id LIMIT 200",
        )
        .bind(timeout.as_secs_f64())
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("id")?,
                    r.try_get("run_id")?,
                    r.try_get("overdue")?,
                ))
            })
            .collect()
    }

    /// Ends a running job (`no_pr`, `expired`) unless it moved on meanwhile.
    pub async fn end_running_job(
        &self,
        id: i64,
        state: longtx_core::JobState,
        reason: &str,
    ) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE jobs SET state = $2, ended_at = now(), state_reason = $3, updated_at = now() \
             WHERE id = $1 AND state = 'agent_running'",
        )
        .bind(id)
        .bind(state.as_str())
        .bind(reason)
        .execute(self.pool())
        .await?
        .rows_affected()
            == 1)
    }

    /// Records a run id found later (by polling) for a running job.
    pub async fn set_run(
        &self,
        id: i64,
        run_id: i64,
        run_url: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE jobs SET run_id = $2, run_url = COALESCE($3, run_url) WHERE id = $1 AND run_id IS NULL")
            .bind(id)
            .bind(run_id)
            .bind(run_url)
            .execute(self.pool())
            .await?;
        Ok(())
    }
}

/// The pause switch and the counts the caps are checked against, in one query.
pub(crate) async fn dispatch_counts(
    conn: &mut sqlx::PgConnection,
) -> Result<DispatchStatus, StoreError> {
    let row = sqlx::query(
        "SELECT \
           COALESCE((SELECT enabled FROM service_flags WHERE name = 'dispatch_paused'), false) AS paused, \
           (SELECT count(*) FROM jobs WHERE dispatched_at >= date_trunc('day', now())) \
             + (SELECT count(*) FROM revision_rounds WHERE dispatched_at >= date_trunc('day', now())) \
             + (SELECT count(*) FROM run_budgets WHERE kind = 'pre_review' AND counted_at >= date_trunc('day', now())) AS today, \
           (SELECT count(*) FROM jobs WHERE state = 'dispatching' AND dispatched_at IS NULL) \
             + (SELECT count(*) FROM revision_rounds WHERE state = 'dispatching' AND dispatched_at IS NULL) AS in_flight, \
           (SELECT count(*) FROM jobs WHERE state IN ('dispatching', 'agent_running')) \
             + (SELECT count(*) FROM revision_rounds WHERE state IN ('dispatching', 'running')) AS running, \
           (SELECT count(*) FROM jobs WHERE state = 'queued') AS queued, \
           (SELECT COALESCE(sum(cost_usd), 0) FROM run_reports WHERE reported_at >= date_trunc('day', now())) AS cost_today, \
           (SELECT COALESCE(sum(budget_usd), 0) FROM run_budgets WHERE counted_at >= date_trunc('day', now())) AS budget_today",
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(DispatchStatus {
        paused: row.try_get("paused")?,
        dispatched_today: row.try_get("today")?,
        in_flight: row.try_get("in_flight")?,
        running: row.try_get("running")?,
        queued: row.try_get("queued")?,
        cost_today_usd: row.try_get("cost_today")?,
        budget_today_usd: row.try_get("budget_today")?,
    })
}

/// Why queued jobs must wait now, if they must.
pub(crate) fn blocked_reason(status: &DispatchStatus, caps: Caps) -> Option<String> {
    if status.paused {
        Some("waiting: dispatch is paused".to_owned())
    } else if let Some(full) = day_is_full(status, caps, caps.run_budget_usd) {
        Some(full)
    } else if status.running >= caps.max_running {
        Some(format!(
            "waiting: {} agent runs are going, the most allowed at once",
            caps.max_running
        ))
    } else {
        None
    }
}

/// Why the day has no room for one more run whose budget is `next_budget`
/// (a fix run's or a pre-review's): the daily count, or the cost cap.
/// Claimed runs not yet sent count their budget too, and the next run's
/// budget must still fit: the cap is never overshot.
pub(crate) fn day_is_full(status: &DispatchStatus, caps: Caps, next_budget: f64) -> Option<String> {
    if status.dispatched_today + status.in_flight >= caps.max_per_day {
        return Some(format!(
            "waiting: the daily dispatch cap ({}) is reached",
            caps.max_per_day
        ));
    }
    let counted = status.budget_today_usd + status.in_flight as f64 * caps.run_budget_usd;
    caps.max_cost_per_day
        .filter(|max| counted + next_budget > *max)
        .map(|max| {
            format!(
                "waiting: today's counted agent budget (${counted:.2}, ${next_budget:.2} a run) leaves no room under the daily cost cap (${max:.2})"
            )
        })
}

pub(crate) async fn insert_dispatch(
    conn: &mut sqlx::PgConnection,
    job_id: i64,
    dry_run: bool,
    request: &serde_json::Value,
    outcome: &str,
    run_id: Option<i64>,
) -> Result<(), StoreError> {
    sqlx::query("INSERT INTO dispatches (job_id, dry_run, request, outcome, run_id) VALUES ($1, $2, $3, $4, $5)")
        .bind(job_id)
        .bind(dry_run)
        .bind(request)
        .bind(outcome)
        .bind(run_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
