//! Reading jobs and their alert events for the API.

use crate::{Store, StoreError};
use chrono::{DateTime, Utc};
use longtx_core::JobState;
use serde::Serialize;
use sqlx::Row;
use std::time::Duration;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct JobRow {
    pub id: i64,
    pub query_source: String,
    pub state: String,
    pub state_reason: Option<String>,
    pub tables: Vec<String>,
    pub alert_count: i32,
    pub max_duration_seconds: Option<f64>,
    pub alert_links: Vec<String>,
    pub first_seen_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub prompt_revision: Option<String>,
    pub prompt_sha256: Option<String>,
    pub prompt_truncation: Option<String>,
    pub prompt_error: Option<String>,
    pub prompt_rendered_at: Option<DateTime<Utc>>,
    pub dispatch_attempts: i32,
    pub dispatched_at: Option<DateTime<Utc>>,
    pub run_id: Option<i64>,
    pub run_url: Option<String>,
    pub pr_number: Option<i64>,
    pub pr_url: Option<String>,
    pub pr_head_sha: Option<String>,
    /// `pending`, `requested` or `none`; `None` before a PR opens.
    pub reviewers_state: Option<String>,
    /// The reviewer choice with its reasons.
    pub reviewers: Option<serde_json::Value>,
    /// `pending`, `done`, `refused` or `failed` once the label was added.
    pub wontfix_state: Option<String>,
    pub wontfix_by: Option<String>,
    pub wontfix_detail: Option<String>,
    pub wontfix_commit: Option<String>,
    pub pr_opened_at: Option<DateTime<Utc>>,
    /// `pending`, `dispatched` or `judged` once the pre-review is on.
    pub pre_review_state: Option<String>,
    /// The latest pre-review verdict, with the head it judged.
    pub pre_review_verdict: Option<serde_json::Value>,
    /// Alerts for the source after the job ended.
    pub recurrence_count: i32,
    pub recurrence_max_seconds: Option<f64>,
    pub first_recurrence_at: Option<DateTime<Utc>>,
    pub last_recurrence_at: Option<DateTime<Utc>>,
    pub verified_at: Option<DateTime<Utc>>,
    pub regressed_at: Option<DateTime<Utc>>,
    /// The merged job whose regression opened this one.
    pub regressed_from: Option<i64>,
    /// Why the dispatcher leaves this queued job to a person.
    pub hold_reason: Option<String>,
    /// longtx's scan of the newest patch it committed
    /// (`longtx_core::patch_check::PatchCheck`).
    pub patch_check: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct AlertEventRow {
    pub id: i64,
    pub received_at: DateTime<Utc>,
    pub origin: String,
    pub query_source: Option<String>,
    pub table_name: Option<String>,
    pub duration_seconds: Option<f64>,
    pub outcome: String,
    pub detail: Option<String>,
    pub job_id: Option<i64>,
    pub raw_payload: serde_json::Value,
}

#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    pub state: Option<JobState>,
    pub query_source: Option<String>,
    /// Keyset pagination: only jobs with a smaller id (newest first).
    pub before_id: Option<i64>,
    pub limit: i64,
}

pub(crate) const JOB_COLUMNS: &str = "id, query_source, state, state_reason, tables, alert_count, \
    max_duration_seconds, alert_links, first_seen_at, last_seen_at, created_at, updated_at, ended_at, \
    prompt_revision, prompt_sha256, prompt_truncation, prompt_error, prompt_rendered_at, \
    dispatch_attempts, dispatched_at, run_id, run_url, \
    pr_number, pr_url, pr_head_sha, reviewers_state, reviewers, \
    wontfix_state, wontfix_by, wontfix_detail, wontfix_commit, pr_opened_at, pre_review_state, pre_review_verdict, \
    recurrence_count, recurrence_max_seconds, first_recurrence_at, last_recurrence_at, verified_at, regressed_at, \
    regressed_from, hold_reason, patch_check";

impl Store {
    pub async fn list_jobs(&self, filter: &JobFilter) -> Result<Vec<JobRow>, StoreError> {
        let mut conn = self.acquire().await?;
        list_jobs_on(&mut conn, filter).await
    }

