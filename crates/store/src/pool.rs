use crate::StoreError;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Postgres, Transaction};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

#[derive(Debug, Clone)]
pub struct PoolSettings {
    pub max_connections: u32,
    /// How long a request waits for a free connection before it gets 503.
    pub acquire_timeout: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            max_connections: 5,
            acquire_timeout: Duration::from_secs(5),
        }
    }
}

/// The handle to the database; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pool: PgPool,
    /// Callers waiting for a connection right now, for `/metrics`.
    waiting: Arc<AtomicUsize>,
    max_connections: u32,
    /// Read on first use (`Store::installation`).
    pub(crate) installation: Arc<std::sync::OnceLock<longtx_core::installation::Installation>>,
}

/// The pool at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolStats {
    pub open: u32,
    pub idle: usize,
    pub max: u32,
    pub waiting: usize,
}

/// Counts a caller as waiting until it has its connection (or gave up).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn start(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        Waiting(counter)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Store {
    /// Connects lazily: the pool opens connections when first needed.
    pub fn connect(options: PgConnectOptions, settings: &PoolSettings) -> Store {
        // The server enforces the house rule too: no statement runs long and
        // no session sits idle inside a transaction.
        let options = options.options([
            ("statement_timeout", "10s"),
            ("idle_in_transaction_session_timeout", "15s"),
        ]);
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections.max(1))
            .acquire_timeout(settings.acquire_timeout)
            // A ping before every acquire doubles round trips on the hot
            // path; a broken connection shows up as an error and is dropped.
            .test_before_acquire(false)
            .idle_timeout(Some(Duration::from_secs(300)))
            .connect_lazy_with(options);
        Store {
            pool,
            waiting: Arc::new(AtomicUsize::new(0)),
            max_connections: settings.max_connections.max(1),
            installation: Arc::default(),
        }
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    /// Migrations this build has that the database has not applied yet
    /// (`version description`), without applying them.
    pub async fn pending_migrations(&self) -> Result<Vec<String>, StoreError> {
        let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
            .fetch_one(&self.pool)
            .await?;
        let applied: Vec<i64> = if exists {
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
                .fetch_all(&self.pool)
                .await?
        } else {
            Vec::new()
        };
        Ok(MIGRATOR
            .iter()
            .filter(|m| !m.migration_type.is_down_migration() && !applied.contains(&m.version))
            .map(|m| format!("{} {}", m.version, m.description))
            .collect())
    }

    /// True when the database answers a trivial query.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Flushes dirty buffers now (benchmarks, between phases). Superuser only.
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        sqlx::query("CHECKPOINT").execute(&self.pool).await?;
        Ok(())
    }

    /// Connections in use and idle, for readiness and (later) metrics.
    pub fn pool_usage(&self) -> (u32, usize) {
        (self.pool.size(), self.pool.num_idle())
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub fn pool_stats(&self) -> PoolStats {
        PoolStats {
            open: self.pool.size(),
            idle: self.pool.num_idle(),
            max: self.max_connections,
            waiting: self.waiting.load(Ordering::Relaxed),
        }
    }

    /// A connection, counted as waiting until the pool hands it over.
    pub(crate) async fn acquire(&self) -> Result<PoolConnection<Postgres>, sqlx::Error> {
        let _waiting = Waiting::start(&self.waiting);
        self.pool.acquire().await
    }

    /// A transaction, counted as waiting until it has its connection.
    pub(crate) async fn begin(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        let _waiting = Waiting::start(&self.waiting);
        self.pool.begin().await
    }
}
