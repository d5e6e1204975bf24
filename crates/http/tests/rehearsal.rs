//! Rehearsals: the shipped workflow templates' steps run here, in order,
//! with the runner's environment, against a real bare remote, the fake
//! GitHub and the real longtx; the agent actions are stand-ins that keep
//! each action's documented contract (`../shared/reference/real-systems.md`
//! and `docs/github-facts.md`), refusals included:
//! - claude-code-action edits files only when `claude_args` allows Edit or
//!   Write; reads outside the workspace only in an `--add-dir`; refuses a
//!   bot actor not in `allowed_bots`; without `github_token` it leaves
//!   `origin` pointing at a revoked token; with `--json-schema` it returns
//!   `structured_output`;
//! - codex-action reads `prompt-file`, edits only in `workspace-write`,
//!   writes its final message to `output-file`, refuses a bot actor not in
//!   `allow-bot-users`, and drops sudo for the rest of the job.

mod tracking;

use longtx_core::pre_review::PreReviewMode;
use longtx_testkit::github_events::{pr_comment, round_run_completed, run_completed};
use longtx_testkit::workflow_runner::{rehearse, Actions, GithubContext, Rehearsal, Report};
use longtx_testkit::{GitRepo, APP_SLUG};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tracking::{repository_owned_by_alice, TempDir, Tracking};

/// The agent actions as their documentation says they behave.
struct StandIns {
    remote: PathBuf,
    actor: String,
    /// What a reviewing agent answers with `--json-schema`.
    verdict: serde_json::Value,
    calls: Vec<String>,
}

impl StandIns {
    fn new(remote: &Path, actor: &str) -> StandIns {
        StandIns {
            remote: remote.to_owned(),
            actor: actor.to_owned(),
            verdict: serde_json::json!({
                "addresses_bottleneck": true, "minimal_change": true, "preserves_behaviour": true,
                "verdict": "pass", "reasons": ["the HTTP call now runs after commit"]
            }),
            calls: Vec::new(),
        }
    }

    fn bot_allowed(&self, list: &str) -> bool {
        let Some(actor) = self.actor.strip_suffix("[bot]") else {
            return true;
        };
        list.trim() == "*"
            || list
                .split(',')
                .map(|b| b.trim().trim_end_matches("[bot]").to_ascii_lowercase())
                .any(|b| b == actor.to_ascii_lowercase())
    }

    /// The agent's work: the fix the prompt asks for, or in a revision
    /// round the spec the review asked for (on top of the fix).
    fn edit(workspace: &Path, prompt: &str) {
        if prompt.contains("# Revision round") {
            std::fs::create_dir_all(workspace.join("spec/models")).unwrap();
            std::fs::write(
                workspace.join("spec/models/order_spec.rb"),
                "# the warehouse hears about the order after commit\n",
            )
            .unwrap();
            return;
        }
        std::fs::write(
            workspace.join("app/models/order.rb"),
            "class Order\n  after_commit :notify_warehouse\nend\n",
        )
        .unwrap();
    }

    fn claude(
        &mut self,
        with: &BTreeMap<String, String>,
        r: &Rehearsal,
    ) -> Result<BTreeMap<String, String>, String> {
        if !self.bot_allowed(with.get("allowed_bots").map(String::as_str).unwrap_or("")) {
            return Err(format!(
                "Workflow initiated by non-human actor: {}",
                self.actor
            ));
        }
        let args = with.get("claude_args").cloned().unwrap_or_default();
        let tools = flag_values(&args, "--allowedTools");
        let dirs = flag_values(&args, "--add-dir");
        if with.get("github_token").is_none_or(|t| t.is_empty()) {
            // The action swapped in the Claude App's token and revoked it.
            git(
                &r.workspace,
                &[
                    "remote",
                    "set-url",
                    "origin",
                    "https://x-access-token:revoked@github.invalid/acme/monolith.git",
                ],
            );
        }
        let prompt = with.get("prompt").cloned().unwrap_or_default();
        let readable = |path: &Path| {
            path.starts_with(&r.workspace) || dirs.iter().any(|d| path.starts_with(d))
        };
        // Every file the prompt names must be readable by the agent.
        for word in prompt.split_whitespace() {
            let path = Path::new(word.trim_end_matches('.'));
            if path.is_absolute() && path.extension().is_some() && path.exists() && !readable(path)
            {
                return Err(format!(
                    "Read denied: {} is outside the working directories",
                    path.display()
                ));
            }
        }
        let mut outputs = BTreeMap::from([("conclusion".to_owned(), "success".to_owned())]);
        if args.contains("--json-schema") {
            outputs.insert("structured_output".into(), self.verdict.to_string());
            return Ok(outputs);
        }
        // The SDK's messages, the last one the run's result with its cost.
        let execution = r.runner_temp.join("claude-execution-output.json");
        std::fs::write(
            &execution,
            r#"[{"type":"system","subtype":"init"},{"type":"result","subtype":"success","total_cost_usd":0.42,"num_turns":7}]"#,
        )
        .unwrap();
        outputs.insert("execution_file".into(), execution.display().to_string());
        let may = |tool: &str| tools.iter().any(|t| t == tool);
        if may("Edit") || may("Write") || may("MultiEdit") {
            let task =
                std::fs::read_to_string(r.runner_temp.join("longtx/prompt.md")).unwrap_or_default();
            Self::edit(&r.workspace, &task);
            let pattern_file = r.runner_temp.join("longtx/pattern.txt");
            if may("Write") && readable(&pattern_file) {
                std::fs::write(pattern_file, "http-call-inside-transaction\n").unwrap();
            }
        }
        Ok(outputs)
    }

