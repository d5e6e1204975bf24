//! Authenticate before reading a body: a client without the token (or a
//! GitHub delivery without a well-formed signature) is answered from its
//! headers alone, so it cannot make longtx wait for, or buffer, a body.
//! Each request here declares a body it never sends: had longtx read it
//! first, the answer would be the body timeout's 408, not the refusal.

use longtx_testkit::TestApp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends `head` (request line and headers) and no body; the status code
/// longtx answers with.
async fn status_without_body(app: &TestApp, head: &str) -> u16 {
    let address = app
        .url("/")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 1024];
    let n = tokio::time::timeout(std::time::Duration::from_secs(30), stream.read(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    let text = String::from_utf8_lossy(&answer[..n]).into_owned();
    text.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{text}"))
}

#[tokio::test]
async fn refusals_come_from_the_headers_before_any_body_is_read() {
    let app = TestApp::builder()
        .token("t0ken")
        .github_webhook("s3cret")
        .spawn()
        .await;
    let post = |path: &str, extra: &str, length: usize| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n{extra}\r\n"
        )
    };
    // No token: 401 at once, the body never waited for.
    assert_eq!(
        status_without_body(&app, &post("/webhooks/alertmanager", "", 4096)).await,
        401
    );
    assert_eq!(
        status_without_body(&app, &post("/api/observations", "", 4096)).await,
        401
    );
    // GitHub: no signature, or a malformed one: 401; an event longtx does
    // not use: 202, unread.
    let github = |extra: &str, length: usize| {
        post(
            "/webhooks/github",
            &format!("X-GitHub-Event: pull_request\r\nX-GitHub-Delivery: d-1\r\n{extra}"),
            length,
        )
    };
    assert_eq!(status_without_body(&app, &github("", 4096)).await, 401);
    assert_eq!(
        status_without_body(&app, &github("X-Hub-Signature-256: sha256=zz\r\n", 4096)).await,
        401
    );
    let signed = format!("X-Hub-Signature-256: sha256={}\r\n", "0".repeat(64));
    let other_event = post(
        "/webhooks/github",
        &format!("X-GitHub-Event: star\r\nX-GitHub-Delivery: d-2\r\n{signed}"),
        4096,
    );
    assert_eq!(status_without_body(&app, &other_event).await, 202);
    // A declared size over the route's cap: 413 before any byte.
    assert_eq!(
        status_without_body(&app, &github(&signed, 6 * 1024 * 1024)).await,
        413
    );
    assert_eq!(
        status_without_body(
            &app,
            &post(
                "/webhooks/alertmanager",
                "Authorization: Bearer t0ken\r\n",
                2 * 1024 * 1024
            )
        )
        .await,
        413
    );
}
