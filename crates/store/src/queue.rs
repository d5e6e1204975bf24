//! The queue's order and its reviewer-capacity holds: the facts each queued
//! job's impact is computed from (the score itself is `core`'s), the
//! reviewers' loads, and holding or releasing a job that waits for one.

use crate::{Store, StoreError};
use longtx_core::impact::{self, Impact, ImpactInputs, Queued, RECURRENCE_DAYS};
use longtx_core::waiters::Waiters;
use longtx_core::IntakePolicy;
use sqlx::{PgConnection, Row};
use std::collections::HashMap;
use std::time::Duration;

/// A capacity hold is looked at again at least this often, whatever ended.
pub const CAPACITY_RECHECK: Duration = Duration::from_secs(300);

/// A queued job's place, its impact and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct QueuePlace {
    pub job_id: i64,
    pub query_source: String,
    /// 1-based, among the queued jobs the dispatcher may take now.
    pub position: Option<usize>,
    pub of: usize,
    pub impact: Impact,
    pub queued_hours: f64,
    pub priority: f64,
}

/// The impact facts of jobs, selected by `filter` (a `WHERE` on `j`).
/// Alerts about the source count whichever of its jobs they joined.
fn impact_sql(filter: &str) -> String {
    format!(
        "SELECT j.id, j.query_source, j.max_duration_seconds, j.tables[1] AS first_table, \
             j.waiters_ddl, j.waiters_dml, j.waiters_other, \
             EXTRACT(EPOCH FROM now() - j.created_at)::float8 / 3600 AS queued_hours, \
             (SELECT count(*) FROM jobs s JOIN alert_events e ON e.job_id = s.id \
              WHERE s.source_key = j.source_key AND e.outcome IN ('created', 'deduped') \
                AND e.received_at > now() - make_interval(days => {RECURRENCE_DAYS})) AS alerts \
         FROM jobs j WHERE {filter}"
    )
}

/// The queued jobs the dispatcher may take now: a prompt, no hold for a
/// person, and no capacity hold that is still current.
const TAKEABLE: &str = "j.state = 'queued' AND j.prompt IS NOT NULL AND j.hold_reason IS NULL \
     AND (j.capacity_hold_at IS NULL \
          OR j.capacity_hold_at < now() - make_interval(secs => $1::float8) \
          OR j.capacity_hold_at < (SELECT max(ended_at) FROM jobs WHERE ended_at IS NOT NULL))";

/// Each reviewer's open longtx reviews: requests on PRs in review.
pub(crate) async fn open_reviews(
    conn: &mut PgConnection,
) -> Result<Vec<(String, i64)>, StoreError> {
    let rows = sqlx::query(
        "SELECT r.reviewer, count(*) AS open FROM review_requests r \
         JOIN jobs j ON j.id = r.job_id WHERE j.state = 'in_review' \
         GROUP BY r.reviewer ORDER BY r.reviewer",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .iter()
        .map(|row| Ok((row.try_get("reviewer")?, row.try_get("open")?)))
        .collect::<Result<_, sqlx::Error>>()?)
}

/// A queued job ranked: its order key, impact, and source.
pub(crate) struct Ranked {
    pub queued: Queued,
    pub impact: Impact,
    pub query_source: String,
}

fn scored(row: &sqlx::postgres::PgRow, policy: &IntakePolicy) -> Result<Ranked, sqlx::Error> {
    let count = |name: &str| -> Result<u32, sqlx::Error> {
        Ok(u32::try_from(row.try_get::<i32, _>(name)?).unwrap_or(0))
    };
    let table: Option<String> = row.try_get("first_table")?;
    let inputs = ImpactInputs {
        longest_seconds: row.try_get("max_duration_seconds")?,
        threshold_seconds: policy.threshold_for(table.as_deref()),
        alerts_in_window: u32::try_from(row.try_get::<i64, _>("alerts")?).unwrap_or(u32::MAX),
        waiters: Waiters {
            ddl: count("waiters_ddl")?,
            dml: count("waiters_dml")?,
            other: count("waiters_other")?,
        },
    };
    let found = impact::impact(&inputs);
    Ok(Ranked {
        queued: Queued {
            id: row.try_get("id")?,
            impact: found.score,
            queued_hours: row.try_get("queued_hours")?,
        },
        impact: found,
        query_source: row.try_get("query_source")?,
    })
}

impl Ranked {
    fn place(self, position: Option<usize>, of: usize) -> QueuePlace {
        QueuePlace {
            job_id: self.queued.id,
            query_source: self.query_source,
            position,
            of,
            priority: impact::priority(self.queued.impact, self.queued.queued_hours),
            queued_hours: self.queued.queued_hours,
            impact: self.impact,
        }
    }
}

