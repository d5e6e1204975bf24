//! The load phases and their report.

use crate::Settings;
use longtx_core::AlertOrigin;
use longtx_store::{IntakeAction, IntakeRecord, Store};
use longtx_testkit::payloads::{AmAlert, AmWebhook};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub enum Load {
    /// 20 sources: almost every alert updates an existing job.
    DedupeHeavy,
    /// A new source per alert: every alert inserts a job.
    UniqueHeavy,
}

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

impl Load {
    fn next_source(self) -> String {
        let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        match self {
            Load::DedupeHeavy => format!("Bench{}Worker", n % 20),
            Load::UniqueHeavy => format!("Bench::Unique{n}Worker"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Load::DedupeHeavy => "dedupe-heavy (20 sources)",
            Load::UniqueHeavy => "unique-heavy (a new source per alert)",
        }
    }
}

pub struct App {
    base_url: String,
}

impl App {
    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

/// Serves the real router on a loopback port, on the calling runtime.
pub async fn serve(store: Store) -> anyhow::Result<App> {
    let state = longtx_http::AppState::new(
        store,
        longtx_core::IntakePolicy::default(),
        longtx_http::WebhookAuth::new(None),
        longtx_core::IgnoreList::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, longtx_http::router(state)).await });
    Ok(App {
        base_url: format!("http://{addr}"),
    })
}

fn record(load: Load) -> IntakeRecord {
    let source = load.next_source();
    IntakeRecord {
        origin: AlertOrigin::Alertmanager,
        raw_payload: body(&source),
        query_source: Some(source),
        table: Some("users".into()),
        duration_seconds: Some(150.0),
        link: None,
        waiters: None,
        action: IntakeAction::Enqueue,
    }
}

fn body(source: &str) -> String {
    AmWebhook::with(AmAlert::firing(source).table("users").value(150.0))
        .to_json()
        .to_string()
}

/// Latencies of one phase, and how long it ran.
struct Phase {
    latencies: Vec<Duration>,
    elapsed: Duration,
    errors: usize,
}

impl Phase {
    fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let index = ((self.latencies.len() as f64 - 1.0) * p).round() as usize;
        self.latencies[index]
    }

    fn line(&self, label: &str) -> String {
        format!(
            "  {label:<28} {:>8.0} alerts/s   p50 {:>7.2} ms   p99 {:>7.2} ms   max {:>7.2} ms   ({} alerts, {} errors)",
            self.throughput(),
            ms(self.percentile(0.50)),
            ms(self.percentile(0.99)),
            ms(self.percentile(1.0)),
            self.latencies.len(),
            self.errors
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub struct Report {
    load: Load,
    ceiling: Phase,
    http: Phase,
    fixed: Phase,
    rate: u64,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.load.name())?;
        writeln!(f, "{}", self.ceiling.line("database ceiling (no HTTP)"))?;
        writeln!(f, "{}", self.http.line("HTTP intake, closed loop"))?;
        writeln!(
            f,
            "{}",
            self.fixed.line(&format!("HTTP intake at {}/s", self.rate))
        )?;
        let share = 100.0 * self.http.throughput() / self.ceiling.throughput();
        let p99 = ms(self.fixed.percentile(0.99));
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        write!(
            f,
            "  intake reaches {share:.0}% of the database ceiling (goal 60%: {}); p99 at {}/s is {p99:.2} ms (goal 25 ms: {})",
            verdict(share >= 60.0),
            self.rate,
            verdict(p99 < 25.0)
        )
    }
}

/// Each phase starts from a clean slate: the operating system's dirty pages
/// (say, a build that just finished) are written out first, so that their
/// writeback does not land in this phase's fsyncs, and PostgreSQL's dirty
/// buffers are flushed by a CHECKPOINT (a superuser command; without one the
/// phases just run back to back).
async fn settle(store: &Store) {
    tokio::task::spawn_blocking(|| unsafe { libc::sync() })
        .await
        .ok();
    if let Err(err) = store.checkpoint().await {
        eprintln!("  (CHECKPOINT not run: {err})");
    }
}

pub async fn run(
    settings: &Settings,
    load: Load,
    store: &Store,
    app: &App,
    server_rt: &tokio::runtime::Runtime,
) -> Report {
    let duration = Duration::from_secs(settings.seconds);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    let url = Arc::new(format!("{}/webhooks/alertmanager", app.base_url));
    let post = {
        let client = client.clone();
        let url = url.clone();
        move || {
            let client = client.clone();
            let url = url.clone();
            async move {
                let sent = client
                    .post(url.as_str())
                    .header("content-type", "application/json")
                    .body(body(&load.next_source()))
                    .send()
                    .await;
                matches!(sent, Ok(r) if r.status() == 200)
            }
        }
    };
    // Latency at the target rate first: it describes a service in steady
    // state, not one recovering from the saturation phases below.
    settle(store).await;
    // Two seconds at the rate, unmeasured: connections open, caches warm.
    fixed_rate(settings.rate, Duration::from_secs(2), post.clone()).await;
    let fixed = fixed_rate(settings.rate, duration, post.clone()).await;
    settle(store).await;
    // The ceiling runs where the service would run it: on the server runtime.
    let ceiling = {
        let store = store.clone();
        let senders = settings.senders;
        server_rt
            .spawn(async move {
                closed_loop(senders, duration, move || {
                    let store = store.clone();
                    async move {
                        store
                            .record_alerts(
                                &[record(load)],
                                Duration::from_secs(7 * 86_400),
                                Duration::from_secs(7200),
                            )
                            .await
                            .is_ok()
                    }
                })
                .await
            })
            .await
            .expect("ceiling phase")
    };
    settle(store).await;
    let http = closed_loop(settings.senders, duration, post).await;
    Report {
        load,
        ceiling,
        http,
        fixed,
        rate: settings.rate,
    }
}

/// `senders` tasks each send as fast as answers come back.
async fn closed_loop<F, Fut>(senders: usize, duration: Duration, send: F) -> Phase
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let start = Instant::now();
    let tasks: Vec<_> = (0..senders)
        .map(|_| {
            let send = send.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut errors = 0;
                while start.elapsed() < duration {
                    let t = Instant::now();
                    if send().await {
                        latencies.push(t.elapsed());
                    } else {
                        errors += 1;
                    }
                }
                (latencies, errors)
            })
        })
        .collect();
    collect(tasks, start).await
}

/// One request every 1/rate seconds, whatever the answers do (open loop),
/// so slow answers show up as latency instead of lowering the load.
async fn fixed_rate<F, Fut>(rate: u64, duration: Duration, send: F) -> Phase
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send + 'static,
{
    let start = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = Vec::new();
    while start.elapsed() < duration {
        tick.tick().await;
        let send = send.clone();
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let ok = send().await;
            (
                if ok { vec![t.elapsed()] } else { Vec::new() },
                usize::from(!ok),
            )
        }));
    }
    collect(tasks, start).await
}

async fn collect(
    tasks: Vec<tokio::task::JoinHandle<(Vec<Duration>, usize)>>,
    start: Instant,
) -> Phase {
    let mut latencies = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (l, e) = task.await.expect("sender task");
        latencies.extend(l);
        errors += e;
    }
    let elapsed = start.elapsed();
    latencies.sort_unstable();
    Phase {
        latencies,
        elapsed,
        errors,
    }
}
