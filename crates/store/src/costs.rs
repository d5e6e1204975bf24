//! Agent cost per run, as the workflows report it, and the figures the
//! daily cost cap, the job page and `/metrics` read.

use crate::{Store, StoreError};
use longtx_core::run_report::RunReport;
use serde::Serialize;
use sqlx::Row;

/// What a job's runs cost so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JobCost {
    pub runs: i64,
    pub cost_usd: f64,
    pub turns: i64,
    pub acus: f64,
    /// Input and output tokens of the runs that reported them.
    pub tokens: i64,
}

/// What the report did: `None` for an unknown job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportRecorded {
    New,
    /// The same run reported again: its row now holds the latest figures.
    Replaced,
}

impl Store {
    /// Keeps one report per run of the job, in one statement.
    pub async fn record_run_report(
        &self,
        job_id: i64,
        report: &RunReport,
    ) -> Result<Option<ReportRecorded>, StoreError> {
        let row = sqlx::query(
            "INSERT INTO run_reports (job_id, run_id, round, agent, cost_usd, turns, acus, \
                 input_tokens, cached_input_tokens, output_tokens) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 WHERE EXISTS (SELECT 1 FROM jobs WHERE id = $1) \
             ON CONFLICT (job_id, run_id) DO UPDATE SET round = EXCLUDED.round, agent = EXCLUDED.agent, \
                 cost_usd = EXCLUDED.cost_usd, turns = EXCLUDED.turns, acus = EXCLUDED.acus, \
                 input_tokens = EXCLUDED.input_tokens, cached_input_tokens = EXCLUDED.cached_input_tokens, \
                 output_tokens = EXCLUDED.output_tokens \
             RETURNING (xmax = 0) AS new",
        )
        .bind(job_id)
        .bind(report.run_id)
        .bind(report.round as i32)
        .bind(report.cost.agent.as_deref())
        .bind(report.cost.cost_usd)
        .bind(report.cost.turns.map(|t| t as i32))
        .bind(report.cost.acus)
        .bind(report.cost.input_tokens.map(|t| t as i64))
        .bind(report.cost.cached_input_tokens.map(|t| t as i64))
        .bind(report.cost.output_tokens.map(|t| t as i64))
        .fetch_optional(self.pool())
        .await?;
        Ok(row
            .map(|r| r.try_get::<bool, _>("new"))
            .transpose()?
            .map(|new| {
                if new {
                    ReportRecorded::New
                } else {
                    ReportRecorded::Replaced
                }
            }))
    }

    pub async fn job_cost(&self, job_id: i64) -> Result<JobCost, StoreError> {
        let mut conn = self.acquire().await?;
        job_cost_on(&mut conn, job_id).await
    }

    /// Agent cost reported today (UTC) and in all, US dollars: `/metrics`.
    pub async fn cost_totals(&self) -> Result<(f64, f64), StoreError> {
        let row = sqlx::query(
            "SELECT COALESCE(sum(cost_usd) FILTER (WHERE reported_at >= date_trunc('day', now())), 0) AS today, \
                    COALESCE(sum(cost_usd), 0) AS total FROM run_reports",
        )
        .fetch_one(self.pool())
        .await?;
        Ok((row.try_get("today")?, row.try_get("total")?))
    }
}

pub(crate) async fn job_cost_on(
    conn: &mut sqlx::PgConnection,
    job_id: i64,
) -> Result<JobCost, StoreError> {
    let row = sqlx::query(
        "SELECT count(*) AS runs, COALESCE(sum(cost_usd), 0) AS cost, COALESCE(sum(turns), 0)::bigint AS turns, \
                COALESCE(sum(acus), 0) AS acus, \
                COALESCE(sum(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0)), 0)::bigint AS tokens \
         FROM run_reports WHERE job_id = $1",
    )
    .bind(job_id)
    .fetch_one(&mut *conn)
    .await?;
    Ok(JobCost {
        runs: row.try_get("runs")?,
        cost_usd: row.try_get("cost")?,
        turns: row.try_get("turns")?,
        acus: row.try_get("acus")?,
        tokens: row.try_get("tokens")?,
    })
}

/// Agent cost for the dashboard: the last 30 days, per fix that landed, and
/// by source.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CostFigures {
    pub today_usd: f64,
    pub last_30_days_usd: f64,
    /// Every run's cost of the jobs merged (verified, regressed) in the last
    /// 30 days, over how many they are; `None` without any.
    pub per_merged_fix_usd: Option<f64>,
    /// (source, cost, jobs), costliest first, 30 days.
    pub by_source: Vec<(String, f64, i64)>,
}

pub(crate) async fn cost_figures(conn: &mut sqlx::PgConnection) -> Result<CostFigures, StoreError> {
    let totals = sqlx::query(
        "SELECT COALESCE(sum(cost_usd) FILTER (WHERE reported_at >= date_trunc('day', now())), 0) AS today, \
                COALESCE(sum(cost_usd) FILTER (WHERE reported_at >= now() - interval '30 days'), 0) AS month, \
                (SELECT sum(r.cost_usd) / NULLIF(count(DISTINCT j.id), 0) FROM jobs j JOIN run_reports r ON r.job_id = j.id \
                  WHERE j.state IN ('merged', 'verified', 'regressed') AND j.ended_at >= now() - interval '30 days') AS per_fix \
         FROM run_reports",
    )
    .fetch_one(&mut *conn)
    .await?;
    let rows = sqlx::query(
        // By source key, as jobs are deduplicated: two jobs of one source
        // spelt differently over time are one row, named as the newest.
        "SELECT (array_agg(j.query_source ORDER BY j.id DESC))[1] AS query_source, \
                sum(r.cost_usd) AS cost, count(DISTINCT j.id) AS jobs \
         FROM run_reports r JOIN jobs j ON j.id = r.job_id \
         WHERE r.reported_at >= now() - interval '30 days' AND r.cost_usd IS NOT NULL \
         GROUP BY j.source_key ORDER BY cost DESC, j.source_key LIMIT 10",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(CostFigures {
        today_usd: totals.try_get("today")?,
        last_30_days_usd: totals.try_get("month")?,
        per_merged_fix_usd: totals.try_get("per_fix")?,
        by_source: rows
            .iter()
            .map(|r| {
                Ok((
                    r.try_get("query_source")?,
                    r.try_get("cost")?,
                    r.try_get("jobs")?,
                ))
            })
            .collect::<Result<_, sqlx::Error>>()?,
    })
}
