//! Each request takes at most one pooled connection, for one short
//! transaction. With a pool of N, N, N+1 and 10xN concurrent intake requests
//! all complete; a handler that took a second connection while holding one
//! would deadlock at exactly N and answer 503 after the acquire timeout.

use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::{join_all, TestApp};
use std::time::Duration;

/// Shorter than any test runner timeout, longer than any honest wait.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

async fn burst(app: &TestApp, requests: usize) -> Vec<u16> {
    let sends = (0..requests).map(|i| async move {
        // Two alerts per request: a batch is still one transaction.
        let hook = AmWebhook::new()
            .alert(AmAlert::firing(&format!("Pool{}Worker", i % 7)).value(150.0))
            .alert(AmAlert::firing(&format!("Other{}Worker", i % 3)).value(150.0));
        app.post_json("/webhooks/alertmanager", &hook.to_json())
            .await
            .status()
            .as_u16()
    });
    join_all(sends).await
}

async fn check_pool(n: u32) {
    let app = TestApp::builder()
        .max_connections(n)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .spawn()
        .await;
    for requests in [n as usize, n as usize + 1, 10 * n as usize] {
        let statuses = burst(&app, requests).await;
        assert!(
            statuses.iter().all(|s| *s == 200),
            "pool {n}, {requests} concurrent requests: {statuses:?} (503 means a request waited out the pool timeout)"
        );
    }
    let (used, _idle) = app.store.pool_usage();
    assert!(used <= n, "the pool never grew past {n}: {used}");
}

#[tokio::test]
async fn pool_of_one() {
    check_pool(1).await;
}

#[tokio::test]
async fn pool_of_two() {
    check_pool(2).await;
}

#[tokio::test]
async fn pool_of_five() {
    check_pool(5).await;
}

#[tokio::test]
async fn reads_take_one_connection_too() {
    let app = TestApp::builder()
        .max_connections(1)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .spawn()
        .await;
    burst(&app, 3).await;
    let reads = (0..20).map(|i| {
        let app = &app;
        async move {
            let path = if i % 2 == 0 {
                "/api/jobs".to_string()
            } else {
                "/api/jobs/1".to_string()
            };
            app.get_json(&path).await.0.as_u16()
        }
    });
    let statuses = join_all(reads).await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
}
