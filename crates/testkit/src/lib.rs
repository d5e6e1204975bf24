//! Test support for longtx: real parts only.
//!
//! - [`TestDatabase`]: a fresh database per test in a real PostgreSQL (the
//!   server named by `LONGTX_TEST_DATABASE_URL`, else a private cluster that
//!   the first test starts and later tests reuse).
//! - [`TestApp`]: the real router served on a real loopback socket.
//! - [`payloads`]: builders for webhook bodies shaped like what
//!   Alertmanager 0.25 and Datadog send; [`github_events`] for GitHub's.
//! - [`GitRepo`]: a real git repository made in the test, with a bare copy
//!   as its remote.
//! - [`FakeGitHub`]: GitHub's REST API at the HTTP level, with state.

pub mod agent_result;
mod app;
mod db;
mod fake_devin;
mod fake_github;
mod git_repo;
pub mod github_events;
pub mod hostile_results;
pub mod payloads;
mod temp_dir;
pub mod workflow_runner;

pub use app::{TestApp, TestAppBuilder, GITHUB_REPO};
pub use db::TestDatabase;
pub use fake_devin::{FakeDevin, DEVIN_ORG, DEVIN_SERVICE_TOKEN};
pub use fake_github::{
    full_app_permissions, FakeGitHub, Fault, ReviewRequest, APP_SLUG, OWN_LOGIN,
};
/// Runs futures concurrently on the current task and collects their outputs.
pub use futures_util::future::join_all;
pub use git_repo::{history_now, GitRepo};
/// Re-exported so tests can read tables without their own dependency.
pub use sqlx;
pub use temp_dir::TempDir;

