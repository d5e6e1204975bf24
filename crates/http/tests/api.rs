//! The read API: listing, filtering, paging, one job with its events, health.

use longtx_core::JobState;
use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::TestApp;

async fn seed(app: &TestApp, sources: &[&str]) -> Vec<i64> {
    let mut hook = AmWebhook::new();
    for s in sources {
        hook = hook.alert(AmAlert::firing(s).value(120.0));
    }
    let body: serde_json::Value = app
        .post_json("/webhooks/alertmanager", &hook.to_json())
        .await
        .json()
        .await
        .unwrap();
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["job_id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn jobs_filter_by_state_and_source_and_page_newest_first() {
    let app = TestApp::spawn().await;
    let ids = seed(
        &app,
        &[
            "A::Worker",
            "B::Worker",
            "C::Worker",
            "D::Worker",
            "E::Worker",
        ],
    )
    .await;
    app.store
        .set_job_state(ids[1], JobState::Failed, Some("dispatch failed"))
        .await
        .unwrap();

    let (_, failed) = app.get_json("/api/jobs?state=failed").await;
    assert_eq!(failed["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(failed["jobs"][0]["state_reason"], "dispatch failed");
    assert!(failed["jobs"][0]["ended_at"].is_string());

    let (_, by_source) = app.get_json("/api/jobs?query_source=C::Worker").await;
    assert_eq!(by_source["jobs"][0]["id"].as_i64(), Some(ids[2]));

    let (_, page1) = app.get_json("/api/jobs?limit=2").await;
    let page1_ids: Vec<i64> = page1["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_i64().unwrap())
        .collect();
    let mut newest: Vec<i64> = ids.clone();
    newest.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(page1_ids, newest[..2]);
    let before = page1["next_before"].as_i64().unwrap();
    let (_, page3) = app
        .get_json(&format!("/api/jobs?limit=2&before={}", newest[3]))
        .await;
    assert_eq!(page3["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(page3["next_before"], serde_json::Value::Null);
    assert_eq!(before, newest[1]);
}

#[tokio::test]
async fn a_job_shows_its_alert_events_with_raw_payloads() {
    let app = TestApp::spawn().await;
    let id = seed(&app, &["Evt::Worker"]).await[0];
    seed(&app, &["Evt::Worker"]).await;
    let (status, detail) = app.get_json(&format!("/api/jobs/{id}")).await;
    assert_eq!(status, 200);
    let events = detail["alert_events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["outcome"], "deduped");
    assert_eq!(events[1]["outcome"], "created");
    assert_eq!(events[0]["origin"], "alertmanager");
    assert_eq!(
        events[0]["raw_payload"]["labels"]["query_source"],
        "Evt::Worker"
    );
    // Every field the job object has is in the book's API page.
    let book = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/book/src/api.md"
    ))
    .unwrap();
    let mut fields: Vec<String> = Vec::new();
    for object in [&detail, &detail["job"], &detail["queue"]] {
        if let Some(map) = object.as_object() {
            fields.extend(map.keys().cloned());
        }
    }
    assert!(
        detail["queue"].is_object(),
        "a queued job has its place: {detail}"
    );
    let undocumented: Vec<&String> = fields
        .iter()
        .filter(|f| !book.contains(&format!("`{f}`")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "fields of GET /api/jobs/{{id}} missing from docs/book/src/api.md: {undocumented:?}"
    );
}

#[tokio::test]
async fn health_and_readiness() {
    let app = TestApp::spawn().await;
    let (status, body) = app.get_json("/healthz").await;
    assert_eq!(
        (status.as_u16(), body["status"].as_str()),
        (200, Some("ok"))
    );
    let (status, body) = app.get_json("/readyz").await;
    assert_eq!(
        (status.as_u16(), body["status"].as_str()),
        (200, Some("ready"))
    );
}
