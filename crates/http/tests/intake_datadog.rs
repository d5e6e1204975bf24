//! Datadog alerts, with string-typed fields, land as jobs.

use longtx_testkit::payloads::DdWebhook;
use longtx_testkit::{fixture, sqlx, TestApp};
use serde_json::Value;

async fn send(app: &TestApp, body: &Value) -> (u16, Value) {
    let response = app.post_json("/webhooks/datadog", body).await;
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn triggered_creates_then_dedupes_and_recovered_creates_nothing() {
    let app = TestApp::spawn().await;
    let (status, first) = send(
        &app,
        &DdWebhook::triggered("Billing::SyncWorker")
            .table("invoices")
            .value("245.5")
            .to_json(),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["results"][0]["outcome"], "created");
    let (_, again) = send(
        &app,
        &DdWebhook::triggered("Billing::SyncWorker")
            .value("260")
            .to_json(),
    )
    .await;
    assert_eq!(again["results"][0]["outcome"], "deduped");
    assert_eq!(again["results"][0]["job_id"], first["results"][0]["job_id"]);
    let (_, recovered) = send(
        &app,
        &DdWebhook::triggered("Billing::SyncWorker")
            .recovered()
            .to_json(),
    )
    .await;
    assert_eq!(recovered["results"][0]["outcome"], "resolved");
    assert_eq!(recovered["results"][0]["job_id"], Value::Null);

    let (_, list) = app.get_json("/api/jobs").await;
    assert_eq!(list["jobs"][0]["alert_count"], 2);
    assert_eq!(list["jobs"][0]["max_duration_seconds"], 260.0);

    // All three are in the audit trail, the recovery too.
    let mut conn = app.db.connect().await;
    let outcomes: Vec<(String,)> = sqlx::query_as("SELECT outcome FROM alert_events ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    let outcomes: Vec<&str> = outcomes.iter().map(|(o,)| o.as_str()).collect();
    assert_eq!(outcomes, ["created", "deduped", "resolved"]);
}

#[tokio::test]
async fn the_recommended_payload_fixture_is_read() {
    let app = TestApp::spawn().await;
    let body: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("datadog-triggered.json")).unwrap())
            .unwrap();
    let (status, result) = send(&app, &body).await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["results"][0]["query_source"], "admin/users#update");
    let (_, list) = app.get_json("/api/jobs").await;
    assert_eq!(list["jobs"][0]["tables"], serde_json::json!(["users"]));
    assert_eq!(list["jobs"][0]["max_duration_seconds"], 153.0);
}

#[tokio::test]
async fn an_unrendered_value_trusts_the_monitor_and_words_are_rejected() {
    let app = TestApp::spawn().await;
    let (status, ok) = send(&app, &DdWebhook::triggered("X::Worker").to_json()).await;
    assert_eq!(
        (status, ok["results"][0]["outcome"].as_str()),
        (200, Some("created"))
    );
    let (status, bad) = send(
        &app,
        &DdWebhook::triggered("Y::Worker")
            .value("a long time")
            .to_json(),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(bad["results"][0]["outcome"], "rejected");
    assert!(
        bad["detail"]
            .as_str()
            .unwrap()
            .contains("value is not a number"),
        "{bad}"
    );
}

#[tokio::test]
async fn below_the_threshold_is_reported_as_such() {
    let app = TestApp::builder()
        .policy(|p| p.threshold_seconds = 50.0)
        .spawn()
        .await;
    let (_, body) = send(
        &app,
        &DdWebhook::triggered("X::Worker").value("49.9").to_json(),
    )
    .await;
    assert_eq!(body["results"][0]["outcome"], "below_threshold");
    let (_, body) = send(
        &app,
        &DdWebhook::triggered("X::Worker").value("50").to_json(),
    )
    .await;
    assert_eq!(body["results"][0]["outcome"], "created");
}