    fn codex(
        &mut self,
        with: &BTreeMap<String, String>,
        r: &Rehearsal,
    ) -> Result<BTreeMap<String, String>, String> {
        if !self.actor.ends_with("[bot]")
            || self.bot_allowed(
                with.get("allow-bot-users")
                    .map(String::as_str)
                    .unwrap_or(""),
            )
        {
        } else {
            return Err(format!("Actor '{}' is not allowed", self.actor));
        }
        let prompt = with
            .get("prompt-file")
            .ok_or("prompt or prompt-file must be provided")?;
        let task = std::fs::read_to_string(prompt).map_err(|e| format!("{prompt}: {e}"))?;
        if with.get("sandbox").map(String::as_str) != Some("read-only") {
            Self::edit(&r.workspace, &task);
        }
        // Codex's session file under its home (`codex-home`, else ~/.codex),
        // as openai/codex writes it: token_count events, `info` null on
        // the ones that carry only rate limits, totals cumulative.
        if let Some(home) = with.get("codex-home").filter(|h| !h.is_empty()) {
            let day = Path::new(home).join("sessions/2026/12/03");
            std::fs::create_dir_all(&day).unwrap();
            let usage = |input: u64, cached: u64, output: u64| {
                serde_json::json!({"type": "event_msg", "payload": {"type": "token_count", "info": {
                    "total_token_usage": {"input_tokens": input, "cached_input_tokens": cached,
                        "output_tokens": output, "reasoning_output_tokens": 0, "total_tokens": input + output}},
                    "rate_limits": null}})
                .to_string()
            };
            let lines = [
                r#"{"type":"session_meta","payload":{"id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}}"#.to_owned(),
                usage(12000, 11000, 800),
                r#"{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{}}}"#.to_owned(),
                usage(26549, 24448, 1590),
            ];
            std::fs::write(
                day.join("rollout-2026-12-03T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"),
                lines.join("\n") + "\n",
            )
            .unwrap();
        }
        let message =
            "Moved the call after commit.\nLongtx-Pattern: http-call-inside-transaction\n";
        if let Some(out) = with.get("output-file").filter(|o| !o.is_empty()) {
            std::fs::write(out, message).unwrap();
        }
        Ok(BTreeMap::from([(
            "final-message".to_owned(),
            message.to_owned(),
        )]))
    }
}

impl Actions for StandIns {
    fn run(
        &mut self,
        uses: &str,
        with: &BTreeMap<String, String>,
        _env: &BTreeMap<String, String>,
        r: &Rehearsal,
    ) -> Result<BTreeMap<String, String>, String> {
        self.calls.push(uses.to_owned());
        let action = uses.split('@').next().unwrap_or(uses);
        match action {
            "actions/checkout" => {
                let git_ref = with
                    .get("ref")
                    .filter(|r| !r.is_empty())
                    .cloned()
                    .unwrap_or("main".into());
                git(
                    Path::new("/"),
                    &[
                        "clone",
                        "--quiet",
                        self.remote.to_str().unwrap(),
                        r.workspace.to_str().unwrap(),
                    ],
                );
                git(&r.workspace, &["checkout", "--quiet", &git_ref]);
                Ok(BTreeMap::new())
            }
            "anthropics/claude-code-action" => self.claude(with, r),
            "openai/codex-action" => self.codex(with, r),
            "ruby/setup-ruby" => Ok(BTreeMap::new()),
            other => Err(format!("no stand-in for {other}")),
        }
    }
}

