//! One source, one job, whatever sent it: Datadog lowercases tags and turns
//! `#` and friends into `_`, Alertmanager passes labels as written; both
//! meet on one job, keyed by the canonical form, showing the richer form.

use longtx_core::query_source::canonical;
use longtx_testkit::payloads::{AmAlert, AmWebhook, DdWebhook};
use longtx_testkit::{sqlx, TestApp};
use serde_json::Value;

async fn from_alertmanager(app: &TestApp, source: &str) -> Value {
    let body = AmWebhook::with(AmAlert::firing(source).value(150.0)).to_json();
    let response = app.post_json("/webhooks/alertmanager", &body).await;
    assert_eq!(response.status(), 200);
    response.json::<Value>().await.unwrap()["results"][0].clone()
}

async fn from_datadog(app: &TestApp, source: &str) -> Value {
    let body = DdWebhook::triggered(source).value("150").to_json();
    let response = app.post_json("/webhooks/datadog", &body).await;
    assert_eq!(response.status(), 200, "{body}");
    response.json::<Value>().await.unwrap()["results"][0].clone()
}

async fn jobs(app: &TestApp) -> Vec<(String, String, i32)> {
    let mut conn = app.db.connect().await;
    sqlx::query_as("SELECT query_source, source_key, alert_count FROM jobs ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_same_source_from_both_senders_makes_one_job_with_the_richer_name() {
    let app = TestApp::spawn().await;
    // Datadog first: its flattened form names the job until a richer one comes.
    let first = from_datadog(&app, "billing::syncworker").await;
    assert_eq!(first["outcome"], "created");
    let second = from_alertmanager(&app, "Billing::SyncWorker").await;
    assert_eq!(second["outcome"], "deduped", "{second}");
    assert_eq!(second["job_id"], first["job_id"]);
    let third = from_datadog(&app, "billing::syncworker").await;
    assert_eq!(third["outcome"], "deduped");

    let controller_raw = from_alertmanager(&app, "api/v1/rubygems#create").await;
    let controller_dd = from_datadog(&app, "api/v1/rubygems_create").await;
    assert_eq!(controller_dd["job_id"], controller_raw["job_id"]);
    assert_eq!(controller_dd["outcome"], "deduped");

    assert_eq!(
        jobs(&app).await,
        vec![
            (
                "Billing::SyncWorker".into(),
                "billing::syncworker".into(),
                3
            ),
            (
                "api/v1/rubygems#create".into(),
                "api/v1/rubygems_create".into(),
                2
            ),
        ],
        "the raw forms are kept for people and the code locator"
    );
    // The API finds the job by either form.
    let (_, listed) = app
        .get_json("/api/jobs?query_source=billing%3A%3Asyncworker")
        .await;
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 1, "{listed}");
}

#[tokio::test]
async fn an_ignore_entry_in_the_raw_form_ignores_datadog_s_form() {
    let app = TestApp::builder()
        .ignore_list("- query_source: Billing::SyncWorker\n  reason: the lock is the point\n")
        .spawn()
        .await;
    let result = from_datadog(&app, "billing::syncworker").await;
    assert_eq!(result["outcome"], "ignored", "{result}");
    assert!(jobs(&app).await.is_empty());
}

#[tokio::test]
async fn look_alikes_made_of_invisible_characters_are_refused_not_new_jobs() {
    let app = TestApp::spawn().await;
    from_alertmanager(&app, "admin/users#update").await;
    for invisible in [
        "\u{202E}", "\u{200B}", "\u{200D}", "\u{FEFF}", "\u{2028}", "\u{2029}",
    ] {
        let body = AmWebhook::with(
            AmAlert::firing(&format!("admin/users#update{invisible}")).value(150.0),
        )
        .to_json();
        let response = app.post_json("/webhooks/alertmanager", &body).await;
        assert_eq!(
            response.status(),
            422,
            "U+{:04X}",
            invisible.chars().next().unwrap() as u32
        );
        let answer: Value = response.json().await.unwrap();
        assert!(
            answer["detail"].as_str().unwrap().contains("invisible"),
            "{answer}"
        );
    }
    assert_eq!(jobs(&app).await.len(), 1);
}

#[tokio::test]
async fn the_database_computes_the_same_key_as_the_rust_function() {
    let app = TestApp::spawn().await;
    let mut conn = app.db.connect().await;
    let samples = [
        "Billing::SyncWorker",
        "api/v1/rubygems#create",
        "a##b#",
        "Admin::Users Controller#update",
        "café#show",
        "\u{212A}elvin#sign",
        "İstanbul::Worker",
        "rake:ns:task",
        "UPPER_lower-1.2/3:4",
        "###",
        "__a_#_b__",
        "  spaced  out#x ",
        "Ünïcode_#_",
    ];
    for sample in samples {
        let key: String = sqlx::query_scalar(
            "INSERT INTO jobs (query_source, state, ended_at) VALUES ($1, 'failed', now()) RETURNING source_key",
        )
        .bind(sample)
        .fetch_one(&mut conn)
        .await
        .unwrap();
        assert_eq!(key, canonical(sample), "{sample}");
        // The function the daily tables are keyed by (migration 19).
        let daily: String = sqlx::query_scalar("SELECT longtx_source_key($1)")
            .bind(sample)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(daily, canonical(sample), "{sample}");
    }
}

#[tokio::test]
async fn history_rolled_up_before_the_upgrade_shows_one_row_per_source_after_it() {
    let app = TestApp::spawn().await;
    let mut db = app.db.connect().await;
    // The database as it was before migration 19: daily rows keyed by the
    // spelling each sender used.
    for statement in [
        "ALTER TABLE alert_daily DROP COLUMN source_key",
        "ALTER TABLE observed_daily DROP COLUMN source_key",
        "DROP FUNCTION longtx_source_key(text)",
        "DELETE FROM _sqlx_migrations WHERE version = 20261206000019",
        "INSERT INTO alert_daily (query_source, day, alerts, max_duration_seconds) VALUES \
             ('admin/users#update', current_date - 1, 3, 142.5), \
             ('admin/users_update', current_date - 1, 2, 300), \
             ('admin/users_update', current_date - 2, 1, 120)",
        "INSERT INTO observed_daily (day, table_name, query_source, max_seconds) VALUES \
             (current_date - 1, 'users', 'admin/users#update', 142.5), \
             (current_date - 1, 'users', 'admin/users_update', 300)",
    ] {
        sqlx::query(statement).execute(&mut db).await.unwrap();
    }
    let upgraded = app.db.store(&Default::default());
    upgraded.migrate().await.unwrap();

    let page = upgraded
        .dashboard(&longtx_store::DashboardQuery {
            days: 30,
            sources_per_page: 20,
            sources_offset: 0,
            jobs: Default::default(),
            weeks: 4,
            reviewers: 5,
            what_if_days: 30,
        })
        .await
        .unwrap();
    assert_eq!(page.source_count, 1);
    let only = &page.sources[0];
    assert_eq!(
        (
            only.query_source.as_str(),
            only.alerts,
            only.max_duration_seconds
        ),
        ("admin/users#update", 6, Some(300.0)),
        "no job yet: named by the spelling that is not its own key"
    );
    assert_eq!(only.spellings, ["admin/users#update", "admin/users_update"]);
    assert_eq!(only.days.len(), 2);
    assert_eq!(
        page.what_if.observations.len(),
        1,
        "{:?}",
        page.what_if.observations
    );
    assert_eq!(page.what_if.observations[0].max_seconds, 300.0);
}
