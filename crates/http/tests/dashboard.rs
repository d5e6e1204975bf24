//! The dashboard, driven in headless Chromium (Debian's `chromium`, which
//! `.ci/run` installs) against a service seeded with a job in every state,
//! with alerts over the last weeks, reviewers and a hostile query_source.

use longtx_core::JobState;
use longtx_store::{DashboardQuery, JobFilter};
use longtx_testkit::TestApp;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Tries every HTML and URL trick a label value can carry.
const HOSTILE: &str = r#"<img src=x onerror=alert(1)>"><script>document.title='pwned'</script>"#;

/// One seeded job: its source, state, and what GitHub said about it.
struct Seed {
    source: &'static str,
    state: JobState,
    ended_days_ago: Option<i32>,
    pr: Option<(i64, &'static str)>,
    run: Option<i64>,
    reviewers: Option<serde_json::Value>,
}

fn job(source: &'static str, state: JobState) -> Seed {
    Seed {
        source,
        state,
        ended_days_ago: (!state.is_active()).then_some(1),
        pr: None,
        run: None,
        reviewers: None,
    }
}

impl Seed {
    fn ended(mut self, days_ago: i32) -> Self {
        self.ended_days_ago = Some(days_ago);
        self
    }
    fn pr(mut self, number: i64) -> Self {
        self.pr = Some((number, "https://github.com/acme/monolith/pull/"));
        self
    }
    fn pr_url(mut self, number: i64, url: &'static str) -> Self {
        self.pr = Some((number, url));
        self
    }
    fn run(mut self, id: i64) -> Self {
        self.run = Some(id);
        self
    }
    fn reviewer(mut self, kind: &str, name: &str, reason: &str) -> Self {
        self.reviewers = Some(serde_json::json!({
            "source": if kind == "team" { "fallback" } else { "codeowners" },
            "requested": [{"reviewer": {"kind": kind, "name": name}, "reason": reason, "score": 0.0}],
            "skipped": [["agent-bot[bot]", "a bot"]],
        }));
        self
    }
}

fn every_state() -> Vec<Seed> {
    use JobState::*;
    vec![
        job("Billing::InvoiceSyncWorker", Queued),
        job("admin/users#update", Dispatching),
        job("rake:reports:monthly", AgentRunning).run(9001),
        job("payments#refund", PreReview).run(9011).pr(43),
        job("orders#create", InReview).run(9002).pr(41).reviewer(
            "user",
            "alice",
            "CODEOWNERS: /app/models/order.rb @alice",
        ),
        job("CheckoutMailerWorker", InReview)
            .run(9003)
            .pr(42)
            .reviewer("team", "acme/payments", "LONGTX_FALLBACK_TEAM"),
        job("carts#update", Merged).run(9004).pr(37).ended(3),
        job("PaymentsWebhookWorker", Merged)
            .run(9005)
            .pr(30)
            .ended(10),
        job("exports#download", Closed).run(9006).pr(33).ended(8),
        job("LegacyImportWorker", Wontfix).run(9007).pr(35).ended(5),
        job("search#index", RejectedByReview)
            .run(9008)
            .pr(39)
            .ended(2),
        job("NightlyDigestWorker", Failed),
        job("reports#show", Expired),
        job(HOSTILE, DryRun).pr_url(66, "javascript:alert(1)"),
        job("inventory#sync", NoPr).run(9010).ended(4),
    ]
}

async fn seed(app: &TestApp) -> Vec<i64> {
    let mut conn = app.db.connect().await;
    let ids = seed_jobs(&mut conn, every_state()).await;
    seed_history(&mut conn, &ids).await;
    app.store.set_paused(true).await.unwrap();
    ids
}

/// The jobs, their review requests and what their runs cost.
async fn seed_jobs(conn: &mut sqlx::PgConnection, seeds: Vec<Seed>) -> Vec<i64> {
    let mut ids = Vec::new();
    for s in seeds {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO jobs (query_source, state, tables, alert_count, max_duration_seconds, \
                 created_at, updated_at, ended_at, lease_until, dispatched_at, run_id, run_url, \
                 pr_number, pr_url, pr_opened_at, reviewers_state, reviewers, prompt, prompt_revision) \
             VALUES ($1, $2, '{orders}', 3, 150, now() - interval '12 days', now(), \
                 now() - make_interval(days => $3), now() + interval '1 day', \
                 CASE WHEN $4::int8 IS NULL THEN NULL ELSE now() END, $4, \
                 'https://github.com/acme/monolith/actions/runs/' || $4, \
                 $5, CASE WHEN $6 LIKE '%/pull/' THEN $6 || $5 ELSE $6 END, \
                 CASE WHEN $5::int8 IS NULL THEN NULL ELSE now() - interval '6 days' END, \
                 CASE WHEN $7::jsonb IS NULL THEN NULL ELSE 'requested' END, $7, \
                 'Fix the long transaction in ' || $1, 'abc1234') RETURNING id",
        )
        .bind(s.source)
        .bind(s.state.as_str())
        .bind(s.ended_days_ago)
        .bind(s.run)
        .bind(s.pr.map(|p| p.0))
        .bind(s.pr.map(|p| p.1))
        .bind(&s.reviewers)
        .fetch_one(&mut *conn)
        .await
        .unwrap();
        if let Some(reviewers) = &s.reviewers {
            let name = reviewers["requested"][0]["reviewer"]["name"]
                .as_str()
                .unwrap();
            let key = if reviewers["source"] == "fallback" {
                format!("@{name}")
            } else {
                name.to_owned()
            };
            sqlx::query("INSERT INTO review_requests (job_id, reviewer) VALUES ($1, $2)")
                .bind(id)
                .bind(key)
                .execute(&mut *conn)
                .await
                .unwrap();
        }
        ids.push(id);
    }
    // What some runs cost, as their workflows reported it.
    sqlx::query(
        "INSERT INTO run_reports (job_id, run_id, agent, cost_usd, turns) \
         SELECT id, 9000 + id, 'claude', 0.35 * id, 4 + id FROM jobs WHERE pr_number IS NOT NULL",
    )
    .execute(&mut *conn)
    .await
    .unwrap();
    ids
}

