//! Rehearsals: the shipped workflow templates' steps run here, in order,
//! with the runner's environment (and its log, masks applied as the runner
//! applies them), against a real bare remote, the fake GitHub and the real
//! longtx. The actions are stand-ins that keep each action's documented
//! contract (`../shared/reference/real-systems.md`), side effects and
//! refusals included:
//! - actions/checkout checks out `ref` (a commit id too) and, unless
//!   `persist-credentials: false`, leaves the token in `.git/config` as an
//!   `http.<server>.extraheader` (its README);
//! - ruby/setup-ruby with `bundler-cache: true` installs the gems into
//!   `$PWD/vendor/bundle` and writes `.bundle/config` (its bundler.js);
//! - actions/upload-artifact zips a folder's files (hidden ones left out by
//!   default), refuses a second artifact of the same name in a run, and
//!   fails on `if-no-files-found: error` when there is nothing;
//! - actions/download-artifact without a token downloads from this run;
//! - claude-code-action edits files only when `claude_args` allows Edit or
//!   Write; reads outside the workspace only in an `--add-dir`; refuses a
//!   bot actor not in `allowed_bots`; rewrites `origin` with `github_token`
//!   and hands that token to the agent's tools (src/github/operations/
//!   git-config.ts), so a hostile agent holds it; with `--json-schema` it
//!   returns `structured_output`;
//! - codex-action reads `prompt-file`, edits only in `workspace-write`,
//!   reaches the network only with `sandbox_workspace_write.network_access`
//!   set through `codex-args`, writes its final message to `output-file`,
//!   refuses a bot actor not in `allow-bot-users`, and drops sudo for the
//!   rest of the job.

mod tracking;

use longtx_core::pre_review::PreReviewMode;
use longtx_testkit::agent_result::git;
use longtx_testkit::github_events::{
    pr_comment, pre_review_run_completed, round_run_completed, run_completed,
};
use longtx_testkit::workflow_runner::{rehearse, Actions, GithubContext, Rehearsal, Report};
use longtx_testkit::{FakeGitHub, GitRepo, APP_SLUG};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tracking::{repository_owned_by_alice, TempDir, Tracking};

/// The agent actions as their documentation says they behave.
struct StandIns {
    remote: PathBuf,
    actor: String,
    github: FakeGitHub,
    /// What a reviewing agent answers with `--json-schema`.
    verdict: serde_json::Value,
    calls: Vec<String>,
    /// Tokens the agents' tools held.
    agent_tokens: Vec<String>,
    /// Whether Codex's sandbox let the agent reach the network.
    codex_network: bool,
    /// The agent edits, then hits its turn cap (the action's step fails).
    hits_turn_cap: bool,
    /// A prompt-injected agent: it also points `core.fsmonitor` and
    /// `diff.external` in `.git/config` at a script of its own, which git
    /// would run during the collection (`git add`, `git diff`).
    plants_git_config: bool,
    /// Whether each agent step's environment asked Claude Code to scrub the
    /// environment of the code the agent runs.
    scrubbed: Vec<bool>,
}