/// The path of a file under this crate's `fixtures/`.
pub fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// A workflow template as this repository ships it (`.github/workflows/`).
pub fn shipped_workflow(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.github/workflows")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The shipped catalogue and template, with no checkout: enough for every
/// job to get a prompt.
pub fn shipped_prompt_sources() -> longtx_prompt::PromptSources {
    let patterns = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../patterns");
    longtx_prompt::PromptSources {
        template: patterns.join("_prompt.md.tera"),
        patterns_dir: patterns,
        repo: None,
        budget_bytes: longtx_prompt::DEFAULT_BUDGET_BYTES,
    }
}

/// Reviewer-worker settings for tests: the fake's repository, a mirror of
/// `remote` (a local bare repository) under `mirror_dir`, history as of
/// [`history_now`], fast polling.
pub fn review_settings(
    remote: &std::path::Path,
    mirror_dir: &std::path::Path,
) -> longtx_pipeline::ReviewSettings {
    longtx_pipeline::ReviewSettings {
        repo: GITHUB_REPO.parse().unwrap(),
        mirror: longtx_git::Mirror {
            path: mirror_dir.join("mirror.git"),
            url: remote.to_str().unwrap().to_owned(),
        },
        history_days: 365,
        as_of: Some(history_now()),
        max_reviewers: 2,
        fallback_team: None,
        author_logins: Default::default(),
        lease: std::time::Duration::from_secs(30),
        idle_poll: std::time::Duration::from_millis(50),
        fetch_timeout: std::time::Duration::from_secs(60),
        capacity: Some(longtx_core::reviewers::Capacity { user: 3, team: 10 }),
    }
}

/// Wontfix-worker settings for tests: its own mirror of `remote` under
/// `mirror_dir`, the shipped defaults otherwise, fast polling.
pub fn wontfix_settings(
    remote: &std::path::Path,
    mirror_dir: &std::path::Path,
) -> longtx_pipeline::WontfixSettings {
    longtx_pipeline::WontfixSettings {
        repo: GITHUB_REPO.parse().unwrap(),
        mirror: longtx_git::Mirror {
            path: mirror_dir.join("wontfix.git"),
            url: remote.to_str().unwrap().to_owned(),
        },
        ignore_list_path: "ignore-list.yaml".into(),
        label: longtx_core::github_events::WONTFIX_LABEL.into(),
        author_name: "longtx".into(),
        author_email: "longtx@users.noreply.github.com".into(),
        default_branch: Some("main".into()),
        base_reload: std::time::Duration::from_secs(600),
        lease: std::time::Duration::from_secs(2),
        idle_poll: std::time::Duration::from_millis(50),
        git_timeout: std::time::Duration::from_secs(60),
    }
}

/// Dispatcher settings for tests: the fake's repository, fast polling, and
/// the service's default caps unless a test changes them.
/// The pre-review worker as tests run it: the fake's repository, fast polls.
pub fn pre_review_settings() -> longtx_pipeline::PreReviewSettings {
    longtx_pipeline::PreReviewSettings {
        repo: GITHUB_REPO.parse().unwrap(),
        workflow: "long-transaction-pre-review.yml".into(),
        git_ref: None,
        public_url: "http://127.0.0.1:8080".into(),
        lease: std::time::Duration::from_secs(30),
        idle_poll: std::time::Duration::from_millis(50),
        timeout: std::time::Duration::from_secs(1800),
        mode: longtx_core::pre_review::PreReviewMode::On,
        max_revisions: longtx_core::revision::DEFAULT_MAX_REVISIONS,
        run_poll: std::time::Duration::from_millis(200),
        max_artifact_bytes: 2 * 1024 * 1024,
        caps: dispatch_settings().caps,
    }
}

/// The request worker as tests run it: fast polls, the default caps of
/// [`dispatch_settings`], rounds recorded with `mode`.
pub fn request_settings(
    mode: longtx_core::pre_review::PreReviewMode,
) -> longtx_pipeline::RequestSettings {
    longtx_pipeline::RequestSettings {
        repo: GITHUB_REPO.parse().unwrap(),
        lease: std::time::Duration::from_secs(30),
        idle_poll: std::time::Duration::from_millis(50),
        mode,
        max_revisions: longtx_core::revision::DEFAULT_MAX_REVISIONS,
        caps: dispatch_settings().caps,
    }
}

/// The PR opener as tests run it: the fake's repository, base `main`, fast
/// polls; `gate` as the service derives it from `LONGTX_PRE_REVIEW`.
pub fn pr_open_settings(
    gate: longtx_core::github_events::ReviewGate,
    remote: &std::path::Path,
    mirror_dir: &std::path::Path,
) -> longtx_pipeline::PrOpenSettings {
    longtx_pipeline::PrOpenSettings {
        repo: GITHUB_REPO.parse().unwrap(),
        git_ref: None,
        gate,
        lease: std::time::Duration::from_secs(2),
        idle_poll: std::time::Duration::from_millis(50),
        results: result_settings(remote, mirror_dir),
    }
}

/// Where tests apply agents' patches: a mirror of `remote` under
/// `mirror_dir`, the shipped patch policy.
pub fn result_settings(
    remote: &std::path::Path,
    mirror_dir: &std::path::Path,
) -> longtx_pipeline::ResultSettings {
    use longtx_core::patch_policy::{
        PatchPolicy, DEFAULT_MAX_PATCH_BYTES, DEFAULT_MAX_PATCH_FILES,
    };
    longtx_pipeline::ResultSettings {
        mirror: longtx_git::Mirror {
            path: mirror_dir.join("commits.git"),
            url: remote.to_str().unwrap().to_owned(),
        },
        policy: PatchPolicy::new(
            DEFAULT_MAX_PATCH_BYTES,
            DEFAULT_MAX_PATCH_FILES,
            "ignore-list.yaml",
            &[],
        ),
        fetch_timeout: std::time::Duration::from_secs(60),
        devin: None,
        run_budget_usd: longtx_store::DEFAULT_RUN_BUDGET_USD,
    }
}

pub fn dispatch_settings() -> longtx_pipeline::DispatchSettings {
    longtx_pipeline::DispatchSettings {
        repo: "acme/monolith".parse().unwrap(),
        workflow: "long-transaction-fix.yml".into(),
        git_ref: None,
        caps: longtx_store::Caps {
            max_per_day: 10,
            max_running: 3,
            max_cost_per_day: None,
            run_budget_usd: longtx_store::DEFAULT_RUN_BUDGET_USD,
            pre_review_budget_usd: longtx_store::DEFAULT_PRE_REVIEW_BUDGET_USD,
        },
        lease: std::time::Duration::from_secs(30),
        agent_timeout: std::time::Duration::from_secs(7200),
        public_url: "http://127.0.0.1:8080".into(),
        idle_poll: std::time::Duration::from_millis(50),
        run_poll: std::time::Duration::from_millis(200),
        // GitHub's minute, shrunk so a test can wait it out.
        secondary_floor: std::time::Duration::from_millis(50),
        policy: longtx_core::IntakePolicy::default(),
    }
}
