//! `longtx collect`: per table, the longest-running transaction holding a
//! metadata lock, with the `query_source` its statement names, as the
//! Prometheus gauge `longtx_mdl_holder_max_tx_duration_seconds`; and the
//! sessions waiting behind it, by kind, as `longtx_mdl_waiters`.
//!
//! One connection, polled read-only with a short statement timeout; on any
//! error it is dropped and made again on the next tick, and the figures
//! say the collector is down rather than that nothing is held.

pub mod fold;
mod mysql;
mod postgres;

pub use fold::{Caps, Holder, Series, Waiting};

use longtx_core::waiters::WaiterKind;
use longtx_metrics::Gauge;
use std::sync::{Arc, Mutex, RwLock};

mod peaks;
use longtx_core::what_if::Observation;
pub use peaks::Peaks;
use std::time::{Duration, Instant};

/// Where to measure. The password never leaves this type: `Display`
/// shows the DSN without it.
#[derive(Clone)]
pub enum Dsn {
    MySql(String),
    Postgres(String),
}

impl std::str::FromStr for Dsn {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        let (scheme, rest) = raw.split_once("://").ok_or(
            "a DSN looks like mysql://user:password@host:3306/db or postgres://user@host/db",
        )?;
        match scheme {
            "mysql" | "mariadb" => Ok(Dsn::MySql(format!("mysql://{rest}"))),
            "postgres" | "postgresql" => Ok(Dsn::Postgres(format!("postgres://{rest}"))),
            other => Err(format!(
                "unsupported DSN scheme {other:?}: use mysql://, mariadb:// or postgres://"
            )),
        }
    }
}

impl std::fmt::Display for Dsn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = match self {
            Dsn::MySql(u) | Dsn::Postgres(u) => u,
        };
        f.write_str(&redacted(url))
    }
}

/// A DSN as logs may show it: parsed as a URL (its userinfo runs to the
/// last `@` of the authority, so a password holding `@` is never cut in
/// two), with the password, the query (which can carry one) and the
/// fragment dropped. One that does not parse is not shown at all.
pub fn redacted(dsn: &str) -> String {
    match url::Url::parse(dsn) {
        Ok(mut url) => {
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        Err(_) => format!(
            "{}://<a DSN that does not parse as a URL; hidden>",
            dsn.split_once("://").map(|(s, _)| s).unwrap_or("?")
        ),
    }
}

impl std::fmt::Debug for Dsn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dsn({self})")
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub dsn: Dsn,
    pub interval: Duration,
    /// The statement timeout and the connect timeout.
    pub timeout: Duration,
    pub caps: Caps,
}

/// A configuration problem the database has, with what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub struct SetupProblem {
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error("connecting: {0}")]
    Connect(String),
    #[error("{}", .0.message)]
    Setup(SetupProblem),
    #[error("query failed: {0}")]
    Query(#[from] sqlx::Error),
}

impl CollectError {
    fn kind(&self) -> &'static str {
        match self {
            CollectError::Connect(_) => "connect",
            CollectError::Setup(p) => p.code,
            CollectError::Query(_) => "query",
        }
    }
}

/// The latest poll, as the gauges show it.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    up: bool,
    series: Vec<Series>,
    poll_seconds: f64,
    problem: Option<SetupProblem>,
    /// Unix time of the last poll that worked, kept across failures.
    last_success: Option<f64>,
}

/// A running collector; cheap to clone. Read its figures with
/// [`Collector::gauges`], and what it saw since the last look with
/// [`Collector::take_peaks`].
#[derive(Clone)]
pub struct Collector {
    snapshot: Arc<RwLock<Snapshot>>,
    peaks: Arc<Mutex<Peaks>>,
}

enum Connection {
    MySql(mysql::MySql),
    Postgres(postgres::Postgres),
}

impl Collector {
    /// Starts polling on the current runtime.
    pub fn spawn(settings: Settings) -> Self {
        let collector = Collector {
            snapshot: Arc::default(),
            peaks: Arc::default(),
        };
        let shared = collector.clone();
        tokio::spawn(async move { shared.run(settings).await });
        collector
    }

