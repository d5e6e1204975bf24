//! Shared by the PR-tracking tests: an app that takes alerts, dispatches
//! to the fake GitHub, verifies GitHub deliveries and asks reviewers from
//! a mirror of a real (bare) repository.

#![allow(dead_code)]

use longtx_core::github_events::ReviewGate;
use longtx_core::pre_review::PreReviewMode;
use longtx_pipeline::{ReviewSettings, WontfixSettings};
use longtx_store::JobRow;
use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::{dispatch_settings, shipped_prompt_sources, FakeGitHub, TestApp};
use std::time::{Duration, Instant};

pub const SECRET: &str = "it's-a-secret-to-everybody";

pub struct Tracking {
    pub app: TestApp,
    pub github: FakeGitHub,
    _mirror_dir: TempDir,
}

pub use longtx_testkit::TempDir;

impl Tracking {
    /// `remote` is the bare repository the mirror fetches; `change` adjusts
    /// the reviewer settings (fallback team, logins, limits).
    pub async fn start(
        remote: &std::path::Path,
        change: impl FnOnce(&mut ReviewSettings),
    ) -> Tracking {
        Self::start_with(remote, change, |_| {}).await
    }

    /// As [`Tracking::start`], with the AI pre-review in `mode`.
    pub async fn start_pre_review(remote: &std::path::Path, mode: PreReviewMode) -> Tracking {
        Self::start_full(remote, |_| {}, |_| {}, Some(mode)).await
    }

    /// As [`Tracking::start`], also adjusting the wontfix worker.
    pub async fn start_with(
        remote: &std::path::Path,
        change: impl FnOnce(&mut ReviewSettings),
        change_wontfix: impl FnOnce(&mut WontfixSettings),
    ) -> Tracking {
        Self::start_full(remote, change, change_wontfix, None).await
    }

    /// As [`Tracking::start`], with longtx reading Devin runs' ACUs from
    /// `devin`.
    pub async fn start_with_devin(
        remote: &std::path::Path,
        devin: longtx_pipeline::DevinSettings,
    ) -> Tracking {
        Self::start_full_with(remote, |_| {}, |_| {}, None, Some(devin)).await
    }

    /// As [`Tracking::start`], with prompts that locate the code in
    /// `checkout` (a working tree of the remote), so the dispatcher can
    /// predict a fix's reviewers from the located files.
    #[allow(dead_code)]
    pub async fn start_locating(
        remote: &std::path::Path,
        checkout: &std::path::Path,
        change: impl FnOnce(&mut ReviewSettings),
    ) -> Tracking {
        let mut sources = shipped_prompt_sources();
        sources.repo = Some(checkout.to_owned());
        Self::start_full_sources(remote, change, |_| {}, None, None, sources).await
    }

    async fn start_full(
        remote: &std::path::Path,
        change: impl FnOnce(&mut ReviewSettings),
        change_wontfix: impl FnOnce(&mut WontfixSettings),
        pre_review: Option<PreReviewMode>,
    ) -> Tracking {
        Self::start_full_with(remote, change, change_wontfix, pre_review, None).await
    }

    async fn start_full_with(
        remote: &std::path::Path,
        change: impl FnOnce(&mut ReviewSettings),
        change_wontfix: impl FnOnce(&mut WontfixSettings),
        pre_review: Option<PreReviewMode>,
        devin: Option<longtx_pipeline::DevinSettings>,
    ) -> Tracking {
        let sources = shipped_prompt_sources();
        Self::start_full_sources(remote, change, change_wontfix, pre_review, devin, sources).await
    }

