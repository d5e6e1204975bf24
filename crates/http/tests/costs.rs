//! What agent runs cost: read from the result of the run longtx
//! dispatched, once per run (a POSTed report is refused), and a daily cost
//! cap that counts each run's budget, whatever it reports, across replicas.

mod tracking;

use longtx_pipeline::DispatchSettings;
use longtx_store::Caps;
use longtx_testkit::github_events::run_completed;
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
        ..longtx_testkit::dispatch_settings().caps
    };
    settings
}

#[tokio::test]
async fn a_run_s_cost_comes_from_its_result_once_and_a_posted_report_is_refused() {
    let mut repo = tracking::repository_owned_by_alice("costs");
    let t = tracking::Tracking::start(&repo.bare(), |_| {}).await;
    t.github.set_pull_files(101, &[("app/models/order.rb", 2)]);
    let job = t.job_with_agent_running("Billing::SyncWorker").await;
    let run = t.propose_fix(&mut repo, job, None);
    // A leaked job token posts a report: the endpoint is gone, nothing counts.
    let body = json!({"run_id": run, "agent": "claude", "cost_usd": 10000, "turns": 12});
    let (status, answer) = report(&t.app, job, Some(&token_of(&t.github, job)), &body).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (410, Some("retired_endpoint")),
        "{answer}"
    );
    assert!(
        answer["detail"]
            .as_str()
            .unwrap()
            .contains(".github/workflows/long-transaction-fix.yml"),
        "the answer names the template that replaces the caller: {answer}"
    );
    assert_eq!(app_cost(&t.app, job).await, (0, 0.0));

    for delivery in ["done", "done-again"] {
        t.deliver(
            "workflow_run",
            delivery,
            &run_completed(job, run, "success"),
        )
        .await;
    }
    t.wait_for(job, |j| j.state == "in_review").await;
    assert_eq!(
        app_cost(&t.app, job).await,
        (1, 0.25),
        "once, for the dispatched run"
    );
    let page = t.app.get_text(&format!("/jobs/{job}")).await;
    assert!(
        page.contains("$0.25 over 1 run(s), 5 turns"),
        "the job page shows the cost"
    );
    let metrics = t.app.get_text("/metrics").await;
    assert!(
        metrics.contains("longtx_agent_cost_usd{period=\"total\"} 0.25"),
        "{metrics}"
    );
}

async fn app_cost(app: &TestApp, job: i64) -> (i64, f64) {
    let cost = app.store.job_cost(job).await.unwrap();
    (cost.runs, cost.cost_usd)
}

#[tokio::test]
async fn the_daily_cost_cap_counts_budgets_and_holds_jobs_back_across_two_replicas() {
    let github = FakeGitHub::start().await;
    let first = dispatching_app(&github, Some(5.0), None).await;
    let second = dispatching_app(&github, Some(5.0), Some(first.db.clone())).await;
    let spender = fire(&first, "Reports::MonthlyWorker").await;
    wait_for_state(&first, spender, "agent_running").await;
    // What the spender's run reported (read from its result by longtx):
    // nothing, which frees nothing; its $5 budget is what counts.
    let cost: longtx_core::run_report::RunCost =
        serde_json::from_value(json!({"agent": "claude", "cost_usd": 0.0, "turns": 80})).unwrap();
    let report = cost.report(9200, 0).unwrap();
    first
        .store
        .record_run_report(spender, &report)
        .await
        .unwrap();

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
    assert_eq!(status["status"]["cost_today_usd"], 0.0);
    assert_eq!(status["status"]["budget_today_usd"], 5.0);
}