/// The takeable queue, highest priority first (on the claim's own
/// transaction).
pub(crate) async fn ranked(
    conn: &mut PgConnection,
    policy: &IntakePolicy,
) -> Result<Vec<Ranked>, StoreError> {
    let rows = sqlx::query(&impact_sql(TAKEABLE))
        .bind(CAPACITY_RECHECK.as_secs_f64())
        .fetch_all(&mut *conn)
        .await?;
    let mut by_id = HashMap::new();
    let mut queue = Vec::with_capacity(rows.len());
    for row in &rows {
        let ranked = scored(row, policy)?;
        queue.push(ranked.queued.clone());
        by_id.insert(ranked.queued.id, ranked);
    }
    Ok(impact::rank(queue)
        .into_iter()
        .map(|q| by_id.remove(&q.id).expect("scored above"))
        .collect())
}

impl Store {
    /// A job's impact and, while it is takeable, its place in the queue.
    pub async fn queue_place(
        &self,
        job_id: i64,
        policy: &IntakePolicy,
    ) -> Result<Option<QueuePlace>, StoreError> {
        let mut tx = self.begin().await?;
        let row = sqlx::query(&impact_sql("j.id = $1"))
            .bind(job_id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let own = scored(&row, policy)?;
        let queue = ranked(&mut tx, policy).await?;
        tx.commit().await?;
        let position = queue
            .iter()
            .position(|r| r.queued.id == job_id)
            .map(|p| p + 1);
        Ok(Some(own.place(position, queue.len())))
    }

    /// The takeable queue in the dispatcher's order, for the dashboard.
    pub async fn queue_order(
        &self,
        policy: &IntakePolicy,
        limit: usize,
    ) -> Result<Vec<QueuePlace>, StoreError> {
        let mut conn = self.pool().acquire().await?;
        let queue = ranked(&mut conn, policy).await?;
        let of = queue.len();
        Ok(queue
            .into_iter()
            .take(limit)
            .enumerate()
            .map(|(i, r)| r.place(Some(i + 1), of))
            .collect())
    }

    /// Every reviewer's load: the open longtx reviews they were asked for,
    /// plus the reviews predicted for fixes under way (dispatching, the
    /// agent running, the pre-review), which hold a seat until the PR's own
    /// reviewers are asked. `except_job`'s own reservation is left out: a job never competes
    /// with itself.
    pub async fn reviewer_loads(
        &self,
        except_job: Option<i64>,
    ) -> Result<HashMap<String, i64>, StoreError> {
        let rows = sqlx::query(
            "SELECT reviewer, count(*) AS load FROM ( \
                 SELECT r.reviewer FROM review_requests r JOIN jobs j ON j.id = r.job_id \
                 WHERE j.state = 'in_review' \
                 UNION ALL \
                 SELECT unnest(j.predicted_reviewers) FROM jobs j \
                 WHERE (j.state IN ('dispatching', 'agent_running', 'pre_review') \
                        OR (j.state = 'in_review' AND j.reviewers_state = 'pending')) \
                   AND j.id IS DISTINCT FROM $1 \
             ) seats GROUP BY reviewer",
        )
        .bind(except_job)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("reviewer")?, row.try_get("load")?)))
            .collect()
    }

    /// Records the reviewers predicted for a job being dispatched: they
    /// count against capacity from now on.
    pub async fn reserve_reviewers(
        &self,
        job_id: i64,
        keys: &[String],
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE jobs SET predicted_reviewers = $2, capacity_hold_at = NULL, updated_at = now() \
             WHERE id = $1 AND state = 'dispatching'",
        )
        .bind(job_id)
        .bind(keys)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Puts a claimed job back in the queue to wait for reviewer capacity,
    /// with the reason people see. Its dispatch attempt is given back: no
    /// run was sent.
    pub async fn hold_for_capacity(&self, job_id: i64, reason: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE jobs SET state = 'queued', state_reason = $2, capacity_hold_at = now(), \
                 lease_until = NULL, dispatch_attempts = GREATEST(dispatch_attempts - 1, 0), \
                 dispatch_started_at = CASE WHEN dispatch_attempts <= 1 THEN NULL ELSE dispatch_started_at END, \
                 updated_at = now() \
             WHERE id = $1 AND state = 'dispatching'",
        )
        .bind(job_id)
        .bind(reason)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Every reviewer's open longtx reviews (requests on PRs in review).
    pub async fn open_reviews_by_reviewer(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let mut conn = self.pool().acquire().await?;
        open_reviews(&mut conn).await
    }

    /// Jobs waiting for reviewer capacity now.
    pub async fn capacity_waiting(&self) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM jobs WHERE state = 'queued' AND capacity_hold_at IS NOT NULL",
        )
        .fetch_one(self.pool())
        .await?)
    }
}
