//! Every source's longest transaction per day and table, under the
//! threshold too, and the history the what-if projects from.

use crate::{Store, StoreError};
use longtx_core::what_if::{History, Observation, Rates};
use sqlx::Row;

/// Observations one what-if reads at most; past it the shortest are left
/// out (they matter least to a lower threshold).
const MAX_OBSERVATIONS: i64 = 20_000;
/// How far back the rates reach: long enough to hold a few merged fixes.
const RATE_DAYS: i32 = 90;

impl Store {
    /// Raises today's (UTC) maximum for each (table, source), in one
    /// statement. Applying the same figures twice changes nothing.
    pub async fn record_observations(&self, seen: &[Observation]) -> Result<u64, StoreError> {
        if seen.is_empty() {
            return Ok(0);
        }
        let tables: Vec<&str> = seen.iter().map(|o| o.table.as_str()).collect();
        let sources: Vec<&str> = seen.iter().map(|o| o.query_source.as_str()).collect();
        let seconds: Vec<f64> = seen.iter().map(|o| o.max_seconds).collect();
        let done = sqlx::query(
            "INSERT INTO observed_daily (day, table_name, query_source, max_seconds) \
             SELECT (now() AT TIME ZONE 'UTC')::date, t, s, max(v) \
             FROM unnest($1::text[], $2::text[], $3::float8[]) AS u(t, s, v) GROUP BY t, s ORDER BY t, s \
             ON CONFLICT (day, table_name, query_source) DO UPDATE SET \
                 max_seconds = GREATEST(observed_daily.max_seconds, EXCLUDED.max_seconds)",
        )
        .bind(&tables)
        .bind(&sources)
        .bind(&seconds)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }

    /// The what-if's input on its own (`GET /api/what-if`).
    pub async fn what_if_history(&self, days: i32) -> Result<History, StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *tx)
            .await?;
        let history = what_if_history(&mut tx, days.clamp(1, 366)).await?;
        tx.commit().await?;
        Ok(history)
    }

    /// Drops daily maxima older than `days`.
    pub async fn purge_observations(&self, days: i32) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM observed_daily WHERE day < (now() AT TIME ZONE 'UTC')::date - $1::int",
        )
        .bind(days.max(31))
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }
}

/// The what-if's input, read on the dashboard's read-only transaction.
pub(crate) async fn what_if_history(
    conn: &mut sqlx::PgConnection,
    days: i32,
) -> Result<History, StoreError> {
    // One row per table and source key (migration 19), named by a
    // spelling that was sent: any spelling gives the same key, which is
    // what the ignore list and the exclusions are matched on. Alerts not
    // rolled up yet count too, so the figures are exact when asked, as the
    // sources on the same page are.
    let rows = sqlx::query(
        "WITH since AS (SELECT (now() AT TIME ZONE 'UTC')::date - ($1::int - 1) AS day), \
         seen AS ( \
             SELECT table_name, source_key, query_source, max_seconds FROM observed_daily \
             WHERE day >= (SELECT day FROM since) \
             UNION ALL \
             SELECT table_name, longtx_source_key(query_source), query_source, max_seconds FROM ( \
                 SELECT left(COALESCE(table_name, ''), 128) AS table_name, query_source, max(duration_seconds) AS max_seconds \
                 FROM alert_events \
                 WHERE NOT rolled_up AND query_source IS NOT NULL AND duration_seconds >= 0 \
                   AND outcome NOT IN ('resolved', 'rejected') \
                   AND (received_at AT TIME ZONE 'UTC')::date >= (SELECT day FROM since) \
                 GROUP BY 1, 2) by_spelling) \
         SELECT table_name, min(query_source) AS query_source, max(max_seconds) AS max_seconds FROM seen \
         GROUP BY table_name, source_key ORDER BY 3 DESC, 2, 1 LIMIT $2",
    )
    .bind(days)
    .bind(MAX_OBSERVATIONS)
    .fetch_all(&mut *conn)
    .await?;
    let observations = rows
        .iter()
        .map(|r| {
            Ok(Observation {
                table: r.try_get("table_name")?,
                query_source: r.try_get("query_source")?,
                max_seconds: r.try_get("max_seconds")?,
            })
        })
        .collect::<Result<_, sqlx::Error>>()?;

    let rates = sqlx::query(
        "WITH ended AS ( \
             SELECT id, state, pr_number FROM jobs \
             WHERE ended_at >= now() - make_interval(days => $1) AND state <> 'dry_run') \
         SELECT count(*) AS ended, \
                count(*) FILTER (WHERE pr_number IS NOT NULL) AS with_pr, \
                count(*) FILTER (WHERE pr_number IS NOT NULL AND state IN ('merged', 'verified', 'regressed')) AS merged, \
                (SELECT count(*) FROM revision_rounds r JOIN ended e ON e.id = r.job_id \
                  WHERE e.pr_number IS NOT NULL AND r.state NOT IN ('queued', 'cancelled')) AS rounds, \
                (SELECT avg(cost) FROM (SELECT sum(r.cost_usd) AS cost FROM run_reports r JOIN ended e ON e.id = r.job_id \
                  WHERE r.cost_usd IS NOT NULL GROUP BY r.job_id) c) AS cost_per_job \
         FROM ended",
    )
    .bind(RATE_DAYS)
    .fetch_one(&mut *conn)
    .await?;
    let count = |name: &str| -> Result<u32, sqlx::Error> {
        Ok(rates.try_get::<i64, _>(name)?.clamp(0, i64::from(u32::MAX)) as u32)
    };
    let rates = Rates {
        ended_jobs: count("ended")?,
        with_pr: count("with_pr")?,
        merged: count("merged")?,
        rounds: count("rounds")?,
        cost_per_job_usd: rates.try_get::<Option<f64>, _>("cost_per_job")?,
    };

    let reviewers = sqlx::query(
        "SELECT reviewer, count(*) AS n, \
                (SELECT count(DISTINCT job_id) FROM review_requests \
                  WHERE requested_at >= now() - make_interval(days => $1)) AS prs \
         FROM review_requests WHERE requested_at >= now() - make_interval(days => $1) \
         GROUP BY reviewer ORDER BY n DESC, reviewer LIMIT 50",
    )
    .bind(RATE_DAYS)
    .fetch_all(&mut *conn)
    .await?;
    let reviewed_prs = match reviewers.first() {
        Some(r) => r.try_get::<i64, _>("prs")? as u32,
        None => 0,
    };
    let reviewer_requests = reviewers
        .iter()
        .map(|r| Ok((r.try_get("reviewer")?, r.try_get::<i64, _>("n")? as u32)))
        .collect::<Result<_, sqlx::Error>>()?;

    let merged_in_window: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM jobs WHERE pr_number IS NOT NULL \
         AND state IN ('merged', 'verified', 'regressed') AND ended_at >= now() - make_interval(days => $1)",
    )
    .bind(days)
    .fetch_one(&mut *conn)
    .await?;
    let open_reviews = crate::queue::open_reviews(&mut *conn)
        .await?
        .into_iter()
        .map(|(who, n)| (who, n.clamp(0, i64::from(u32::MAX)) as u32))
        .collect();
    Ok(History {
        days: days as u32,
        observations,
        rates,
        reviewer_requests,
        reviewed_prs,
        merged_in_window: merged_in_window as u32,
        open_reviews,
    })
}
