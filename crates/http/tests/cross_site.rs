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
