//! What the dashboard shows, aggregated in SQL: daily alerts per source
//! (from the roll-up plus the events not rolled up yet), jobs by state, PRs
//! per week, reviewer load and dispatch. Every read is one read-only
//! transaction on one connection, so the figures on a page agree.

use crate::dispatch::dispatch_counts;
use crate::jobs::{events_of, jobs_by_state_on, list_jobs_on, JOB_COLUMNS};
use crate::rounds::{prs_by_rounds, rounds_on, RoundRow};
use crate::{AlertEventRow, DispatchStatus, JobFilter, JobRow, Store, StoreError};
use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use sqlx::Row;

/// Which slice of the data a dashboard page shows.
#[derive(Debug, Clone)]
pub struct DashboardQuery {
    /// Days of alert history in the charts, today included.
    pub days: i32,
    /// Sources per page, most alerts first.
    pub sources_per_page: i64,
    pub sources_offset: i64,
    pub jobs: JobFilter,
    pub weeks: i32,
    pub reviewers: i64,
    /// Days the what-if looks back over.
    pub what_if_days: i32,
}

/// One source's alerts per day over the window; days without alerts are
/// absent. A source is its canonical key, whichever sender spelt it how.
#[derive(Debug, Clone, Serialize)]
pub struct SourceSeries {
    /// The name its newest job has, else the most informative spelling
    /// seen (one that is not its own key).
    pub query_source: String,
    /// What dedupe, the ignore list and `/metrics` key it by.
    pub source_key: String,
    /// Every spelling received in the window, sorted (at most 10).
    pub spellings: Vec<String>,
    pub alerts: i64,
    pub max_duration_seconds: Option<f64>,
    pub days: Vec<DayFigure>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DayFigure {
    pub day: NaiveDate,
    pub alerts: i64,
    pub max_duration_seconds: Option<f64>,
}

/// Fix PRs by the week (Monday, UTC) they were opened or ended in.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct WeekFigure {
    pub week: NaiveDate,
    pub opened: i64,
    pub merged: i64,
    pub closed: i64,
    pub wontfix: i64,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ReviewerLoad {
    /// A lowercased login, or `@org/team` for a team.
    pub reviewer: String,
    /// Requests in the last 90 days.
    pub requested: i64,
    /// Requests whose PR is still in review.
    pub open: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Dashboard {
    pub today: NaiveDate,
    pub jobs_by_state: Vec<(String, i64)>,
    pub sources: Vec<SourceSeries>,
    /// Sources with alerts in the window, for paging.
    pub source_count: i64,
    pub weeks: Vec<WeekFigure>,
    pub reviewers: Vec<ReviewerLoad>,
    pub dispatch: DispatchStatus,
    pub jobs: Vec<JobRow>,
    /// Fix PRs by the revision rounds they took: (0, 1, 2, 3 or more).
    pub prs_by_rounds: Vec<(i32, i64)>,
    pub costs: crate::CostFigures,
    /// The what-if's input, read in the same snapshot as the sources, so
    /// both count the same alerts.
    pub what_if: longtx_core::what_if::History,
}

/// A job with everything its page shows.
#[derive(Debug, Clone, Serialize)]
pub struct JobPage {
    pub job: JobRow,
    pub events: Vec<AlertEventRow>,
    pub prompt: Option<String>,
    pub dispatches: Vec<DispatchRecord>,
    pub rounds: Vec<RoundRow>,
    /// The pre-review's verdicts acted on, oldest first.
    pub verdicts: Vec<VerdictRecord>,
    pub requests: Vec<RequestRecord>,
    /// What its agent runs cost, as reported.
    pub cost: crate::JobCost,
    /// Each run's report, oldest first.
    pub run_reports: Vec<RunReportRecord>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RunReportRecord {
    pub reported_at: DateTime<Utc>,
    pub run_id: i64,
    pub round: i32,
    pub cost_usd: Option<f64>,
    pub turns: Option<i32>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct VerdictRecord {
    pub received_at: DateTime<Utc>,
    pub head_sha: String,
    pub outcome: String,
    pub verdict: serde_json::Value,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RequestRecord {
    pub created_at: DateTime<Utc>,
    pub login: String,
    pub kind: String,
    pub source: String,
    pub state: String,
    pub answer: Option<String>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct DispatchRecord {
    pub created_at: DateTime<Utc>,
    pub dry_run: bool,
    pub outcome: String,
    /// What was sent (or, in a dry run, would have been): repository,
    /// workflow, ref and inputs, the job's token already `<redacted>`.
    pub request: serde_json::Value,
    pub run_id: Option<i64>,
}

/// Which alerts count as occurrences: every alert naming a source, except
/// resolutions and refused payloads.
const COUNTED: &str = "query_source IS NOT NULL AND outcome NOT IN ('resolved', 'rejected')";

const ROLL_UP_SQL: &str = r#"
WITH batch AS (
    SELECT id FROM alert_events WHERE NOT rolled_up ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
),
marked AS (
    UPDATE alert_events e SET rolled_up = true FROM batch WHERE e.id = batch.id
    RETURNING e.query_source, e.table_name, e.received_at, e.duration_seconds, e.outcome
),
daily AS (
    SELECT query_source, (received_at AT TIME ZONE 'UTC')::date AS day,
           count(*) AS alerts, max(duration_seconds) AS max_duration_seconds
    FROM marked
    WHERE query_source IS NOT NULL AND outcome NOT IN ('resolved', 'rejected')
    GROUP BY 1, 2
),
upsert AS (
    INSERT INTO alert_daily (query_source, day, alerts, max_duration_seconds)
    SELECT query_source, day, alerts, max_duration_seconds FROM daily ORDER BY 1, 2
    ON CONFLICT (query_source, day) DO UPDATE SET
        alerts = alert_daily.alerts + EXCLUDED.alerts,
        max_duration_seconds = GREATEST(alert_daily.max_duration_seconds, EXCLUDED.max_duration_seconds)
),
observed AS (
    INSERT INTO observed_daily (day, table_name, query_source, max_seconds)
    SELECT (received_at AT TIME ZONE 'UTC')::date, left(COALESCE(table_name, ''), 128), query_source,
           max(duration_seconds)
    FROM marked
    WHERE query_source IS NOT NULL AND duration_seconds >= 0 AND outcome NOT IN ('resolved', 'rejected')
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (day, table_name, query_source) DO UPDATE SET
        max_seconds = GREATEST(observed_daily.max_seconds, EXCLUDED.max_seconds)
)
SELECT count(*) FROM marked
"#;

impl Store {
    /// Adds up to `batch` events to the daily roll-up in one short
    /// transaction; returns how many. One replica rolls up at a time (an
    /// advisory lock), so two never fight over the same daily rows.
    pub async fn roll_up_alerts(&self, batch: i64) -> Result<u64, StoreError> {
        let mut tx = self.begin().await?;
        let ours: bool = sqlx::query_scalar(
            "SELECT pg_try_advisory_xact_lock(hashtext('longtx.alert_roll_up'))",
        )
        .fetch_one(&mut *tx)
        .await?;
        if !ours {
            return Ok(0);
        }
        let rolled: i64 = sqlx::query_scalar(ROLL_UP_SQL)
            .bind(batch.max(1))
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(rolled as u64)
    }

    pub async fn dashboard(&self, query: &DashboardQuery) -> Result<Dashboard, StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *tx)
            .await?;
        let today: NaiveDate = sqlx::query_scalar("SELECT (now() AT TIME ZONE 'UTC')::date")
            .fetch_one(&mut *tx)
            .await?;
        let jobs_by_state = jobs_by_state_on(&mut tx).await?;
        let (sources, source_count) = source_series(&mut tx, query).await?;
        let weeks = week_figures(&mut tx, query.weeks).await?;
        let reviewers = sqlx::query_as::<_, ReviewerLoad>(
            "SELECT r.reviewer, \
                    count(*) FILTER (WHERE r.requested_at >= now() - interval '90 days') AS requested, \
                    count(*) FILTER (WHERE j.state = 'in_review') AS open \
             FROM review_requests r JOIN jobs j ON j.id = r.job_id \
             WHERE r.requested_at >= now() - interval '90 days' OR j.state = 'in_review' \
             GROUP BY r.reviewer ORDER BY open DESC, requested DESC, r.reviewer LIMIT $1",
        )
        .bind(query.reviewers.clamp(1, 200))
        .fetch_all(&mut *tx)
        .await?;
        let dispatch = dispatch_counts(&mut tx).await?;
        let jobs = list_jobs_on(&mut tx, &query.jobs).await?;
        let prs_by_rounds = prs_by_rounds(&mut tx).await?;
        let costs = crate::costs::cost_figures(&mut tx).await?;
        let what_if =
            crate::observations::what_if_history(&mut tx, query.what_if_days.clamp(1, 366)).await?;
        tx.commit().await?;
        Ok(Dashboard {
            today,
            jobs_by_state,
            sources,
            source_count,
            weeks,
            reviewers,
            dispatch,
            jobs,
            prs_by_rounds,
            costs,
            what_if,
        })
    }

    /// A job, its newest 100 alerts, its prompt and its dispatches.
    pub async fn job_page(&self, id: i64) -> Result<Option<JobPage>, StoreError> {
        let mut tx = self.begin().await?;
        let job =
            sqlx::query_as::<_, JobRow>(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"))
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(job) = job else { return Ok(None) };
        let events = events_of(&mut tx, id, 100).await?;
        let prompt = sqlx::query_scalar("SELECT prompt FROM jobs WHERE id = $1")
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
        let dispatches = dispatches_on(&mut tx, id).await?;
        let rounds = rounds_on(&mut tx, id).await?;
        let cost = crate::costs::job_cost_on(&mut tx, id).await?;
        let run_reports = sqlx::query_as::<_, RunReportRecord>(
            "SELECT reported_at, run_id, round, cost_usd, turns FROM run_reports WHERE job_id = $1 ORDER BY reported_at LIMIT 50",
        )
        .bind(id)
        .fetch_all(&mut *tx)
        .await?;
        let verdicts = sqlx::query_as::<_, VerdictRecord>(
            "SELECT received_at, head_sha, outcome, verdict FROM pre_review_verdicts \
             WHERE job_id = $1 AND acted ORDER BY id LIMIT 50",
        )
        .bind(id)
        .fetch_all(&mut *tx)
        .await?;
        let requests = sqlx::query_as::<_, RequestRecord>(
            "SELECT created_at, login, kind, source, state, answer FROM revision_requests \
             WHERE job_id = $1 ORDER BY id LIMIT 50",
        )
        .bind(id)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(JobPage {
            job,
            events,
            prompt,
            dispatches,
            rounds,
            verdicts,
            requests,
            cost,
            run_reports,
        }))
    }
}

/// The most spellings a source row lists.
const MAX_SPELLINGS: i32 = 10;

async fn source_series(
    conn: &mut sqlx::PgConnection,
    query: &DashboardQuery,
) -> Result<(Vec<SourceSeries>, i64), StoreError> {
    // Grouped by the canonical key (migration 19), so the two senders'
    // spellings of one source are one row. The events not rolled up yet
    // are keyed by the same function, once per spelling and day rather
    // than per event (it is three regular expressions).
    let sql = format!(
        "WITH since AS (SELECT (now() AT TIME ZONE 'UTC')::date - ($1::int - 1) AS day), \
         live AS ( \
             SELECT longtx_source_key(query_source) AS source_key, query_source, day, alerts, max_d FROM ( \
                 SELECT query_source, (received_at AT TIME ZONE 'UTC')::date AS day, \
                        count(*) AS alerts, max(duration_seconds) AS max_d \
                 FROM alert_events WHERE NOT rolled_up AND {COUNTED} GROUP BY 1, 2) by_spelling), \
         spelt AS ( \
             SELECT source_key, query_source, day, alerts, max_duration_seconds AS max_d FROM alert_daily \
             WHERE day >= (SELECT day FROM since) \
             UNION ALL SELECT * FROM live WHERE day >= (SELECT day FROM since)), \
         merged AS ( \
             SELECT source_key, day, sum(alerts)::int8 AS alerts, max(max_d) AS max_d FROM spelt GROUP BY 1, 2), \
         top AS ( \
             SELECT source_key, sum(alerts)::int8 AS total, max(max_d) AS worst, count(*) OVER () AS sources \
             FROM merged GROUP BY 1 ORDER BY total DESC, source_key LIMIT $2 OFFSET $3), \
         spellings AS ( \
             SELECT s.source_key, array_agg(DISTINCT s.query_source ORDER BY s.query_source) AS spellings \
             FROM spelt s JOIN top t USING (source_key) GROUP BY 1), \
         named AS ( \
             SELECT t.source_key, sp.spellings, \
                    (SELECT j.query_source FROM jobs j WHERE j.source_key = t.source_key ORDER BY j.id DESC LIMIT 1) AS job_name \
             FROM top t JOIN spellings sp USING (source_key)) \
         SELECT COALESCE(n.job_name, \
                         (SELECT x FROM unnest(n.spellings) x ORDER BY x = t.source_key, length(x) DESC, x LIMIT 1)) AS name, \
                t.source_key, n.spellings[1:$4] AS spellings, m.day, m.alerts, m.max_d, t.total, t.worst, t.sources \
         FROM merged m JOIN top t USING (source_key) JOIN named n USING (source_key) \
         ORDER BY t.total DESC, t.source_key, m.day"
    );
    let rows = sqlx::query(&sql)
        .bind(query.days.clamp(1, 366))
        .bind(query.sources_per_page.clamp(1, 200))
        .bind(query.sources_offset.max(0))
        .bind(MAX_SPELLINGS)
        .fetch_all(&mut *conn)
        .await?;
    let mut series: Vec<SourceSeries> = Vec::new();
    let mut count = 0;
    for row in rows {
        let key: String = row.try_get("source_key")?;
        count = row.try_get("sources")?;
        if series.last().is_none_or(|s| s.source_key != key) {
            series.push(SourceSeries {
                query_source: row.try_get("name")?,
                source_key: key,
                spellings: row.try_get("spellings")?,
                alerts: row.try_get("total")?,
                max_duration_seconds: row.try_get("worst")?,
                days: Vec::new(),
            });
        }
        let last = series.last_mut().expect("pushed above");
        last.days.push(DayFigure {
            day: row.try_get("day")?,
            alerts: row.try_get("alerts")?,
            max_duration_seconds: row.try_get("max_d")?,
        });
    }
    if series.is_empty() && query.sources_offset > 0 {
        // Past the last page: still say how many there are.
        count = sqlx::query_scalar(&format!(
            "SELECT count(DISTINCT source_key) FROM ( \
                 SELECT source_key FROM alert_daily WHERE day >= (now() AT TIME ZONE 'UTC')::date - ($1::int - 1) \
                 UNION SELECT longtx_source_key(query_source) FROM ( \
                     SELECT DISTINCT query_source FROM alert_events WHERE NOT rolled_up AND {COUNTED}) e) s"
        ))
        .bind(query.days.clamp(1, 366))
        .fetch_one(&mut *conn)
        .await?;
    }
    Ok((series, count))
}

async fn week_figures(
    conn: &mut sqlx::PgConnection,
    weeks: i32,
) -> Result<Vec<WeekFigure>, StoreError> {
    Ok(sqlx::query_as::<_, WeekFigure>(
        "WITH weeks AS ( \
             SELECT generate_series(date_trunc('week', now() AT TIME ZONE 'UTC') - make_interval(weeks => $1::int - 1), \
                                    date_trunc('week', now() AT TIME ZONE 'UTC'), interval '1 week')::date AS week), \
         since AS (SELECT min(week)::timestamp AT TIME ZONE 'UTC' AS at FROM weeks), \
         opened AS ( \
             SELECT date_trunc('week', pr_opened_at AT TIME ZONE 'UTC')::date AS week, count(*) AS n \
             FROM jobs WHERE pr_opened_at >= (SELECT at FROM since) GROUP BY 1), \
         ended AS ( \
             SELECT date_trunc('week', ended_at AT TIME ZONE 'UTC')::date AS week, \
                    count(*) FILTER (WHERE state IN ('merged', 'verified', 'regressed')) AS merged, \
                    count(*) FILTER (WHERE state = 'closed') AS closed, \
                    count(*) FILTER (WHERE state = 'wontfix') AS wontfix \
             FROM jobs WHERE ended_at >= (SELECT at FROM since) AND pr_number IS NOT NULL GROUP BY 1) \
         SELECT w.week, COALESCE(o.n, 0) AS opened, COALESCE(e.merged, 0) AS merged, \
                COALESCE(e.closed, 0) AS closed, COALESCE(e.wontfix, 0) AS wontfix \
         FROM weeks w LEFT JOIN opened o USING (week) LEFT JOIN ended e USING (week) ORDER BY w.week",
    )
    .bind(weeks.clamp(1, 104))
    .fetch_all(&mut *conn)
    .await?)
}

const DISPATCHES: &str = "SELECT created_at, dry_run, outcome, request, run_id FROM dispatches \
                          WHERE job_id = $1 ORDER BY id DESC LIMIT 20";

async fn dispatches_on(
    conn: &mut sqlx::PgConnection,
    id: i64,
) -> Result<Vec<DispatchRecord>, sqlx::Error> {
    sqlx::query_as::<_, DispatchRecord>(DISPATCHES)
        .bind(id)
        .fetch_all(conn)
        .await
}

impl crate::Store {
    /// The job's newest dispatches (at most 20), dry runs included.
    pub async fn dispatches_of(&self, id: i64) -> Result<Vec<DispatchRecord>, crate::StoreError> {
        Ok(sqlx::query_as::<_, DispatchRecord>(DISPATCHES)
            .bind(id)
            .fetch_all(self.pool())
            .await?)
    }
}