    async fn start_full_sources(
        remote: &std::path::Path,
        change: impl FnOnce(&mut ReviewSettings),
        change_wontfix: impl FnOnce(&mut WontfixSettings),
        pre_review: Option<PreReviewMode>,
        devin: Option<longtx_pipeline::DevinSettings>,
        sources: longtx_prompt::PromptSources,
    ) -> Tracking {
        // GitHub's git side is the test's bare repository: PRs are opened
        // from the branches pushed there.
        let github = FakeGitHub::start()
            .await
            .with_remote(remote)
            .with_shipped_workflows();
        let mirror_dir = TempDir::new("mirror");
        let mut settings = longtx_testkit::review_settings(remote, &mirror_dir);
        change(&mut settings);
        let mut wontfix = longtx_testkit::wontfix_settings(remote, &mirror_dir);
        change_wontfix(&mut wontfix);
        let mut builder = TestApp::builder();
        if let Some(mode) = pre_review {
            builder = builder.pre_review(
                mode,
                longtx_testkit::pre_review_settings(),
                github.client(Duration::from_secs(5)),
            );
        }
        let gate = match pre_review {
            Some(mode) if mode.is_enabled() => ReviewGate::PreReviewFirst,
            _ => ReviewGate::PeopleAtOnce,
        };
        let mode = pre_review.unwrap_or(PreReviewMode::Off);
        let app = builder
            .requests(
                longtx_testkit::request_settings(mode),
                github.client(Duration::from_secs(5)),
            )
            .pr_opener(
                {
                    let mut settings = longtx_testkit::pr_open_settings(gate, remote, &mirror_dir);
                    settings.results.devin = devin;
                    settings
                },
                github.client(Duration::from_secs(5)),
            )
            .prompts(sources)
            .dispatcher(
                dispatch_settings(),
                Some(github.client(Duration::from_secs(5))),
            )
            .github_webhook(SECRET)
            .reviewer(settings, github.client(Duration::from_secs(5)))
            .wontfix(wontfix, github.client(Duration::from_secs(5)))
            .spawn()
            .await;
        Tracking {
            app,
            github,
            _mirror_dir: mirror_dir,
        }
    }

    /// Fires an alert for `source` and waits until its agent run is
    /// dispatched; returns the job id.
    pub async fn job_with_agent_running(&self, source: &str) -> i64 {
        let hook = AmWebhook::with(AmAlert::firing(source).table("orders").value(150.0));
        let response = self
            .app
            .post_json("/webhooks/alertmanager", &hook.to_json())
            .await;
        assert_eq!(response.status(), 200);
        let body: serde_json::Value = response.json().await.unwrap();
        let id = body["results"][0]["job_id"]
            .as_i64()
            .expect("a job was made");
        self.wait_for(id, |job| job.state == "agent_running").await;
        id
    }

    pub async fn job(&self, id: i64) -> JobRow {
        self.app
            .store
            .job(id)
            .await
            .unwrap()
            .expect("the job exists")
    }

