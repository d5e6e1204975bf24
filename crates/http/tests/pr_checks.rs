//! The "long transactions" check on every pull request: a person's PR (a
//! fork's included) arrives as a signed webhook, longtx fetches its head
//! from a real bare repository standing in for GitHub's git side, scans it
//! against the merge base and posts one completed check run to the fake
//! GitHub, as a GitHub App, with an annotation on the line that adds slow
//! work inside a transaction.

use longtx_core::pr_check::PrCheckMode;
use longtx_github::{Credentials, OctocrabGitHub};
use longtx_testkit::github_events::{PrEventBuilder, TARGET_REPO};
use longtx_testkit::{fixture, FakeGitHub, GitRepo, TempDir, TestApp};
use serde_json::Value;
use std::time::{Duration, Instant};

const SECRET: &str = "pr-checks-webhook-secret";

const CONTROLLER: &str = "class OrdersController < ApplicationController
  def create
    @order = Order.new(params[:order])
    Order.transaction do
      @order.save!
    end
  end
end
";

/// The PR's change: the partner is told inside the transaction.
const CONTROLLER_WITH_CALL: &str = "class OrdersController < ApplicationController
  def create
    @order = Order.new(params[:order])
    Order.transaction do
      @order.save!
      Net::HTTP.post(URI('https://partner.example/orders'), @order.to_json)
    end
  end
end
";

/// The same call, after the commit.
const CONTROLLER_CALL_AFTER: &str = "class OrdersController < ApplicationController
  def create
    @order = Order.new(params[:order])
    Order.transaction do
      @order.save!
    end
    Net::HTTP.post(URI('https://partner.example/orders'), @order.to_json)
  end
end
";

const MODEL: &str = "class Order < ApplicationRecord
end
";

struct Checked {
    app: TestApp,
    github: FakeGitHub,
    repo: GitRepo,
    base: String,
    _mirror: TempDir,
}

fn app_client(github: &FakeGitHub) -> OctocrabGitHub {
    let credentials = Credentials::App {
        app_id: 4242,
        private_key_pem: std::fs::read_to_string(fixture("test-github-app-key.pem")).unwrap(),
        installation_id: 77,
    };
    OctocrabGitHub::new(&github.url, &credentials, Duration::from_secs(5)).unwrap()
}

async fn started(mode: PrCheckMode) -> Checked {
    let mut repo = GitRepo::new("pr-checks");
    let base = repo.commit(
        &[
            ("app/controllers/orders_controller.rb", CONTROLLER),
            ("app/models/order.rb", MODEL),
        ],
        "Alice",
        "alice@example.com",
        5,
    );
    let bare = repo.bare();
    let github = FakeGitHub::start().await.with_remote(&bare);
    let mirror = TempDir::new("pr-checks-mirror");
    let settings = longtx_pipeline::PrCheckSettings {
        repo: TARGET_REPO.parse().unwrap(),
        mirror: longtx_git::Mirror {
            path: mirror.path().join("checks.git"),
            url: bare.to_str().unwrap().to_owned(),
        },
        mode,
        patterns_dir: longtx_testkit::shipped_prompt_sources().patterns_dir,
        public_url: Some("https://longtx.example".into()),
        lease: Duration::from_secs(30),
        idle_poll: Duration::from_millis(200),
        fetch_timeout: Duration::from_secs(30),
    };
    let app = TestApp::builder()
        .github_webhook(SECRET)
        .pr_checks(settings, app_client(&github))
        .spawn()
        .await;
    Checked {
        app,
        github,
        repo,
        base,
        _mirror: mirror,
    }
}

impl Checked {
    /// A person pushes `files` on `branch` and GitHub keeps the head.
    fn push(&mut self, branch: &str, files: &[(&str, &str)]) -> String {
        self.repo
            .git(&["checkout", "--quiet", "-B", branch, &self.base]);
        let head = self.repo.commit(files, "Bob", "bob@example.com", 1);
        self.repo.git(&["checkout", "--quiet", "main"]);
        self.repo.bare();
        head
    }

    async fn deliver(&self, delivery: &str, event: &PrEventBuilder) -> Value {
        let response = self
            .app
            .post_github("pull_request", delivery, &event.to_json(), SECRET)
            .await;
        assert_eq!(response.status(), 202);
        response.json().await.unwrap()
    }

