//! `longtx collect` against a real PostgreSQL: a transaction left open
//! with a Rails Query Logs comment is reported for its table, with its
//! source, over real HTTP; an open ALTER is `ddl_in_progress`; statements
//! never become labels.

use longtx_testkit::TestDatabase;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Collect(Child);

impl Drop for Collect {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn metrics_when(url: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Ok(response) = reqwest::get(url).await {
            last = response.text().await.unwrap_or_default();
            if ready(&last) {
                return last;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the collector never reported what was expected; last /metrics:\n{last}");
}

#[tokio::test]
async fn an_open_transaction_is_reported_per_table_with_its_query_source() {
    let db = TestDatabase::create().await;
    let mut setup = db.connect().await;
    sqlx::raw_sql(
        "CREATE TABLE orders (id int PRIMARY KEY); INSERT INTO orders VALUES (1); \
         CREATE TABLE carts (id int); CREATE TABLE users (id int);",
    )
    .execute(&mut setup)
    .await
    .unwrap();
    let mut holder = db.connect().await;
    sqlx::raw_sql(
        "BEGIN; SELECT * FROM orders WHERE id = 1 FOR UPDATE \
         /*application:Shop,namespaced_controller:admin/orders,action:update*/",
    )
    .execute(&mut holder)
    .await
    .unwrap();
    let mut anonymous = db.connect().await;
    sqlx::raw_sql("BEGIN; SELECT * FROM users WHERE id = 42 AND 'token' = 'hunter2'")
        .execute(&mut anonymous)
        .await
        .unwrap();
    let mut ddl = db.connect().await;
    // Statements one by one, as Rails sends them: the session's last
    // statement is then the ALTER itself.
    sqlx::raw_sql("BEGIN").execute(&mut ddl).await.unwrap();
    sqlx::raw_sql("ALTER TABLE carts ADD COLUMN note text /*rake_task:carts:backfill*/")
        .execute(&mut ddl)
        .await
        .unwrap();

    let port = free_port();
    let _collect = Collect(
        Command::new(env!("CARGO_BIN_EXE_longtx"))
            .args([
                "collect",
                "--dsn",
                &db.url(),
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--interval",
                "200ms",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("running longtx collect"),
    );
    let url = format!("http://127.0.0.1:{port}/metrics");
    let text = metrics_when(&url, |t| {
        t.contains(r#"table="orders""#) && t.contains("ddl_in_progress")
    })
    .await;

    let series = |table: &str, source: &str| {
        let prefix = format!(
            r#"longtx_mdl_holder_max_tx_duration_seconds{{table="{table}",query_source="{source}"}} "#
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix).map(|v| v.parse::<f64>().unwrap()))
    };
    assert!(series("orders", "admin/orders#update").is_some(), "{text}");
    assert!(
        series("users", "unknown").is_some(),
        "no comment: unknown\n{text}"
    );
    assert!(
        series("ddl_in_progress", "rake:carts:backfill").is_some(),
        "{text}"
    );
    assert!(text.contains("longtx_collector_up 1"), "{text}");
    assert!(
        !text.contains("hunter2") && !text.contains("FOR UPDATE"),
        "no SQL in labels:\n{text}"
    );

    // The duration grows while the transaction stays open, and the table
    // leaves the figures once it commits.
    let first = series("orders", "admin/orders#update").unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let later = metrics_when(&url, |_| true).await;
    let again = later
        .lines()
        .find_map(|l| l.strip_prefix(r#"longtx_mdl_holder_max_tx_duration_seconds{table="orders",query_source="admin/orders#update"} "#))
        .map(|v| v.parse::<f64>().unwrap())
        .expect("still held");
    assert!(again > first, "{first} -> {again}");
    sqlx::raw_sql("COMMIT").execute(&mut holder).await.unwrap();
    metrics_when(&url, |t| {
        !t.contains(r#"table="orders""#) && t.contains("longtx_collector_up 1")
    })
    .await;
}

/// The harm behind a holder: an `ALTER TABLE` blocked by the open
/// transaction, and a read queued behind the ALTER's pending exclusive
/// lock. `collect --once` prints them by kind against the holder.
#[tokio::test]
async fn sessions_blocked_behind_a_holder_are_counted_by_kind() {
    let db = TestDatabase::create().await;
    let mut setup = db.connect().await;
    sqlx::raw_sql("CREATE TABLE orders (id int PRIMARY KEY); INSERT INTO orders VALUES (1);")
        .execute(&mut setup)
        .await
        .unwrap();
    let mut holder = db.connect().await;
    sqlx::raw_sql(
        "BEGIN; SELECT * FROM orders WHERE id = 1 FOR UPDATE /*sidekiq_worker:Billing::SyncWorker*/",
    )
    .execute(&mut holder)
    .await
    .unwrap();
    let blocked = |sql: &'static str| {
        let url = db.url();
        tokio::spawn(async move {
            let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
                .await
                .unwrap();
            sqlx::query(sql).execute(&mut conn).await.ok();
        })
    };
    let alter = blocked("ALTER TABLE orders ADD COLUMN note text");
    sessions_waiting(&db, 1).await;
    let read = blocked("/*action:show*/ SELECT * FROM orders");
    sessions_waiting(&db, 2).await;

    let out = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .args(["collect", "--once", "--dsn", &db.url()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for kind_count in [r#"kind="ddl"} 1"#, r#"kind="dml"} 1"#] {
        let line = format!(
            r#"longtx_mdl_waiters{{table="orders",query_source="Billing::SyncWorker",{kind_count}"#
        );
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing in:\n{text}"
        );
    }
    assert!(!text.contains(r#"kind="other""#), "{text}");

    sqlx::raw_sql("COMMIT").execute(&mut holder).await.unwrap();
    alter.await.unwrap();
    read.await.unwrap();
}

async fn sessions_waiting(db: &TestDatabase, n: i64) {
    let mut conn = db.connect().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )
        .fetch_one(&mut conn)
        .await
        .unwrap();
        if waiting >= n {
            return;
        }
        assert!(Instant::now() < deadline, "{n} sessions never waited");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_unreachable_database_is_reported_down_not_as_zero_holders() {
    let port = free_port();
    let dead = free_port();
    let _collect = Collect(
        Command::new(env!("CARGO_BIN_EXE_longtx"))
            .args([
                "collect",
                "--dsn",
                &format!("postgres://nobody:pw-never-shown@127.0.0.1:{dead}/x"),
            ])
            .args([
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--interval",
                "200ms",
                "--timeout",
                "1s",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let text = metrics_when(&format!("http://127.0.0.1:{port}/metrics"), |t| {
        t.contains(r#"longtx_collector_errors_total{kind="connect"}"#)
    })
    .await;
    assert!(text.contains("longtx_collector_up 0"), "{text}");
    assert!(!text.contains("pw-never-shown"));
}

#[tokio::test]
async fn serve_runs_the_collector_when_configured_and_adds_its_gauges_to_metrics() {
    let db = TestDatabase::create().await;
    let mut setup = db.connect().await;
    sqlx::raw_sql("CREATE TABLE invoices (id int)")
        .execute(&mut setup)
        .await
        .unwrap();
    let mut holder = db.connect().await;
    sqlx::raw_sql("BEGIN").execute(&mut holder).await.unwrap();
    sqlx::raw_sql(
        "LOCK TABLE invoices IN ROW EXCLUSIVE MODE /*sidekiq_worker:Billing::InvoiceSyncWorker*/",
    )
    .execute(&mut holder)
    .await
    .unwrap();
    let port = free_port();
    let dir = longtx_testkit::TempDir::new("collect-serve");
    let _serve = Collect(
        Command::new(env!("CARGO_BIN_EXE_longtx"))
            .arg("serve")
            .current_dir(&dir)
            .env_remove("LONGTX_WEBHOOK_TOKEN")
            .env_remove("GITHUB_TOKEN")
            .env("DATABASE_URL", db.url())
            .env("LONGTX_COLLECT_DSN", db.url())
            .env("LONGTX_COLLECT_INTERVAL", "1s")
            .env("LONGTX_LISTEN", format!("127.0.0.1:{port}"))
            .env("LONGTX_IGNORE_LIST", dir.join("ignore-list.yaml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let text = metrics_when(&format!("http://127.0.0.1:{port}/metrics"), |t| {
        t.contains(r#"longtx_mdl_holder_max_tx_duration_seconds{table="invoices",query_source="Billing::InvoiceSyncWorker"}"#)
    })
    .await;
    assert!(
        text.contains("longtx_jobs{state=\"queued\"} 0"),
        "serve's own figures are there too"
    );
    // serve keeps what its collector sees as daily maxima (the database it
    // measures is its own here): the what-if's input.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let kept: Option<f64> = sqlx::query_scalar(
            "SELECT max_seconds FROM observed_daily WHERE table_name = 'invoices' \
             AND query_source = 'Billing::InvoiceSyncWorker'",
        )
        .fetch_optional(&mut setup)
        .await
        .unwrap();
        if kept.is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "serve never kept the collector's peak"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    std::fs::remove_dir_all(&dir).ok();
}

// Two workers: the in-process serve answers while the test waits on the
// command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collect_pushes_every_named_source_to_serve_for_the_what_if() {
    // The measured database: a worker's short transaction, far under any
    // threshold, that the what-if still needs to see.
    let db = TestDatabase::create().await;
    let mut setup = db.connect().await;
    sqlx::raw_sql("CREATE TABLE carts (id int)")
        .execute(&mut setup)
        .await
        .unwrap();
    let mut holder = db.connect().await;
    sqlx::raw_sql("BEGIN").execute(&mut holder).await.unwrap();
    sqlx::raw_sql("LOCK TABLE carts IN ROW EXCLUSIVE MODE /*sidekiq_worker:CartWorker*/")
        .execute(&mut holder)
        .await
        .unwrap();
    let serve = longtx_testkit::TestApp::builder()
        .token("push-token")
        .spawn()
        .await;
    let run = |token: &str| {
        Command::new(env!("CARGO_BIN_EXE_longtx"))
            .args([
                "collect",
                "--once",
                "--dsn",
                &db.url(),
                "--push",
                &serve.base_url,
            ])
            .env("LONGTX_WEBHOOK_TOKEN", token)
            .output()
            .expect("running longtx collect --once --push")
    };
    let refused = run("not-the-token");
    assert!(
        !refused.status.success(),
        "a refused push fails the command"
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("401"), "{stderr}");
    assert!(!stderr.contains("not-the-token"), "{stderr}");

    let pushed = run("push-token");
    assert!(
        pushed.status.success(),
        "{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    let mut conn = serve.db.connect().await;
    let rows: Vec<(String, String, f64)> = sqlx::query_as(
        "SELECT table_name, query_source, max_seconds FROM observed_daily ORDER BY 1, 2",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].0.as_str(), rows[0].1.as_str()),
        ("carts", "CartWorker")
    );
    assert!(rows[0].2 >= 0.0);
}
