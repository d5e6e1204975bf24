//! No cross-site writes: a browser holding the dashboard's Basic
//! credentials cannot be made to pause dispatch or record observations
//! from another site.

use longtx_testkit::TestApp;
use serde_json::{json, Value};

async fn post(
    app: &TestApp,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, &str)>,
) -> (u16, Value) {
    let mut request = app.client.post(app.url(path));
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    if let Some((content_type, body)) = body {
        request = request
            .header("content-type", content_type)
            .body(body.to_owned());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn paused(app: &TestApp) -> bool {
    app.store.dispatch_status().await.unwrap().paused
}

#[tokio::test]
async fn a_forged_cross_site_write_is_refused_and_changes_nothing() {
    let app = TestApp::builder().token("t0ken").spawn().await;
    let bearer = ("authorization", "Bearer t0ken");
    // "viewer:t0ken": what a browser replays after the dashboard's prompt.
    let basic = ("authorization", "Basic dmlld2VyOnQwa2Vu");

    let (status, answer) = post(
        &app,
        "/api/pause",
        &[bearer, ("origin", "https://evil.example")],
        None,
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (403, Some("cross_site")),
        "{answer}"
    );
    let (status, _) = post(
        &app,
        "/api/pause",
        &[bearer, ("sec-fetch-site", "cross-site")],
        None,
    )
    .await;
    assert_eq!(status, 403);
    let (status, answer) = post(&app, "/api/pause", &[basic], None).await;
    assert_eq!(status, 401, "Basic opens only the pages: {answer}");
    assert!(!paused(&app).await, "nothing was paused");

    let observation =
        json!({"series": [{"table": "orders", "query_source": "a#b", "seconds": 90.0}]})
            .to_string();
    let (status, answer) = post(
        &app,
        "/api/observations",
        &[bearer],
        Some(("text/plain", &observation)),
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (415, Some("unsupported_media_type")),
        "{answer}"
    );

    // The same requests from the service's own pages, or from a script, pass.
    let own = format!(
        "http://{}",
        app.url("/")
            .trim_start_matches("http://")
            .trim_end_matches('/')
    );
    let (status, _) = post(
        &app,
        "/api/pause",
        &[bearer, ("origin", &own), ("sec-fetch-site", "same-origin")],
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(paused(&app).await);
    let (status, _) = post(&app, "/api/resume", &[bearer], None).await;
    assert_eq!(status, 200);
    assert!(!paused(&app).await);
}

/// DNS rebinding: a page on evil.example points its name at 127.0.0.1, so
/// the browser sends `Host: evil.example:PORT` with a matching `Origin`.
/// Without a token, longtx answers no name but its own: 421, nothing done.
#[tokio::test]
async fn requests_for_a_rebound_name_get_421_and_change_nothing() {
    let app = TestApp::spawn().await;
    let port = app.base_url.rsplit(':').next().unwrap().to_owned();
    let evil = format!("evil.example:{port}");
    let origin = format!("http://{evil}");
    let rebound = [("host", evil.as_str()), ("origin", origin.as_str())];
    let (status, answer) = post(&app, "/api/pause", &rebound, None).await;
    assert_eq!(status, 421, "{answer}");
    assert_eq!(answer["error"], "misdirected_request");
    assert!(!paused(&app).await);
    let alert = json!({"version": "4", "status": "firing", "alerts": [{"status": "firing",
        "labels": {"query_source": "Rebound::Worker", "table": "orders"}, "annotations": {"value": "150"}}]})
    .to_string();
    let (status, _) = post(
        &app,
        "/webhooks/alertmanager",
        &rebound,
        Some(("application/json", &alert)),
    )
    .await;
    assert_eq!(status, 421);
    let read = app
        .client
        .get(app.url("/api/jobs"))
        .header("host", &evil)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 421, "no reading either");
    let (_, jobs) = app.get_json("/api/jobs").await;
    assert_eq!(jobs["jobs"].as_array().map(Vec::len), Some(0), "{jobs}");

    // The same requests by address or as localhost are answered.
    let local = format!("localhost:{port}");
    let (status, _) = post(
        &app,
        "/webhooks/alertmanager",
        &[("host", local.as_str())],
        Some(("application/json", &alert)),
    )
    .await;
    assert_eq!(status, 200);
}

/// With a token, a rebound name may still not pause dispatch (a second
/// line of defence), while token-holding API calls by any name work.
#[tokio::test]
async fn with_a_token_a_rebound_name_still_cannot_change_state() {
    let app = TestApp::builder()
        .token("a-token-of-sixteen-chars")
        .spawn()
        .await;
    let port = app.base_url.rsplit(':').next().unwrap().to_owned();
    let evil = format!("evil.example:{port}");
    let (status, _) = post(
        &app,
        "/api/pause",
        &[
            ("host", &evil),
            ("authorization", "Bearer a-token-of-sixteen-chars"),
        ],
        None,
    )
    .await;
    assert_eq!(status, 421);
    assert!(!paused(&app).await);
    let read = app
        .client
        .get(app.url("/api/jobs"))
        .header("host", &evil)
        .bearer_auth("a-token-of-sixteen-chars")
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
}