    /// Polls the job until `done` holds (at most 20 s); returns it either way.
    pub async fn wait_for(&self, id: i64, done: impl Fn(&JobRow) -> bool) -> JobRow {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let job = self.job(id).await;
            if done(&job) || Instant::now() > deadline {
                return job;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until longtx has recorded `run` as the reviewing run of `head`
    /// (or has moved on to another head). GitHub's `workflow_run` event is
    /// believed only for a run longtx recorded, and the fake lists a
    /// dispatched run a moment before the dispatcher writes its id; a test
    /// that ends the run sooner would race.
    pub async fn wait_for_pre_review_run(&self, job: i64, head: &str, run: u64) {
        use longtx_testkit::sqlx::Connection;
        let mut db = longtx_testkit::sqlx::PgConnection::connect(&self.app.db.url())
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (recorded, reviewing): (Option<i64>, Option<String>) =
                longtx_testkit::sqlx::query_as(
                    "SELECT pre_review_run_id, pre_review_head FROM jobs WHERE id = $1",
                )
                .bind(job)
                .fetch_one(&mut db)
                .await
                .unwrap();
            if recorded == Some(run as i64) || reviewing.as_deref() != Some(head) {
                db.close().await.unwrap();
                return;
            }
            if Instant::now() >= deadline {
                let row: (Option<String>, Option<i64>, Option<String>) = longtx_testkit::sqlx::query_as(
                    "SELECT pre_review_state, pre_review_run_id, pre_review_head FROM jobs WHERE id = $1",
                )
                .bind(job)
                .fetch_one(&mut db)
                .await
                .unwrap();
                panic!("longtx never recorded reviewing run {run}: {row:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Delivers a signed event and returns the status and JSON answer.
    pub async fn deliver(
        &self,
        event: &str,
        delivery: &str,
        body: &serde_json::Value,
    ) -> (u16, serde_json::Value) {
        let response = self.app.post_github(event, delivery, body, SECRET).await;
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }
}

/// A target repository whose `app/models/` Alice owns (CODEOWNERS), pushed
/// to a bare remote named after `name`.
pub fn repository_owned_by_alice(name: &str) -> longtx_testkit::GitRepo {
    let mut repo = longtx_testkit::GitRepo::new(name);
    repo.commit(
        &[
            (".github/CODEOWNERS", "app/models/ @alice\n"),
            ("app/models/order.rb", "class Order; end\n"),
            // setup-ruby's bundler cache needs a lockfile.
            (
                "Gemfile",
                "source \"https://rubygems.org\"\ngem \"rails\"\n",
            ),
            (
                "Gemfile.lock",
                "GEM\n  remote: https://rubygems.org/\n  specs:\n    rails (8.0.0)\n",
            ),
            (
                ".github/workflows/long-transaction-fix.yml",
                &longtx_testkit::shipped_workflow("long-transaction-fix.yml"),
            ),
            (
                ".github/workflows/long-transaction-pre-review.yml",
                &longtx_testkit::shipped_workflow("long-transaction-pre-review.yml"),
            ),
        ],
        "Alice",
        "alice@example.com",
        30,
    );
    repo.bare();
    repo
}

impl Tracking {
    /// What the job's agent run leaves: the fix to `app/models/order.rb`
    /// as a patch against `main`, uploaded as the run's `longtx-result`.
    pub fn propose_fix(
        &self,
        repo: &mut longtx_testkit::GitRepo,
        job: i64,
        pattern: Option<&str>,
    ) -> u64 {
        let (base, patch) = longtx_testkit::agent_result::patch_over(
            &repo.bare(),
            "main",
            &[(
                "app/models/order.rb",
                "class Order\n  # the HTTP call now runs after commit\nend\n",
            )],
        );
        let run_id = self.run_of(job);
        longtx_testkit::agent_result::upload_fix_result(
            &self.github,
            run_id,
            &base,
            &patch,
            pattern,
        );
        run_id
    }

    /// The run longtx dispatched for the job's round 0.
    pub fn run_of(&self, job: i64) -> u64 {
        self.github
            .runs()
            .iter()
            .find(|r| {
                r["inputs"]["job_id"]
                    .as_str()
                    .and_then(|s| s.parse::<i64>().ok())
                    == Some(job)
                    && r["inputs"]["round"] == "0"
            })
            .and_then(|r| r["id"].as_u64())
            .expect("a dispatched run")
    }

    /// Where the job's fix branch points in the remote now.
    pub fn branch_head(&self, repo: &mut longtx_testkit::GitRepo, job: i64) -> Option<String> {
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(repo.bare_path())
            .args([
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{}", self.app.installation.branch_of(job)),
            ])
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }
}

/// A branch pushed by hand (a person, or an earlier longtx): the job's fix
/// branch in `app`'s installation, one commit ahead of `main`, with the
/// trailers.
pub fn push_fix_branch(
    app: &longtx_testkit::TestApp,
    repo: &mut longtx_testkit::GitRepo,
    job: i64,
    pattern: Option<&str>,
) -> String {
    let branch = app.installation.branch_of(job);
    repo.git(&["checkout", "--quiet", "-b", &branch, "main"]);
    std::fs::write(
        repo.path.join("app/models/order.rb"),
        "class Order\n  # the HTTP call now runs after commit\nend\n",
    )
    .unwrap();
    repo.git(&["add", "-A"]);
    let mut message =
        format!("Shorten the long transaction in admin/users#update\n\nLongtx-Job: {job}\n");
    if let Some(pattern) = pattern {
        message.push_str(&format!("Longtx-Pattern: {pattern}\n"));
    }
    repo.git(&["commit", "--quiet", "-m", &message]);
    let head = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "--quiet", "main"]);
    repo.bare();
    head
}
