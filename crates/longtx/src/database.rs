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
                let options = sqlx::postgres::PgConnectOptions::new()
                    .host(&pg.socket_dir().display().to_string())
                    .port(pg.port())
                    .username(pg.user())
                    .database("postgres");
                (options, Some(Arc::new(pg)))
            }
        };
        let store = Store::connect(options, &settings);
        if embedded.is_none() {
            // Fail at start with a sentence that names the URL setting to
            // change, rather than at the first request.
            if let Err(err) = store.ping().await {
                let message = err.to_string();
                let hint = longtx_core::db_errors::tls_hint(
                    longtx_core::db_errors::Flavour::Postgres,
                    &message,
                    config
                        .database_url
                        .as_deref()
                        .is_some_and(longtx_core::db_errors::tls_disabled),
                );
                anyhow::bail!("DATABASE_URL: {}", hint.unwrap_or(message));
            }
        }
        Ok(Database { store, embedded })
    }

    /// Closes the pool, then stops the embedded server if there is one.
    pub async fn shutdown(self) {
        self.store.close().await;
        if let Some(pg) = self.embedded {
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
