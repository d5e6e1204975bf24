//! Alertmanager alerts land as jobs, once per query_source.

use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::{fixture, sqlx, TestApp};
use serde_json::Value;

async fn send(app: &TestApp, hook: AmWebhook) -> (u16, Value) {
    let response = app
        .post_json("/webhooks/alertmanager", &hook.to_json())
        .await;
    (response.status().as_u16(), response.json().await.unwrap())
}

fn outcomes(body: &Value) -> Vec<&str> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_firing_alert_creates_a_job_and_a_repeat_joins_it() {
    let app = TestApp::spawn().await;
    let (status, first) = send(
        &app,
        AmWebhook::with(
            AmAlert::firing("admin/users#update")
                .table("users")
                .value(142.5),
        ),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(outcomes(&first), ["created"]);
    let job_id = first["results"][0]["job_id"].as_i64().unwrap();

    let (_, second) = send(
        &app,
        AmWebhook::with(
            AmAlert::firing("admin/users#update")
                .table("orders")
                .value(380.0),
        ),
    )
    .await;
    assert_eq!(outcomes(&second), ["deduped"]);
    assert_eq!(second["results"][0]["job_id"].as_i64(), Some(job_id));

    let (_, detail) = app.get_json(&format!("/api/jobs/{job_id}")).await;
    let job = &detail["job"];
    assert_eq!(job["state"], "queued");
    assert_eq!(job["alert_count"], 2);
    assert_eq!(job["max_duration_seconds"], 380.0);
    assert_eq!(job["tables"], serde_json::json!(["orders", "users"]));
    assert!(job["first_seen_at"].as_str() < job["last_seen_at"].as_str());
    assert_eq!(detail["alert_events"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn the_real_alertmanager_shape_is_read() {
    let app = TestApp::spawn().await;
    let body: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("alertmanager-0.25-firing.json")).unwrap(),
    )
    .unwrap();
    let response = app.post_json("/webhooks/alertmanager", &body).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(outcomes(&body), ["created", "created"]);
    assert_eq!(
        body["results"][1]["query_source"],
        "Billing::InvoiceSyncWorker"
    );
    let (_, list) = app
        .get_json("/api/jobs?query_source=admin/users%23update")
        .await;
    assert_eq!(list["jobs"][0]["max_duration_seconds"], 142.5);
    assert_eq!(list["jobs"][0]["alert_links"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn resolved_below_threshold_excluded_and_ignored_create_no_job() {
    let app = TestApp::builder()
        .ignore_list("- query_source: 'reports/*'\n  reason: needs one snapshot\n")
        .policy(|p| {
            p.table_thresholds.insert("orders".into(), 30.0);
        })
        .spawn()
        .await;
    let hook = AmWebhook::new()
        .alert(
            AmAlert::firing("admin/users#update")
                .value(500.0)
                .resolved(),
        )
        .alert(
            AmAlert::firing("admin/users#update")
                .table("users")
                .value(99.9),
        )
        .alert(AmAlert::firing("unknown").value(500.0))
        .alert(AmAlert::firing("rake:tmp:cleanup").value(500.0))
        .alert(AmAlert::firing("reports/sales#export").value(500.0))
        .alert(
            AmAlert::firing("Orders::SyncJob")
                .table("orders")
                .value(31.0),
        );
    let (status, body) = send(&app, hook).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        outcomes(&body),
        [
            "resolved",
            "below_threshold",
            "excluded",
            "excluded",
            "ignored",
            "created"
        ]
    );
    let (_, list) = app.get_json("/api/jobs").await;
    assert_eq!(
        list["jobs"].as_array().unwrap().len(),
        1,
        "only the per-table threshold alert made a job"
    );
}

#[tokio::test]
async fn one_bad_alert_is_rejected_and_the_rest_of_the_batch_is_recorded() {
    let app = TestApp::spawn().await;
    let hook = AmWebhook::new()
        .alert(AmAlert::firing("A::OneWorker").value(200.0))
        .alert(AmAlert::without_source())
        .alert(AmAlert::firing("A::TwoWorker").annotation("value", "forever"))
        .alert(AmAlert::firing("A::ThreeWorker").value(200.0));
    let (status, body) = send(&app, hook).await;
    assert_eq!(status, 200, "one usable alert makes the delivery a success");
    assert!(body.get("error").is_none_or(|e| e.is_null()), "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("alerts[1]: missing label query_source"),
        "{detail}"
    );
    assert!(
        detail.contains("alerts[2]: annotation value is not a number"),
        "{detail}"
    );
    assert_eq!(
        outcomes(&body),
        ["created", "rejected", "rejected", "created"]
    );

    // Rejected alerts are in the audit trail too.
    let mut conn = app.db.connect().await;
    let counts: Vec<(String, i64)> = sqlx::query_as(
        "SELECT outcome, count(*) FROM alert_events GROUP BY outcome ORDER BY outcome",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        counts,
        vec![("created".to_string(), 2), ("rejected".to_string(), 2)]
    );
}

#[tokio::test]
async fn a_batch_with_nothing_usable_is_refused_and_truncation_is_counted() {
    let app = TestApp::spawn().await;
    let hook = AmWebhook::new().alert(AmAlert::without_source());
    let (status, body) = send(&app, hook).await;
    assert_eq!(status, 422);
    assert_eq!(body["error"], "invalid_alert");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("1 of 1 alerts rejected, none was recorded: alerts[0]"),
        "{detail}"
    );

    let mut hook = AmWebhook::new()
        .alert(AmAlert::firing("A::OneWorker").value(200.0))
        .to_json();
    hook["truncatedAlerts"] = serde_json::json!(7);
    let response = app.post_json("/webhooks/alertmanager", &hook).await;
    assert_eq!(response.status(), 200);
    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("longtx_alertmanager_truncated_alerts_total 7"),
        "{metrics}"
    );
    assert!(
        metrics.contains("longtx_alerts_rejected_total{origin=\"alertmanager\"}"),
        "{metrics}"
    );
}

#[tokio::test]
async fn rails_comments_in_the_label_are_normalised() {
    let app = TestApp::spawn().await;
    let (_, body) = send(
        &app,
        AmWebhook::new()
            .alert(AmAlert::firing("namespaced_controller:admin/users,action:update").value(120.0))
            .alert(
                AmAlert::firing("/*action='update',namespaced_controller='admin%2Fusers'*/")
                    .value(130.0),
            ),
    )
    .await;
    assert_eq!(outcomes(&body), ["created", "deduped"]);
    assert_eq!(body["results"][1]["query_source"], "admin/users#update");
}
