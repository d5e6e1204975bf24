//! `GET /metrics`, read by Prometheus's own text-format parser (the
//! `prometheus_client` Python package, installed by `.ci/run`).

use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::{dispatch_settings, shipped_prompt_sources, FakeGitHub, TestApp};
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PARSER: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for family in text_string_to_metric_families(sys.stdin.read()):
    out[family.name] = {"type": family.type, "samples": [[s.name, s.labels, s.value] for s in family.samples]}
print(json.dumps(out))
"#;

/// Families by name, as Prometheus's parser understands the text.
fn parse(text: &str) -> Value {
    let mut child = Command::new("python3")
        .args(["-c", PARSER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("No module named 'prometheus_client'"),
        "this test reads /metrics with Prometheus's own parser, and Python's prometheus_client is not installed: run `bash scripts/test` (or `python3 -m pip install prometheus-client`)"
    );
    assert!(
        output.status.success(),
        "the parser refused it: {stderr}\n{text}"
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn sample(families: &Value, family: &str, sample: &str, labels: &[(&str, &str)]) -> Option<f64> {
    families[family]["samples"]
        .as_array()?
        .iter()
        .find_map(|s| {
            let matches = s[0] == sample && labels.iter().all(|(k, v)| s[1][*k] == *v);
            matches.then(|| s[2].as_f64().unwrap())
        })
}

async fn fire(app: &TestApp, source: &str, seconds: f64) {
    let hook = AmWebhook::with(AmAlert::firing(source).table("orders").value(seconds));
    assert_eq!(
        app.post_json("/webhooks/alertmanager", &hook.to_json())
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn metrics_parse_and_count_alerts_jobs_dispatches_and_github_calls() {
    let github = FakeGitHub::start().await;
    let app = TestApp::builder()
        .prompts(shipped_prompt_sources())
        .dispatcher(
            dispatch_settings(),
            Some(github.client(Duration::from_secs(5))),
        )
        .spawn()
        .await;
    fire(&app, "Metrics::SyncWorker", 150.0).await;
    fire(&app, "Metrics::SyncWorker", 170.0).await;
    fire(&app, "Metrics::QuickWorker", 3.0).await;
    // The run exists on GitHub a moment before longtx records it.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, jobs) = app.get_json("/api/jobs?state=agent_running").await;
        let recorded = jobs["jobs"].as_array().is_some_and(|j| !j.is_empty());
        if (recorded && !github.runs().is_empty()) || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let response = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let families = parse(&response.text().await.unwrap());

    let alerts = |outcome| {
        sample(
            &families,
            "longtx_alerts_received",
            "longtx_alerts_received_total",
            &[
                ("query_source", "metrics::syncworker"),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(families["longtx_alerts_received"]["type"], "counter");
    assert_eq!(alerts("created"), Some(1.0));
    assert_eq!(alerts("deduped"), Some(1.0));
    let below = [
        ("query_source", "metrics::quickworker"),
        ("outcome", "below_threshold"),
    ];
    assert_eq!(
        sample(
            &families,
            "longtx_alerts_received",
            "longtx_alerts_received_total",
            &below
        ),
        Some(1.0)
    );

    assert_eq!(families["longtx_jobs"]["type"], "gauge");
    assert_eq!(
        sample(
            &families,
            "longtx_jobs",
            "longtx_jobs",
            &[("state", "agent_running")]
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &families,
            "longtx_jobs",
            "longtx_jobs",
            &[("state", "merged")]
        ),
        Some(0.0)
    );
    assert!(
        sample(
            &families,
            "longtx_dispatches",
            "longtx_dispatches_total",
            &[("mode", "dispatched")]
        )
        .unwrap()
            >= 1.0
    );
    let dispatch_calls = [
        ("method", "POST"),
        (
            "endpoint",
            "/repos/:owner/:repo/actions/workflows/:workflow/dispatches",
        ),
    ];
    assert!(
        sample(
            &families,
            "longtx_github_requests",
            "longtx_github_requests_total",
            &dispatch_calls
        )
        .unwrap()
            >= 1.0
    );

    assert_eq!(
        families["longtx_intake_duration_seconds"]["type"],
        "histogram"
    );
    let count = sample(
        &families,
        "longtx_intake_duration_seconds",
        "longtx_intake_duration_seconds_count",
        &[("origin", "alertmanager")],
    );
    assert!(count.unwrap() >= 3.0);
    let max = sample(
        &families,
        "longtx_db_pool_max_connections",
        "longtx_db_pool_max_connections",
        &[],
    );
    assert_eq!(max, Some(5.0), "the capacity is its own metric");
    assert_eq!(
        sample(
            &families,
            "longtx_db_pool_connections",
            "longtx_db_pool_connections",
            &[("state", "max")]
        ),
        None,
        "no capacity mixed into a usage metric"
    );
    assert_eq!(
        sample(&families, "longtx_db_up", "longtx_db_up", &[]),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &families,
            "longtx_build_info",
            "longtx_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        Some(1.0)
    );
    assert!(
        sample(
            &families,
            "longtx_http_responses",
            "longtx_http_responses_total",
            &[("route", "/webhooks/alertmanager"), ("status_class", "2xx")]
        )
        .unwrap()
            >= 3.0
    );
    // A gauge of the moment: the server's background workers may be queued
    // for a connection while the scrape runs (CI on a loaded machine saw 1),
    // so what is fixed is that it is reported, as a count.
    let waiting = sample(
        &families,
        "longtx_db_pool_waiting",
        "longtx_db_pool_waiting",
        &[],
    )
    .expect("the pool's waiting gauge is reported");
    assert!(waiting >= 0.0 && waiting.fract() == 0.0, "{waiting}");
}

#[tokio::test]
async fn metrics_need_the_token_when_one_is_set_and_hostile_sources_stay_valid() {
    let app = TestApp::builder().token("s3cret").spawn().await;
    assert_eq!(
        app.client
            .get(app.url("/metrics"))
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    let hostile = "Evil\"} 1 # TYPE x counter \\";
    let hook = AmWebhook::with(AmAlert::firing(hostile).value(150.0));
    let response = app
        .client
        .post(app.url("/webhooks/alertmanager"))
        .bearer_auth("s3cret")
        .json(&hook.to_json())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = app
        .client
        .get(app.url("/metrics"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!text.contains("s3cret"));
    let families = parse(&text);
    assert!(
        families.get("x").is_none(),
        "a label value cannot inject a family"
    );
    // The label is the canonical key, so one source is one series
    // whichever sender spelled it.
    let key = longtx_core::query_source::canonical(hostile);
    let ours = [("query_source", key.as_str()), ("outcome", "created")];
    assert_eq!(
        sample(
            &families,
            "longtx_alerts_received",
            "longtx_alerts_received_total",
            &ours
        ),
        Some(1.0),
        "read back exactly"
    );
}

#[tokio::test]
async fn metrics_answer_while_the_database_is_down() {
    let app = TestApp::spawn().await;
    // The pool is closed: every query fails, as with the server gone.
    app.store.close().await;
    let response = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(text.contains("longtx_db_up 0"), "{text}");
    assert!(text.contains("longtx_db_pool_max_connections"), "{text}");
    assert!(text.contains("longtx_build_info{"), "{text}");
    assert!(
        !text.contains("longtx_jobs{"),
        "no made-up job counts: {text}"
    );
}
