//! Opening the database: `DATABASE_URL`, or the embedded cluster.

use crate::config::Config;
use anyhow::Context;
use longtx_embedded_pg::{ClusterOptions, EmbeddedPostgres};
use longtx_store::{PoolSettings, Store};
use std::str::FromStr;
use std::sync::Arc;

pub struct Database {
    pub store: Store,
    embedded: Option<Arc<EmbeddedPostgres>>,
}

impl Database {
    pub async fn open(config: &Config) -> anyhow::Result<Database> {
        let settings = PoolSettings {
            max_connections: config.db_max_connections,
            acquire_timeout: config.db_acquire_timeout,
        };
        let (options, embedded) = match &config.database_url {
            Some(url) => {
                // The URL may carry a password: never echo it.
                let options = sqlx::postgres::PgConnectOptions::from_str(url)
                    .map_err(|_| anyhow::anyhow!("DATABASE_URL is not a valid postgres:// URL"))?;
                (options, None)
            }
            None => {
                let root = config.data_dir.clone();
                tracing::info!(data_dir = %root.display(), "DATABASE_URL is unset: using the embedded PostgreSQL");
                let pg = tokio::task::spawn_blocking(move || {
                    EmbeddedPostgres::start(&root, &ClusterOptions::default())
                })
                .await
                .context("starting the embedded PostgreSQL")??;
                if let Some(owner) = pg.owner() {
                    tracing::info!(%owner, "the embedded PostgreSQL is owned by another longtx process: using its server, which that process stops, not this one");
                }
                let options = sqlx::postgres::PgConnectOptions::new()
                    .host(&pg.socket_dir().display().to_string())
                    .port(pg.port())
                    .username(pg.user())
                    .database("postgres");
                (options, Some(Arc::new(pg)))
            }
        };
        if embedded.is_none() {
            // One connection first, so a refused port, an unknown host or a
            // failed handshake is said as such at once, not as the pool's
            // "timed out" five seconds later.
            first_connection(&options, config.database_url.as_deref()).await?;
        }
        let store = Store::connect(options.clone(), &settings);
        if embedded.is_none() {
            // Fail at start with a sentence that names the URL setting to
            // change, rather than at the first request.
            if let Err(err) = store.ping().await {
                let said = match &err {
                    longtx_store::StoreError::Database(e) => {
                        explain(e, &options, config.database_url.as_deref())
                    }
                    other => other.to_string(),
                };
                anyhow::bail!("DATABASE_URL: {said}");
            }
        }
        Ok(Database { store, embedded })
    }

    /// The process that owns the embedded cluster when it is not this one
    /// (another `serve` on the same data dir), in a sentence.
    pub fn embedded_owner(&self) -> Option<String> {
        self.embedded.as_ref().and_then(|pg| pg.owner())
    }

    /// Closes the pool, then stops the embedded server if this process
    /// owns it.
    pub async fn shutdown(self) {
        self.store.close().await;
        if let Some(pg) = self.embedded {
            if let Some(owner) = pg.owner() {
                // Said as such: "stopped" here read as if another
                // process's server had gone.
                tracing::info!(%owner, "the embedded PostgreSQL is left running for its owner");
                return;
            }
            let stopped = tokio::task::spawn_blocking(move || pg.stop()).await;
            match stopped {
                Ok(Ok(())) => tracing::info!("embedded PostgreSQL stopped"),
                Ok(Err(err)) => {
                    tracing::error!(error = %err, "stopping the embedded PostgreSQL failed")
                }
                Err(err) => {
                    tracing::error!(error = %err, "stopping the embedded PostgreSQL panicked")
                }
            }
        }
    }
}

/// Connects once to the configured server; an error says what failed
/// (refused, unknown host, no answer, TLS, or the server's own refusal),
/// naming the host and port but never the password.
async fn first_connection(
    options: &sqlx::postgres::PgConnectOptions,
    url: Option<&str>,
) -> anyhow::Result<()> {
    use sqlx::ConnectOptions;
    let at = format!("{}:{}", options.get_host(), options.get_port());
    let quiet = options.clone().disable_statement_logging();
    let err = match tokio::time::timeout(std::time::Duration::from_secs(10), quiet.connect()).await {
        Ok(Ok(conn)) => {
            let _ = sqlx::Connection::close(conn).await;
            return Ok(());
        }
        Ok(Err(err)) => err,
        Err(_) => anyhow::bail!(
            "DATABASE_URL: no answer from {at} within 10 s: is a firewall dropping the connection, or the host down?"
        ),
    };
    anyhow::bail!("DATABASE_URL: {}", explain(&err, options, url))
}

/// What a failed connection to the configured server means: refused,
/// unknown host, unreachable, TLS (with the sslmode or CA to set), or the
/// server's own refusal; host and port named, never the password.
fn explain(
    err: &sqlx::Error,
    options: &sqlx::postgres::PgConnectOptions,
    url: Option<&str>,
) -> String {
    let at = format!("{}:{}", options.get_host(), options.get_port());
    let message = err.to_string();
    // TLS problems first: the hint says which sslmode or CA to set.
    let tls = longtx_core::db_errors::tls_hint(
        longtx_core::db_errors::Flavour::Postgres,
        &message,
        url.is_some_and(longtx_core::db_errors::tls_disabled),
    );
    match (err, tls) {
        (_, Some(hint)) => hint,
        (sqlx::Error::Io(io), _) if io.kind() == std::io::ErrorKind::ConnectionRefused => format!(
            "connection refused at {at}: is PostgreSQL running and listening there (host and port in DATABASE_URL)?"
        ),
        (sqlx::Error::Io(io), _) if io.to_string().contains("lookup address") => format!(
            "cannot resolve the host {:?}: check the host name in DATABASE_URL",
            options.get_host()
        ),
        (sqlx::Error::Io(io), _) => format!("cannot reach {at}: {io}"),
        (sqlx::Error::Tls(_), None) => format!("the TLS handshake with {at} failed: {message}"),
        (_, None) => format!("{at} refused the connection: {message}"),
    }
}