    /// A job and its newest alert events, read on one connection.
    pub async fn job_with_events(
        &self,
        id: i64,
        event_limit: i64,
    ) -> Result<Option<(JobRow, Vec<AlertEventRow>)>, StoreError> {
        let mut conn = self.acquire().await?;
        let job =
            sqlx::query_as::<_, JobRow>(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"))
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?;
        let Some(job) = job else { return Ok(None) };
        let events = events_of(&mut conn, id, event_limit).await?;
        Ok(Some((job, events)))
    }

    /// How many jobs are in each state (states with none are left out).
    pub async fn jobs_by_state(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let mut conn = self.acquire().await?;
        jobs_by_state_on(&mut conn).await
    }

    pub async fn job(&self, id: i64) -> Result<Option<JobRow>, StoreError> {
        Ok(
            sqlx::query_as::<_, JobRow>(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"))
                .bind(id)
                .fetch_optional(self.pool())
                .await?,
        )
    }

    /// Deletes alert events older than `retention`, a batch per transaction
    /// so that no delete holds locks for long. Returns how many went. Only
    /// rolled-up events go, so the daily figures never lose one.
    pub async fn purge_alert_events(&self, retention: Duration) -> Result<u64, StoreError> {
        let mut total = 0;
        loop {
            let deleted = sqlx::query(
                "DELETE FROM alert_events WHERE id IN (\
                   SELECT id FROM alert_events \
                   WHERE received_at < now() - make_interval(secs => $1::float8) AND rolled_up \
                   LIMIT 5000)",
            )
            .bind(retention.as_secs_f64())
            .execute(self.pool())
            .await?
            .rows_affected();
            total += deleted;
            if deleted < 5000 {
                return Ok(total);
            }
        }
    }

    /// Moves a job to another state, setting `ended_at` when it leaves the
    /// active states. Later issues drive this from the dispatcher and
    /// GitHub events; tests use it to end jobs.
    pub async fn set_job_state(
        &self,
        id: i64,
        state: JobState,
        reason: Option<&str>,
    ) -> Result<bool, StoreError> {
        let updated = sqlx::query(
            "UPDATE jobs SET state = $2, state_reason = $3, updated_at = now(), \
                 ended_at = CASE WHEN $4 THEN NULL ELSE COALESCE(ended_at, now()) END \
             WHERE id = $1",
        )
        .bind(id)
        .bind(state.as_str())
        .bind(reason)
        .bind(state.is_active())
        .execute(self.pool())
        .await?
        .rows_affected();
        Ok(updated == 1)
    }
}

/// Newest jobs first, filtered; on the caller's connection.
pub(crate) async fn list_jobs_on(
    conn: &mut sqlx::PgConnection,
    filter: &JobFilter,
) -> Result<Vec<JobRow>, StoreError> {
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM jobs \
         WHERE ($1::text IS NULL OR state = $1) \
           AND ($2::text IS NULL OR source_key = $2) \
           AND ($3::int8 IS NULL OR id < $3) \
         ORDER BY id DESC LIMIT $4"
    );
    let rows = sqlx::query_as::<_, JobRow>(&sql)
        .bind(filter.state.map(JobState::as_str))
        .bind(
            filter
                .query_source
                .as_deref()
                .map(longtx_core::query_source::canonical),
        )
        .bind(filter.before_id)
        .bind(filter.limit.clamp(1, 500))
        .fetch_all(&mut *conn)
        .await?;
    Ok(rows)
}

/// A job's newest alert events, at most `limit` (1 to 1000).
pub(crate) async fn events_of(
    conn: &mut sqlx::PgConnection,
    job_id: i64,
    limit: i64,
) -> Result<Vec<AlertEventRow>, StoreError> {
    Ok(sqlx::query_as::<_, AlertEventRow>(
        "SELECT id, received_at, origin, query_source, table_name, duration_seconds, outcome, \
                detail, job_id, raw_payload \
         FROM alert_events WHERE job_id = $1 ORDER BY id DESC LIMIT $2",
    )
    .bind(job_id)
    .bind(limit.clamp(1, 1000))
    .fetch_all(&mut *conn)
    .await?)
}

/// How many jobs are in each state (states with none are left out).
pub(crate) async fn jobs_by_state_on(
    conn: &mut sqlx::PgConnection,
) -> Result<Vec<(String, i64)>, StoreError> {
    Ok(
        sqlx::query_as("SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state")
            .fetch_all(&mut *conn)
            .await?,
    )
}

impl Store {
    /// Merged fixes with no alert over the threshold from the deploy grace
    /// to the end of the verification window are `verified` (an alert in
    /// it makes them `regressed` at intake). Returns the jobs verified now.
    pub async fn verify_quiet_fixes(
        &self,
        deploy_grace: Duration,
        window: Duration,
    ) -> Result<Vec<i64>, StoreError> {
        Ok(sqlx::query_scalar(
            "UPDATE jobs SET state = 'verified', verified_at = now(), updated_at = now(), \
                 state_reason = format('no alert over the threshold in the %s after the deploy grace', make_interval(secs => $2::float8)) \
             WHERE state = 'merged' AND ended_at + make_interval(secs => $1::float8 + $2::float8) <= now() \
             RETURNING id",
        )
        .bind(deploy_grace.as_secs_f64())
        .bind(window.as_secs_f64())
        .fetch_all(self.pool())
        .await?)
    }

    /// What the job a regression opened is told about the fix that did not
    /// hold: (PR number, PR URL, its files with lines changed, the longest
    /// alert since the merge, alerts since the merge).
    pub async fn regression_facts(
        &self,
        job_id: i64,
    ) -> Result<Option<RegressionFacts>, StoreError> {
        let row = sqlx::query(
            "SELECT old.id, old.pr_number, old.pr_url, old.reviewers->'files' AS files, \
                    old.recurrence_count, old.recurrence_max_seconds, old.ended_at \
             FROM jobs j JOIN jobs old ON old.id = j.regressed_from WHERE j.id = $1",
        )
        .bind(job_id)
        .fetch_optional(self.pool())
        .await?;
        let Some(r) = row else { return Ok(None) };
        let files: Option<serde_json::Value> = r.try_get("files")?;
        Ok(Some(RegressionFacts {
            job_id: r.try_get("id")?,
            pr_number: r.try_get::<Option<i64>, _>("pr_number")?,
            pr_url: r.try_get("pr_url")?,
            files: files
                .and_then(|f| serde_json::from_value(f).ok())
                .unwrap_or_default(),
            recurrences: r.try_get::<i32, _>("recurrence_count")? as i64,
            longest_since: r.try_get("recurrence_max_seconds")?,
            merged_at: r.try_get("ended_at")?,
        }))
    }
}

/// The merged fix a regression opened a job after.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RegressionFacts {
    pub job_id: i64,
    pub pr_number: Option<i64>,
    pub pr_url: Option<String>,
    /// (path, lines changed), as the reviewer choice listed them.
    pub files: Vec<(String, u64)>,
    pub recurrences: i64,
    pub longest_since: Option<f64>,
    pub merged_at: Option<chrono::DateTime<chrono::Utc>>,
}
