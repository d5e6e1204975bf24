//! Dispatch held to what reviewers can absorb, end to end: a real
//! repository whose CODEOWNERS name Alice and Bob, prompts that locate each
//! worker's file in a checkout of it, one open longtx review per person at
//! most. A full owner is passed over for the next; when every candidate is
//! full, the job waits with the reason and no run is paid for; when a
//! review ends, it starts by itself.

mod tracking;

use longtx_core::reviewers::Capacity;
use longtx_testkit::github_events::PrEventBuilder;
use longtx_testkit::GitRepo;
use std::time::{Duration, Instant};
use tracking::Tracking;

fn worker(class: &str) -> String {
    format!("class {class}\n  include Sidekiq::Worker\n\n  def perform(id)\n    Order.find(id).touch\n  end\nend\n")
}

fn repository() -> GitRepo {
    let repo = GitRepo::new("capacity");
    let (a, b, c) = (
        worker("OrderSyncWorker"),
        worker("InvoiceWorker"),
        worker("ReceiptWorker"),
    );
    repo.commit(
        &[
            (".github/CODEOWNERS", "app/workers/ @alice @bob\n"),
            ("app/workers/order_sync_worker.rb", &a),
            ("app/workers/invoice_worker.rb", &b),
            ("app/workers/receipt_worker.rb", &c),
        ],
        "Alice",
        "alice@example.com",
        10,
    );
    repo
}

/// Opens the fix PR of a job whose run is going and waits for its reviewers.
async fn open_pr(t: &Tracking, job: i64, pr: u64, file: &str) -> serde_json::Value {
    t.github.set_pull_files(pr, &[(file, 4)]);
    let event = PrEventBuilder::opened(job, pr)
        .author("github-actions[bot]")
        .to_json();
    let (status, answer) = t
        .deliver("pull_request", &format!("open-{job}"), &event)
        .await;
    assert_eq!(status, 200, "{answer}");
    t.wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
        .await
        .reviewers
        .unwrap()
}

async fn fire(t: &Tracking, source: &str) -> i64 {
    let hook = longtx_testkit::payloads::AmWebhook::with(
        longtx_testkit::payloads::AmAlert::firing(source)
            .table("orders")
            .value(150.0),
    );
    let response = t
        .app
        .post_json("/webhooks/alertmanager", &hook.to_json())
        .await;
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    body["results"][0]["job_id"].as_i64().unwrap()
}

#[tokio::test]
async fn a_full_owner_is_passed_over_and_a_job_waits_until_a_review_ends() {
    let mut repo = repository();
    let remote = repo.bare();
    let t = Tracking::start_locating(&remote, &repo.path, |settings| {
        settings.capacity = Some(Capacity { user: 1, team: 10 });
        settings.max_reviewers = 1;
    })
    .await;

    // Job A: both owners free; Alice by name.
    let a = t.job_with_agent_running("OrderSyncWorker").await;
    let chosen = open_pr(&t, a, 41, "app/workers/order_sync_worker.rb").await;
    assert_eq!(
        chosen["requested"][0]["reviewer"]["name"], "alice",
        "{chosen}"
    );

    // Job B: Alice holds one longtx review, her capacity; Bob is asked.
    let b = t.job_with_agent_running("InvoiceWorker").await;
    let chosen = open_pr(&t, b, 42, "app/workers/invoice_worker.rb").await;
    assert_eq!(
        chosen["requested"][0]["reviewer"]["name"], "bob",
        "{chosen}"
    );
    let skipped = chosen["skipped"].to_string();
    assert!(
        skipped.contains("@alice") && skipped.contains("at capacity (1/1"),
        "{chosen}"
    );

    // Job C: both full. It waits, says why, and no run is dispatched.
    let c = fire(&t, "ReceiptWorker").await;
    let waiting = t
        .wait_for(c, |j| {
            j.state_reason
                .as_deref()
                .is_some_and(|r| r.starts_with("reviewers at capacity"))
        })
        .await;
    assert_eq!(waiting.state, "queued");
    assert_eq!(
        waiting.state_reason.as_deref(),
        Some("reviewers at capacity: alice 1/1, bob 1/1")
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !t.github.dispatched_job_ids().contains(&c),
        "no run is paid for"
    );
    let (_, queue) = t.app.get_json("/api/queue").await;
    assert_eq!(queue["waiting_for_reviewer_capacity"], 1, "{queue}");
    let metrics = t.app.get_text("/metrics").await;
    assert!(
        metrics.contains("longtx_jobs_waiting_reviewer_capacity 1"),
        "{metrics}"
    );

    // Alice's review ends (the fix is merged): C starts by itself.
    let merged = PrEventBuilder::opened(a, 41).closed(true).to_json();
    let (status, answer) = t.deliver("pull_request", "merge-a", &merged).await;
    assert_eq!(status, 200, "{answer}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !t.github.dispatched_job_ids().contains(&c) {
        assert!(Instant::now() < deadline, "the waiting job never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = t.wait_for(c, |j| j.state == "agent_running").await;
    assert_eq!(started.state_reason, None);
}
