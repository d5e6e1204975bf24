//! Bad input gets a clear 4xx with {"error", "detail"}, and the service
//! keeps serving.

use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::TestApp;
use serde_json::Value;

async fn raw_post(
    app: &TestApp,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
    auth: Option<&str>,
) -> (u16, Value) {
    let mut request = app
        .client
        .post(app.url(path))
        .header("content-type", content_type)
        .body(body);
    if let Some(auth) = auth {
        request = request.header("authorization", auth);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn valid_body() -> Vec<u8> {
    AmWebhook::with(AmAlert::firing("Good::Worker").value(200.0))
        .to_json()
        .to_string()
        .into_bytes()
}

async fn still_serving(app: &TestApp) {
    let (status, body) = raw_post(
        app,
        "/webhooks/alertmanager",
        "application/json",
        valid_body(),
        Some("Bearer t0ken"),
    )
    .await;
    assert_eq!(status, 200, "service still accepts good alerts: {body}");
}

/// Posts a body that must be refused with `status` and `error`; returns the
/// error body for further checks.
async fn refused(
    app: &TestApp,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
    status: u16,
    error: &str,
) -> Value {
    let (got, body) = raw_post(app, path, content_type, body, Some("Bearer t0ken")).await;
    assert_eq!(
        (got, body["error"].as_str()),
        (status, Some(error)),
        "{body}"
    );
    assert!(
        body["detail"].as_str().is_some_and(|d| !d.is_empty()),
        "a detail names the problem: {body}"
    );
    body
}

#[tokio::test]
async fn malformed_json_wrong_type_and_huge_bodies_are_refused() {
    let app = TestApp::builder().token("t0ken").spawn().await;
    let json = "application/json";

    let body = refused(
        &app,
        "/webhooks/alertmanager",
        json,
        b"{\"alerts\": [".to_vec(),
        400,
        "invalid_body",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("not valid JSON"),
        "{body}"
    );
    refused(
        &app,
        "/webhooks/datadog",
        json,
        b"[1, 2]".to_vec(),
        400,
        "invalid_body",
    )
    .await;
    refused(
        &app,
        "/webhooks/alertmanager",
        "text/plain",
        valid_body(),
        415,
        "unsupported_media_type",
    )
    .await;

    let mut huge = b"{\"alerts\": [], \"padding\": \"".to_vec();
    huge.extend(std::iter::repeat_n(b'x', longtx_http::MAX_BODY_BYTES + 10));
    huge.extend(b"\"}");
    refused(
        &app,
        "/webhooks/alertmanager",
        json,
        huge,
        413,
        "body_too_large",
    )
    .await;

    let v3 = serde_json::json!({"version": "3", "alerts": []})
        .to_string()
        .into_bytes();
    let body = refused(
        &app,
        "/webhooks/alertmanager",
        json,
        v3,
        400,
        "invalid_body",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("version"),
        "{body}"
    );

    still_serving(&app).await;
}

#[tokio::test]
async fn webhooks_and_api_need_the_token_when_one_is_set() {
    let app = TestApp::builder().token("t0ken").spawn().await;
    for auth in [None, Some("Bearer wrong"), Some("Basic Zm9vOndyb25n")] {
        let (status, body) = raw_post(
            &app,
            "/webhooks/alertmanager",
            "application/json",
            valid_body(),
            auth,
        )
        .await;
        assert_eq!(
            (status, body["error"].as_str()),
            (401, Some("unauthorized")),
            "{auth:?}"
        );
        assert!(
            !body.to_string().contains("t0ken"),
            "the token never appears in errors"
        );
    }
    // Basic auth with the token as password ("datadog:t0ken") opens the
    // dashboard's pages only: a write takes Bearer.
    let (status, _) = raw_post(
        &app,
        "/webhooks/datadog",
        "application/json",
        br#"{"scope":"query_source:X::Worker","value":"300"}"#.to_vec(),
        Some("Basic ZGF0YWRvZzp0MGtlbg=="),
    )
    .await;
    assert_eq!(status, 401);

    let (status, _) = app.get_json("/api/jobs").await;
    assert_eq!(status, 401);
    let response = app
        .client
        .get(app.url("/api/jobs"))
        .bearer_auth("t0ken")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // Health endpoints stay open for probes.
    assert_eq!(app.get_json("/healthz").await.0, 200);
}

#[tokio::test]
async fn hostile_query_sources_are_rejected_or_kept_literally() {
    let app = TestApp::builder().token("t0ken").spawn().await;
    let hostile = "{{ 7*7 }}'; DROP TABLE jobs; -- $(id) `id`";
    let hook = AmWebhook::new()
        .alert(AmAlert::firing(hostile).value(200.0))
        .alert(AmAlert::firing("evil\u{1b}[2J\nworker").value(200.0))
        .alert(AmAlert::firing(&"x".repeat(300)).value(200.0))
        .alert(AmAlert::firing("   ").value(200.0));
    let (status, body) = raw_post(
        &app,
        "/webhooks/alertmanager",
        "application/json",
        hook.to_json().to_string().into_bytes(),
        Some("Bearer t0ken"),
    )
    .await;
    assert_eq!(status, 200, "one usable alert: {body}");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results[0]["outcome"], "created");
    assert_eq!(
        results[0]["query_source"], hostile,
        "kept exactly, never interpreted"
    );
    assert_eq!(results[1]["outcome"], "rejected");
    assert!(
        !results[1]["query_source"]
            .as_str()
            .unwrap()
            .contains('\u{1b}'),
        "control characters are not echoed"
    );
    assert_eq!(results[2]["outcome"], "rejected");
    assert_eq!(results[3]["outcome"], "rejected");

    let response = app
        .client
        .get(app.url("/api/jobs"))
        .bearer_auth("t0ken")
        .send()
        .await
        .unwrap();
    let list: Value = response.json().await.unwrap();
    assert_eq!(list["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(list["jobs"][0]["query_source"], hostile);
    still_serving(&app).await;
}

#[tokio::test]
async fn unknown_endpoints_and_bad_parameters_are_4xx_json() {
    let app = TestApp::spawn().await;
    let (status, body) = app.get_json("/webhooks/nope").await;
    assert_eq!(
        (status.as_u16(), body["error"].as_str()),
        (404, Some("not_found"))
    );
    let (status, body) = app.get_json("/api/jobs?state=running").await;
    assert_eq!(
        (status.as_u16(), body["error"].as_str()),
        (400, Some("invalid_state"))
    );
    let (status, body) = app.get_json("/api/jobs/abc").await;
    assert_eq!(
        (status.as_u16(), body["error"].as_str()),
        (400, Some("invalid_id"))
    );
    let (status, _) = app.get_json("/api/jobs/999999").await;
    assert_eq!(status.as_u16(), 404);
}

#[tokio::test]
async fn a_wrong_method_on_a_webhook_gets_a_json_error() {
    let app = TestApp::spawn().await;
    let response = app
        .client
        .get(app.url("/webhooks/alertmanager"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "method_not_allowed", "{body}");
    assert!(body["detail"].as_str().unwrap().contains("POST"), "{body}");
}
