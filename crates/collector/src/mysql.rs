//! MySQL 8 / Aurora MySQL and MariaDB 10.11: metadata locks from
//! `performance_schema.metadata_locks`, joined to the owning thread, its
//! InnoDB transaction and its current or last statement.

use crate::fold::{Holder, Waiting, DDL_IN_PROGRESS};
use crate::{CollectError, SetupProblem};
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection};
use sqlx::{ConnectOptions, Connection, Row};
use std::str::FromStr;
use std::time::Duration;

const MDL_INSTRUMENT: &str = "wait/lock/metadata/sql/mdl";

/// The holders query. `#sql-...` is the work table of an ALTER in
/// progress. A thread's current or last statement comes from
/// `events_statements_current`, else from `innodb_trx.trx_query` (which
/// is empty while the transaction sits idle).
///
/// `STRAIGHT_JOIN` fixes the join order: locks, their threads, the
/// transactions, the statements. Left free, MariaDB 10.11 starts from
/// `innodb_trx` and joins it to `metadata_locks` with no condition between
/// them once `threads` has grown past ~768 rows (its estimate follows
/// performance_schema's allocated size, not the rows): 9 s a poll at 1,000
/// sessions and 300 holders, against 4 ms in this order (`collector-bench`).
/// Longest first, so the `LIMIT` keeps the holders that matter.
const HOLDERS_SQL: &str = "SELECT STRAIGHT_JOIN \
    CAST(CASE WHEN ml.OBJECT_NAME LIKE '#sql-%' THEN ? ELSE ml.OBJECT_NAME END AS CHAR) AS table_name, \
    CAST(COALESCE(esc.SQL_TEXT, it.trx_query, '') AS CHAR) AS statement, \
    CAST(TIMESTAMPDIFF(SECOND, it.trx_started, NOW()) AS SIGNED) AS seconds \
  FROM performance_schema.metadata_locks ml \
  JOIN performance_schema.threads th ON ml.OWNER_THREAD_ID = th.THREAD_ID \
  JOIN information_schema.innodb_trx it ON th.PROCESSLIST_ID = it.trx_mysql_thread_id \
  LEFT JOIN performance_schema.events_statements_current esc ON th.THREAD_ID = esc.THREAD_ID \
  WHERE ml.OBJECT_TYPE = 'TABLE' AND ml.LOCK_STATUS = 'GRANTED' \
    AND ml.OBJECT_SCHEMA NOT IN ('information_schema', 'performance_schema', 'mysql', 'sys') \
  ORDER BY seconds DESC LIMIT 10000";

/// The sessions waiting for a metadata lock on a table (`PENDING`), with
/// the statement they wait in (`threads.PROCESSLIST_INFO`, the statement
/// the thread is running now). The same join order as the holders query.
const WAITING_SQL: &str = "SELECT STRAIGHT_JOIN \
    CAST(ml.OBJECT_NAME AS CHAR) AS table_name, \
    CAST(COALESCE(th.PROCESSLIST_INFO, '') AS CHAR) AS statement \
  FROM performance_schema.metadata_locks ml \
  JOIN performance_schema.threads th ON ml.OWNER_THREAD_ID = th.THREAD_ID \
  WHERE ml.OBJECT_TYPE = 'TABLE' AND ml.LOCK_STATUS = 'PENDING' \
    AND ml.OBJECT_SCHEMA NOT IN ('information_schema', 'performance_schema', 'mysql', 'sys') \
  LIMIT 10000";

pub struct MySql {
    conn: MySqlConnection,
    pub mariadb: bool,
}

impl MySql {
    /// Connects, makes the session read-only with a statement timeout, and
    /// checks that the metadata-lock instrument can be read.
    pub async fn connect(dsn: &str, timeout: Duration) -> Result<Self, CollectError> {
        let options = MySqlConnectOptions::from_str(dsn)
            .map_err(|e| CollectError::Connect(format!("the DSN does not parse: {e}")))?
            .disable_statement_logging();
        let mut conn = tokio::time::timeout(timeout, options.connect())
            .await
            .map_err(|_| CollectError::Connect("timed out".into()))?
            .map_err(|e| {
                let message = e.to_string();
                CollectError::Connect(
                    longtx_core::db_errors::tls_hint(
                        longtx_core::db_errors::Flavour::MySql,
                        &message,
                        longtx_core::db_errors::tls_disabled(dsn),
                    )
                    .unwrap_or(message),
                )
            })?;
        let version: String = sqlx::query_scalar("SELECT CAST(VERSION() AS CHAR)")
            .fetch_one(&mut conn)
            .await?;
        let mariadb = version.to_ascii_lowercase().contains("mariadb");
        let limit = if mariadb {
            // MariaDB: seconds, as a double.
            format!("SET SESSION max_statement_time = {}", timeout.as_secs_f64())
        } else {
            format!("SET SESSION max_execution_time = {}", timeout.as_millis())
        };
        let mut setup = vec![
            limit.as_str(),
            "SET SESSION TRANSACTION READ ONLY",
            "SET SESSION lock_wait_timeout = 5",
        ];
        if mariadb {
            // Hash joins (BNLH) for these tables, which have no indexes; the
            // default level allows only block nested loops, which cost
            // holders x threads comparisons. MySQL 8 has no such variable
            // (it hash-joins by itself since 8.0.20).
            setup.push("SET SESSION join_cache_level = 4");
        }
        for statement in setup {
            sqlx::query(statement).execute(&mut conn).await?;
        }
        let mut this = MySql { conn, mariadb };
        this.check_setup().await?;
        tracing::info!(
            version,
            mariadb,
            "collecting metadata-lock holders from MySQL"
        );
        Ok(this)
    }

