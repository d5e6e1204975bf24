//! Logs that a flood cannot fill: 500 refused requests (malformed JSON)
//! against the real binary are all counted in `/metrics` by reason, and
//! written to the log once, with the count, not 500 times.

use longtx_testkit::TestDatabase;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_refusals_is_counted_in_full_and_logged_once() {
    let db = TestDatabase::create().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let data = longtx_testkit::TempDir::new("refusal-logs");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .arg("serve")
        .current_dir(&root)
        .env("DATABASE_URL", db.url())
        .env("LONGTX_LISTEN", format!("127.0.0.1:{port}"))
        .env("LONGTX_DATA_DIR", data.path())
        .env("LONGTX_LOG", "warn")
        .env_remove("LONGTX_WEBHOOK_TOKEN")
        .env_remove("LONGTX_GITHUB_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("LONGTX_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .is_ok_and(|r| r.status() == 200)
    {
        assert!(Instant::now() < deadline, "serve never became ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for _ in 0..500 {
        let r = client
            .post(format!("{base}/webhooks/alertmanager"))
            .header("content-type", "application/json")
            .body(format!("{{not json {}", "x".repeat(5000)))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
    }
    let metrics = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let counted: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("longtx_http_refusals_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(counted >= 500.0, "{metrics}");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    let lines = log
        .lines()
        .filter(|l| l.contains("request refused"))
        .count();
    assert!(
        (1..=2).contains(&lines),
        "{lines} log lines for 500 refusals:\n{}",
        log.chars().take(3000).collect::<String>()
    );
    assert!(
        log.len() < 20_000,
        "the log stays small: {} bytes",
        log.len()
    );
}
