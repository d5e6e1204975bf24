//! What agent runs cost: reports taken only with the job's own token, one
//! per run, and a daily cost cap that holds across replicas.

use longtx_pipeline::DispatchSettings;
use longtx_store::Caps;
use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::{dispatch_settings, shipped_prompt_sources, FakeGitHub, TestApp};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn fire(app: &TestApp, source: &str) -> i64 {
    let hook = AmWebhook::with(AmAlert::firing(source).table("orders").value(150.0));
    let body: Value = app
        .post_json("/webhooks/alertmanager", &hook.to_json())
        .await
        .json()
        .await
        .unwrap();
    body["results"][0]["job_id"].as_i64().unwrap()
}

async fn wait_for_state(app: &TestApp, job: i64, state: &str) -> longtx_store::JobRow {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let row = app.store.job(job).await.unwrap().unwrap();
        if row.state == state || Instant::now() > deadline {
            return row;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The job's token, as its run was given it.
fn token_of(github: &FakeGitHub, job: i64) -> String {
    github
        .runs()
        .iter()
        .find(|r| r["inputs"]["job_id"].as_str().and_then(|s| s.parse().ok()) == Some(job))
        .map(|r| r["inputs"]["prompt_token"].as_str().unwrap().to_owned())
        .expect("a run for the job")
}

async fn report(app: &TestApp, job: i64, token: Option<&str>, body: &Value) -> (u16, Value) {
    let mut request = app
        .client
        .post(format!("{}/api/jobs/{job}/run-report", app.base_url))
        .json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// An app that dispatches to `github` under `cost_cap`, on `database` (a
/// replica) or its own.
async fn dispatching_app(
    github: &FakeGitHub,
    cost_cap: Option<f64>,
    database: Option<longtx_testkit::TestDatabase>,
) -> TestApp {
    let mut builder = TestApp::builder();
    if let Some(db) = database {
        builder = builder.database(db);
    }
    builder
        .prompts(shipped_prompt_sources())
        .dispatcher(
            settings(cost_cap),
            Some(github.client(Duration::from_secs(5))),
        )
        .spawn()
        .await
}

fn settings(max_cost_per_day: Option<f64>) -> DispatchSettings {
    let mut settings = dispatch_settings();
    settings.caps = Caps {
        max_per_day: 100,
        max_running: 100,
        max_cost_per_day,
    };
    settings
}

#[tokio::test]
async fn a_run_report_needs_the_job_s_own_token_and_counts_once_per_run() {
    let github = FakeGitHub::start().await;
    let app = dispatching_app(&github, None, None).await;
    let job = fire(&app, "Billing::SyncWorker").await;
    let other = fire(&app, "Crm::SyncWorker").await;
    wait_for_state(&app, job, "agent_running").await;
    wait_for_state(&app, other, "agent_running").await;
    let body = json!({"run_id": 9100, "agent": "claude", "cost_usd": 1.5, "turns": 12});

    assert_eq!(report(&app, job, None, &body).await.0, 401);
    let (status, _) = report(&app, job, Some(&token_of(&github, other)), &body).await;
    assert_eq!(status, 401, "another job's token opens only that job");
    let token = token_of(&github, job);
    let (status, answer) = report(&app, job, Some(&token), &body).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (201, Some("recorded"))
    );
    // The workflow retried its report with newer figures: replaced, not added.
    let again = json!({"run_id": 9100, "agent": "claude", "cost_usd": 1.75, "turns": 13});
    let (status, answer) = report(&app, job, Some(&token), &again).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("replaced"))
    );
    let cost = app.store.job_cost(job).await.unwrap();
    assert_eq!((cost.runs, cost.cost_usd, cost.turns), (1, 1.75, 13));

    let (status, answer) = report(
        &app,
        job,
        Some(&token),
        &json!({"run_id": 1, "cost_usd": -3}),
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_report"))
    );
    let page = app.get_text(&format!("/jobs/{job}")).await;
    assert!(
        page.contains("$1.75 over 1 run(s), 13 turns"),
        "the job page shows the cost"
    );
    let metrics = app.get_text("/metrics").await;
    assert!(
        metrics.contains("longtx_agent_cost_usd{period=\"total\"} 1.75"),
        "{metrics}"
    );
}

#[tokio::test]
async fn the_daily_cost_cap_holds_jobs_back_across_two_replicas() {
    let github = FakeGitHub::start().await;
    let first = dispatching_app(&github, Some(5.0), None).await;
    let second = dispatching_app(&github, Some(5.0), Some(first.db.clone())).await;
    let spender = fire(&first, "Reports::MonthlyWorker").await;
    wait_for_state(&first, spender, "agent_running").await;
    let body = json!({"run_id": 9200, "agent": "claude", "cost_usd": 6.25, "turns": 80});
    let (status, _) = report(&first, spender, Some(&token_of(&github, spender)), &body).await;
    assert_eq!(status, 201);

    let waiting = [
        fire(&first, "Exports::CsvWorker").await,
        fire(&second, "Imports::CsvWorker").await,
    ];
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        github.runs().len(),
        1,
        "neither replica dispatched past the cap"
    );
    for job in waiting {
        let row = wait_for_state(&second, job, "queued").await;
        assert_eq!(row.state, "queued");
        assert!(
            row.state_reason
                .as_deref()
                .unwrap_or("")
                .contains("daily cost cap ($5.00)"),
            "{row:?}"
        );
    }
    let (_, status) = first.get_json("/api/dispatch").await;
    assert_eq!(status["status"]["cost_today_usd"], 6.25);
}
