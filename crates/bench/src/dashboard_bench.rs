//! dashboard-bench: the dashboard's pages over real HTTP at 10,000 jobs and
//! 1,000,000 alert events (1,000 sources over 90 days), with the daily
//! roll-up done and with 20,000 fresh events not rolled up yet. Prints
//! p50/p99/max per page; the goal is the main page under 100 ms.
//!
//! Run: `cargo run --release -p longtx-bench --bin dashboard-bench -- [--requests 200]`
//! It uses `LONGTX_BENCH_DATABASE_URL` when set, else a private cluster.

mod help;
use anyhow::Context;
use longtx_embedded_pg::{ClusterOptions, EmbeddedPostgres};
use longtx_testkit::{TestApp, TestDatabase};
use std::str::FromStr;
use std::time::{Duration, Instant};

const JOBS: i64 = 10_000;
const EVENTS: i64 = 1_000_000;
const SOURCES: i64 = 1_000;

const SEED_JOBS: &str = r#"
INSERT INTO jobs (query_source, state, tables, alert_count, max_duration_seconds, created_at, updated_at,
                  ended_at, dispatched_at, run_id, run_url, pr_number, pr_url, pr_opened_at, reviewers_state)
SELECT 'app/controller_' || (i % 1000) || '#update',
       s.state, '{orders}', 1 + i % 40, 100 + i % 500,
       now() - make_interval(days => (1 + i % 180)::int), now(),
       CASE WHEN s.state IN ('queued', 'dispatching', 'agent_running', 'pre_review', 'in_review') THEN NULL
            ELSE now() - make_interval(days => (i % 180)::int) END,
       now() - make_interval(days => (1 + i % 180)::int), i, 'https://github.com/acme/monolith/actions/runs/' || i,
       CASE WHEN s.state IN ('in_review', 'merged', 'closed', 'wontfix', 'rejected_by_review') THEN i END,
       'https://github.com/acme/monolith/pull/' || i,
       CASE WHEN s.state IN ('in_review', 'merged', 'closed', 'wontfix', 'rejected_by_review')
            THEN now() - make_interval(days => (1 + i % 180)::int) END,
       CASE WHEN s.state = 'in_review' THEN 'requested' END
FROM generate_series(1, $1::int8) AS i
CROSS JOIN LATERAL (SELECT CASE
    -- One active job per source at most: only the first 1,000 may be active.
    WHEN i <= 1000 THEN (ARRAY['queued', 'agent_running', 'in_review', 'in_review', 'merged'])[1 + i % 5]
    ELSE (ARRAY['merged', 'merged', 'merged', 'closed', 'wontfix', 'failed', 'expired', 'no_pr', 'dry_run',
                'rejected_by_review'])[1 + i % 10] END AS state) s
"#;

const SEED_REVIEWS: &str = r#"
INSERT INTO review_requests (job_id, reviewer, requested_at)
SELECT id, 'reviewer' || ((id * 7 + k) % 50), now() - make_interval(days => id::int % 120)
FROM jobs CROSS JOIN generate_series(0, 1) AS k WHERE pr_number IS NOT NULL
ON CONFLICT DO NOTHING
"#;

const SEED_EVENTS: &str = r#"
INSERT INTO alert_events (received_at, origin, query_source, table_name, duration_seconds, outcome, job_id, raw_payload)
SELECT now() - make_interval(days => (g % 90)::int, secs => (g % 86400)::float8),
       'alertmanager', 'app/controller_' || ((g * 7919) % 1000) || '#update', 'orders',
       20 + (g % 400), 'deduped', ((g * 7919) % 1000) + 1, '{}'
FROM generate_series(1, $1::int8) AS g
"#;

const USAGE: &str = "dashboard-bench: the dashboard's pages over real HTTP at 10,000 jobs and 1,000,000 alert events.

Usage: dashboard-bench [--requests N]
  --requests  requests per page (default 200)
Uses LONGTX_BENCH_DATABASE_URL when set, else a private PostgreSQL cluster.";

fn main() -> anyhow::Result<()> {
    help::answer_help(USAGE);
    let mut requests = 200;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--requests", Some(n)) => requests = n.parse()?,
            _ => anyhow::bail!("usage: dashboard-bench [--requests N]"),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (server, _pg) = match std::env::var("LONGTX_BENCH_DATABASE_URL") {
        Ok(url) => (
            longtx_store::PgConnectOptions::from_str(&url).context("LONGTX_BENCH_DATABASE_URL")?,
            None,
        ),
        Err(_) => {
            let root = std::env::temp_dir().join("longtx-dashboard-bench-pg");
            let pg = EmbeddedPostgres::start(&root, &ClusterOptions::default())?;
            let options = longtx_store::PgConnectOptions::new()
                .host(&pg.socket_dir().display().to_string())
                .port(pg.port())
                .username(pg.user())
                .database("postgres");
            (options, Some(pg))
        }
    };
    runtime.block_on(run(server, requests))
}

