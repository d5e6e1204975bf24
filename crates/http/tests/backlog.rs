//! The backlog a team starts from: longtx scans the code's default branch
//! (here `LONGTX_REPO_PATH`'s checkout, a real git repository made in the
//! test) and the dashboard shows the findings by kind and by source, what
//! is new since the scan of a week before, and how long production held
//! the transactions of a source it already saw.

use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::{sqlx, GitRepo, TestApp};
use serde_json::Value;
use std::time::{Duration, Instant};

const CONTROLLER: &str = "class OrdersController < ApplicationController
  def create
    @order = Order.new(params[:order])
    Order.transaction do
      @order.save!
      Net::HTTP.post(URI('https://partner.example/orders'), @order.to_json)
    end
  end
end
";

/// A week later the same transaction also mails.
const CONTROLLER_THAT_MAILS: &str = "class OrdersController < ApplicationController
  def create
    @order = Order.new(params[:order])
    Order.transaction do
      @order.save!
      Net::HTTP.post(URI('https://partner.example/orders'), @order.to_json)
      OrderMailer.confirmation(@order).deliver_now
    end
  end
end
";

const MODEL: &str = "class Order < ApplicationRecord
end
";

async fn backlog_at(app: &TestApp, commit: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = app.get_json("/api/backlog").await;
        assert_eq!(status, 200, "{body}");
        if body["scan"]["commit_sha"] == commit {
            return body;
        }
        assert!(Instant::now() < deadline, "no scan of {commit}: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_dashboard_shows_the_branch_scan_by_kind_and_source_and_what_the_week_added() {
    let repo = GitRepo::new("backlog");
    let first = repo.commit(
        &[
            ("app/controllers/orders_controller.rb", CONTROLLER),
            ("app/models/order.rb", MODEL),
        ],
        "Alice",
        "alice@example.com",
        10,
    );
    let app = TestApp::builder()
        .backlog(longtx_pipeline::BacklogSettings {
            source: longtx_pipeline::BacklogSource::Checkout(repo.path.clone()),
            patterns_dir: longtx_testkit::shipped_prompt_sources().patterns_dir,
            every: Duration::from_millis(200),
        })
        .spawn()
        .await;

    let body = backlog_at(&app, &first).await;
    assert_eq!(body["backlog"]["active"], 1, "{body}");
    assert_eq!(
        body["baseline"],
        Value::Null,
        "nothing older to compare with"
    );
    let page = app.get_text("/").await;
    assert!(page.contains("no older scan yet"), "{page}");

    // That scan is a week old by the time the mail is added.
    let mut conn = app.db.connect().await;
    sqlx::query("UPDATE branch_scans SET scanned_at = now() - interval '8 days'")
        .execute(&mut conn)
        .await
        .unwrap();
    drop(conn);
    let second = repo.commit(
        &[(
            "app/controllers/orders_controller.rb",
            CONTROLLER_THAT_MAILS,
        )],
        "Bob",
        "bob@example.com",
        1,
    );
    // Production already showed orders#create holding a transaction.
    let alert = AmAlert::firing("orders#create")
        .table("orders")
        .value(312.0);
    let response = app
        .client
        .post(app.url("/webhooks/alertmanager"))
        .json(&AmWebhook::with(alert).to_json())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let body = backlog_at(&app, &second).await;
    let backlog = &body["backlog"];
    assert_eq!(backlog["active"], 2, "{body}");
    assert_eq!(backlog["new"], 1, "{body}");
    assert_eq!(backlog["new_findings"][0]["kind"], "a mail delivery");
    assert_eq!(body["baseline"]["commit_sha"], first.as_str());
    let source = &backlog["by_source"][0];
    assert_eq!(
        (source["name"].as_str(), source["findings"].as_u64()),
        (Some("orders#create"), Some(2))
    );

    let page = app.get_text("/").await;
    assert!(page.contains(r#"<b id="backlog-active">2</b>"#), "{page}");
    assert!(page.contains(r#"<b id="backlog-new">1</b>"#), "{page}");
    assert!(page.contains("a mail delivery"), "{page}");
    assert!(
        page.contains("312 s"),
        "the longest transaction production showed: {page}"
    );
    app.shutdown().await;
}
