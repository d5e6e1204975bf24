//! One active job per query_source, enforced by the database: concurrent
//! alerts, several replicas, and the cooldown after a job ends.

use longtx_core::JobState;
use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::{join_all, sqlx, TestApp};
use serde_json::Value;
use std::time::Duration;

async fn fire(app: &TestApp, source: &str) -> Value {
    let body = AmWebhook::with(AmAlert::firing(source).value(150.0)).to_json();
    let response = app.post_json("/webhooks/alertmanager", &body).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["results"][0].clone()
}

async fn job_count(app: &TestApp) -> Vec<(String, i64, i32)> {
    let mut conn = app.db.connect().await;
    sqlx::query_as("SELECT query_source, count(*) OVER (PARTITION BY query_source), alert_count FROM jobs ORDER BY query_source")
        .fetch_all(&mut conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn concurrent_alerts_for_ten_sources_make_ten_jobs() {
    let app = TestApp::builder().max_connections(5).spawn().await;
    let sends = (0..100).map(|i| {
        let app = &app;
        async move { fire(app, &format!("Source{}Worker", i % 10)).await }
    });
    let results = join_all(sends).await;
    let created = results.iter().filter(|r| r["outcome"] == "created").count();
    assert_eq!(created, 10);
    let jobs = job_count(&app).await;
    assert_eq!(jobs.len(), 10);
    assert!(
        jobs.iter()
            .all(|(_, per_source, alerts)| *per_source == 1 && *alerts == 10),
        "{jobs:?}"
    );
}

#[tokio::test]
async fn two_replicas_on_one_database_make_one_job() {
    let first = TestApp::spawn().await;
    let second = TestApp::builder().database(first.db.clone()).spawn().await;
    let sends = (0..40).map(|i| {
        let app = if i % 2 == 0 { &first } else { &second };
        async move { fire(app, "Shared::Worker").await }
    });
    let results = join_all(sends).await;
    assert_eq!(
        results.iter().filter(|r| r["outcome"] == "created").count(),
        1
    );
    let ids: std::collections::BTreeSet<i64> = results
        .iter()
        .map(|r| r["job_id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 1, "every alert names the same job");
    assert_eq!(
        job_count(&first).await,
        vec![("Shared::Worker".to_string(), 1, 40)]
    );
}

#[tokio::test]
async fn after_a_job_ends_the_cooldown_holds_new_jobs_back() {
    let app = TestApp::spawn().await;
    let first = fire(&app, "Cool::Worker").await;
    let job = first["job_id"].as_i64().unwrap();
    // (A merged job is watched by the verification rules: after_merge.rs.)
    assert!(app
        .store
        .set_job_state(job, JobState::Closed, None)
        .await
        .unwrap());

    let during = fire(&app, "Cool::Worker").await;
    assert_eq!(during["outcome"], "deduped");
    assert_eq!(during["job_id"].as_i64(), Some(job));
    assert!(
        during["detail"].as_str().unwrap().contains("cooldown"),
        "{during}"
    );
}

#[tokio::test]
async fn after_the_cooldown_a_new_job_opens() {
    let app = TestApp::builder()
        .policy(|p| p.cooldown = Duration::from_secs(1))
        .spawn()
        .await;
    let first = fire(&app, "Again::Worker").await["job_id"]
        .as_i64()
        .unwrap();
    app.store
        .set_job_state(first, JobState::Closed, Some("closed unmerged"))
        .await
        .unwrap();
    let mut conn = app.db.connect().await;
    sqlx::query("UPDATE jobs SET ended_at = now() - interval '2 seconds' WHERE id = $1")
        .bind(first)
        .execute(&mut conn)
        .await
        .unwrap();
    let next = fire(&app, "Again::Worker").await;
    assert_eq!(next["outcome"], "created");
    assert_ne!(next["job_id"].as_i64(), Some(first));
}
