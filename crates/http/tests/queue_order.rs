//! The queue ranked by impact: a seeded set of jobs, made by real alerts
//! (durations, repeats, waiters), in the order hand-computed from the
//! documented formula (`longtx_core::impact`), and a job queued long ago
//! taken first however small its impact: nothing starves.

use longtx_store::Caps;
use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::{dispatch_settings, shipped_prompt_sources, FakeGitHub, TestApp};
use serde_json::Value;
use std::time::{Duration, Instant};

async fn fire(app: &TestApp, alert: AmAlert) -> i64 {
    let response = app
        .post_json("/webhooks/alertmanager", &AmWebhook::with(alert).to_json())
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["results"][0]["job_id"].as_i64().unwrap()
}

/// Waits until every job has its prompt (the queue holds only those).
async fn queue_of(app: &TestApp, jobs: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, body) = app.get_json("/api/queue").await;
        let queue = body["queue"].as_array().unwrap().clone();
        if queue.len() >= jobs || Instant::now() > deadline {
            return queue;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn queued_jobs_go_by_impact_and_the_oldest_waits_no_longer_than_the_age_bonus() {
    let github = FakeGitHub::start().await;
    let mut settings = dispatch_settings();
    settings.caps = Caps {
        max_per_day: 100,
        max_running: 1,
        max_cost_per_day: None,
        ..longtx_testkit::dispatch_settings().caps
    };
    let app = TestApp::builder()
        .prompts(shipped_prompt_sources())
        .dispatcher(settings, Some(github.client(Duration::from_secs(5))))
        .spawn()
        .await;
    let pause = app.client.post(app.url("/api/pause")).send().await.unwrap();
    assert_eq!(pause.status(), 200);

    let alert = |source: &str, seconds: f64| AmAlert::firing(source).table("orders").value(seconds);
    let quiet = fire(&app, alert("Quiet::Worker", 150.0)).await;
    let blocker = fire(
        &app,
        alert("Blocker::Worker", 120.0).annotation("waiters", "ddl=1,dml=3"),
    )
    .await;
    let mut noisy = 0;
    for _ in 0..14 {
        noisy = fire(&app, alert("Noisy::Worker", 110.0)).await;
    }
    let long = fire(&app, alert("Long::Worker", 800.0)).await;
    let old = fire(&app, alert("Old::Worker", 100.5)).await;
    // Queued 51 hours ago (the seed; nothing else tells the age).
    sqlx::query("UPDATE jobs SET created_at = now() - interval '51 hours' WHERE id = $1")
        .bind(old)
        .execute(&mut app.db.connect().await)
        .await
        .unwrap();

    let queue = queue_of(&app, 5).await;
    let got: Vec<(i64, f64)> = queue
        .iter()
        .map(|q| {
            (
                q["job_id"].as_i64().unwrap(),
                q["impact"]["score"].as_f64().unwrap(),
            )
        })
        .collect();
    // Hand-computed, threshold 100 s: over = 20 * log2(longest / 100),
    // recurrence = 5 * alerts / 7, waiters = 25 * ddl + 2 * dml.
    //   Old:     0.14 + 0.71            =  0.86, + 4 * 51 h of age bonus
    //   Long:    60 (capped) + 0.71     = 60.71
    //   Blocker: 5.26 + 0.71 + 31       = 36.97
    //   Noisy:   2.75 + 10              = 12.75
    //   Quiet:   11.70 + 0.71           = 12.41
    assert_eq!(
        got,
        [
            (old, 0.86),
            (long, 60.71),
            (blocker, 36.97),
            (noisy, 12.75),
            (quiet, 12.41)
        ]
    );
    assert_eq!(
        queue[2]["impact"]["why"],
        "1 schema change and 3 queries waited behind it; 1 alert in 7 days; 1.2x the threshold"
    );
    assert_eq!(
        queue[3]["impact"]["why"],
        "14 alerts in 7 days; 1.1x the threshold"
    );

    // The job page says the same, with its place.
    let (_, detail) = app.get_json(&format!("/api/jobs/{blocker}")).await;
    assert_eq!(detail["queue"]["position"], 3);
    assert_eq!(detail["queue"]["of"], 5);

    // So does the dashboard's queue, and the job's page.
    let page = app.get_text("/").await;
    let table = &page[page.find("id=\"queue-order\"").expect("the queue table")..];
    let rows: Vec<usize> = [old, long, blocker, noisy, quiet]
        .iter()
        .map(|id| {
            table
                .find(&format!("href=\"/jobs/{id}\""))
                .expect("a row per job")
        })
        .collect();
    assert!(rows.windows(2).all(|w| w[0] < w[1]), "rows out of order");
    let job_page = app.get_text(&format!("/jobs/{blocker}")).await;
    assert!(
        job_page.contains("3 of 5 in the queue: 1 schema change and 3 queries waited behind it"),
        "{job_page}"
    );

    // The dispatcher follows the order: one run at a time.
    app.client
        .post(app.url("/api/resume"))
        .send()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while github.runs().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        github.dispatched_job_ids(),
        [old],
        "the oldest, then nothing past the running cap"
    );
}
