//! Exactly one agent run per job, against an in-process fake GitHub: many
//! alerts, two service instances, a dispatcher killed mid-call, GitHub
//! errors, caps and the pause, and a slow GitHub with a pool of one.

use longtx_pipeline::{spawn_dispatcher, DispatchSettings};
use longtx_store::Caps;
use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::{
    dispatch_settings, join_all, shipped_prompt_sources, FakeGitHub, Fault, TestApp,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn fire(app: &TestApp, source: &str) -> Value {
    let hook = AmWebhook::with(AmAlert::firing(source).table("orders").value(150.0));
    let response = app
        .post_json("/webhooks/alertmanager", &hook.to_json())
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["results"][0].clone()
}

async fn job_states(app: &TestApp) -> Vec<(i64, String)> {
    let (_, list) = app.get_json("/api/jobs?limit=500").await;
    list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["id"].as_i64().unwrap(),
                j["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Waits until `count` jobs are in `state` (at most 20 s).
async fn wait_for_state(app: &TestApp, state: &str, count: usize) -> Vec<(i64, String)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let states = job_states(app).await;
        if states.iter().filter(|(_, s)| s == state).count() >= count || Instant::now() > deadline {
            return states;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An app that renders prompts and dispatches to `github`, as `serve` does.
async fn dispatching_app(
    github: &FakeGitHub,
    settings: DispatchSettings,
    client_timeout: Duration,
) -> TestApp {
    TestApp::builder()
        .prompts(shipped_prompt_sources())
        .dispatcher(settings, Some(github.client(client_timeout)))
        .spawn()
        .await
}

fn unlimited() -> Caps {
    Caps {
        max_per_day: 1000,
        max_running: 1000,
        max_cost_per_day: None,
        ..longtx_testkit::dispatch_settings().caps
    }
}

#[tokio::test]
async fn a_hundred_alerts_over_ten_sources_make_ten_dispatches() {
    let github = FakeGitHub::start().await;
    let mut settings = dispatch_settings();
    settings.caps = unlimited();
    let app = dispatching_app(&github, settings, Duration::from_secs(5)).await;
    join_all((0..100).map(|i| {
        let app = &app;
        async move { fire(app, &format!("Fleet{}Worker", i % 10)).await }
    }))
    .await;
    let states = wait_for_state(&app, "agent_running", 10).await;
    assert_eq!(
        states.iter().filter(|(_, s)| s == "agent_running").count(),
        10,
        "{states:?}"
    );
    let mut dispatched = github.dispatched_job_ids();
    dispatched.sort_unstable();
    dispatched.dedup();
    assert_eq!(dispatched.len(), 10);
    assert_eq!(github.runs().len(), 10, "one run per job, no duplicates");

    let run = &github.runs()[0];
    assert_eq!(
        run["ref"], "main",
        "the default branch is asked for when no ref is configured"
    );
    for input in [
        "job_id",
        "query_source",
        "table",
        "duration_seconds",
        "prompt_url",
        "prompt_token",
        "prompt_sha256",
    ] {
        assert!(run["inputs"][input].is_string(), "input {input} in {run}");
    }
    assert_eq!(run["inputs"]["table"], "orders");
    let (_, job) = app
        .get_json(&format!(
            "/api/jobs/{}",
            run["inputs"]["job_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(job["job"]["run_id"], run["id"]);
    assert_eq!(job["job"]["run_url"], run["html_url"]);
    // The dispatch record's fields are in the book's API page.
    let book = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/book/src/api.md"
    ))
    .unwrap();
    let record = job["dispatches"][0].as_object().expect("a dispatch record");
    for field in record.keys() {
        assert!(
            book.contains(&format!("`{field}`")),
            "dispatch field {field} is missing from docs/book/src/api.md"
        );
    }
}

#[tokio::test]
async fn two_instances_on_one_database_still_make_ten_dispatches() {
    let github = FakeGitHub::start().await;
    let mut settings = dispatch_settings();
    settings.caps = unlimited();
    let first = dispatching_app(&github, settings.clone(), Duration::from_secs(5)).await;
    let second = TestApp::builder()
        .database(first.db.clone())
        .prompts(shipped_prompt_sources())
        .dispatcher(settings, Some(github.client(Duration::from_secs(5))))
        .spawn()
        .await;
    join_all((0..100).map(|i| {
        let app = if i % 2 == 0 { &first } else { &second };
        async move { fire(app, &format!("Twin{}Worker", i % 10)).await }
    }))
    .await;
    wait_for_state(&first, "agent_running", 10).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(github.runs().len(), 10);
}

#[tokio::test]
async fn a_dispatcher_killed_between_the_call_and_its_write_causes_no_second_run() {
    let github = FakeGitHub::start().await;
    // The first dispatch creates its run, then answers only after 3 s.
    github.fail_next([Fault::AcceptThenHang(Duration::from_secs(3))]);
    let app = TestApp::builder()
        .prompts(shipped_prompt_sources())
        .spawn()
        .await;
    let mut settings = dispatch_settings();
    settings.lease = Duration::from_millis(800);
    let doomed = spawn_dispatcher(
        app.store.clone(),
        settings.clone(),
        Some(Arc::new(github.client(Duration::from_secs(10)))),
    );
    let job = fire(&app, "Doomed::Worker").await["job_id"]
        .as_i64()
        .unwrap();
    // Wait until the dispatch is in flight, then kill its dispatcher.
    let deadline = Instant::now() + Duration::from_secs(10);
    while github.runs().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    doomed.abort();
    assert_eq!(
        job_states(&app).await,
        vec![(job, "dispatching".to_string())]
    );

    // A new dispatcher takes the job over once the lease has run out.
    spawn_dispatcher(
        app.store.clone(),
        settings,
        Some(Arc::new(github.client(Duration::from_secs(10)))),
    );
    let states = wait_for_state(&app, "agent_running", 1).await;
    assert_eq!(states, vec![(job, "agent_running".to_string())]);
    assert_eq!(
        github.runs().len(),
        1,
        "the earlier run was found, not dispatched again"
    );
    assert_eq!(github.dispatch_requests().len(), 1);
    let (_, detail) = app.get_json(&format!("/api/jobs/{job}")).await;
    assert_eq!(detail["job"]["run_id"], github.runs()[0]["id"]);
}

#[tokio::test]
async fn server_errors_and_rate_limits_are_retried() {
    let github = FakeGitHub::start().await;
    github.fail_next([Fault::Status(502), Fault::Status(502), Fault::RetryAfter(1)]);
    let app = dispatching_app(&github, dispatch_settings(), Duration::from_secs(5)).await;
    let started = Instant::now();
    fire(&app, "Flaky::Worker").await;
    let states = wait_for_state(&app, "agent_running", 1).await;
    assert_eq!(states[0].1, "agent_running");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was honoured"
    );
    assert_eq!(
        github.dispatch_requests().len(),
        4,
        "two 502s, one 403, then success"
    );
    assert_eq!(github.runs().len(), 1);
}

#[tokio::test]
async fn a_secondary_limit_without_retry_after_is_waited_out_never_final() {
    let github = FakeGitHub::start().await;
    // More secondary limits than the tries a server error gets: a rate
    // limit must still never fail the job.
    github.fail_next(std::iter::repeat_n(Fault::SecondaryLimit, 6));
    let settings = dispatch_settings();
    let floor = settings.secondary_floor;
    let app = dispatching_app(&github, settings, Duration::from_secs(5)).await;
    let started = Instant::now();
    fire(&app, "Busy::Worker").await;
    let states = wait_for_state(&app, "agent_running", 1).await;
    assert_eq!(states[0].1, "agent_running", "{states:?}");
    assert_eq!(github.dispatch_requests().len(), 7);
    assert_eq!(github.runs().len(), 1);
    // The floor, doubled each time (GitHub: at least a minute, then longer;
    // the tests' floor is shrunk): at least 1+2+4+8+16+32 floors.
    assert!(started.elapsed() >= floor * 63, "{:?}", started.elapsed());
}

#[tokio::test]
async fn an_older_enterprise_server_refusing_run_details_gets_one_retry_without_them() {
    let github = FakeGitHub::start().await;
    github.set_old_enterprise_server();
    let app = dispatching_app(&github, dispatch_settings(), Duration::from_secs(5)).await;
    fire(&app, "Ghes::Worker").await;
    fire(&app, "Ghes::OtherWorker").await;
    let states = wait_for_state(&app, "agent_running", 2).await;
    assert!(
        states.iter().all(|(_, s)| s == "agent_running"),
        "{states:?}"
    );
    let requests = github.dispatch_requests();
    let with_details = requests
        .iter()
        .filter(|r| r.get("return_run_details").is_some())
        .count();
    assert_eq!(
        with_details, 1,
        "asked once, then never again: {requests:?}"
    );
    assert_eq!(requests.len(), 3);
    assert_eq!(github.runs().len(), 2);
}

#[tokio::test]
async fn a_refused_dispatch_fails_the_job_with_the_error() {
    let github = FakeGitHub::start().await;
    github.fail_next([Fault::Status(422)]);
    let app = dispatching_app(&github, dispatch_settings(), Duration::from_secs(5)).await;
    let job = fire(&app, "Refused::Worker").await["job_id"]
        .as_i64()
        .unwrap();
    wait_for_state(&app, "failed", 1).await;
    let (_, detail) = app.get_json(&format!("/api/jobs/{job}")).await;
    assert_eq!(detail["job"]["state"], "failed");
    assert!(
        detail["job"]["state_reason"]
            .as_str()
            .unwrap()
            .contains("422"),
        "{detail}"
    );
}

#[tokio::test]
async fn the_daily_cap_and_the_pause_hold_jobs_back_and_say_why() {
    let github = FakeGitHub::start().await;
    let mut settings = dispatch_settings();
    settings.caps = Caps {
        max_per_day: 2,
        max_running: 10,
        max_cost_per_day: None,
        ..longtx_testkit::dispatch_settings().caps
    };
    let app = dispatching_app(&github, settings, Duration::from_secs(5)).await;
    for source in ["CapA::Worker", "CapB::Worker", "CapC::Worker"] {
        fire(&app, source).await;
    }
    wait_for_state(&app, "agent_running", 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(github.runs().len(), 2);
    let (_, queued) = app.get_json("/api/jobs?state=queued").await;
    assert!(
        queued["jobs"][0]["state_reason"]
            .as_str()
            .unwrap()
            .contains("daily dispatch cap (2)"),
        "{queued}"
    );
    let (_, status) = app.get_json("/api/dispatch").await;
    assert_eq!(status["status"]["dispatched_today"], 2);
    assert_eq!(status["config"]["max_per_day"], 2);
}

#[tokio::test]
async fn paused_dispatch_waits_until_resumed() {
    let github = FakeGitHub::start().await;
    let app = dispatching_app(&github, dispatch_settings(), Duration::from_secs(5)).await;
    let pause = app.client.post(app.url("/api/pause")).send().await.unwrap();
    assert_eq!(pause.status(), 200);
    let job = fire(&app, "Paused::Worker").await["job_id"]
        .as_i64()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(github.runs().is_empty());
    let (_, detail) = app.get_json(&format!("/api/jobs/{job}")).await;
    assert_eq!(detail["job"]["state_reason"], "waiting: dispatch is paused");
    app.client
        .post(app.url("/api/resume"))
        .send()
        .await
        .unwrap();
    wait_for_state(&app, "agent_running", 1).await;
    assert_eq!(github.runs().len(), 1);
}

#[tokio::test]
async fn without_credentials_the_dispatch_is_recorded_not_sent() {
    let app = TestApp::builder()
        .prompts(shipped_prompt_sources())
        .dispatcher(dispatch_settings(), None)
        .spawn()
        .await;
    let job = fire(&app, "Dry::Worker").await["job_id"].as_i64().unwrap();
    wait_for_state(&app, "dry_run", 1).await;
    let mut conn = app.db.connect().await;
    let (dry, request): (bool, Value) =
        longtx_testkit::sqlx::query_as("SELECT dry_run, request FROM dispatches WHERE job_id = $1")
            .bind(job)
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert!(dry);
    assert_eq!(request["workflow"], "long-transaction-fix.yml");
    assert_eq!(request["inputs"]["query_source"], "Dry::Worker");
    assert_eq!(
        request["inputs"]["prompt_token"], "<redacted>",
        "the token is never stored in the record"
    );

    // The would-be dispatch is there to inspect: in the API and on the page.
    let (status, detail) = app.get_json(&format!("/api/jobs/{job}")).await;
    assert_eq!(status, 200, "{detail}");
    let shown = &detail["dispatches"][0];
    assert_eq!(shown["dry_run"], true, "{detail}");
    assert_eq!(shown["request"]["workflow"], "long-transaction-fix.yml");
    assert_eq!(shown["request"]["inputs"]["prompt_token"], "<redacted>");
    let page = app.get_text(&format!("/jobs/{job}")).await;
    assert!(
        page.contains("The dispatch longtx would have sent"),
        "{page}"
    );
    assert!(page.contains("long-transaction-fix.yml") && page.contains("Dry::Worker"));
    let token: Option<String> =
        longtx_testkit::sqlx::query_scalar("SELECT prompt_token FROM jobs WHERE id = $1")
            .bind(job)
            .fetch_one(&mut conn)
            .await
            .unwrap();
    let token = token.expect("the job has a token");
    assert!(!page.contains(&token) && !detail.to_string().contains(&token));
}

#[tokio::test]
async fn the_run_fetches_its_prompt_with_its_own_token_only() {
    let github = FakeGitHub::start().await;
    let app = TestApp::builder()
        .token("webhook-secret")
        .prompts(shipped_prompt_sources())
        .dispatcher(
            dispatch_settings(),
            Some(github.client(Duration::from_secs(5))),
        )
        .spawn()
        .await;
    let hook = AmWebhook::with(AmAlert::firing("Fetch::Worker").value(150.0));
    let response = app
        .client
        .post(app.url("/webhooks/alertmanager"))
        .bearer_auth("webhook-secret")
        .header("content-type", "application/json")
        .body(hook.to_json().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    while github.runs().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let inputs = github.runs()[0]["inputs"].clone();
    let path = format!("/api/jobs/{}/prompt", inputs["job_id"].as_str().unwrap());
    let fetched = app
        .client
        .get(app.url(&path))
        .bearer_auth(inputs["prompt_token"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(fetched.status(), 200);
    let text = fetched.text().await.unwrap();
    use sha2_check::hex_sha256;
    assert_eq!(
        hex_sha256(&text),
        inputs["prompt_sha256"].as_str().unwrap(),
        "the workflow can check the hash"
    );
    let forged = app
        .client
        .get(app.url(&path))
        .bearer_auth("not-the-token")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);
    let other = app
        .client
        .get(app.url("/api/jobs/999999/prompt"))
        .bearer_auth(inputs["prompt_token"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 401, "a job's token opens no other job");

    // The run ends: its token, read from a log later, opens nothing.
    let run_id = github.runs()[0]["id"].as_u64().unwrap();
    github.complete_run(run_id, "failure");
    let job: i64 = inputs["job_id"].as_str().unwrap().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.store.job(job).await.unwrap().unwrap().state != "no_pr" {
        assert!(Instant::now() < deadline, "the run's end was not seen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let late = app
        .client
        .get(app.url(&path))
        .bearer_auth(inputs["prompt_token"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(late.status(), 403, "only while its run goes");
    let people = app
        .client
        .get(app.url(&path))
        .bearer_auth("webhook-secret")
        .send()
        .await
        .unwrap();
    assert_eq!(
        people.status(),
        200,
        "people still read it with the API token"
    );
}

#[tokio::test]
async fn a_slow_github_does_not_hold_the_only_connection() {
    let github = FakeGitHub::start().await;
    github.set_latency(Duration::from_secs(5));
    let app = TestApp::builder()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(2))
        .prompts(shipped_prompt_sources())
        .dispatcher(
            dispatch_settings(),
            Some(github.client(Duration::from_secs(30))),
        )
        .spawn()
        .await;
    fire(&app, "Slow::Worker").await;
    // Wait until the dispatcher is inside its 5 s call to GitHub.
    let deadline = Instant::now() + Duration::from_secs(10);
    while github.requests().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!github.requests().is_empty());
    // With the pool's one connection free, intake answers (a held
    // connection would make these wait out the 2 s acquire timeout: 503).
    for i in 0..10 {
        let hook = AmWebhook::with(AmAlert::firing(&format!("Meanwhile{i}::Worker")).value(150.0));
        let response = app
            .post_json("/webhooks/alertmanager", &hook.to_json())
            .await;
        assert_eq!(
            response.status(),
            200,
            "intake answered while GitHub was slow"
        );
    }
    assert!(
        github.runs().is_empty()
            || job_states(&app)
                .await
                .iter()
                .any(|(_, s)| s == "dispatching")
    );
}

mod sha2_check {
    pub fn hex_sha256(text: &str) -> String {
        use sha2::Digest;
        sha2::Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[tokio::test]
async fn a_timed_out_dispatch_that_created_its_run_is_not_sent_again() {
    let github = FakeGitHub::start().await;
    // GitHub creates the run but answers after the client has given up.
    github.fail_next([Fault::AcceptThenHang(Duration::from_secs(2))]);
    let app = dispatching_app(&github, dispatch_settings(), Duration::from_millis(400)).await;
    fire(&app, "Timeout::Worker").await;
    let states = wait_for_state(&app, "agent_running", 1).await;
    assert_eq!(states[0].1, "agent_running");
    assert_eq!(github.runs().len(), 1);
    assert_eq!(
        github.dispatch_requests().len(),
        1,
        "the run was looked up, not dispatched twice"
    );
}

#[tokio::test]
async fn a_run_that_fails_makes_the_job_no_pr_and_a_silent_one_expires() {
    let github = FakeGitHub::start().await;
    let app = dispatching_app(&github, dispatch_settings(), Duration::from_secs(5)).await;
    let job = fire(&app, "Gives::UpWorker").await["job_id"]
        .as_i64()
        .unwrap();
    wait_for_state(&app, "agent_running", 1).await;
    github.complete_run(github.runs()[0]["id"].as_u64().unwrap(), "failure");
    let states = wait_for_state(&app, "no_pr", 1).await;
    assert_eq!(states, vec![(job, "no_pr".to_string())]);

    let mut settings = dispatch_settings();
    settings.agent_timeout = Duration::from_millis(300);
    let quiet = dispatching_app(&github, settings, Duration::from_secs(5)).await;
    let job = fire(&quiet, "Silent::Worker").await["job_id"]
        .as_i64()
        .unwrap();
    let states = wait_for_state(&quiet, "expired", 1).await;
    assert_eq!(states, vec![(job, "expired".to_string())]);
}

#[tokio::test]
async fn the_running_cap_holds_too() {
    let github = FakeGitHub::start().await;
    let mut settings = dispatch_settings();
    settings.caps = Caps {
        max_per_day: 100,
        max_running: 1,
        max_cost_per_day: None,
        ..longtx_testkit::dispatch_settings().caps
    };
    let app = dispatching_app(&github, settings, Duration::from_secs(5)).await;
    fire(&app, "RunA::Worker").await;
    fire(&app, "RunB::Worker").await;
    wait_for_state(&app, "agent_running", 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(github.runs().len(), 1);
    let (_, queued) = app.get_json("/api/jobs?state=queued").await;
    assert!(
        queued["jobs"][0]["state_reason"]
            .as_str()
            .unwrap()
            .contains("1 agent runs are going"),
        "{queued}"
    );
}
