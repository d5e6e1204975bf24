//! `longtx doctor` against the fake GitHub (an App installation) and a real
//! database: a deployment set up as README says passes; one set up wrong
//! fails with each problem named.

use longtx_testkit::{FakeGitHub, GitRepo, TestDatabase};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const PUBLIC_URL: &str = "https://longtx.example.com";

fn repository(with_workflows: bool, fix_template: &str) -> GitRepo {
    let mut repo = GitRepo::new("doctor");
    let pre_review = longtx_testkit::shipped_workflow("long-transaction-pre-review.yml");
    let mut files = vec![("README.md", "app\n".to_owned())];
    if with_workflows {
        files.push((
            ".github/workflows/long-transaction-fix.yml",
            fix_template.to_owned(),
        ));
        files.push((
            ".github/workflows/long-transaction-pre-review.yml",
            pre_review,
        ));
    }
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    repo.commit(&files, "Alice", "alice@example.com", 1);
    repo.bare();
    repo
}

async fn doctor(github: &FakeGitHub, db: &TestDatabase, args: &[&str]) -> (bool, Value) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let key = longtx_testkit::fixture("test-github-app-key.pem");
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (url, db_url) = (github.url.clone(), db.url());
    // The fake answers on this runtime while the command runs on another thread.
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_longtx"))
            .arg("doctor")
            .arg("--json")
            .args(args)
            .current_dir(&root)
            .env("DATABASE_URL", db_url)
            .env("LONGTX_GITHUB_API_URL", url)
            .env("LONGTX_GITHUB_REPO", "acme/monolith")
            .env("LONGTX_GITHUB_APP_ID", "12")
            .env("LONGTX_GITHUB_APP_PRIVATE_KEY_FILE", key)
            .env("LONGTX_GITHUB_INSTALLATION_ID", "34")
            .env("LONGTX_PUBLIC_URL", PUBLIC_URL)
            .env("LONGTX_PRE_REVIEW", "on")
            .env_remove("LONGTX_GITHUB_TOKEN")
            .env_remove("GITHUB_TOKEN")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.success(), report)
}