/// The test's history: more review requests, a fortnight of alerts, and
/// the hostile source's own.
async fn seed_history(conn: &mut sqlx::PgConnection, ids: &[i64]) {
    // alice also reviewed a fix that merged: 2 requests, 1 open.
    sqlx::query("INSERT INTO review_requests (job_id, reviewer) VALUES ($1, 'alice'), ($2, 'bob')")
        .bind(ids[6])
        .bind(ids[8])
        .execute(&mut *conn)
        .await
        .unwrap();
    // Alerts: every source, one a day for a fortnight, of varied lengths (at
    // most 189 s); the hostile source also sends the longest one.
    sqlx::query(
        "INSERT INTO alert_events (received_at, origin, query_source, table_name, duration_seconds, outcome, job_id, raw_payload) \
         SELECT now() - make_interval(days => d), 'alertmanager', j.query_source, 'orders', 30 + (j.id * 37 + d * 53) % 160, \
                CASE WHEN d = 0 THEN 'created' ELSE 'deduped' END, j.id, '{}' \
         FROM jobs j CROSS JOIN generate_series(0, 13) AS d",
    )
    .execute(&mut *conn)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO alert_events (origin, query_source, duration_seconds, outcome, raw_payload) \
         VALUES ('datadog', $1, 480, 'deduped', '{}'), ('datadog', NULL, NULL, 'rejected', '{}')",
    )
    .bind(HOSTILE)
    .execute(&mut *conn)
    .await
    .unwrap();
}

