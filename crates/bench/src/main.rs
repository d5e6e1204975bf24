//! intake-bench: intake throughput and latency over real HTTP, beside the
//! database ceiling (the same upsert issued straight to the store).
//!
//! Two loads: dedupe-heavy (20 sources, nearly every alert joins a job) and
//! unique-heavy (every alert names a new source and creates a job). For
//! each: the store's closed-loop ceiling, HTTP closed-loop throughput, and
//! HTTP latency at a fixed 200 alerts/s.
//!
//! Run: `cargo run --release -p longtx-bench -- [--seconds 10] [--senders 16]`
//! It uses `LONGTX_BENCH_DATABASE_URL` when set, else a private cluster with
//! PostgreSQL's default durability under the temp dir.

mod batch;
mod help;
mod load;

use anyhow::Context;
use longtx_embedded_pg::{ClusterOptions, EmbeddedPostgres};
use longtx_store::PoolSettings;
use longtx_testkit::TestDatabase;
use std::str::FromStr;
use std::time::Duration;

pub struct Settings {
    pub seconds: u64,
    pub senders: usize,
    pub rate: u64,
    pub pool: u32,
}

fn parse_args() -> anyhow::Result<Settings> {
    let mut settings = Settings {
        seconds: 10,
        senders: 16,
        rate: 200,
        pool: 5,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--seconds" => settings.seconds = value.parse()?,
            "--senders" => settings.senders = value.parse()?,
            "--rate" => settings.rate = value.parse()?,
            "--pool" => settings.pool = value.parse()?,
            other => {
                anyhow::bail!("unknown flag {other}; use --seconds, --senders, --rate, --pool")
            }
        }
    }
    Ok(settings)
}

const USAGE: &str =
    "intake-bench: intake throughput and latency over real HTTP, beside the database ceiling.

Usage: intake-bench [--seconds N] [--senders N] [--rate PER_SECOND] [--pool N]
  --seconds  how long each load runs (default 10)
  --senders  concurrent senders in the closed-loop runs (default 16)
  --rate     alerts per second in the fixed-rate run (default 200)
  --pool     database pool size (default 5)
Uses LONGTX_BENCH_DATABASE_URL when set, else a private PostgreSQL cluster.";

fn main() -> anyhow::Result<()> {
    help::answer_help(USAGE);
    let settings = parse_args()?;
    let server = match std::env::var("LONGTX_BENCH_DATABASE_URL") {
        Ok(url) => sqlx_options(&url)?,
        Err(_) => {
            let root = std::env::temp_dir().join("longtx-bench-pg");
            let pg = EmbeddedPostgres::start(&root, &ClusterOptions::default())?;
            longtx_store::PgConnectOptions::new()
                .host(&pg.socket_dir().display().to_string())
                .port(pg.port())
                .username(pg.user())
                .database("postgres")
        }
    };
    // The service and the load generator get separate runtimes so that the
    // senders' work does not queue behind the server's on the same workers.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let pool = PoolSettings {
        max_connections: settings.pool,
        acquire_timeout: Duration::from_secs(5),
    };
    println!(
        "intake-bench: {}s per phase, {} concurrent senders, pool {} connections, fixed rate {}/s",
        settings.seconds, settings.senders, settings.pool, settings.rate
    );
    for sources in [20, usize::MAX] {
        let mut times = Vec::new();
        let mut answer = (0, 0);
        for _ in 0..3 {
            let db = server_rt.block_on(TestDatabase::create_on(server.clone()));
            let store = {
                let _in_server_runtime = server_rt.enter();
                db.store(&pool)
            };
            let app = server_rt.block_on(load::serve(store.clone()))?;
            let (body, alerts) = batch::body(sources);
            let bytes = body.len();
            let client = reqwest::Client::new();
            let (took, status) = client_rt.block_on(batch::send(&client, app.base_url(), body));
            times.push(took);
            answer = (alerts, bytes);
            anyhow::ensure!(status == 200, "the 1 MiB batch was answered {status}");
        }
        times.sort();
        println!(
            "1 MiB batch ({} alerts, {} bytes, {}): median {:.0} ms, max {:.0} ms over {} sends (goal: under 1 s)",
            answer.0,
            answer.1,
            if sources == usize::MAX { "a source per alert, the worst case".to_owned() } else { format!("{sources} sources") },
            times[times.len() / 2].as_secs_f64() * 1000.0,
            times[times.len() - 1].as_secs_f64() * 1000.0,
            times.len()
        );
    }
    for load in [load::Load::DedupeHeavy, load::Load::UniqueHeavy] {
        let db = server_rt.block_on(TestDatabase::create_on(server.clone()));
        // The pool spawns its maintenance task on the runtime it is made in.
        let store = {
            let _in_server_runtime = server_rt.enter();
            db.store(&pool)
        };
        let app = server_rt.block_on(load::serve(store.clone()))?;
        let report = client_rt.block_on(load::run(&settings, load, &store, &app, &server_rt));
        println!("{report}");
    }
    Ok(())
}

fn sqlx_options(url: &str) -> anyhow::Result<longtx_store::PgConnectOptions> {
    longtx_store::PgConnectOptions::from_str(url)
        .context("LONGTX_BENCH_DATABASE_URL is not a postgres URL")
}