fn status<'a>(report: &'a Value, id: &str) -> (&'a str, String) {
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {report:#}"));
    (
        check["status"].as_str().unwrap(),
        format!("{} {}", check["detail"], check["fix"]),
    )
}

#[tokio::test]
async fn a_deployment_set_up_as_readme_says_passes() {
    let db = TestDatabase::create().await;
    db.store(&Default::default()).migrate().await.unwrap();
    let repo = repository(
        true,
        &longtx_testkit::shipped_workflow("long-transaction-fix.yml"),
    );
    let github = FakeGitHub::start().await.with_remote(&repo.bare_path());
    // The key is an organisation secret shared with the repository, and the
    // slug an organisation variable: both count.
    github.set_org_secrets(&["ANTHROPIC_API_KEY"]);
    github.set_org_variable("LONGTX_APP_SLUG", longtx_testkit::APP_SLUG);
    github.set_app_hook(
        &format!("{PUBLIC_URL}/webhooks/github"),
        &[
            "pull_request",
            "workflow_run",
            "pull_request_review",
            "issue_comment",
        ],
    );
    // Labels are missing at first: --fix creates them.
    let (ok, report) = doctor(&github, &db, &[]).await;
    assert!(!ok);
    assert_eq!(status(&report, "github.labels").0, "fail");
    let (ok, report) = doctor(&github, &db, &["--fix"]).await;
    assert!(ok, "{report:#}");
    for check in report["checks"].as_array().unwrap() {
        assert_eq!(check["status"], "pass", "{check}");
    }
    assert!(github
        .repository_labels()
        .contains(&"long-transaction-wontfix".to_string()));
}

#[tokio::test]
async fn every_misconfiguration_is_named_with_its_fix() {
    let db = TestDatabase::create().await;
    db.store(&Default::default()).migrate().await.unwrap();
    // The newest migration not applied yet, as after an upgrade.
    let pool = longtx_testkit::sqlx::PgPool::connect(&db.url())
        .await
        .unwrap();
    longtx_testkit::sqlx::query(
        "DELETE FROM _sqlx_migrations WHERE version = (SELECT max(version) FROM _sqlx_migrations)",
    )
    .execute(&pool)
    .await
    .unwrap();
    let renamed = longtx_testkit::shipped_workflow("long-transaction-fix.yml")
        .replace(
            "run-name: \"longtx job ${{ inputs.job_id }} round ${{ inputs.round }}: ${{ inputs.query_source }}\"",
            "run-name: \"Fix ${{ inputs.query_source }}\"",
        )
        .replace("      prompt_sha256:\n", "      prompt_hash:\n");
    let repo = repository(true, &renamed);
    let github = FakeGitHub::start().await.with_remote(&repo.bare_path());
    github.set_installation_permissions(serde_json::json!({"actions": "write", "contents": "read", "pull_requests": "read", "metadata": "read"}));
    github.set_app_hook("https://old.example.com/hook", &["pull_request"]);
    let (ok, report) = doctor(&github, &db, &[]).await;
    assert!(!ok);
    let expect = |id: &str, want: &str, words: &str| {
        let (got, text) = status(&report, id);
        assert_eq!(got, want, "{id}: {text}");
        assert!(text.contains(words), "{id}: {text}");
    };
    expect("local.database", "fail", "longtx migrate");
    expect(
        "github.permissions",
        "fail",
        "pull_requests: write (has read)",
    );
    expect("github.workflow.fix.run_name", "fail", "longtx job <id>");
    expect("github.workflow.fix.inputs", "fail", "`prompt_sha256`");
    expect(
        "github.workflow.fix.inputs",
        "fail",
        "copy the shipped .github/workflows/long-transaction-fix.yml again",
    );
    expect("github.secrets", "warn", "Secrets: read");
    expect("github.labels", "fail", "longtx doctor --fix");
    expect(
        "github.webhook",
        "fail",
        "no webhook delivers to https://longtx.example.com/webhooks/github",
    );

    let empty = repository(false, "");
    let github = FakeGitHub::start().await.with_remote(&empty.bare_path());
    let (_, report) = doctor(&github, &db, &[]).await;
    let (got, text) = status(&report, "github.workflow.fix");
    assert_eq!(got, "fail");
    assert!(text.contains("is not on main"), "{text}");
    assert_eq!(status(&report, "github.workflow.pre_review").0, "fail");
}

#[tokio::test]
async fn an_app_without_its_slug_in_the_actions_variables_fails_and_optional_secrets_are_not_asked()
{
    let db = TestDatabase::create().await;
    db.store(&Default::default()).migrate().await.unwrap();
    let repo = repository(
        true,
        &longtx_testkit::shipped_workflow("long-transaction-fix.devin.yml"),
    );
    let github = FakeGitHub::start().await.with_remote(&repo.bare_path());
    // Devin's key in an environment; its optional service token nowhere.
    github.add_environment("agents", &["DEVIN_API_KEY"]);
    github.set_actions_secrets(&["ANTHROPIC_API_KEY"]);
    let (ok, report) = doctor(&github, &db, &[]).await;
    assert!(!ok);
    let (got, text) = status(&report, "github.app_slug");
    assert_eq!(got, "fail", "{text}");
    assert!(
        text.contains("LONGTX_APP_SLUG is not set") && text.contains("longtx-app"),
        "{text}"
    );
    let (got, text) = status(&report, "github.secrets");
    assert_eq!(
        got, "pass",
        "an environment secret counts, an optional one is not asked: {text}"
    );

    github.set_actions_variable("LONGTX_APP_SLUG", "someone-elses-app");
    let (_, report) = doctor(&github, &db, &[]).await;
    let (got, text) = status(&report, "github.app_slug");
    assert_eq!(got, "fail", "{text}");
    assert!(text.contains("not the App's slug `longtx-app`"), "{text}");

    github.set_actions_variable("LONGTX_APP_SLUG", "longtx-app");
    let (_, report) = doctor(&github, &db, &[]).await;
    assert_eq!(status(&report, "github.app_slug").0, "pass");
    assert_eq!(
        status(&report, "github.budgets").0,
        "pass",
        "the templates' default budgets are the ones longtx counts"
    );

    // A run allowed $20 while longtx counts $5 would let the day pass its cap.
    github.set_actions_variable("LONGTX_MAX_BUDGET_USD", "20");
    let (_, report) = doctor(&github, &db, &[]).await;
    let (got, text) = status(&report, "github.budgets");
    assert_eq!(got, "fail", "{text}");
    assert!(
        text.contains("$20.00") && text.contains("LONGTX_RUN_BUDGET_USD"),
        "{text}"
    );
}

#[tokio::test]
async fn a_job_that_outlives_longtx_s_timeout_is_warned_about() {
    let db = TestDatabase::create().await;
    db.store(&Default::default()).migrate().await.unwrap();
    let slow = longtx_testkit::shipped_workflow("long-transaction-fix.yml")
        .replace("    timeout-minutes: 60\n", "    timeout-minutes: 180\n");
    let repo = repository(true, &slow);
    let github = FakeGitHub::start().await.with_remote(&repo.bare_path());
    let (_, report) = doctor(&github, &db, &[]).await;
    let (got, text) = status(&report, "github.workflow.timeouts");
    assert_eq!(got, "warn", "{text}");
    assert!(
        text.contains("`fix` may run 180 min") && text.contains("LONGTX_AGENT_TIMEOUT"),
        "{text}"
    );
}

#[tokio::test]
async fn without_github_doctor_says_what_it_skipped_and_passes_only_when_a_dry_run_is_accepted() {
    let db = TestDatabase::create().await;
    db.store(&Default::default()).migrate().await.unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let db_url = db.url();
    let run = |extra: &'static [&'static str]| {
        let (root, db_url) = (root.clone(), db_url.clone());
        tokio::task::spawn_blocking(move || {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_longtx"));
            cmd.arg("doctor")
                .args(extra)
                .current_dir(&root)
                .env("DATABASE_URL", db_url);
            for (key, _) in std::env::vars() {
                if key.starts_with("LONGTX_GITHUB") || key == "GITHUB_TOKEN" {
                    cmd.env_remove(key);
                }
            }
            cmd.output().unwrap()
        })
    };
    let refused = run(&[]).await.unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("SKIP  github"), "{said}");
    assert!(
        said.contains("--allow-dry-run") && said.contains("dry-run mode"),
        "{said}"
    );
    assert!(
        !said.contains("longtx::serve"),
        "doctor logs as itself: {said}"
    );

    let accepted = run(&["--allow-dry-run"]).await.unwrap();
    let said = String::from_utf8_lossy(&accepted.stderr);
    assert!(accepted.status.success(), "{said}");
    assert!(said.contains("GitHub was skipped"), "{said}");

    // --json's `ok` agrees with the exit status, and carries the reason.
    const JSON: &[&str] = &["--json"];
    const JSON_DRY_RUN: &[&str] = &["--json", "--allow-dry-run"];
    for (extra, succeeds) in [(JSON, false), (JSON_DRY_RUN, true)] {
        let out = run(extra).await.unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(out.status.success(), succeeds, "{report}");
        assert_eq!(report["ok"], succeeds, "{report}");
        let configured = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == "github.configured" && c["status"] == "fail");
        assert_eq!(configured, !succeeds, "{report}");
    }
}