impl StandIns {
    fn new(remote: &Path, actor: &str, github: &FakeGitHub) -> StandIns {
        StandIns {
            remote: remote.to_owned(),
            actor: actor.to_owned(),
            github: github.clone(),
            agent_tokens: Vec::new(),
            codex_network: false,
            hits_turn_cap: false,
            plants_git_config: false,
            scrubbed: Vec::new(),
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
        env: &BTreeMap<String, String>,
        r: &Rehearsal,
    ) -> Result<BTreeMap<String, String>, String> {
        self.scrubbed.push(
            env.get("CLAUDE_CODE_SUBPROCESS_ENV_SCRUB")
                .is_some_and(|v| v == "1"),
        );
        if !self.bot_allowed(with.get("allowed_bots").map(String::as_str).unwrap_or("")) {
            return Err(format!(
                "Workflow initiated by non-human actor: {}",
                self.actor
            ));
        }
        let args = with.get("claude_args").cloned().unwrap_or_default();
        let tools = flag_values(&args, "--allowedTools");
        let dirs = flag_values(&args, "--add-dir");
        let token = with.get("github_token").cloned().unwrap_or_default();
        if token.is_empty() {
            // Without a token the action exchanges an OIDC token for the
            // Claude App's, which needs `id-token: write`.
            return Err("Could not fetch an OIDC token. Did you remember to add `id-token: write` to your workflow permissions?".into());
        }
        // The action points origin at the token it was given; the agent's
        // tools see it (GITHUB_TOKEN in their environment).
        git(
            &r.workspace,
            &[
                "remote",
                "set-url",
                "origin",
                &format!("https://x-access-token:{token}@github.example/acme/monolith.git"),
            ],
        );
        self.agent_tokens.push(token);
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
            r#"[{"type":"system","subtype":"init"},{"type":"result","subtype":"success","total_cost_usd":0.42,"num_turns":7,
                "usage":{"input_tokens":1200,"cache_creation_input_tokens":3000,"cache_read_input_tokens":40000,"output_tokens":900}}]"#,
        )
        .unwrap();
        outputs.insert("execution_file".into(), execution.display().to_string());
        let may = |tool: &str| tools.iter().any(|t| t == tool);
        if may("Edit") || may("Write") || may("MultiEdit") {
            let task =
                std::fs::read_to_string(r.runner_temp.join("longtx/prompt.md")).unwrap_or_default();
            Self::edit(&r.workspace, &task);
            if self.plants_git_config {
                Self::plant_git_config(r);
            }
            let pattern_file = r.runner_temp.join("longtx/pattern.txt");
            if self.hits_turn_cap {
                return Err("Reached maximum number of turns (40)".into());
            }
            if may("Write") && readable(&pattern_file) {
                std::fs::write(pattern_file, "http-call-inside-transaction\n").unwrap();
                std::fs::write(
                    r.runner_temp.join("longtx/summary.md"),
                    "Moved the warehouse call after the commit.\n",
                )
                .unwrap();
            }
        }
        Ok(outputs)
    }

    /// What an injected agent can do with Write or a spec it runs: git
    /// runs `core.fsmonitor` during `git add` and `diff.external` during
    /// `git diff` (git-config(1)); the script leaves a mark and would
    /// rewrite the patch.
    fn plant_git_config(r: &Rehearsal) {
        let script = r.runner_temp.join("planted.sh");
        let mark = r.runner_temp.join("planted-ran");
        std::fs::write(
            &script,
            format!("#!/bin/sh\ntouch '{}'\nexit 0\n", mark.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let config = r.workspace.join(".git/config");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!(
            "[core]\n\tfsmonitor = {0}\n[diff]\n\texternal = {0}\n",
            script.display()
        ));
        std::fs::write(config, text).unwrap();
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
        // `codex-args` as a JSON array (the action's parsing), each `-c`
        // a config override.
        let args: Vec<String> = with
            .get("codex-args")
            .filter(|a| a.trim_start().starts_with('['))
            .map(|a| serde_json::from_str(a).expect("codex-args is a JSON array"))
            .unwrap_or_default();
        self.codex_network = with.get("sandbox").map(String::as_str) == Some("workspace-write")
            && args
                .windows(2)
                .any(|w| w[0] == "-c" && w[1] == "sandbox_workspace_write.network_access=true");
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

impl StandIns {
    fn upload(
        &mut self,
        with: &BTreeMap<String, String>,
        r: &Rehearsal,
    ) -> Result<BTreeMap<String, String>, String> {
        let name = with.get("name").cloned().unwrap_or("artifact".into());
        let days: u32 = with
            .get("retention-days")
            .map(|d| {
                d.parse()
                    .map_err(|_| "retention-days is not a number".to_owned())
            })
            .transpose()?
            .unwrap_or(90);
        if !(1..=90).contains(&days) {
            return Err(format!("retention-days {days} is outside 1..90"));
        }
        let root = PathBuf::from(
            with.get("path")
                .ok_or("Input required and not supplied: path")?,
        );
        let hidden = with.get("include-hidden-files").map(String::as_str) == Some("true");
        let mut files = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                let dot = entry.file_name().to_string_lossy().starts_with('.');
                if dot && !hidden {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let rel = path
                        .strip_prefix(&root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    files.push((rel, std::fs::read(&path).unwrap()));
                }
            }
        }
        if files.is_empty() {
            return match with.get("if-no-files-found").map(String::as_str).unwrap_or("warn") {
                "error" => Err(format!("No files were found with the provided path: {}. No artifacts will be uploaded.", root.display())),
                _ => Ok(BTreeMap::new()),
            };
        }
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(n, c)| (n.as_str(), c.as_slice()))
            .collect();
        let zip = longtx_github::zip::write(&refs);
        let overwrite = with.get("overwrite").map(String::as_str) == Some("true");
        let id = self
            .github
            .store_artifact(r.github.run_id, &name, zip, overwrite)?;
        Ok(BTreeMap::from([("artifact-id".to_owned(), id.to_string())]))
    }

    fn download(
        &mut self,
        with: &BTreeMap<String, String>,
        r: &Rehearsal,
    ) -> Result<BTreeMap<String, String>, String> {
        let name = with.get("name").ok_or("download-artifact: name")?;
        let dest = with
            .get("path")
            .map(PathBuf::from)
            .unwrap_or(r.workspace.clone());
        let client = self.github.client(std::time::Duration::from_secs(5));
        let repo: longtx_github::RepoName = "acme/monolith".parse().unwrap();
        let run_id = r.github.run_id;
        let files = tokio::runtime::Handle::current().block_on(async {
            use longtx_github::GitHub;
            let artifacts = client
                .run_artifacts(&repo, run_id)
                .await
                .map_err(|e| e.to_string())?;
            let artifact = artifacts.iter().find(|a| &a.name == name).ok_or(format!(
                "Unable to download artifact(s): Artifact not found for name: {name}"
            ))?;
            let zip = client
                .download_artifact(&repo, artifact.id, 1 << 24)
                .await
                .map_err(|e| e.to_string())?;
            longtx_github::zip::read(&zip, rehearsal_limits()).map_err(|e| e.to_string())
        })?;
        for (path, content) in files {
            let path = dest.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        Ok(BTreeMap::new())
    }
}

fn base64_encode(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

impl Actions for StandIns {
    fn run(
        &mut self,
        uses: &str,
        with: &BTreeMap<String, String>,
        env: &BTreeMap<String, String>,
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
                if with.get("persist-credentials").map(String::as_str) != Some("false") {
                    // README: "The auth token is persisted in the local git config."
                    let basic = base64_encode(&format!("x-access-token:{}", r.github.token));
                    git(
                        &r.workspace,
                        &[
                            "config",
                            "--local",
                            "http.https://github.example/.extraheader",
                            &format!("AUTHORIZATION: basic {basic}"),
                        ],
                    );
                }
                Ok(BTreeMap::new())
            }
            "anthropics/claude-code-action" => self.claude(with, env, r),
            "openai/codex-action" => self.codex(with, r),
            "ruby/setup-ruby" => {
                if with.get("bundler-cache").map(String::as_str) == Some("true") {
                    // bundler.js: `bundle config --local path $PWD/vendor/bundle`,
                    // then `bundle install` into it.
                    let gem = r
                        .workspace
                        .join("vendor/bundle/ruby/3.3.0/gems/rack-3.1.8/lib");
                    std::fs::create_dir_all(&gem).unwrap();
                    std::fs::write(gem.join("rack.rb"), "module Rack; end\n").unwrap();
                    std::fs::create_dir_all(r.workspace.join(".bundle")).unwrap();
                    std::fs::write(
                        r.workspace.join(".bundle/config"),
                        "---\nBUNDLE_PATH: \"vendor/bundle\"\nBUNDLE_DEPLOYMENT: \"true\"\n",
                    )
                    .unwrap();
                }
                Ok(BTreeMap::new())
            }
            "actions/upload-artifact" => self.upload(with, r),
            "actions/download-artifact" => self.download(with, r),
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

fn temp(name: &str) -> TempDir {
    TempDir::new(&format!("rehearsal-{name}"))
}

/// The newest run dispatched for `workflow`: its id and inputs, with
/// longtx's address the test's own.
fn dispatched(t: &Tracking, workflow: &str) -> (u64, BTreeMap<String, String>) {
    let run = t
        .github
        .runs()
        .into_iter()
        .rev()
        .find(|r| r["workflow"] == workflow)
        .expect("a dispatched run");
    let inputs = run["inputs"]
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
        .collect();
    (run["id"].as_u64().unwrap(), inputs)
}

fn rehearsal(
    t: &Tracking,
    workflow: &Path,
    (run_id, inputs): (u64, BTreeMap<String, String>),
    actor: &str,
    dirs: &TempDir,
) -> Rehearsal {
    let workspace = dirs.join("workspace");
    let runner_temp = dirs.join("runner-temp");
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
            // The run's Actions token, with the job's permissions.
            token: t
                .github
                .actions_token(&std::fs::read_to_string(workflow).unwrap()),
            api_url: t.github.url.clone(),
            server_url: "https://github.example".into(),
            actor: actor.into(),
            run_id,
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
async fn run(r: Rehearsal, t: &Tracking, repo: &mut GitRepo) -> (Report, StandIns) {
    run_with(r, t, repo, |_| {}).await
}

/// As [`run`], with the stand-ins adjusted first.
async fn run_with(
    r: Rehearsal,
    t: &Tracking,
    repo: &mut GitRepo,
    adjust: impl FnOnce(&mut StandIns) + Send + 'static,
) -> (Report, StandIns) {
    let remote = repo.bare_path();
    let github = t.github.clone();
    tokio::task::spawn_blocking(move || {
        let mut actions = StandIns::new(&remote, &r.github.actor.clone(), &github);
        adjust(&mut actions);
        let report = rehearse(&r, &mut actions).expect("the template is one the rehearsal can run");
        (report, actions)
    })
    .await
    .unwrap()
}

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.github/workflows")
        .join(name)
}

/// What holds for every agent run: the Actions token may not write, the
/// checkout keeps no credentials, the gems stay out of the artifact, and
/// no step's log shows a token.
async fn the_run_holds_no_power_and_leaks_nothing(
    report: &Report,
    r_token: &str,
    job_token: &str,
    t: &Tracking,
    dirs: &TempDir,
) {
    assert!(report.succeeded, "{report:?}");
    assert_eq!(
        report.permissions["contents"], "read",
        "{:?}",
        report.permissions
    );
    assert!(
        !["write", "admin"]
            .iter()
            .any(|w| report.permissions.to_string().contains(w)),
        "no write permission: {:?}",
        report.permissions
    );
    let config = std::fs::read_to_string(dirs.join("workspace/.git/config")).unwrap();
    assert!(
        !config.contains("extraheader"),
        "checkout left credentials: {config}"
    );
    for step in &report.steps {
        for (what, token) in [("the job token", job_token), ("the Actions token", r_token)] {
            assert!(
                !step.log.contains(token),
                "{what} is in the log of {:?}:\n{}",
                step.name,
                step.log
            );
        }
    }
    // What a hostile agent would do with the token its tools hold.
    let status = t
        .app
        .client
        .post(format!("{}/repos/acme/monolith/git/refs", t.github.url))
        .bearer_auth(r_token)
        .json(&serde_json::json!({"ref": "refs/heads/main-evil", "sha": "0".repeat(40)}))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 403, "the run's token may not write");
}

/// The files of the run's uploaded result.
async fn uploaded(t: &Tracking, run_id: u64) -> BTreeMap<String, Vec<u8>> {
    use longtx_github::GitHub;
    let client = t.github.client(std::time::Duration::from_secs(5));
    let repo: longtx_github::RepoName = "acme/monolith".parse().unwrap();
    let artifacts = client.run_artifacts(&repo, run_id).await.unwrap();
    assert_eq!(
        artifacts
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>(),
        ["longtx-result"]
    );
    let zip = client
        .download_artifact(&repo, artifacts[0].id, 1 << 24)
        .await
        .unwrap();
    longtx_github::zip::read(&zip, rehearsal_limits()).unwrap()
}

/// Round 0 and round 1 of a fix template, end to end: dispatch, rehearse,
/// the run's completion, longtx's commit and PR; then a person asks for a
/// spec, round 1 is rehearsed on the new head, and longtx commits again.
async fn rounds_0_and_1(template: &str, name: &str) -> (Tracking, i64, Vec<StandIns>) {
    let actor = format!("{APP_SLUG}[bot]");
    let mut repo = repository_owned_by_alice(name);
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    t.github.set_pull_files(101, &[("app/models/order.rb", 2)]);
    let job = t.job_with_agent_running("admin/users#update").await;
    let mut stand_ins = Vec::new();

    // Round 0.
    let dirs = temp(&format!("{name}-0"));
    let (run_id, inputs) = dispatched(&t, "long-transaction-fix.yml");
    let job_token = inputs["prompt_token"].clone();
    let r = rehearsal(
        &t,
        &shipped(template),
        (run_id, inputs.clone()),
        &actor,
        &dirs,
    );
    let actions_token = r.github.token.clone();
    let (report, actions) = run(r, &t, &mut repo).await;
    the_run_holds_no_power_and_leaks_nothing(&report, &actions_token, &job_token, &t, &dirs).await;
    let files = uploaded(&t, run_id).await;
    let patch = String::from_utf8_lossy(&files["patch.diff"]).into_owned();
    assert!(patch.contains("app/models/order.rb"), "{patch}");
    assert!(
        !patch.contains("vendor/bundle") && !patch.contains(".bundle/config"),
        "the gems are not the agent's work: {patch}"
    );
    let result: serde_json::Value = serde_json::from_slice(&files["result.json"]).unwrap();
    assert_eq!(result["base"], inputs["base_sha"].as_str());
    stand_ins.push(actions);
    t.deliver(
        "workflow_run",
        &format!("{name}-0-done"),
        &run_completed(job, run_id, "success"),
    )
    .await;
    let reviewed = t
        .wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
        .await;
    assert_eq!(reviewed.state, "in_review", "{reviewed:?}");
    let pulls = t.github.opened_pulls();
    assert_eq!(pulls.len(), 1);
    let number = pulls[0]["number"].as_u64().unwrap();
    assert_eq!(
        t.github.api_commits().len(),
        1,
        "one longtx commit for round 0"
    );
    let first_head = t.branch_head(&mut repo, job).unwrap();

    // A reviewer asks for a spec: round 1 on the new head.
    let ask = pr_comment(
        number,
        900,
        "alice",
        "User",
        "/longtx revise\nAdd a spec that the warehouse hears after commit.",
    );
    let (_, answer) = t
        .deliver("issue_comment", &format!("{name}-ask"), &ask)
        .await;
    assert_eq!(answer["outcome"], "revision_requested", "{answer}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !t.github.runs().iter().any(|r| r["inputs"]["round"] == "1") {
        assert!(std::time::Instant::now() < deadline, "no round dispatched");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (run_1, inputs) = dispatched(&t, "long-transaction-fix.yml");
    assert_eq!(inputs["round"], "1");
    assert_eq!(
        inputs["base_sha"], first_head,
        "round 1 starts from the head longtx committed"
    );
    let job_token = inputs["prompt_token"].clone();
    let dirs = temp(&format!("{name}-1"));
    let r = rehearsal(&t, &shipped(template), (run_1, inputs), &actor, &dirs);
    let actions_token = r.github.token.clone();
    let (report, actions) = run(r, &t, &mut repo).await;
    the_run_holds_no_power_and_leaks_nothing(&report, &actions_token, &job_token, &t, &dirs).await;
    let prompt = std::fs::read_to_string(dirs.join("runner-temp/longtx/prompt.md")).unwrap();
    assert!(
        prompt.contains("> Add a spec that the warehouse hears after commit."),
        "{prompt}"
    );
    stand_ins.push(actions);
    // Wait until longtx recorded the round's run, as GitHub's event comes later.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while t.app.store.rounds_of(job).await.unwrap()[0].state != "running" {
        assert!(std::time::Instant::now() < deadline, "the round never ran");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    t.deliver(
        "workflow_run",
        &format!("{name}-1-done"),
        &round_run_completed(job, 1, run_1, "success"),
    )
    .await;
    let moved = t
        .wait_for(job, |j| {
            j.pr_head_sha.as_deref() != Some(first_head.as_str())
        })
        .await;
    let commits = t.github.api_commits();
    assert_eq!(commits.len(), 2, "one longtx commit per round: {commits:?}");
    assert_eq!(commits[1]["parent"], first_head.as_str());
    assert_eq!(moved.pr_head_sha.as_deref(), commits[1]["oid"].as_str());
    assert!(commits[1]["message"]
        .as_str()
        .unwrap()
        .contains("Longtx-Round: 1"));
    let rounds = t.app.store.rounds_of(job).await.unwrap();
    assert_eq!(rounds[0].state, "pushed", "{rounds:?}");
    assert_eq!(t.github.opened_pulls().len(), 1, "the PR is opened once");
    (t, job, stand_ins)
}

/// A monolith whose `bin/rails db:prepare` does what Rails before 7.1
/// does on an empty test database: runs the migrations and dumps
/// db/schema.rb again (here with a new timestamp).
fn repository_whose_setup_rewrites_the_schema(name: &str) -> GitRepo {
    let mut repo = repository_owned_by_alice(name);
    repo.commit(
        &[
            ("db/schema.rb", "ActiveRecord::Schema[7.0].define(version: 2026_01_01) do\nend\n"),
            (
                "bin/rails",
                "#!/bin/sh\nif [ \"$1\" = db:prepare ]; then\n  printf 'ActiveRecord::Schema[7.0].define(version: 2026_12_05) do\\nend\\n' > db/schema.rb\nfi\n",
            ),
        ],
        "Alice",
        "alice@example.com",
        20,
    );
    repo.git(&["update-index", "--chmod=+x", "bin/rails"]);
    repo.git(&["commit", "--quiet", "-m", "bin/rails is executable"]);
    repo.bare();
    repo
}

/// The agent's step and what the collection reads are apart: the agent's
/// code runs with a scrubbed environment, setup's own writes are a
/// baseline the patch is taken against, and a git config the agent plants
/// runs nothing when the result is collected.
#[tokio::test]
async fn the_claude_template_hands_over_only_the_agents_edit_collected_with_a_clean_git() {
    let actor = format!("{APP_SLUG}[bot]");
    let mut repo = repository_whose_setup_rewrites_the_schema("clean-collect");
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    let _job = t.job_with_agent_running("admin/users#update").await;
    let dirs = temp("clean-collect");
    let (run_id, inputs) = dispatched(&t, "long-transaction-fix.yml");
    let r = rehearsal(
        &t,
        &shipped("long-transaction-fix.yml"),
        (run_id, inputs),
        &actor,
        &dirs,
    );
    let (report, actions) = run_with(r, &t, &mut repo, |s| s.plants_git_config = true).await;
    assert!(report.succeeded, "{report:?}");
    assert_eq!(actions.scrubbed, [true], "the agent's code runs scrubbed");
    let files = uploaded(&t, run_id).await;
    let patch = String::from_utf8_lossy(&files["patch.diff"]).into_owned();
    assert!(patch.contains("app/models/order.rb"), "{patch}");
    assert!(
        !patch.contains("db/schema.rb"),
        "what setup wrote is not the agent's work: {patch}"
    );
    assert!(
        !dirs.join("runner-temp/planted-ran").exists(),
        "the collection ran the agent's planted git program"
    );
    // Root (as CI runs this rehearsal) keeps its power and says so; a
    // runner user with passwordless sudo loses it.
    let drop = report.step("Drop sudo before the agent starts");
    assert_eq!(drop.outcome.as_str(), "success", "{}", drop.log);
    assert!(
        drop.log.contains("runs as root")
            || drop.log.contains("sudo dropped")
            || drop.log.contains("no passwordless sudo"),
        "{}",
        drop.log
    );
}

#[tokio::test]
async fn the_claude_template_proposes_and_longtx_commits_round_0_and_round_1() {
    let (t, job, _) = rounds_0_and_1("long-transaction-fix.yml", "claude").await;
    let body = t.github.opened_pulls()[0]["body"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(body.contains(&t.app.installation.body_marker(job)));
    assert!(
        body.contains("`http-call-inside-transaction`"),
        "the result names the pattern: {body}"
    );
    assert!(
        body.contains("> Moved the warehouse call after the commit."),
        "{body}"
    );
    let cost = t.app.store.job_cost(job).await.unwrap();
    assert_eq!(
        (cost.runs, cost.cost_usd, cost.turns),
        (2, 0.84, 14),
        "both runs' cost, from their results"
    );
    // Input counts the cache's reads and writes: 1200 + 3000 + 40000, plus
    // 900 out; twice.
    assert_eq!(cost.tokens, 2 * (1200 + 3000 + 40000 + 900), "{cost:?}");
}

#[tokio::test]
async fn the_codex_template_proposes_with_the_database_in_reach_and_setup_first() {
    let (t, job, stand_ins) = rounds_0_and_1("long-transaction-fix.codex.yml", "codex").await;
    assert!(
        stand_ins.iter().all(|s| s.codex_network),
        "the specs reach the database service"
    );
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
    let body = t.github.opened_pulls()[0]["body"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(body.contains("`http-call-inside-transaction`"), "{body}");
    assert!(body.contains("> Moved the call after commit."), "{body}");
    // The session file's last totals, priced with the repository's vars:
    // (26549 - 24448) x 1.25 + 24448 x 0.125 + 1590 x 10, per million; twice.
    let cost = t.app.store.job_cost(job).await.unwrap();
    assert_eq!(
        (cost.runs, cost.tokens, cost.turns),
        (2, 2 * (26549 + 1590), 2 * 2),
        "{cost:?}"
    );
    assert!((cost.cost_usd - 2.0 * 0.02158225).abs() < 1e-9, "{cost:?}");
}

#[tokio::test]
async fn an_older_template_is_refused_at_dispatch_with_a_reason_that_names_the_new_one() {
    // The copy on the default branch predates `base_sha`.
    let text = std::fs::read_to_string(shipped("long-transaction-fix.yml")).unwrap();
    let start = text.find("      base_sha:").unwrap();
    let end = start + text[start..].find("type: string").unwrap() + "type: string\n".len();
    let old = format!("{}{}", &text[..start], &text[end..]);
    let mut repo = repository_owned_by_alice("old-template");
    repo.commit(
        &[(".github/workflows/long-transaction-fix.yml", &old)],
        "Alice",
        "alice@example.com",
        1,
    );
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    let hook = longtx_testkit::payloads::AmWebhook::with(
        longtx_testkit::payloads::AmAlert::firing("admin/users#update")
            .table("orders")
            .value(150.0),
    );
    let body: serde_json::Value = t
        .app
        .post_json("/webhooks/alertmanager", &hook.to_json())
        .await
        .json()
        .await
        .unwrap();
    let job = body["results"][0]["job_id"].as_i64().unwrap();
    let failed = t.wait_for(job, |j| j.state == "failed").await;
    let reason = failed.state_reason.unwrap_or_default();
    assert!(reason.contains("base_sha"), "{reason}");
    assert!(
        reason.contains(".github/workflows/long-transaction-fix.yml"),
        "{reason}"
    );
    assert!(t.github.runs().is_empty());
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
        dispatched(&t, "long-transaction-fix.yml"),
        "other-app[bot]",
        &dirs,
    );
    r.vars.clear();
    let (report, _) = run(r, &t, &mut repo).await;
    let agent = report.step("agent");
    assert_eq!(agent.outcome.as_str(), "failure", "{report:?}");
    assert!(agent.stderr.contains("non-human actor"), "{report:?}");
    // The run still reports how it ended: longtx says why there is no PR.
    let run_id = dispatched(&t, "long-transaction-fix.yml").0;
    let job: i64 = dispatched(&t, "long-transaction-fix.yml").1["job_id"]
        .parse()
        .unwrap();
    t.github.complete_run(run_id, "success");
    let ended = t.wait_for(job, |j| j.state == "no_pr").await;
    let reason = ended.state_reason.unwrap_or_default();
    assert!(
        reason.contains("the agent changed nothing (its step failed"),
        "{reason}"
    );
}

#[tokio::test]
async fn an_agent_cut_short_by_its_turn_cap_keeps_its_work_and_the_pr_says_so() {
    let actor = format!("{APP_SLUG}[bot]");
    let mut repo = repository_owned_by_alice("turn-cap");
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    t.github.set_pull_files(101, &[("app/models/order.rb", 2)]);
    let job = t.job_with_agent_running("admin/users#update").await;
    let dirs = temp("turn-cap");
    let (run_id, inputs) = dispatched(&t, "long-transaction-fix.yml");
    let r = rehearsal(
        &t,
        &shipped("long-transaction-fix.yml"),
        (run_id, inputs),
        &actor,
        &dirs,
    );
    let (report, _) = run_with(r, &t, &mut repo, |s| s.hits_turn_cap = true).await;
    assert_eq!(
        report.step("agent").outcome.as_str(),
        "failure",
        "{report:?}"
    );
    assert!(
        report.succeeded,
        "the result is collected all the same: {report:?}"
    );
    t.deliver(
        "workflow_run",
        "turn-cap-done",
        &run_completed(job, run_id, "success"),
    )
    .await;
    t.wait_for(job, |j| j.state == "in_review").await;
    let body = t.github.opened_pulls()[0]["body"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        body.contains("ended early, at its turn or budget cap"),
        "{body}"
    );
    assert_eq!(t.github.api_commits().len(), 1);
}

#[tokio::test]
async fn the_pre_review_template_uploads_the_verdict_longtx_reads_it_and_the_check_job_publishes_it(
) {
    let mut repo = repository_owned_by_alice("review");
    let t = Tracking::start_pre_review(&repo.bare(), PreReviewMode::On).await;
    t.github.set_pull_files(101, &[("app/models/order.rb", 2)]);
    let job = t.job_with_agent_running("admin/users#update").await;
    let run_id = t.propose_fix(&mut repo, job, None);
    t.deliver(
        "workflow_run",
        "review-done",
        &run_completed(job, run_id, "success"),
    )
    .await;
    let waiting = t.wait_for(job, |j| j.state == "pre_review").await;
    assert_eq!(waiting.state, "pre_review");
    let head = t.branch_head(&mut repo, job).unwrap();
    // Wait for the reviewing run to be dispatched and recorded.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while t.job(job).await.pre_review_state.as_deref() != Some("dispatched") {
        assert!(std::time::Instant::now() < deadline, "no pre-review run");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (review_run, inputs) = dispatched(&t, "long-transaction-pre-review.yml");
    t.wait_for_pre_review_run(job, &head, review_run).await;
    let job_token = inputs["prompt_token"].clone();
    let dirs = temp("review");
    let mut r = rehearsal(
        &t,
        &shipped("long-transaction-pre-review.yml"),
        (review_run, inputs.clone()),
        "alice",
        &dirs,
    );
    r.job = Some("review".into());
    let actions_token = r.github.token.clone();
    let (report, _) = run(r, &t, &mut repo).await;
    the_run_holds_no_power_and_leaks_nothing(&report, &actions_token, &job_token, &t, &dirs).await;
    assert!(
        t.github.check_runs().is_empty(),
        "the reviewing job cannot publish checks"
    );

    t.github.complete_run(review_run, "success");
    t.deliver(
        "workflow_run",
        "review-run-done",
        &pre_review_run_completed(job, &head, review_run, "success"),
    )
    .await;
    let reviewed = t
        .wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
        .await;
    assert_eq!(reviewed.state, "in_review", "{reviewed:?}");
    let cost = t.app.store.job_cost(job).await.unwrap();
    assert_eq!(
        cost.runs, 2,
        "the fix and the review each count once: {cost:?}"
    );

    // The check job: no agent, `checks: write`, reads the verdict from this run.
    let dirs = temp("review-check");
    let mut r = rehearsal(
        &t,
        &shipped("long-transaction-pre-review.yml"),
        (review_run, inputs),
        "alice",
        &dirs,
    );
    r.job = Some("check".into());
    r.github.token = t.github.actions_token_for(
        &std::fs::read_to_string(shipped("long-transaction-pre-review.yml")).unwrap(),
        Some("check"),
    );
    let (report, _) = run(r, &t, &mut repo).await;
    assert!(report.succeeded, "{report:?}");
    let checks = t.github.check_runs();
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0]["conclusion"], "success");
    assert_eq!(checks[0]["head_sha"], head.as_str());
}

/// What the rehearsals read of an artifact: what longtx reads, roomier.
fn rehearsal_limits() -> longtx_github::zip::Limits<'static> {
    longtx_github::zip::Limits {
        wanted: &["result.json", "patch.diff"],
        max_entry: 1 << 24,
        max_total: 1 << 24,
        max_entries: 64,
    }
}

/// A throwaway account set up like the runner user of GitHub's hosted
/// images: passwordless sudo from its own file in /etc/sudoers.d, member of
/// `sudo` and `docker`, and a root-owned socket the docker group may write
/// (the Docker socket's shape). Removed when dropped.
struct HostedRunnerUser {
    name: String,
    socket: PathBuf,
    made_docker_group: bool,
}

/// Runs an administrator's command: as root directly, else through
/// `sudo -n` (GitHub's runner user); its success and output.
fn admin(args: &[&str]) -> (bool, String) {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false);
    let mut command = if root {
        std::process::Command::new(args[0])
    } else {
        let mut c = std::process::Command::new("sudo");
        c.arg("-n").arg(args[0]);
        c
    };
    let out = command.args(&args[1..]).output().unwrap_or_else(|e| {
        panic!("{args:?}: {e}: this test needs root or passwordless sudo, and `sudo` and `setfacl` (scripts/install-test-deps installs them)")
    });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

impl HostedRunnerUser {
    fn create() -> HostedRunnerUser {
        for tool in ["sudo", "setfacl", "runuser", "setpriv"] {
            assert!(
                std::process::Command::new("sh")
                    .args(["-c", &format!("command -v {tool}")])
                    .output()
                    .unwrap()
                    .status
                    .success(),
                "this test needs `{tool}` (scripts/install-test-deps installs sudo and acl)"
            );
        }
        let name = format!("ltxrun{}", std::process::id());
        let made_docker_group = !admin(&["getent", "group", "docker"]).0;
        if made_docker_group {
            assert!(admin(&["groupadd", "docker"]).0);
        }
        let (made, why) = admin(&[
            "useradd",
            "--no-create-home",
            "--user-group",
            "--groups",
            "sudo,docker",
            &name,
        ]);
        assert!(made, "useradd: {why}");
        let sudoers = format!("/etc/sudoers.d/{name}");
        let (wrote, why) = admin(&[
            "sh",
            "-c",
            &format!(
                "printf '%s ALL=(ALL) NOPASSWD:ALL\\n' {name} > {sudoers} && chmod 0440 {sudoers}"
            ),
        ]);
        assert!(wrote, "{why}");
        let socket = PathBuf::from(format!("/run/{name}.sock"));
        let (bound, why) = admin(&[
            "python3",
            "-c",
            "import grp, os, socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\nos.chown(sys.argv[1], 0, grp.getgrnam('docker').gr_gid)\nos.chmod(sys.argv[1], 0o660)",
            socket.to_str().unwrap(),
        ]);
        assert!(bound, "{why}");
        HostedRunnerUser {
            name,
            socket,
            made_docker_group,
        }
    }

    /// `args` run as this user, with the groups it has now.
    fn run(&self, args: &[&str]) -> (bool, String) {
        let mut all = vec!["runuser", "-u", self.name.as_str(), "--"];
        all.extend_from_slice(args);
        admin(&all)
    }
}

impl Drop for HostedRunnerUser {
    fn drop(&mut self) {
        admin(&["rm", "-f", &format!("/etc/sudoers.d/{}", self.name)]);
        admin(&["rm", "-f", self.socket.to_str().unwrap()]);
        admin(&["userdel", &self.name]);
        admin(&["groupdel", &self.name]);
        if self.made_docker_group {
            admin(&["groupdel", "docker"]);
        }
    }
}

/// The Claude fix template's "Drop sudo" step, its script run for real as
/// a user with a hosted runner's power (the rehearsal runs as root, where
/// the step only warns): afterwards sudo answers no, and a process that
/// still holds the docker group (as the runner's processes do: group
/// changes reach only new logins) cannot write the root-owned socket.
#[test]
fn the_drop_sudo_step_takes_a_hosted_runners_power_away_for_real() {
    let template = std::fs::read_to_string(shipped("long-transaction-fix.yml")).unwrap();
    let script = longtx_testkit::workflow_runner::step_script(
        &template,
        "Drop sudo before the agent starts",
    )
    .expect("the template has the step");
    let user = HostedRunnerUser::create();
    assert!(
        user.run(&["sudo", "-n", "true"]).0,
        "the user starts with passwordless sudo"
    );
    let dirs = temp("drop-sudo");
    let runner_temp = dirs.join("runner-temp");
    std::fs::create_dir_all(runner_temp.join("longtx-pristine")).unwrap();
    std::fs::write(runner_temp.join("longtx-pristine/config"), "[core]\n").unwrap();
    std::fs::write(dirs.join("step.sh"), &script).unwrap();
    admin(&["chown", "-R", &user.name, dirs.path().to_str().unwrap()]);

    // As the runner runs a `run:` step: bash --noprofile --norc -eo pipefail.
    let (ran, log) = user.run(&[
        "env",
        &format!("RUNNER_TEMP={}", runner_temp.display()),
        "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
        "bash",
        "--noprofile",
        "--norc",
        "-eo",
        "pipefail",
        dirs.join("step.sh").to_str().unwrap(),
    ]);
    assert!(ran, "the step failed: {log}");
    assert!(
        log.contains(&format!("sudo dropped for {}", user.name)),
        "{log}"
    );

    assert!(!user.run(&["sudo", "-n", "true"]).0, "sudo still answers");
    let (uid, gid, docker) = (
        admin(&["id", "-u", &user.name]).1.trim().to_owned(),
        admin(&["id", "-g", &user.name]).1.trim().to_owned(),
        admin(&["getent", "group", "docker"])
            .1
            .split(':')
            .nth(2)
            .unwrap()
            .to_owned(),
    );
    let (writes, _) = admin(&[
        "setpriv",
        &format!("--reuid={uid}"),
        &format!("--regid={gid}"),
        &format!("--groups={docker}"),
        "--",
        "test",
        "-w",
        user.socket.to_str().unwrap(),
    ]);
    assert!(
        !writes,
        "a process still in the docker group may write the socket"
    );
    let (_, owner) = admin(&[
        "stat",
        "-c",
        "%u",
        runner_temp.join("longtx-pristine").to_str().unwrap(),
    ]);
    assert_eq!(
        owner.trim(),
        "0",
        "the saved git config is root's, out of the agent's reach"
    );
}