    /// Waits (at most 30 s: the bound) for `n` check runs.
    async fn check_runs(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let runs = self.github.check_runs();
            if runs.len() >= n {
                return runs;
            }
            assert!(
                Instant::now() < deadline,
                "{n} check run(s) not posted within 30 s; requests: {:?}",
                self.github.requests()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn checks_api(&self) -> Value {
        self.app.get_json("/api/pr-checks").await.1
    }
}

#[tokio::test]
async fn a_persons_pr_that_adds_a_call_inside_a_transaction_gets_one_neutral_check_annotated_on_that_line(
) {
    let mut t = started(PrCheckMode::Neutral).await;
    let head = t.push(
        "partner-sync",
        &[("app/controllers/orders_controller.rb", CONTROLLER_WITH_CALL)],
    );
    let number = t
        .github
        .open_pull("partner-sync", &head, "main", TARGET_REPO);
    let event = PrEventBuilder::a_persons_pr(number, "partner-sync", "bob")
        .head_sha(&head)
        .base_sha(&t.base);

    let pushed = Instant::now();
    let answer = t.deliver("pr-opened", &event).await;
    assert_eq!(answer["outcome"], "check_requested", "{answer}");
    let runs = t.check_runs(1).await;
    eprintln!("check run posted {:?} after the webhook", pushed.elapsed());

    let run = &runs[0];
    assert_eq!(run["name"], "long transactions");
    assert_eq!(run["head_sha"], head.as_str());
    assert_eq!(run["status"], "completed");
    assert_eq!(run["conclusion"], "neutral");
    let annotations = run["output"]["annotations"].as_array().unwrap();
    assert_eq!(annotations.len(), 1, "{annotations:?}");
    let a = &annotations[0];
    assert_eq!(a["path"], "app/controllers/orders_controller.rb");
    assert_eq!(a["start_line"], 6, "the added Net::HTTP line");
    assert_eq!(a["annotation_level"], "warning");
    let message = a["message"].as_str().unwrap();
    assert!(message.contains("orders#create"), "{message}");
    assert!(
        message.contains("https://longtx.example/patterns/external-http-call-in-transaction"),
        "the annotation links the pattern: {message}"
    );
    let summary = run["output"]["summary"].as_str().unwrap();
    assert!(summary.contains("adds 1 finding"), "{summary}");
    assert!(
        t.github
            .requests()
            .iter()
            .all(|r| !r.contains("/dispatches")),
        "no agent runs for a check"
    );

    // GitHub redelivers, and the PR is closed and reopened on the same
    // head: still one check for the commit.
    t.deliver("pr-opened", &event).await;
    t.deliver("pr-reopened", &event.clone().action("reopened"))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(t.github.check_runs().len(), 1);

    // Bob moves the call after the commit: the new head passes.
    let fixed = t.push(
        "partner-sync",
        &[(
            "app/controllers/orders_controller.rb",
            CONTROLLER_CALL_AFTER,
        )],
    );
    t.github.push_to_pull(number, &fixed);
    t.deliver(
        "pr-synchronize",
        &event.clone().action("synchronize").head_sha(&fixed),
    )
    .await;
    let runs = t.check_runs(2).await;
    let second = runs
        .iter()
        .find(|r| r["head_sha"] == fixed.as_str())
        .unwrap();
    assert_eq!(second["conclusion"], "success");
    assert_eq!(second["output"]["annotations"].as_array().unwrap().len(), 0);

    let api = t.checks_api().await;
    let states: Vec<&str> = api["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["posted", "posted"], "{api}");
    t.app.shutdown().await;
}

#[tokio::test]
async fn a_forks_pr_is_checked_from_the_base_repository_and_failure_mode_fails_it() {
    let mut t = started(PrCheckMode::Failure).await;
    // The fork's commit reaches the base repository only as the PR's ref.
    let head = t.push(
        "fork-work",
        &[("app/controllers/orders_controller.rb", CONTROLLER_WITH_CALL)],
    );
    t.repo.git(&["branch", "--quiet", "-D", "fork-work"]);
    let deleted = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(t.repo.bare_path())
        .args(["update-ref", "-d", "refs/heads/fork-work"])
        .status()
        .unwrap();
    assert!(deleted.success());
    let number = t
        .github
        .open_pull("fork-work", &head, "main", "mallory/monolith");
    let event = PrEventBuilder::a_persons_pr(number, "fork-work", "mallory")
        .from_fork("mallory/monolith")
        .head_sha(&head)
        .base_sha(&t.base);
    t.deliver("fork-opened", &event).await;
    let runs = t.check_runs(1).await;
    assert_eq!(runs[0]["conclusion"], "failure");
    assert_eq!(
        runs[0]["output"]["annotations"][0]["annotation_level"],
        "failure"
    );
    t.app.shutdown().await;
}

#[tokio::test]
async fn a_check_run_an_earlier_attempt_posted_is_found_not_posted_twice() {
    let mut t = started(PrCheckMode::Neutral).await;
    let head = t.push(
        "partner-sync",
        &[("app/controllers/orders_controller.rb", CONTROLLER_WITH_CALL)],
    );
    let number = t
        .github
        .open_pull("partner-sync", &head, "main", TARGET_REPO);
    // An attempt that posted the run and died before recording it: the
    // run is on GitHub under the request's external id, the row pending.
    let requested = t
        .app
        .store
        .request_pr_check(number, &head, "main", &t.base)
        .await
        .unwrap();
    assert!(requested);
    let external_id = longtx_core::pr_check::external_id(t.app.installation.id(), 1);
    let earlier = serde_json::json!({
        "name": "long transactions", "head_sha": head, "external_id": external_id,
        "status": "completed", "conclusion": "neutral", "output": {"title": "t", "summary": "s"}
    });
    let posted = t
        .app
        .client
        .post(format!("{}/repos/{TARGET_REPO}/check-runs", t.github.url))
        .bearer_auth("ghs_installation_77")
        .json(&earlier)
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 201);

    let event = PrEventBuilder::a_persons_pr(number, "partner-sync", "bob")
        .head_sha(&head)
        .base_sha(&t.base)
        .action("synchronize");
    t.deliver("poke", &event).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let api = t.checks_api().await;
        if api["checks"][0]["state"] == "posted" {
            assert_eq!(api["checks"][0]["check_run_id"], 7000, "{api}");
            break;
        }
        assert!(Instant::now() < deadline, "{api}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(t.github.check_runs().len(), 1, "no second run");
    t.app.shutdown().await;
}

#[tokio::test]
async fn a_burst_of_pushes_costs_one_check_of_the_newest_head() {
    let app = TestApp::spawn().await;
    let (first, second) = ("1".repeat(40), "2".repeat(40));
    for head in [&first, &second] {
        assert!(app
            .store
            .request_pr_check(7, head, "main", &"b".repeat(40))
            .await
            .unwrap());
    }
    let checks = app.store.recent_pr_checks(10).await.unwrap();
    let states: Vec<(&str, &str)> = checks
        .iter()
        .map(|c| (c.head_sha.as_str(), c.state.as_str()))
        .collect();
    assert_eq!(
        states,
        [(second.as_str(), "pending"), (first.as_str(), "superseded")]
    );
    app.shutdown().await;
}

#[tokio::test]
async fn the_pattern_an_annotation_links_is_served_to_whoever_may_see_the_dashboard() {
    let app = TestApp::builder()
        .dashboard_token("look-only")
        .spawn()
        .await;
    let url = app.url("/patterns/external-http-call-in-transaction");
    let refused = app.client.get(&url).send().await.unwrap();
    assert_eq!(refused.status(), 401, "the dashboard's token is needed");
    let page = app
        .client
        .get(&url)
        .bearer_auth("look-only")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = page.text().await.unwrap();
    assert!(
        text.contains("id: external-http-call-in-transaction"),
        "{text}"
    );
    for unknown in ["no-such-pattern", "..%2F..%2FCargo.toml", "_prompt.md.tera"] {
        let answer = app
            .client
            .get(app.url(&format!("/patterns/{unknown}")))
            .bearer_auth("look-only")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 404, "{unknown}");
    }
    app.shutdown().await;
}