#[tokio::test]
async fn a_bad_url_and_an_unreachable_github_are_told_apart_from_a_wrong_repository() {
    let db = TestDatabase::create().await;
    db.store(&Default::default()).migrate().await.unwrap();
    let github = FakeGitHub::start().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let run = |api: String, repo: &'static str| {
        let (root, db_url) = (root.clone(), db.url());
        tokio::task::spawn_blocking(move || {
            let out = Command::new(env!("CARGO_BIN_EXE_longtx"))
                .args(["doctor", "--json"])
                .current_dir(&root)
                .env("DATABASE_URL", db_url)
                .env("LONGTX_GITHUB_API_URL", api)
                .env("LONGTX_GITHUB_REPO", repo)
                .env("LONGTX_GITHUB_TOKEN", "ghp_doctor")
                .env("LONGTX_PUBLIC_URL", PUBLIC_URL)
                .output()
                .unwrap();
            serde_json::from_slice::<Value>(&out.stdout).unwrap()
        })
    };
    let not_a_url = run("api.github.com".to_owned(), "acme/monolith")
        .await
        .unwrap();
    let (got, text) = status(&not_a_url, "config.LONGTX_GITHUB_API_URL");
    assert_eq!(got, "fail");
    assert!(
        text.contains("is not a URL") && !text.contains("App id"),
        "{text}"
    );
    assert_eq!(status(&not_a_url, "github").0, "skip");

    let unreachable = run(format!("http://127.0.0.1:{closed}"), "acme/monolith")
        .await
        .unwrap();
    let (got, text) = status(&unreachable, "github.network");
    assert_eq!(got, "fail");
    assert!(
        text.contains("could not reach GitHub's API") && text.contains("LONGTX_GITHUB_API_URL"),
        "{text}"
    );

    let missing = run(github.url.clone(), "acme/no-such-repo").await.unwrap();
    let failed: Vec<&Value> = missing["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail" && c["id"].as_str().unwrap().starts_with("github"))
        .collect();
    assert_eq!(failed.len(), 1, "{missing:#}");
    assert_eq!(failed[0]["id"], "github.repo", "{missing:#}");
    assert!(failed[0]["fix"]
        .as_str()
        .unwrap()
        .contains("LONGTX_GITHUB_REPO"));
    assert!(!failed[0]["fix"]
        .as_str()
        .unwrap()
        .contains("LONGTX_GITHUB_API_URL"));
}
