//! PostgreSQL 14+: relation locks from `pg_locks`, joined to the backend's
//! transaction in `pg_stat_activity` and the table in `pg_class`.

use crate::fold::{Holder, Waiting, DDL_IN_PROGRESS};
use crate::{CollectError, SetupProblem};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection, Row};
use std::str::FromStr;
use std::time::Duration;

/// A granted lock on a table, view or partitioned table, held inside a
/// transaction by another backend. A DDL statement holding the exclusive
/// lock is reported as `ddl_in_progress`, as the MySQL side does.
const HOLDERS_SQL: &str = r"SELECT
    CASE WHEN l.mode = 'AccessExclusiveLock'
              AND a.query ~* '^\s*(/\*.*?\*/\s*)*(alter|create|drop|truncate|reindex|cluster|vacuum|refresh)\s'
         THEN $1 ELSE c.relname::text END AS table_name,
    COALESCE(a.query, '') AS statement,
    a.application_name,
    EXTRACT(EPOCH FROM clock_timestamp() - a.xact_start)::float8 AS seconds
  FROM pg_locks l
  JOIN pg_class c ON c.oid = l.relation
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_stat_activity a ON a.pid = l.pid
  WHERE l.locktype = 'relation' AND l.granted AND c.relkind IN ('r', 'p', 'm')
    AND a.xact_start IS NOT NULL AND a.pid <> pg_backend_pid()
    AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
  LIMIT 10000";

/// The backends waiting for a lock on a table that another backend holds
/// or is queued for first (`pg_blocking_pids`: a query behind a pending
/// `ALTER TABLE` waits on the ALTER, which waits on the holder).
const WAITING_SQL: &str = r"SELECT c.relname::text AS table_name, COALESCE(a.query, '') AS statement
  FROM pg_locks l
  JOIN pg_class c ON c.oid = l.relation
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_stat_activity a ON a.pid = l.pid
  WHERE l.locktype = 'relation' AND NOT l.granted AND c.relkind IN ('r', 'p', 'm')
    AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
    AND cardinality(pg_blocking_pids(l.pid)) > 0
  LIMIT 10000";

/// What `pg_stat_activity.query` shows without `pg_read_all_stats`.
const HIDDEN: &str = "<insufficient privilege>";

pub struct Postgres {
    conn: PgConnection,
}

impl Postgres {
    pub async fn connect(dsn: &str, timeout: Duration) -> Result<Self, CollectError> {
        let millis = timeout.as_millis().to_string();
        let options = PgConnectOptions::from_str(dsn)
            .map_err(|e| CollectError::Connect(format!("the DSN does not parse: {e}")))?
            .application_name("longtx-collect")
            .options([
                ("statement_timeout", millis.as_str()),
                ("lock_timeout", "2000"),
                ("default_transaction_read_only", "on"),
            ])
            .disable_statement_logging();
        let mut conn = tokio::time::timeout(timeout, options.connect())
            .await
            .map_err(|_| CollectError::Connect("timed out".into()))?
            .map_err(|e| {
                let message = e.to_string();
                CollectError::Connect(
                    longtx_core::db_errors::tls_hint(
                        longtx_core::db_errors::Flavour::Postgres,
                        &message,
                        longtx_core::db_errors::tls_disabled(dsn),
                    )
                    .unwrap_or(message),
                )
            })?;
        let version: i32 = sqlx::query_scalar("SELECT current_setting('server_version_num')::int")
            .fetch_one(&mut conn)
            .await?;
        if version < 140000 {
            return Err(CollectError::Setup(SetupProblem {
                code: "postgres_too_old",
                message: format!(
                    "PostgreSQL {version} is older than 14, which the collector needs"
                ),
            }));
        }
        tracing::info!(version, "collecting lock holders from PostgreSQL");
        Ok(Postgres { conn })
    }

    pub async fn holders(&mut self) -> Result<(Vec<Holder>, Option<SetupProblem>), CollectError> {
        let rows = sqlx::query(HOLDERS_SQL)
            .bind(DDL_IN_PROGRESS)
            .fetch_all(&mut self.conn)
            .await?;
        let holders: Vec<Holder> = rows
            .iter()
            .map(|row| {
                Ok(Holder {
                    table: row.try_get("table_name")?,
                    statement: row.try_get("statement")?,
                    application_name: row.try_get("application_name")?,
                    seconds: row
                        .try_get::<Option<f64>, _>("seconds")?
                        .unwrap_or(0.0)
                        .max(0.0),
                })
            })
            .collect::<Result<_, sqlx::Error>>()?;
        // The durations still count; only the sources are unknown.
        let problem = holders.iter().any(|h| h.statement == HIDDEN).then(|| SetupProblem {
            code: "pg_read_all_stats_missing",
            message: "other sessions' statements are hidden from this user, so their query_source is unknown: \
                      GRANT pg_read_all_stats TO <the collector's user>"
                .into(),
        });
        Ok((holders, problem))
    }

    pub async fn waiting(&mut self) -> Result<Vec<Waiting>, CollectError> {
        let rows = sqlx::query(WAITING_SQL).fetch_all(&mut self.conn).await?;
        rows.iter()
            .map(|row| {
                Ok(Waiting {
                    table: row.try_get("table_name")?,
                    statement: row.try_get("statement")?,
                })
            })
            .collect()
    }

    pub async fn close(self) {
        self.conn.close().await.ok();
    }
}
