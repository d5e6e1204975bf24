//! What a lower threshold would bring, on a seeded history: a collector's
//! pushes (under the threshold too), alerts, and ten ended jobs to learn the
//! rates from. Every figure is checked against one computed by hand.
//!
//! The history: threshold 100 s, `orders` 40 s, `ReportWorker` ignored.
//! - alerting now: admin/orders#update (50 s on orders), users#update (120 s);
//! - at 75%: CartWorker (35 s on orders, 30 s needed), rake:nightly (80 s, no
//!   table, 75 s needed);
//! - at 25%: users#show (45 s on users, 25 s needed);
//! - never: unknown (excluded), ReportWorker (ignored), rake:nightly's 20 s
//!   on users counts only for users.
//!
//! Rates: 10 jobs ended, 8 with a PR, 6 merged, 4 rounds, $2 a job; alice
//! was asked on 6 of the 8 PRs, bob on 2. Window 30 days = 30/7 weeks.

use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::TestApp;
use serde_json::{json, Value};

const TOKEN: &str = "hook-token";

async fn app() -> TestApp {
    TestApp::builder()
        .token(TOKEN)
        .policy(|p| {
            p.threshold_seconds = 100.0;
            p.table_thresholds = [("orders".to_owned(), 40.0)].into();
        })
        .ignore_list("- query_source: ReportWorker\n  reason: a nightly batch\n")
        .spawn()
        .await
}

async fn push(app: &TestApp, token: Option<&str>, body: &Value) -> (u16, Value) {
    let mut request = app.client.post(app.url("/api/observations")).json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn series(table: &str, source: &str, seconds: f64) -> Value {
    json!({"table": table, "query_source": source, "seconds": seconds})
}

async fn alert(app: &TestApp, alert: AmAlert) {
    let response = app
        .client
        .post(app.url("/webhooks/alertmanager"))
        .bearer_auth(TOKEN)
        .json(&AmWebhook::with(alert).to_json())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

/// GETs with the token, as an operator's script or browser would.
async fn get(app: &TestApp, path: &str) -> reqwest::Response {
    let response = app
        .client
        .get(app.url(path))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "GET {path}");
    response
}

async fn what_if(app: &TestApp) -> Value {
    get(app, "/api/what-if").await.json().await.unwrap()
}

async fn dashboard(app: &TestApp) -> String {
    get(app, "/").await.text().await.unwrap()
}

async fn observed_rows(app: &TestApp) -> i64 {
    let mut conn = app.db.connect().await;
    sqlx::query_scalar("SELECT count(*) FROM observed_daily")
        .fetch_one(&mut conn)
        .await
        .unwrap()
}

/// Ten jobs that ended in the last month: 6 merged and 2 closed with a PR,
/// 2 without; 4 revision rounds; $2 of agent cost each.
async fn seed_rates(app: &TestApp) {
    let mut conn = app.db.connect().await;
    let states = [
        "merged",
        "verified",
        "regressed",
        "merged",
        "merged",
        "verified",
        "closed",
        "wontfix",
        "no_pr",
        "failed",
    ];
    for (i, state) in states.iter().enumerate() {
        let with_pr = i < 8;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO jobs (query_source, state, ended_at, pr_number, pr_url) \
             VALUES ($1, $2, now() - make_interval(days => $3), $4, \
                     CASE WHEN $4::int8 IS NULL THEN NULL ELSE 'https://github.com/acme/app/pull/' || $4 END) RETURNING id",
        )
        .bind(format!("history/source_{i}#run"))
        .bind(state)
        .bind(1 + i as i32)
        .bind(with_pr.then_some(100 + i as i64))
        .fetch_one(&mut conn)
        .await
        .unwrap();
        sqlx::query("INSERT INTO run_reports (job_id, run_id, cost_usd) VALUES ($1, $2, 2.0)")
            .bind(id)
            .bind(9000 + i as i64)
            .execute(&mut conn)
            .await
            .unwrap();
        if with_pr {
            let reviewer = if i < 6 { "alice" } else { "bob" };
            sqlx::query("INSERT INTO review_requests (job_id, reviewer) VALUES ($1, $2)")
                .bind(id)
                .bind(reviewer)
                .execute(&mut conn)
                .await
                .unwrap();
        }
        if i < 2 {
            // Two PRs needed two rounds each.
            sqlx::query(
                "INSERT INTO revision_rounds (job_id, round, trigger, mode, head_before, findings, state, ended_at) \
                 SELECT $1, r, 'pre_review', 'on', 'abc', '[]', 'pushed', now() FROM generate_series(1, 2) r",
            )
            .bind(id)
            .execute(&mut conn)
            .await
            .unwrap();
        }
    }
}

fn close(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-9)
}