/// The values of a repeatable CLI flag: each takes the following words up
/// to the next `--flag`, split on commas, quotes removed.
fn flag_values(args: &str, flag: &str) -> Vec<String> {
    let words: Vec<&str> = args.split_whitespace().collect();
    let mut values = Vec::new();
    let mut taking = false;
    for word in words {
        if word.starts_with("--") {
            taking = word == flag;
            continue;
        }
        if taking {
            values.extend(
                word.trim_matches('"')
                    .split(',')
                    .map(|v| v.trim_matches('"').to_owned())
                    .filter(|v| !v.is_empty()),
            );
        }
    }
    values
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn temp(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("longtx-rehearsal-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// The dispatched run's inputs, with longtx's address the test's own.
fn run_inputs(t: &Tracking, workflow: &str) -> BTreeMap<String, String> {
    let run = t
        .github
        .runs()
        .into_iter()
        .rev()
        .find(|r| r["workflow"] == workflow)
        .expect("a dispatched run");
    run["inputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let v = v
                .as_str()
                .unwrap()
                .replace("http://127.0.0.1:8080", &t.app.base_url);
            (k.clone(), v)
        })
        .collect()
}

fn rehearsal(
    t: &Tracking,
    workflow: &Path,
    inputs: BTreeMap<String, String>,
    actor: &str,
    dirs: &TempDir,
) -> Rehearsal {
    let workspace = dirs.0.join("workspace");
    let runner_temp = dirs.0.join("runner-temp");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&runner_temp).unwrap();
    Rehearsal {
        workflow: workflow.to_owned(),
        job: None,
        inputs,
        secrets: BTreeMap::from([
            ("ANTHROPIC_API_KEY".to_owned(), "sk-ant-test".to_owned()),
            ("OPENAI_API_KEY".to_owned(), "sk-test".to_owned()),
        ]),
        vars: BTreeMap::from([
            ("LONGTX_APP_SLUG".to_owned(), APP_SLUG.to_owned()),
            // Codex's prices, US dollars per million tokens.
            (
                "LONGTX_CODEX_USD_PER_MTOK_INPUT".to_owned(),
                "1.25".to_owned(),
            ),
            (
                "LONGTX_CODEX_USD_PER_MTOK_CACHED_INPUT".to_owned(),
                "0.125".to_owned(),
            ),
            (
                "LONGTX_CODEX_USD_PER_MTOK_OUTPUT".to_owned(),
                "10".to_owned(),
            ),
        ]),
        github: GithubContext {
            repository: "acme/monolith".into(),
            ref_name: "main".into(),
            // The run's Actions token, with the workflow's permissions
            // (pushes go to the local remote).
            token: t
                .github
                .actions_token(&std::fs::read_to_string(workflow).unwrap()),
            api_url: t.github.url.clone(),
            server_url: "https://github.example".into(),
            actor: actor.into(),
            run_id: 9001,
        },
        workspace,
        runner_temp,
        extra_env: BTreeMap::from([
            ("GIT_CONFIG_NOSYSTEM".to_owned(), "1".to_owned()),
            ("GIT_CONFIG_GLOBAL".to_owned(), "/dev/null".to_owned()),
        ]),
    }
}

/// Rehearses on a blocking thread (the steps call the fake GitHub and
/// longtx, which answer on this runtime), with the run's actor.
async fn run(r: Rehearsal, repo: &mut GitRepo) -> Report {
    let remote = repo.bare();
    tokio::task::spawn_blocking(move || {
        let mut actions = StandIns::new(&remote, &r.github.actor.clone());
        rehearse(&r, &mut actions).expect("the template is one the rehearsal can run")
    })
    .await
    .unwrap()
}

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.github/workflows")
        .join(name)
}

/// Dispatch, rehearse the fix template, deliver the run's completion:
/// the report, and the job once longtx has acted.
async fn fix_round(
    template: &str,
    actor: &str,
    name: &str,
) -> (Report, Tracking, i64, GitRepo, TempDir) {
    let mut repo = repository_owned_by_alice(name);
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    t.github.set_pull_files(101, &[("app/models/order.rb", 2)]);
    let job = t.job_with_agent_running("admin/users#update").await;
    let dirs = temp(name);
    let r = rehearsal(
        &t,
        &shipped(template),
        run_inputs(&t, "long-transaction-fix.yml"),
        actor,
        &dirs,
    );
    let report = run(r, &mut repo).await;
    t.deliver(
        "workflow_run",
        &format!("{name}-done"),
        &run_completed(job, 9001, "success"),
    )
    .await;
    (report, t, job, repo, dirs)
}