/// The browser to drive: `LONGTX_CHROMIUM`, else the first of Debian's
/// `chromium`, `chromium-browser` and `google-chrome` (what GitHub's Ubuntu
/// runners carry) on PATH.
fn browser() -> String {
    if let Ok(chosen) = std::env::var("LONGTX_CHROMIUM") {
        return chosen;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
        .unwrap_or("chromium")
        .to_owned()
}

/// Runs headless Chromium on `url` with `args`; returns its stdout.
async fn chromium(url: &str, args: &[String]) -> String {
    let profile = tempdir("chromium-profile");
    let output = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::process::Command::new(browser())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(args)
            .arg(url)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("chromium finished within 90 s")
    .expect("this test drives the pages in headless Chromium, which is not installed: run `bash scripts/test` (or `apt-get install -y chromium`)");
    std::fs::remove_dir_all(&profile).ok();
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn tempdir(name: &str) -> longtx_testkit::TempDir {
    longtx_testkit::TempDir::new(name)
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is a PNG",
        path.display()
    );
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_every_state_the_charts_and_escapes_hostile_values() {
    let app = TestApp::builder().dispatch_info(10, false).spawn().await;
    let ids = seed(&app).await;
    // Half the events rolled up: the page must add both halves.
    app.store.roll_up_alerts(100).await.unwrap();
    // A collector saw three sources that never reached the threshold.
    let seen = |table: &str, source: &str, max_seconds: f64| longtx_core::what_if::Observation {
        table: table.into(),
        query_source: source.into(),
        max_seconds,
    };
    app.store
        .record_observations(&[
            seen("carts", "cart/items#create", 62.0),
            seen("orders", "NightlyExportWorker", 31.0),
            seen("users", "rake:users:reindex", 80.0),
        ])
        .await
        .unwrap();

    let dom = chromium(&app.url("/"), &["--dump-dom".to_owned()]).await;
    assert!(
        dom.contains("<title>longtx</title>"),
        "the title is ours, not the hostile one"
    );
    assert!(
        !dom.contains("<script") && !dom.contains("<img"),
        "no element came from a label value:\n{dom}"
    );
    assert!(
        dom.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "the hostile source is shown as text"
    );
    for state in JobState::ALL {
        let count = match state {
            JobState::InReview | JobState::Merged => 2,
            // After-merge states are not seeded: their chips show zero.
            JobState::Verified | JobState::Regressed => 0,
            _ => 1,
        };
        let chip = format!(r#"data-state="{0}">{0} <b>{count}</b>"#, state.as_str());
        assert!(dom.contains(&chip), "state chip {chip} in the DOM");
    }
    assert_eq!(
        dom.matches(r#"<tr class="job""#).count(),
        15,
        "one row per job"
    );
    assert_eq!(
        dom.matches(r#"<tr class="source""#).count(),
        15,
        "one chart row per source"
    );
    assert!(dom.contains(r#"href="https://github.com/acme/monolith/pull/41""#));
    assert!(dom.contains(r#"href="https://github.com/acme/monolith/actions/runs/9002""#));
    assert!(
        !dom.contains("javascript:"),
        "a non-web PR url is not a link"
    );
    assert!(
        dom.contains(r#"id="merge-rate">50%<"#),
        "2 merged of 4 decided (merged, closed, wontfix)"
    );
    assert!(dom.contains(r#"id="paused""#), "dispatch is paused");
    assert!(
        dom.contains(r#"id="cost-today">$"#) && !dom.contains(r#"id="cost-today">$0.00<"#),
        "the runs' reported cost"
    );
    // The what-if: at 50% (50 s) the 62 s and 80 s sources would alert too.
    let at_half = dom
        .split(r#"data-label="50%""#)
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .expect("a 50% row in the what-if");
    assert!(
        at_half.contains(r#"<td class="num extra">2</td>"#),
        "{at_half}"
    );
    assert!(
        dom.contains("dispatched today <b>10 / 10</b>"),
        "10 jobs with a run dispatched today, of the cap"
    );
    // 15 alerts for the hostile source (14 daily + 1), the most, so first;
    // its longest (480 s) is over the threshold.
    let first_source = dom.find(r#"<tr class="source""#).unwrap();
    assert!(dom[first_source..].starts_with(r#"<tr class="source">"#));
    assert!(
        dom[first_source..first_source + 600].contains("&lt;img"),
        "most alerts first"
    );
    assert!(dom.contains(r#"class="num worst-over">480 s<"#));
    let load = |who: &str, requested: u32, open: u32| {
        format!(r#"{who}</td><td class="num">{requested}</td><td class="num">{open}</td>"#)
    };
    assert!(
        dom.contains(&load("alice", 2, 1)),
        "alice: 2 requests, 1 still open"
    );
    assert!(dom.contains(&load("team @acme/payments", 1, 1)));
    assert!(dom.contains(&load("bob", 1, 0)));

    let job_dom = chromium(
        &app.url(&format!("/jobs/{}", ids[4])),
        &["--dump-dom".to_owned()],
    )
    .await;
    assert!(
        job_dom.contains("CODEOWNERS: /app/models/order.rb @alice"),
        "reviewers with their reasons"
    );
    assert!(
        job_dom.contains("agent-bot[bot]") && job_dom.contains("a bot"),
        "who was left out and why"
    );
    assert!(
        job_dom.contains("Fix the long transaction in orders#create"),
        "the prompt"
    );
    assert_eq!(
        job_dom.matches(r#"<tr class="alert""#).count(),
        14,
        "the job's alerts"
    );
    let hostile_dom = chromium(
        &app.url(&format!("/jobs/{}", ids[13])),
        &["--dump-dom".to_owned()],
    )
    .await;
    assert!(!hostile_dom.contains("<script") && !hostile_dom.contains("<img"));

    let folder = tempdir("screenshot");
    screenshot(&app.url("/"), &folder.join("dashboard.png"), (1360, 3000)).await;
    app.shutdown().await;
}

/// Takes a picture of `url` at `size` into `shot`, and checks it is one.
async fn screenshot(url: &str, shot: &Path, size: (u32, u32)) {
    chromium(
        url,
        &[
            format!("--screenshot={}", shot.display()),
            format!("--window-size={},{}", size.0, size.1),
        ],
    )
    .await;
    assert_eq!(png_size(shot), size);
}

#[tokio::test]
async fn the_daily_figures_are_the_same_before_during_and_after_the_roll_up() {
    let app = TestApp::spawn().await;
    seed(&app).await;
    let query = DashboardQuery {
        days: 30,
        sources_per_page: 50,
        sources_offset: 0,
        jobs: JobFilter {
            limit: 10,
            ..JobFilter::default()
        },
        weeks: 12,
        reviewers: 10,
        what_if_days: 30,
    };
    let figures =
        |d: longtx_store::Dashboard| serde_json::to_value((d.sources, d.source_count)).unwrap();
    let live = figures(app.store.dashboard(&query).await.unwrap());
    assert_eq!(
        live[1], 15,
        "15 sources; the rejected alert without one does not count"
    );
    assert_eq!(app.store.roll_up_alerts(77).await.unwrap(), 77);
    assert_eq!(
        figures(app.store.dashboard(&query).await.unwrap()),
        live,
        "partly rolled up"
    );
    while app.store.roll_up_alerts(77).await.unwrap() > 0 {}
    assert_eq!(
        figures(app.store.dashboard(&query).await.unwrap()),
        live,
        "all rolled up"
    );

    // The roll-up outlives retention: purging every event keeps the figures.
    let purged = app.store.purge_alert_events(Duration::ZERO).await.unwrap();
    assert_eq!(purged, 15 * 14 + 2);
    assert_eq!(
        figures(app.store.dashboard(&query).await.unwrap()),
        live,
        "after the purge"
    );
    // A new alert counts at once, before any roll-up.
    let mut conn = app.db.connect().await;
    sqlx::query("INSERT INTO alert_events (origin, query_source, duration_seconds, outcome, raw_payload) VALUES ('datadog', 'orders#create', 999, 'deduped', '{}')")
        .execute(&mut conn)
        .await
        .unwrap();
    let after = app.store.dashboard(&query).await.unwrap();
    let orders = after
        .sources
        .iter()
        .find(|s| s.query_source == "orders#create")
        .unwrap();
    assert_eq!(
        (orders.alerts, orders.max_duration_seconds),
        (15, Some(999.0))
    );
    app.shutdown().await;
}

#[tokio::test]
async fn pages_need_a_token_off_loopback_and_the_dashboard_token_opens_only_them() {
    let app = TestApp::builder()
        .token("api-secret")
        .dashboard_token("viewer-secret")
        .spawn()
        .await;
    let get = |path: &str, auth: Option<&str>| {
        let mut request = app.client.get(app.url(path));
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        request.send()
    };
    let refused = get("/", None).await.unwrap();
    assert_eq!(refused.status(), 401);
    assert!(
        refused.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Basic"),
        "browsers prompt"
    );
    let body = refused.text().await.unwrap();
    assert!(
        !body.contains("api-secret") && !body.contains("viewer-secret"),
        "no token in the page"
    );
    // "me:viewer-secret", as a browser sends it after the prompt.
    assert_eq!(
        get("/", Some("Basic bWU6dmlld2VyLXNlY3JldA=="))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        get("/", Some("Bearer api-secret")).await.unwrap().status(),
        200
    );
    assert_eq!(
        get("/jobs/1", Some("Bearer viewer-secret"))
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(get("/", Some("Bearer wrong")).await.unwrap().status(), 401);
    assert_eq!(
        get("/api/jobs", Some("Bearer viewer-secret"))
            .await
            .unwrap()
            .status(),
        401,
        "not the API"
    );
    assert_eq!(
        get("/?state=bogus", Some("Bearer api-secret"))
            .await
            .unwrap()
            .status(),
        400
    );
    assert_eq!(
        get("/jobs/x", Some("Bearer api-secret"))
            .await
            .unwrap()
            .status(),
        400
    );
    app.shutdown().await;
}

/// Sources and states as a real monolith's first month would have them.
fn a_real_looking_month() -> Vec<Seed> {
    use JobState::*;
    vec![
        job("Billing::InvoiceSyncWorker", Queued),
        job("admin/users#update", AgentRunning).run(9101),
        job("api/v1/orders#create", PreReview).run(9102).pr(143),
        job("checkouts#complete", InReview)
            .run(9103)
            .pr(141)
            .reviewer("user", "alice", "CODEOWNERS: /app/models/order.rb @alice"),
        job("Payments::CaptureWorker", InReview)
            .run(9104)
            .pr(142)
            .reviewer("team", "acme/payments", "LONGTX_FALLBACK_TEAM"),
        job("carts#update", Merged).run(9105).pr(137).ended(9),
        job("Shipping::LabelWorker", Merged)
            .run(9106)
            .pr(130)
            .ended(16),
        job("rake:reports:monthly", Wontfix)
            .run(9107)
            .pr(135)
            .ended(6),
        job("exports#download", Closed).run(9108).pr(133).ended(11),
        job("search/reindex#create", RejectedByReview)
            .run(9109)
            .pr(139)
            .ended(3),
        job("NotificationDigestWorker", NoPr).run(9110).ended(4),
    ]
}

/// A month of alerts: each source has its own typical length, alerts on
/// some days and not others, and a merged fix's source goes quiet after
/// its merge.
async fn seed_a_real_looking_history(conn: &mut sqlx::PgConnection) {
    sqlx::query(
        "INSERT INTO alert_events (received_at, origin, query_source, table_name, duration_seconds, outcome, job_id, raw_payload) \
         SELECT now() - make_interval(days => d, hours => ((j.id * 7 + d * 5) % 20)::int), \
                CASE WHEN j.id % 3 = 0 THEN 'datadog' ELSE 'alertmanager' END, \
                j.query_source, (ARRAY['orders','users','payments','carts','shipments'])[1 + j.id % 5], \
                greatest(101, 90 + (j.id * 41) % 260 + ((d * 23 + j.id * 13) % 90) - 40), \
                'deduped', j.id, '{}' \
         FROM jobs j CROSS JOIN generate_series(0, 29) AS d \
         WHERE (d * 7 + j.id * 3) % 5 <> 0 \
           AND d <= 8 + (j.id * 11) % 22 \
           AND (j.ended_at IS NULL OR j.state <> 'merged' OR now() - make_interval(days => d) < j.ended_at)",
    )
    .execute(&mut *conn)
    .await
    .unwrap();
}

/// The dashboard's picture in the book (`docs/book/src/dashboard.png`), from the
/// history above rather than the hostile one the other tests use:
/// `LONGTX_SCREENSHOT_OUT=$PWD/docs/book/src/dashboard.png cargo test -p longtx-http
/// --test dashboard the_docs_picture` refreshes it.
#[tokio::test]
async fn the_docs_picture_shows_a_real_looking_month() {
    let app = TestApp::spawn().await;
    let mut conn = app.db.connect().await;
    let mut month = a_real_looking_month();
    month.push(job("Orders::ExportWorker", JobState::Queued));
    month.push(job("admin/orders#update", JobState::Queued));
    seed_jobs(&mut conn, month).await;
    seed_a_real_looking_history(&mut conn).await;
    // The queue's story: a migration and the reads behind it waited on
    // the newest source; the older ones gained their age bonus.
    sqlx::raw_sql(
        "UPDATE jobs SET waiters_ddl = 1, waiters_dml = 14, created_at = now() - interval '2 hours' \
           WHERE query_source = 'admin/orders#update'; \
         UPDATE jobs SET created_at = now() - interval '20 hours' WHERE query_source = 'Orders::ExportWorker'; \
         UPDATE jobs SET created_at = now() - interval '30 hours' WHERE query_source = 'Billing::InvoiceSyncWorker'",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    // The jobs' own figures agree with their alerts.
    sqlx::query(
        "UPDATE jobs j SET alert_count = greatest(1, a.n), max_duration_seconds = coalesce(a.longest, 150), \
                tables = coalesce(a.tables, '{orders}') \
         FROM (SELECT j2.id, count(e.id) AS n, max(e.duration_seconds) AS longest, \
                      array_agg(DISTINCT e.table_name) FILTER (WHERE e.table_name IS NOT NULL) AS tables \
               FROM jobs j2 LEFT JOIN alert_events e ON e.job_id = j2.id GROUP BY j2.id) a \
         WHERE a.id = j.id",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    while app.store.roll_up_alerts(10_000).await.unwrap() > 0 {}
    let folder = tempdir("docs-picture");
    let shot = std::env::var_os("LONGTX_SCREENSHOT_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| folder.join("dashboard.png"));
    let dom = chromium(&app.url("/"), &["--dump-dom".to_owned()]).await;
    assert!(!dom.contains("<img src=x") && !dom.contains("javascript:"));
    assert_eq!(
        dom.matches(r#"<tr class="job""#).count(),
        13,
        "every job is listed"
    );
    assert_eq!(dom.matches(r#"<tr class="queued""#).count(), 3, "the queue");
    screenshot(&app.url("/"), &shot, (1360, 2700)).await;
    app.shutdown().await;
}

/// The body the README's `curl` posts to `path`, read from the README
/// itself, so the scenario below is the one a new user runs.
fn readme_body(path: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("the README");
    let after = readme
        .split(&format!("localhost:8080{path}"))
        .nth(1)
        .unwrap_or_else(|| panic!("the README posts to {path}"));
    let body = after.split("-d '").nth(1).expect("a -d body");
    body.split('\'').next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_s_two_alerts_are_one_source_on_the_page_in_the_what_if_and_in_metrics() {
    let app = TestApp::spawn().await;
    for path in ["/webhooks/alertmanager", "/webhooks/datadog"] {
        let body: serde_json::Value = serde_json::from_str(&readme_body(path)).expect("JSON");
        let response = app.post_json(path, &body).await;
        assert_eq!(response.status(), 200, "{path}");
    }
    // At once: nothing is rolled up (the test app runs no roll-up task).
    let dom = chromium(&app.url("/"), &["--dump-dom".to_owned()]).await;
    assert_eq!(
        dom.matches(r#"<tr class="source""#).count(),
        1,
        "one row for both spellings"
    );
    let row = dom
        .split(r#"<tr class="source">"#)
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .unwrap();
    assert!(
        row.contains(">admin/users#update</a>"),
        "named as the job is: {row}"
    );
    assert!(
        row.contains(r#"also sent as <span class="mono">admin/users_update</span>"#),
        "{row}"
    );
    assert!(
        row.contains(r#"<td class="num">2</td>"#),
        "two alerts: {row}"
    );
    assert!(row.contains(">300 s<"), "the longer of the two: {row}");
    let current = dom
        .split(r#"data-label="current""#)
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .expect("the what-if's current row");
    assert!(
        current.contains(r#"<td>current</td><td class="num">1</td>"#),
        "one source alerting: {current}"
    );
    assert!(
        current.contains(r#"<td class="num extra">0</td>"#),
        "{current}"
    );

    let metrics = app.get_text("/metrics").await;
    let labels: std::collections::BTreeSet<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("longtx_alerts_received_total{"))
        .filter_map(|l| l.split(r#"query_source=""#).nth(1))
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert_eq!(
        labels.into_iter().collect::<Vec<_>>(),
        vec!["admin/users_update"],
        "one series' source, the key the page's title names"
    );
    assert!(dom.contains(r#"title="key admin/users_update""#));

    // The API's what-if agrees with the page.
    let (_, what_if) = app.get_json("/api/what-if").await;
    assert_eq!(what_if["candidates"][0]["alerting_sources"], 1, "{what_if}");
    app.shutdown().await;
}