    /// Says exactly what to enable, instead of reporting zero holders.
    async fn check_setup(&mut self) -> Result<(), CollectError> {
        let enabled: i64 = sqlx::query_scalar("SELECT CAST(@@performance_schema AS SIGNED)")
            .fetch_one(&mut self.conn)
            .await?;
        if enabled == 0 {
            return Err(CollectError::Setup(SetupProblem {
                code: "performance_schema_off",
                message: if self.mariadb {
                    "performance_schema is OFF: add `performance_schema=ON`, \
                     `performance-schema-instrument='wait/lock/metadata/sql/mdl=ON'` and \
                     `performance-schema-consumer-events-statements-current=ON` under [mysqld] and restart MariaDB"
                        .into()
                } else {
                    "performance_schema is OFF: set performance_schema=ON (on Aurora/RDS: the parameter group's \
                     performance_schema=1, then reboot)"
                        .into()
                },
            }));
        }
        let instrument: Option<String> = sqlx::query_scalar(
            "SELECT CAST(ENABLED AS CHAR) FROM performance_schema.setup_instruments WHERE NAME = ?",
        )
        .bind(MDL_INSTRUMENT)
        .fetch_optional(&mut self.conn)
        .await?;
        if instrument.as_deref() != Some("YES") {
            return Err(CollectError::Setup(SetupProblem {
                code: "mdl_instrument_off",
                message: format!(
                    "the metadata-lock instrument is off: run `UPDATE performance_schema.setup_instruments SET ENABLED = 'YES' \
                     WHERE NAME = '{MDL_INSTRUMENT}'` (until restart), and add \
                     `performance-schema-instrument='{MDL_INSTRUMENT}=ON'` under [mysqld] to keep it"
                ),
            }));
        }
        let consumer: Option<String> = sqlx::query_scalar(
            "SELECT CAST(ENABLED AS CHAR) FROM performance_schema.setup_consumers WHERE NAME = 'events_statements_current'",
        )
        .fetch_optional(&mut self.conn)
        .await?;
        if consumer.as_deref() != Some("YES") {
            tracing::warn!(
                "performance_schema consumer events_statements_current is off: idle holders' last statements are not \
                 visible, so their query_source is reported as unknown; enable it with \
                 UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME = 'events_statements_current'"
            );
        }
        Ok(())
    }

    pub async fn holders(&mut self) -> Result<Vec<Holder>, CollectError> {
        let rows = sqlx::query(HOLDERS_SQL)
            .bind(DDL_IN_PROGRESS)
            .fetch_all(&mut self.conn)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(Holder {
                    table: text(row, "table_name")?,
                    statement: text(row, "statement")?,
                    application_name: None,
                    seconds: row
                        .try_get::<Option<i64>, _>("seconds")?
                        .unwrap_or(0)
                        .max(0) as f64,
                })
            })
            .collect()
    }

    pub async fn waiting(&mut self) -> Result<Vec<Waiting>, CollectError> {
        let rows = sqlx::query(WAITING_SQL).fetch_all(&mut self.conn).await?;
        rows.iter()
            .map(|row| {
                Ok(Waiting {
                    table: text(row, "table_name")?,
                    statement: text(row, "statement")?,
                })
            })
            .collect()
    }

    pub async fn close(self) {
        self.conn.close().await.ok();
    }
}

/// A text column that may be NULL, as `""`.
fn text(row: &sqlx::mysql::MySqlRow, column: &str) -> Result<String, sqlx::Error> {
    Ok(row
        .try_get::<Option<String>, _>(column)?
        .unwrap_or_default())
}