#[tokio::test]
async fn the_claude_template_pushes_the_branch_and_longtx_opens_one_reviewed_pr() {
    let actor = format!("{APP_SLUG}[bot]");
    let (report, t, job, _repo, _dirs) =
        fix_round("long-transaction-fix.yml", &actor, "claude").await;
    assert!(report.succeeded, "{report:?}");
    assert!(
        report.summary.contains(&format!("Pushed longtx/{job}")),
        "{report:?}"
    );
    let reviewed = t
        .wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
        .await;
    assert_eq!(reviewed.state, "in_review", "{reviewed:?}");
    let pulls = t.github.opened_pulls();
    assert_eq!(pulls.len(), 1);
    let body = pulls[0]["body"].as_str().unwrap();
    assert!(body.contains(&format!("<!-- longtx-job: {job} -->")));
    assert!(
        body.contains("`http-call-inside-transaction`"),
        "the trailer names the pattern: {body}"
    );
    assert_eq!(
        t.github.labels_on(pulls[0]["number"].as_u64().unwrap()),
        vec!["longtx"]
    );
    assert_eq!(t.github.review_requests().len(), 1);
    let cost = t.app.store.job_cost(job).await.unwrap();
    assert_eq!(
        (cost.runs, cost.cost_usd, cost.turns),
        (1, 0.42, 7),
        "the run reported its cost"
    );
}