    /// One poll now, with no loop (`longtx collect --once`): the figures it
    /// found, or why it could not poll.
    pub async fn once(settings: &Settings) -> Result<Collector, CollectError> {
        let started = Instant::now();
        let mut connection = None;
        let result = poll(&mut connection, settings).await;
        if let Some(connection) = connection.take() {
            close(connection).await;
        }
        let (series, problem) = result?;
        let snapshot = Snapshot {
            up: true,
            series,
            poll_seconds: started.elapsed().as_secs_f64(),
            problem,
            last_success: Some(unix_now()),
        };
        let mut peaks = Peaks::default();
        peaks.raise(&snapshot.series);
        Ok(Collector {
            snapshot: Arc::new(RwLock::new(snapshot)),
            peaks: Arc::new(Mutex::new(peaks)),
        })
    }

    async fn run(self, settings: Settings) {
        tracing::info!(dsn = %settings.dsn, interval = ?settings.interval, "collector started");
        let mut tick = tokio::time::interval(settings.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut connection: Option<Connection> = None;
        loop {
            tick.tick().await;
            let started = Instant::now();
            let result = poll(&mut connection, &settings).await;
            let poll_seconds = started.elapsed().as_secs_f64();
            let next = match result {
                Ok((series, problem)) => {
                    self.peaks
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .raise(&series);
                    Snapshot {
                        up: true,
                        series,
                        poll_seconds,
                        problem,
                        last_success: Some(unix_now()),
                    }
                }
                Err(err) => {
                    longtx_metrics::inc(
                        "longtx_collector_errors_total",
                        "Failed polls of the database, by kind.",
                        &[("kind", err.kind())],
                    );
                    tracing::warn!(error = %err, dsn = %settings.dsn, "collecting lock holders failed");
                    let problem = match err {
                        CollectError::Setup(p) => Some(p),
                        _ => None,
                    };
                    if let Some(old) = connection.take() {
                        close(old).await;
                    }
                    let last_success = self
                        .snapshot
                        .read()
                        .unwrap_or_else(|p| p.into_inner())
                        .last_success;
                    Snapshot {
                        up: false,
                        series: Vec::new(),
                        poll_seconds,
                        problem,
                        last_success,
                    }
                }
            };
            *self.snapshot.write().unwrap_or_else(|p| p.into_inner()) = next;
        }
    }

    /// Each source's longest transaction per table since the last call,
    /// under any threshold: what `serve` keeps as daily maxima.
    pub fn take_peaks(&self) -> Vec<Observation> {
        self.peaks.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Puts back peaks that could not be delivered, for the next try.
    pub fn return_peaks(&self, undelivered: Vec<Observation>) {
        self.peaks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .put_back(undelivered);
    }

    /// The collector's gauges, for `/metrics`.
    pub fn gauges(&self) -> Vec<Gauge> {
        let snapshot = self
            .snapshot
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let holders = snapshot
            .series
            .iter()
            .map(|s| {
                (
                    vec![
                        ("table", s.table.clone()),
                        ("query_source", s.query_source.clone()),
                    ],
                    s.seconds,
                )
            })
            .collect();
        let waiters = snapshot
            .series
            .iter()
            .flat_map(|s| {
                WaiterKind::ALL.into_iter().filter_map(move |kind| {
                    let n = s.waiters.get(kind);
                    (n > 0).then(|| {
                        (
                            vec![
                                ("table", s.table.clone()),
                                ("query_source", s.query_source.clone()),
                                ("kind", kind.as_str().to_owned()),
                            ],
                            f64::from(n),
                        )
                    })
                })
            })
            .collect();
        let mut gauges = vec![
            Gauge {
                name: "longtx_mdl_waiters",
                help: "Per table, the sessions waiting for a lock on it behind its longest holder (labelled with that holder's query_source), by kind: ddl, dml, other.",
                series: waiters,
            },
            Gauge {
                name: "longtx_mdl_holder_max_tx_duration_seconds",
                help: "Per table, how long the longest transaction holding a lock on it has run, with its query_source.",
                series: holders,
            },
            Gauge {
                name: "longtx_collector_up",
                help: "1 when the last poll of the database succeeded.",
                series: vec![(vec![], if snapshot.up { 1.0 } else { 0.0 })],
            },
            Gauge {
                name: "longtx_collector_scrape_duration_seconds",
                help: "How long the last poll of the database took.",
                series: vec![(vec![], snapshot.poll_seconds)],
            },
        ];
        if let Some(at) = snapshot.last_success {
            gauges.push(Gauge {
                name: "longtx_collector_last_success_timestamp_seconds",
                help: "Unix time of the last poll of the database that worked.",
                series: vec![(vec![], at)],
            });
        }
        if let Some(problem) = &snapshot.problem {
            gauges.push(Gauge {
                name: "longtx_collector_setup_problem",
                help: "A database setting the collector needs is missing; the log says what to enable.",
                series: vec![(vec![("problem", problem.code.to_owned())], 1.0)],
            });
        }
        gauges
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

async fn poll(
    connection: &mut Option<Connection>,
    settings: &Settings,
) -> Result<(Vec<Series>, Option<SetupProblem>), CollectError> {
    if connection.is_none() {
        *connection = Some(match &settings.dsn {
            Dsn::MySql(url) => {
                Connection::MySql(mysql::MySql::connect(url, settings.timeout).await?)
            }
            Dsn::Postgres(url) => {
                Connection::Postgres(postgres::Postgres::connect(url, settings.timeout).await?)
            }
        });
    }
    let (holders, waiting, problem) = match connection.as_mut().expect("connected above") {
        Connection::MySql(db) => (db.holders().await?, db.waiting().await?, None),
        Connection::Postgres(db) => {
            let (holders, problem) = db.holders().await?;
            (holders, db.waiting().await?, problem)
        }
    };
    Ok((fold::fold(&holders, &waiting, settings.caps), problem))
}

async fn close(connection: Connection) {
    match connection {
        Connection::MySql(db) => db.close().await,
        Connection::Postgres(db) => db.close().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsns_parse_by_scheme_and_never_show_the_password() {
        let dsn: Dsn = "mariadb://collector:s3cret@db.internal:3306/app?ssl-mode=disabled"
            .parse()
            .unwrap();
        assert!(matches!(&dsn, Dsn::MySql(u) if u.starts_with("mysql://")));
        assert_eq!(dsn.to_string(), "mysql://collector@db.internal:3306/app");
        assert!(!format!("{dsn:?}").contains("s3cret"));
        let pg: Dsn = "postgresql://me@127.0.0.1/app".parse().unwrap();
        assert!(matches!(pg, Dsn::Postgres(_)));
        assert!("oracle://x"
            .parse::<Dsn>()
            .unwrap_err()
            .contains("unsupported"));
        assert!("localhost:3306".parse::<Dsn>().is_err());
    }

    /// A password holding `@` (or `:` and `/`, percent-encoded or not
    /// where the URL still parses) never shows in part.
    #[test]
    fn a_password_with_an_at_sign_is_redacted_whole() {
        let dsn: Dsn = "mysql://collector:p@ss@w0rd@db.internal:3306/app"
            .parse()
            .unwrap();
        assert_eq!(dsn.to_string(), "mysql://collector@db.internal:3306/app");
        for shown in [dsn.to_string(), format!("{dsn:?}")] {
            assert!(
                !shown.contains("ss@w0rd") && !shown.contains("w0rd"),
                "{shown}"
            );
        }
        assert_eq!(
            redacted("postgres://u:a%40b%3Ac@h/db?password=x#frag"),
            "postgres://u@h/db"
        );
        assert_eq!(
            redacted("postgres://u:pa ss@[bad"),
            "postgres://<a DSN that does not parse as a URL; hidden>"
        );
    }
}
