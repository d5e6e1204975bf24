//! The 1 MiB-batch phase: one Alertmanager body of about a mebibyte (the
//! intake's body limit), sent a few times through the real router, each to
//! a fresh database: the time to the answer, which must stay under
//! Alertmanager's own 10 s timeout (the goal is under 1 s).

use std::time::{Duration, Instant};

/// Alerts of the batch: as many as fit in 1 MiB with realistic labels,
/// over `sources` sources (Alertmanager's groups are per source, so a real
/// batch has few; `sources` = alerts is the worst case).
pub fn body(sources: usize) -> (String, usize) {
    let mut alerts = Vec::new();
    let mut size = 0;
    let mut n = 0;
    while size < 1_000_000 {
        let alert = serde_json::json!({
            "status": "firing",
            "labels": {"alertname": "LongTransactionHoldingMetadataLock",
                        "query_source": format!("Batch{}::SyncWorker", n % sources),
                        "table": format!("table_{}", n % 50)},
            "annotations": {"value": "153.4", "summary": "held a lock"},
            "startsAt": "2026-12-01T00:00:00Z",
            "fingerprint": format!("{n:016x}"),
        })
        .to_string();
        size += alert.len() + 1;
        alerts.push(alert);
        n += 1;
    }
    let body = format!(
        "{{\"version\":\"4\",\"status\":\"firing\",\"truncatedAlerts\":0,\"alerts\":[{}]}}",
        alerts.join(",")
    );
    (body, n)
}

/// Sends `body` once; the time to the whole answer and its status.
pub async fn send(client: &reqwest::Client, base_url: &str, body: String) -> (Duration, u16) {
    let started = Instant::now();
    let response = client
        .post(format!("{base_url}/webhooks/alertmanager"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    let _ = response.bytes().await;
    (started.elapsed(), status)
}