async fn run(server: longtx_store::PgConnectOptions, requests: usize) -> anyhow::Result<()> {
    let db = TestDatabase::create_on(server).await;
    let mut conn = db.connect().await;
    let started = Instant::now();
    sqlx::query(SEED_JOBS).bind(JOBS).execute(&mut conn).await?;
    sqlx::query(SEED_REVIEWS).execute(&mut conn).await?;
    sqlx::query(SEED_EVENTS)
        .bind(EVENTS)
        .execute(&mut conn)
        .await?;
    sqlx::query("ANALYZE").execute(&mut conn).await?;
    println!(
        "dashboard-bench: seeded {JOBS} jobs, {EVENTS} alert events, {SOURCES} sources in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let app = TestApp::builder()
        .database(db)
        .dispatch_info(10, false)
        .spawn()
        .await;
    let roll = Instant::now();
    let mut batches = 0;
    while app.store.roll_up_alerts(5_000).await? > 0 {
        batches += 1;
    }
    println!(
        "roll-up of {EVENTS} events: {:.1} s in {batches} transactions of at most 5,000 (the service's batch) ({:.0} ms each)",
        roll.elapsed().as_secs_f64(),
        roll.elapsed().as_secs_f64() * 1000.0 / batches.max(1) as f64
    );
    sqlx::query("ANALYZE").execute(&mut conn).await?;

    let pages = [
        "/",
        "/?sources_page=25",
        "/?state=merged",
        "/?before=5000",
        "/jobs/4242",
    ];
    println!("{requests} sequential requests per page, after a warm-up of 10:");
    for page in pages {
        report(&app, page, requests).await?;
    }
    store_only(&app, requests).await?;
    // Fresh alerts the roll-up has not reached: the page adds them live.
    sqlx::query(&SEED_EVENTS.replace(
        "now() - make_interval(days => (g % 90)::int, secs => (g % 86400)::float8)",
        "now()",
    ))
    .bind(20_000_i64)
    .execute(&mut conn)
    .await?;
    println!("with 20,000 events not rolled up yet:");
    report(&app, "/", requests).await?;
    store_only(&app, requests).await?;
    app.shutdown().await;
    Ok(())
}

async fn report(app: &TestApp, page: &str, requests: usize) -> anyhow::Result<()> {
    let url = app.url(page);
    for _ in 0..10 {
        app.client
            .get(&url)
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
    }
    let mut times = Vec::with_capacity(requests);
    let mut size = 0;
    for _ in 0..requests {
        let start = Instant::now();
        let body = app
            .client
            .get(&url)
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
        times.push(start.elapsed());
        size = body.len();
    }
    times.sort();
    println!(
        "  GET {page:<20} p50 {:>6.1} ms  p99 {:>6.1} ms  max {:>6.1} ms  ({} KiB)",
        quantile_ms(&times, 0.50),
        quantile_ms(&times, 0.99),
        quantile_ms(&times, 1.0),
        size / 1024
    );
    Ok(())
}

/// The main page's queries alone, to tell SQL time from rendering time.
async fn store_only(app: &TestApp, requests: usize) -> anyhow::Result<()> {
    let query = longtx_store::DashboardQuery {
        days: 30,
        sources_per_page: 20,
        sources_offset: 0,
        jobs: longtx_store::JobFilter {
            limit: 50,
            ..Default::default()
        },
        weeks: 12,
        reviewers: 20,
        what_if_days: 30,
    };
    let mut times = Vec::with_capacity(requests);
    for _ in 0..requests {
        let start = Instant::now();
        app.store.dashboard(&query).await?;
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "  the main page's queries alone: p50 {:.1} ms",
        quantile_ms(&times, 0.50)
    );
    // The what-if's read on its own (`GET /api/what-if`); the page makes
    // it on every load, inside the queries above.
    let mut times = Vec::with_capacity(requests);
    for _ in 0..requests {
        let start = Instant::now();
        app.store.what_if_history(30).await?;
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "  the what-if's read (part of the above): p50 {:.1} ms  p99 {:.1} ms",
        quantile_ms(&times, 0.50),
        quantile_ms(&times, 0.99)
    );
    Ok(())
}

/// The `q` quantile of sorted `times`, in milliseconds (1.0 is the max).
fn quantile_ms(sorted: &[Duration], q: f64) -> f64 {
    let at = ((sorted.len() as f64 * q) as usize).min(sorted.len() - 1);
    sorted[at].as_secs_f64() * 1000.0
}