#[tokio::test]
async fn the_what_if_matches_hand_computed_figures_on_a_seeded_history() {
    let app = app().await;
    // The collector pushes three times; only each pair's maximum stays.
    for seconds in [20.0, 35.0, 10.0] {
        let (status, _) = push(
            &app,
            Some(TOKEN),
            &json!({"series": [series("orders", "CartWorker", seconds)]}),
        )
        .await;
        assert_eq!(status, 200);
    }
    let (status, body) = push(
        &app,
        Some(TOKEN),
        &json!({"series": [
            series("users", "users#show", 45.0),
            series("users", "rake:nightly", 20.0),
            series("orders", "unknown", 500.0),
            series("users", "ReportWorker", 90.0),
        ]}),
    )
    .await;
    assert_eq!((status, body["recorded"].as_i64()), (200, Some(4)));
    // Alerts: two over their threshold (they open jobs), one under it.
    alert(
        &app,
        AmAlert::firing("admin/orders#update")
            .table("orders")
            .value(50.0),
    )
    .await;
    alert(
        &app,
        AmAlert::firing("users#update").table("users").value(120.0),
    )
    .await;
    alert(&app, AmAlert::firing("rake:nightly").value(80.0)).await;
    seed_rates(&app).await;
    // Alerts reach the what-if with the roll-up (every 10 s in `serve`).
    app.store.roll_up_alerts(100).await.unwrap();

    let w = what_if(&app).await;
    let rows: Vec<(String, i64, i64)> = w["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["label"].as_str().unwrap().to_owned(),
                c["alerting_sources"].as_i64().unwrap(),
                c["extra_sources"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("current".to_owned(), 2, 0),
            ("75%".to_owned(), 4, 2),
            ("50%".to_owned(), 4, 2),
            ("25%".to_owned(), 5, 3)
        ]
    );
    let weeks = 30.0 / 7.0;
    let at_75 = &w["candidates"][1];
    let prs = 2.0 * 0.8 / weeks;
    assert!(close(&at_75["extra_prs_per_week"], prs), "{at_75}");
    assert!(close(&at_75["extra_merges_per_week"], prs * 0.75));
    assert!(close(
        &at_75["extra_agent_runs_per_week"],
        2.0 / weeks + prs * 0.5
    ));
    assert!(close(&at_75["extra_cost_per_week_usd"], 2.0 / weeks * 2.0));
    assert_eq!(at_75["reviewer_load"][0][0], "alice");
    assert!(close(&at_75["reviewer_load"][0][1], prs * 6.0 / 8.0));
    assert!(close(&at_75["reviewer_load"][1][1], prs * 2.0 / 8.0));
    assert!(close(&w["merged_per_week"], 6.0 / weeks));
    let tables: Vec<(String, Vec<i64>)> = w["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["table"].as_str().unwrap().to_owned(),
                t["extra_sources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n.as_i64().unwrap())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        tables,
        [
            (String::new(), vec![0, 1, 1, 1]),
            ("orders".to_owned(), vec![0, 1, 1, 1]),
            ("users".to_owned(), vec![0, 0, 0, 1]),
        ]
    );

    // The same figures pushed again, and a second roll-up: nothing changes.
    push(
        &app,
        Some(TOKEN),
        &json!({"series": [series("orders", "CartWorker", 35.0)]}),
    )
    .await;
    app.store.roll_up_alerts(100).await.unwrap();
    let again = what_if(&app).await;
    assert_eq!(again["candidates"], w["candidates"]);

    // The dashboard shows the same figures.
    let page = dashboard(&app).await;
    let row_75 = page
        .split("data-label=\"75%\"")
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .expect("a 75% row");
    assert!(
        row_75.contains("<td class=\"num extra\">2</td>"),
        "{row_75}"
    );
    assert!(row_75.contains(&format!("{prs:.1}")), "{row_75}");
    assert!(row_75.contains("alice +0.3"), "{row_75}");
    assert!(page.contains(&format!("<b id=\"merged-per-week\">{:.1}</b>", 6.0 / weeks)));
    assert!(page.contains("80% of jobs open a PR, 75% of PRs merge, 0.5 revision rounds per PR"));
}

#[tokio::test]
async fn pushes_need_the_token_and_a_bad_series_records_nothing() {
    let app = app().await;
    let good = json!({"series": [series("orders", "CartWorker", 35.0)]});
    assert_eq!(push(&app, None, &good).await.0, 401);
    assert_eq!(push(&app, Some("wrong"), &good).await.0, 401);
    let (status, body) = push(
        &app,
        Some(TOKEN),
        &json!({"series": [series("orders", "CartWorker", 3.0), series("orders", "x\u{0}", 1.0)]}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        body["detail"].as_str().unwrap().contains("series 1"),
        "{body}"
    );
    let (status, _) = push(&app, Some(TOKEN), &json!({"series": [{"table": "t"}]})).await;
    assert_eq!(status, 400);
    let (status, _) = push(
        &app,
        Some(TOKEN),
        &json!({"series": [series("orders", "CartWorker", f64::MAX)]}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(observed_rows(&app).await, 0, "nothing half-applied");
    assert_eq!(push(&app, Some(TOKEN), &good).await.0, 200);
    assert_eq!(observed_rows(&app).await, 1);
    // Without an ended job the work is unknown, not zero.
    let w = what_if(&app).await;
    assert_eq!(w["candidates"][1]["extra_sources"], 1);
    assert_eq!(w["candidates"][1]["extra_prs_per_week"], Value::Null);
    assert!(dashboard(&app)
        .await
        .contains("no job has ended yet, so the work per week is unknown"));
}