#[tokio::test]
async fn the_template_as_it_was_fails_the_rehearsal_without_github_token() {
    // Without `github_token` the action revokes its own token: the push fails.
    let text = std::fs::read_to_string(shipped("long-transaction-fix.yml")).unwrap();
    let broken: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("github_token:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = temp("broken-template");
    let path = dir.0.join("long-transaction-fix.yml");
    std::fs::write(&path, broken).unwrap();
    let mut repo = repository_owned_by_alice("broken");
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    t.job_with_agent_running("admin/users#update").await;
    let dirs = temp("broken");
    let r = rehearsal(
        &t,
        &path,
        run_inputs(&t, "long-transaction-fix.yml"),
        "alice",
        &dirs,
    );
    let report = run(r, &mut repo).await;
    assert!(!report.succeeded);
    assert!(
        report
            .step("Commit and push longtx/<job_id>")
            .stderr
            .contains("github.invalid"),
        "{report:?}"
    );
}

#[tokio::test]
async fn an_app_dispatch_is_refused_by_the_action_unless_the_slug_is_an_allowed_bot() {
    let mut repo = repository_owned_by_alice("bots");
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    t.job_with_agent_running("admin/users#update").await;
    let dirs = temp("bots");
    let mut r = rehearsal(
        &t,
        &shipped("long-transaction-fix.yml"),
        run_inputs(&t, "long-transaction-fix.yml"),
        "other-app[bot]",
        &dirs,
    );
    r.vars.clear();
    let report = run(r, &mut repo).await;
    assert!(!report.succeeded);
    assert!(
        format!("{report:?}").contains("non-human actor"),
        "{report:?}"
    );
}

#[tokio::test]
async fn the_codex_template_pushes_the_branch_with_the_pattern_and_setup_comes_first() {
    let actor = format!("{APP_SLUG}[bot]");
    let (report, t, job, _repo, _dirs) =
        fix_round("long-transaction-fix.codex.yml", &actor, "codex").await;
    assert!(report.succeeded, "{report:?}");
    // drop-sudo: nothing after the agent may need root.
    let text = std::fs::read_to_string(shipped("long-transaction-fix.codex.yml")).unwrap();
    let after_agent = &text[text.find("uses: openai/codex-action").unwrap()..];
    assert!(
        !after_agent.contains("sudo "),
        "a step after codex-action uses sudo"
    );
    assert!(
        text.find("uses: ruby/setup-ruby").unwrap()
            < text.find("uses: openai/codex-action").unwrap()
    );
    let reviewed = t.wait_for(job, |j| j.state == "in_review").await;
    assert_eq!(reviewed.state, "in_review");
    let body = t.github.opened_pulls()[0]["body"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(body.contains("`http-call-inside-transaction`"), "{body}");
    // The session file's last totals, priced with the repository's vars:
    // (26549 - 24448) x 1.25 + 24448 x 0.125 + 1590 x 10, per million.
    let cost = t.app.store.job_cost(job).await.unwrap();
    assert_eq!((cost.runs, cost.tokens), (1, 26549 + 1590), "{cost:?}");
    assert!((cost.cost_usd - 0.02158225).abs() < 1e-9, "{cost:?}");
}

#[tokio::test]
async fn the_pre_review_template_posts_the_structured_verdict_and_people_are_asked() {
    let mut repo = repository_owned_by_alice("review");
    let t = Tracking::start_pre_review(&repo.bare(), PreReviewMode::On).await;
    t.github.set_pull_files(101, &[("app/models/order.rb", 2)]);
    let job = t.job_with_agent_running("admin/users#update").await;
    tracking::push_fix_branch(&mut repo, job, None);
    t.deliver(
        "workflow_run",
        "review-done",
        &run_completed(job, 9001, "success"),
    )
    .await;
    let waiting = t.wait_for(job, |j| j.state == "pre_review").await;
    assert_eq!(waiting.state, "pre_review");
    // Wait for the reviewing run to be dispatched.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !t
        .github
        .runs()
        .iter()
        .any(|r| r["workflow"] == "long-transaction-pre-review.yml")
    {
        assert!(std::time::Instant::now() < deadline, "no pre-review run");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let dirs = temp("review");
    let r = rehearsal(
        &t,
        &shipped("long-transaction-pre-review.yml"),
        run_inputs(&t, "long-transaction-pre-review.yml"),
        "alice",
        &dirs,
    );
    let report = run(r, &mut repo).await;
    assert!(report.succeeded, "{report:?}");
    let reviewed = t
        .wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
        .await;
    assert_eq!(reviewed.state, "in_review", "{reviewed:?}");
    let checks = t.github.check_runs();
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0]["conclusion"], "success");
    assert_eq!(
        checks[0]["head_sha"],
        reviewed.pr_head_sha.unwrap().as_str()
    );
}

#[tokio::test]
async fn the_claude_template_answers_a_revision_round_on_the_existing_branch() {
    let actor = format!("{APP_SLUG}[bot]");
    let (_, t, job, mut repo, _dirs) =
        fix_round("long-transaction-fix.yml", &actor, "claude-round").await;
    t.wait_for(job, |j| j.state == "in_review").await;
    let number = t.github.opened_pulls()[0]["number"].as_u64().unwrap();
    let branch = format!("longtx/{job}");
    let remote = repo.bare();
    let first_head = git(&remote, &["rev-parse", &branch]);
    // A reviewer asks for a spec.
    let ask = pr_comment(
        number,
        900,
        "alice",
        "User",
        "/longtx revise\nAdd a spec that the warehouse hears after commit.",
    );
    let (_, answer) = t.deliver("issue_comment", "round-ask", &ask).await;
    assert_eq!(answer["outcome"], "revision_requested", "{answer}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !t.github.runs().iter().any(|r| r["inputs"]["round"] == "1") {
        assert!(std::time::Instant::now() < deadline, "no round dispatched");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let inputs = run_inputs(&t, "long-transaction-fix.yml");
    assert_eq!(inputs["round"], "1");
    let dirs = temp("claude-round-2");
    let r = rehearsal(
        &t,
        &shipped("long-transaction-fix.yml"),
        inputs,
        &actor,
        &dirs,
    );
    let report = run(r, &mut repo).await;
    assert!(report.succeeded, "{report:?}");
    let prompt = std::fs::read_to_string(dirs.0.join("runner-temp/longtx/prompt.md")).unwrap();
    assert!(
        prompt.contains("> Add a spec that the warehouse hears after commit."),
        "{prompt}"
    );
    // One more commit on top of the first, not a new branch from main.
    let log = git(
        &remote,
        &["log", "--format=%s%n%b", &format!("main..{branch}")],
    );
    assert_eq!(
        git(
            &remote,
            &["rev-list", "--count", &format!("main..{branch}")]
        ),
        "2",
        "{log}"
    );
    assert_eq!(
        git(&remote, &["rev-parse", &format!("{branch}~1")]),
        first_head
    );
    assert!(
        log.starts_with("Answer review round 1 on admin/users#update"),
        "{log}"
    );
    assert!(log.contains("Longtx-Round: 1"), "{log}");
    let new_head = git(&remote, &["rev-parse", &branch]);

    t.deliver(
        "workflow_run",
        "round-1-done",
        &round_run_completed(job, 1, 9002, "success"),
    )
    .await;
    let reviewed = t
        .wait_for(job, |j| j.pr_head_sha.as_deref() == Some(new_head.as_str()))
        .await;
    assert_eq!(reviewed.pr_head_sha.as_deref(), Some(new_head.as_str()));
    let rounds = t.app.store.rounds_of(job).await.unwrap();
    assert_eq!(rounds[0].state, "pushed", "{rounds:?}");
    assert_eq!(rounds[0].head_after.as_deref(), Some(new_head.as_str()));
}
