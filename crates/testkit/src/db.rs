use longtx_embedded_pg::{ClusterOptions, EmbeddedPostgres};
use longtx_store::{PoolSettings, Store};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// A database of its own for one test, migrated and empty. It is dropped
/// when the last clone goes, also when the test fails (the unwinding drops
/// it); databases of test processes that were killed are dropped by the
/// next process that starts the server, so the server's size stays bounded
/// across runs.
#[derive(Debug, Clone)]
pub struct TestDatabase {
    pub name: String,
    pub options: PgConnectOptions,
    _dropped_with: std::sync::Arc<DropOnLastClone>,
}

/// Drops the database when the last `TestDatabase` clone is dropped.
#[derive(Debug)]
struct DropOnLastClone {
    server: PgConnectOptions,
    name: String,
}

impl Drop for DropOnLastClone {
    fn drop(&mut self) {
        let (server, name) = (self.server.clone(), self.name.clone());
        // Its own thread and runtime: this may run inside a test's runtime,
        // which cannot block on itself. FORCE ends the connections the
        // test's pools still hold.
        let dropped = std::thread::spawn(move || {
            on_own_runtime(
                async move { drop_databases(&server, std::slice::from_ref(&name)).await },
            )
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("testkit: could not drop test database {}", self.name);
        }
    }
}

fn on_own_runtime<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the test database's housekeeping")
        .block_on(work)
}

async fn drop_databases(server: &PgConnectOptions, names: &[String]) -> Result<(), sqlx::Error> {
    let mut admin = server.clone().disable_statement_logging().connect().await?;
    for name in names {
        sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
            .execute(&mut admin)
            .await?;
    }
    admin.close().await
}

/// Drops the test databases of processes that are gone (killed before
/// their databases were dropped). The process id is the name's third part.
fn sweep_abandoned(server: &PgConnectOptions) {
    let server = server.clone();
    let swept = std::thread::spawn(move || {
        on_own_runtime(async move {
            let mut admin = server.clone().disable_statement_logging().connect().await?;
            let names: Vec<String> = sqlx::query_scalar(
                "SELECT datname FROM pg_database WHERE datname LIKE 'longtx\\_test\\_%'",
            )
            .fetch_all(&mut admin)
            .await?;
            admin.close().await?;
            let abandoned: Vec<String> = names
                .into_iter()
                .filter(|name| {
                    let pid = name.split('_').nth(2).and_then(|p| p.parse::<u32>().ok());
                    pid.is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
                })
                .collect();
            drop_databases(&server, &abandoned).await
        })
    })
    .join();
    if !matches!(swept, Ok(Ok(()))) {
        eprintln!("testkit: could not sweep abandoned test databases");
    }
}

static SERVER: OnceLock<PgConnectOptions> = OnceLock::new();
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Connection options for the test server's maintenance database.
fn server() -> PgConnectOptions {
    SERVER
        .get_or_init(|| {
            if let Ok(url) = std::env::var("LONGTX_TEST_DATABASE_URL") {
                let server = PgConnectOptions::from_str(&url)
                    .expect("LONGTX_TEST_DATABASE_URL is a postgres URL");
                sweep_abandoned(&server);
                return server;
            }
            let euid = unsafe { libc::geteuid() };
            let root = std::env::temp_dir().join(format!("longtx-test-pg-{euid}"));
            // Durability is worthless for throwaway test data; speed is not.
            let options = ClusterOptions {
                settings: [
                    ("fsync", "off"),
                    ("synchronous_commit", "off"),
                    ("full_page_writes", "off"),
                    ("max_connections", "400"),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            };
            let pg = EmbeddedPostgres::start(&root, &options)
                .unwrap_or_else(|e| panic!("test PostgreSQL: {e}"));
            let server = PgConnectOptions::new()
                .host(&pg.socket_dir().display().to_string())
                .port(pg.port())
                .username(pg.user())
                .database("postgres");
            sweep_abandoned(&server);
            server
        })
        .clone()
}

impl TestDatabase {
    /// A fresh database on the shared test server.
    pub async fn create() -> TestDatabase {
        let server = tokio::task::spawn_blocking(server)
            .await
            .expect("starting the test server");
        Self::create_on(server).await
    }

    /// A fresh database on another server (benchmarks use one with the
    /// default durability settings, unlike the test server).
    pub async fn create_on(server: PgConnectOptions) -> TestDatabase {
        let name = format!(
            "longtx_test_{}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        );
        let mut admin = server
            .clone()
            .disable_statement_logging()
            .connect()
            .await
            .expect("connecting to the test server");
        sqlx::query(&format!("CREATE DATABASE \"{name}\""))
            .execute(&mut admin)
            .await
            .expect("creating the test database");
        admin.close().await.ok();
        let db = TestDatabase {
            options: server.clone().database(&name),
            _dropped_with: std::sync::Arc::new(DropOnLastClone {
                server: server.clone(),
                name: name.clone(),
            }),
            name,
        };
        db.store(&PoolSettings::default())
            .migrate()
            .await
            .expect("migrating the test database");
        db
    }

    /// A new pool on this database, as a service replica would have.
    pub fn store(&self, settings: &PoolSettings) -> Store {
        Store::connect(self.options.clone(), settings)
    }

    /// A URL for this database, for programs given a DSN (`longtx collect`).
    /// A password in LONGTX_TEST_DATABASE_URL is not carried over.
    pub fn url(&self) -> String {
        let o = &self.options;
        let database = o.get_database().unwrap_or("postgres");
        let host = o.get_host();
        if host.starts_with('/') {
            format!(
                "postgres://{}@localhost:{}/{database}?host={host}",
                o.get_username(),
                o.get_port()
            )
        } else {
            format!(
                "postgres://{}@{host}:{}/{database}",
                o.get_username(),
                o.get_port()
            )
        }
    }

    /// A single connection for assertions that read tables directly.
    pub async fn connect(&self) -> sqlx::PgConnection {
        self.options
            .connect()
            .await
            .expect("connecting to the test database")
    }
}
