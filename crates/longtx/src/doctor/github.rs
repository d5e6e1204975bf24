//! Doctor's GitHub checks, with longtx's configured credentials.

use super::Check;
use crate::config::Config;
use longtx_core::workflow::WorkflowFile;
use longtx_github::{GitHub, GitHubError, Grants, OctocrabGitHub, RepoName};
use std::collections::BTreeSet;
use std::time::Duration;

/// The events longtx acts on, and why (README's setup table says the same).
pub const WEBHOOK_EVENTS: [(&str, &str); 4] = [
    (
        "pull_request",
        "PR opened, pushed, closed, labelled wontfix; a new head gets the PR check",
    ),
    ("workflow_run", "an agent run ended: open its PR"),
    (
        "pull_request_review",
        "a person requested changes: a revision round",
    ),
    (
        "issue_comment",
        "`/longtx revise` and `/longtx stop` on a fix PR",
    ),
];

/// App permissions longtx uses: (key, level, why, required).
pub const APP_PERMISSIONS: [(&str, &str, &str, bool); 9] = [
    (
        "actions",
        "write",
        "dispatch the workflows, read and cancel their runs",
        true,
    ),
    (
        "contents",
        "write",
        "read workflow files and CODEOWNERS, compare branches, push the wontfix reset",
        true,
    ),
    (
        "pull_requests",
        "write",
        "open, label, comment on, close fix PRs; ask reviewers",
        true,
    ),
    (
        "metadata",
        "read",
        "collaborators and their permission",
        true,
    ),
    (
        "issues",
        "read",
        "receive `issue_comment` events, for `/longtx revise` and `/longtx stop`",
        true,
    ),
    (
        "checks",
        "write",
        "post the \"long transactions\" check on every PR (optional: LONGTX_PR_CHECK)",
        false,
    ),
    (
        "members",
        "read",
        "see teams, to ask a committer's team (optional)",
        false,
    ),
    (
        "secrets",
        "read",
        "let `longtx doctor` check the workflows' secrets by name (optional)",
        false,
    ),
    (
        "actions_variables",
        "read",
        "let `longtx doctor` check LONGTX_APP_SLUG (optional)",
        false,
    ),
];

const SAMPLE_JOB: i64 = 4242;
const SAMPLE_HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

pub async fn checks(config: &Config, fix: bool) -> Vec<Check> {
    let gh = &config.github;
    let (Some(credentials), Some(repo)) = (&gh.credentials, gh.repo.as_deref()) else {
        return vec![Check::skip(
            "github",
            "no GitHub credentials or LONGTX_GITHUB_REPO: dry-run mode, GitHub is not checked",
        )];
    };
    let repo: RepoName = match repo.parse() {
        Ok(repo) => repo,
        Err(e) => {
            return vec![Check::fail(
                "github.repo",
                e,
                "set LONGTX_GITHUB_REPO to owner/name",
            )]
        }
    };
    if crate::config::check::api_url_problem(config).is_some() {
        return vec![Check::skip(
            "github",
            "LONGTX_GITHUB_API_URL is not a URL (see config.LONGTX_GITHUB_API_URL): GitHub is not checked",
        )];
    }
    let client = match OctocrabGitHub::new(&gh.api_url, credentials, Duration::from_secs(30)) {
        Ok(client) => client,
        Err(e) => {
            return vec![Check::fail(
                "github.credentials",
                e.to_string(),
                "check the App id, key file and installation id, or the token",
            )]
        }
    };
    let mut checks = Vec::new();
    let default_branch = match client.default_branch(&repo).await {
        Ok(branch) => {
            checks.push(Check::pass(
                "github.repo",
                format!("{repo} is reachable; default branch {branch}"),
            ));
            branch
        }
        Err(e) => {
            let (id, fix) = first_call_failed(&e, &gh.api_url);
            checks.push(Check::fail(id, format!("{repo}: {e}"), fix));
            return checks;
        }
    };
    checks.push(grants(&client, &repo).await);
    let fix_file = workflow(
        &client,
        &repo,
        &default_branch,
        "fix",
        &gh.workflow,
        &mut checks,
    )
    .await;
    if let Some(file) = &fix_file {
        checks.push(fix_run_name(file, &gh.workflow));
        checks.push(inputs("fix", file, &sample_fix_inputs(&gh.public_url)));
    }
    let mut timed: Vec<(&str, Duration, &str, WorkflowFile)> = Vec::new();
    if let Some(file) = &fix_file {
        timed.push((
            "the fix workflow",
            gh.agent_timeout,
            "LONGTX_AGENT_TIMEOUT",
            file.clone(),
        ));
    }
    let mut files: Vec<WorkflowFile> = fix_file.into_iter().collect();
    if config.reviews.pre_review.is_enabled() {
        let workflow_name = &config.reviews.pre_review_workflow;
        if let Some(file) = workflow(
            &client,
            &repo,
            &default_branch,
            "pre_review",
            workflow_name,
            &mut checks,
        )
        .await
        {
            checks.push(pre_review_run_name(&file, workflow_name));
            checks.push(inputs(
                "pre_review",
                &file,
                &sample_pre_review_inputs(&gh.public_url),
            ));
            timed.push((
                "the pre-review",
                config.reviews.pre_review_timeout,
                "LONGTX_PRE_REVIEW_TIMEOUT",
                file.clone(),
            ));
            files.push(file);
        }
    }
    checks.push(secrets(&client, &repo, &files).await);
    checks.push(app_slug(&client, &repo, &files).await);
    checks.push(budgets(&client, &repo, config).await);
    checks.push(timeouts(&timed));
    checks.push(labels(&client, &repo, &config.reviews.wontfix_label, fix).await);
    checks.push(webhook(&client, &repo, &gh.public_url).await);
    checks
}

async fn grants(client: &OctocrabGitHub, repo: &RepoName) -> Check {
    let id = "github.permissions";
    match client.grants(repo).await {
        Ok(Grants::App { permissions, .. }) => {
            let level = |key: &str| permissions.get(key).map(String::as_str).unwrap_or("none");
            let enough = |have: &str, need: &str| match need {
                "read" => matches!(have, "read" | "write" | "admin"),
                _ => matches!(have, "write" | "admin"),
            };
            let short: Vec<String> = APP_PERMISSIONS
                .iter()
                .filter(|(key, need, _, _)| !enough(level(key), need))
                .map(|(key, need, why, required)| {
                    format!("{key}: {need} (has {}){}: {why}", level(key), if *required { "" } else { " [optional]" })
                })
                .collect();
            let missing_required = APP_PERMISSIONS
                .iter()
                .any(|(key, need, _, required)| *required && !enough(level(key), need));
            let fix = "in the App's settings, Permissions & events: grant these, then accept the new permissions on the installation";
            if missing_required {
                Check::fail(id, format!("the App installation lacks {}", short.join("; ")), fix)
            } else if !short.is_empty() {
                Check::warn(id, format!("the App installation lacks {}", short.join("; ")), fix)
            } else {
                Check::pass(id, "the App installation has every permission longtx uses")
            }
        }
        Ok(Grants::Token { scopes, can_push, .. }) => match scopes {
            Some(scopes) if !scopes.iter().any(|s| s == "repo") => Check::fail(
                id,
                format!("the classic token has scopes [{}], not `repo`", scopes.join(", ")),
                "create a token with the `repo` scope (and `read:org` for teams), or use a GitHub App",
            ),
            _ if !can_push => Check::fail(
                id,
                "the token cannot write to the repository",
                "give the token's user write access, or grant a fine-grained token Actions, Contents and Pull requests: write",
            ),
            Some(scopes) if !scopes.iter().any(|s| s == "read:org" || s == "admin:org") => Check::warn(
                id,
                "the classic token has no `read:org`: teams cannot be seen",
                "add `read:org` so a committer's team can be asked",
            ),
            _ => Check::pass(id, "the token can write to the repository"),
        },
        Err(e) => Check::fail(id, e.to_string(), "check the credentials"),
    }
}

/// Reads a workflow file from the default branch, where GitHub looks for
/// a dispatchable workflow.
async fn workflow(
    client: &OctocrabGitHub,
    repo: &RepoName,
    branch: &str,
    which: &str,
    name: &str,
    checks: &mut Vec<Check>,
) -> Option<WorkflowFile> {
    let id = format!("github.workflow.{which}");
    let path = format!(".github/workflows/{name}");
    match client.file_at(repo, &path, branch).await {
        Ok(Some(text)) => match WorkflowFile::parse(&text) {
            Ok(file) => {
                checks.push(Check::pass(&id, format!("{path} is on {branch}")));
                Some(file)
            }
            Err(e) => {
                checks.push(Check::fail(
                    &id,
                    format!("{path}: {e}"),
                    "correct the file (actionlint helps)",
                ));
                None
            }
        },
        Ok(None) => {
            checks.push(Check::fail(
                &id,
                format!("{path} is not on {branch}"),
                format!("copy longtx's .github/workflows/{} template there (see docs/book/src/github-setup.md)", template_of(which)),
            ));
            None
        }
        Err(e) => {
            checks.push(Check::fail(
                &id,
                format!("{path}: {e}"),
                "grant Contents: read",
            ));
            None
        }
    }
}

fn template_of(which: &str) -> &'static str {
    if which == "fix" {
        "long-transaction-fix.yml"
    } else {
        "long-transaction-pre-review.yml"
    }
}

fn inputs(
    which: &str,
    file: &WorkflowFile,
    sent: &std::collections::BTreeMap<String, String>,
) -> Check {
    let id = format!("github.workflow.{which}.inputs");
    let names: BTreeSet<String> = sent.keys().cloned().collect();
    let problems = file.input_problems(&names);
    if problems.is_empty() {
        Check::pass(&id, "its workflow_dispatch inputs match what longtx sends")
    } else {
        Check::fail(
            &id,
            problems.join("; "),
            format!(
                "the workflow is a copy of an older template: copy the shipped .github/workflows/{} \
                 again (docs/book/src/upgrading.md); it declares exactly these inputs: {}",
                template_of(which),
                names.into_iter().collect::<Vec<_>>().join(", ")
            ),
        )
    }
}

fn fix_run_name(file: &WorkflowFile, name: &str) -> Check {
    let id = "github.workflow.fix.run_name";
    // A revision round's inputs: the name must carry the round too.
    let mut inputs = sample_fix_inputs("https://longtx.example");
    inputs.insert("round".to_owned(), "1".to_owned());
    let fix = "keep the template's line: run-name: \"longtx job ${{ inputs.job_id }} round ${{ inputs.round }}: ${{ inputs.query_source }}\"";
    match file.render_run_name(&inputs) {
        Ok(Some(title)) => {
            match longtx_core::revision::job_and_round_of_title(&title) {
                Some((SAMPLE_JOB, 1)) => Check::pass(
                    id,
                    format!("runs are named {title:?}: found by job and round after a crash"),
                ),
                _ => Check::fail(id, format!("{name}: a revision round's run would be named {title:?}, which does not start with `longtx job <id> round <n>`"), fix),
            }
        }
        Ok(None) => Check::fail(
            id,
            format!("{name} has no run-name: longtx cannot find a run by its job"),
            fix,
        ),
        Err(e) => Check::fail(id, e.to_string(), fix),
    }
}

fn pre_review_run_name(file: &WorkflowFile, name: &str) -> Check {
    let id = "github.workflow.pre_review.run_name";
    let inputs = sample_pre_review_inputs("https://longtx.example");
    let marker = longtx_github::pre_review_run_marker(SAMPLE_JOB, SAMPLE_HEAD);
    let fix = "keep the template's line: run-name: \"longtx pre-review ${{ inputs.job_id }} ${{ inputs.head_sha }}: ${{ inputs.query_source }}\"";
    match file.render_run_name(&inputs) {
        Ok(Some(title)) if title.contains(&marker) => {
            Check::pass(id, "runs carry the job and head: found after a crash")
        }
        Ok(Some(title)) => Check::fail(
            id,
            format!("{name}: a run would be named {title:?}, without {marker:?}"),
            fix,
        ),
        Ok(None) => Check::fail(id, format!("{name} has no run-name"), fix),
        Err(e) => Check::fail(id, e.to_string(), fix),
    }
}

fn sample_claim() -> longtx_store::ClaimedJob {
    longtx_store::ClaimedJob {
        id: SAMPLE_JOB,
        query_source: "admin/users#update".into(),
        tables: vec!["users".into()],
        max_duration_seconds: Some(120.0),
        prompt_sha256: "0".repeat(64),
        prompt_token: "sample".into(),
        attempts: 1,
        started_at: chrono::Utc::now(),
        base_sha: Some(SAMPLE_HEAD.into()),
        located_paths: Vec::new(),
    }
}

fn sample_fix_inputs(public_url: &str) -> std::collections::BTreeMap<String, String> {
    longtx_pipeline::fix_inputs(&sample_claim(), public_url)
}

fn sample_pre_review_inputs(public_url: &str) -> std::collections::BTreeMap<String, String> {
    let claim = longtx_store::PreReviewClaim {
        job_id: SAMPLE_JOB,
        query_source: "admin/users#update".into(),
        pr_number: 1,
        head_sha: SAMPLE_HEAD.into(),
        tables: vec!["users".into()],
        max_duration_seconds: Some(120.0),
        prompt_token: "sample".into(),
        attempts: 1,
        started_at: chrono::Utc::now(),
    };
    longtx_pipeline::pre_review_inputs(&claim, public_url)
}

async fn secrets(client: &OctocrabGitHub, repo: &RepoName, files: &[WorkflowFile]) -> Check {
    let id = "github.secrets";
    // What each template's header declares it needs; optional ones (a
    // Devin service token, say) are not asked for.
    let needed: BTreeSet<String> = files
        .iter()
        .flat_map(|f| f.required_secrets.iter().cloned())
        .collect();
    if needed.is_empty() {
        return Check::pass(id, "the workflows need no secrets");
    }
    let names = match client.all_secret_names(repo).await {
        Ok(names) => names,
        Err(e) => return Check::fail(id, e.to_string(), "retry; GitHub did not answer"),
    };
    let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(", ");
    if names.none_readable() {
        return Check::warn(
            id,
            format!("cannot list secrets; the workflows need {}", list(&needed)),
            "grant the App Secrets: read (names only) to have this checked, or check by hand",
        );
    }
    let found = names.all();
    let missing: BTreeSet<String> = needed
        .iter()
        .filter(|n| !found.contains(&n.as_str()))
        .cloned()
        .collect();
    if missing.is_empty() {
        return Check::pass(
            id,
            format!(
                "secrets present (repository, organisation or environment): {}",
                list(&needed)
            ),
        );
    }
    let unseen: Vec<&str> = [
        ("organisation", &names.organization),
        ("environment", &names.environments),
    ]
    .iter()
    .filter(|(_, n)| n.is_none())
    .map(|(place, _)| *place)
    .collect();
    if !unseen.is_empty() {
        return Check::warn(
            id,
            format!(
                "{} not found, and the {} secrets could not be listed",
                list(&missing),
                unseen.join(" and ")
            ),
            "check by hand, or grant the App Secrets: read and Actions: read",
        );
    }
    let first = missing.iter().next().cloned().unwrap_or_default();
    Check::fail(
        id,
        format!(
            "the workflows need secrets found nowhere: {}",
            list(&missing)
        ),
        format!(
            "add them in Settings > Secrets and variables > Actions (e.g. `gh secret set {first}`)"
        ),
    )
}

/// When longtx dispatches as an App, the run's actor is `<slug>[bot]`, and
/// claude-code-action and codex-action refuse a bot actor not listed in
/// `allowed_bots` / `allow-bot-users`, which the templates fill from
/// `vars.LONGTX_APP_SLUG`.
async fn app_slug(client: &OctocrabGitHub, repo: &RepoName, files: &[WorkflowFile]) -> Check {
    let id = "github.app_slug";
    if !files.iter().any(|f| f.uses_app_slug) {
        return Check::pass(id, "the workflows do not name LONGTX_APP_SLUG");
    }
    let slug =
        match client.grants(repo).await {
            Ok(Grants::App {
                app_slug: Some(slug),
                ..
            }) => slug,
            Ok(Grants::App { app_slug: None, .. }) => {
                return Check::warn(
                    id,
                    "GitHub did not say the App's slug",
                    "set vars.LONGTX_APP_SLUG to the App's slug by hand",
                )
            }
            Ok(Grants::Token { .. }) => return Check::pass(
                id,
                "dispatched with a token: the runs' actor is a person, no allowed bot is needed",
            ),
            Err(e) => return Check::fail(id, e.to_string(), "check the credentials"),
        };
    let fix = format!("set the repository (or organisation) Actions variable LONGTX_APP_SLUG to `{slug}` (`gh variable set LONGTX_APP_SLUG --body {slug}`)");
    match client.actions_variable(repo, "LONGTX_APP_SLUG").await {
        Ok(Some(value)) if value.trim().eq_ignore_ascii_case(&slug) => {
            Check::pass(id, format!("LONGTX_APP_SLUG is `{slug}`: the agent actions accept runs started by {slug}[bot]"))
        }
        Ok(Some(value)) => Check::fail(
            id,
            format!("LONGTX_APP_SLUG is `{value}`, not the App's slug `{slug}`: the agent actions refuse every run"),
            fix,
        ),
        Ok(None) => Check::fail(
            id,
            format!("LONGTX_APP_SLUG is not set: the agent actions refuse every run started by {slug}[bot]"),
            fix,
        ),
        Err(GitHubError::Refused { status: 403, .. }) => Check::warn(
            id,
            "longtx may not read Actions variables",
            format!("grant the App Variables: read to have this checked, or check by hand: {fix}"),
        ),
        Err(e) => Check::fail(id, e.to_string(), "retry; GitHub did not answer"),
    }
}

/// The caps count each run at the budget longtx is configured with; the
/// templates give the agent `vars.LONGTX_MAX_BUDGET_USD` (default 5) and
/// `vars.LONGTX_PRE_REVIEW_MAX_BUDGET_USD` (default 2) as
/// `--max-budget-usd`. A run allowed to spend more than longtx counts lets
/// the day pass `LONGTX_MAX_COST_PER_DAY`.
async fn budgets(client: &OctocrabGitHub, repo: &RepoName, config: &Config) -> Check {
    let id = "github.budgets";
    let gh = &config.github;
    let mut over = Vec::new();
    for (variable, template_default, counted, setting) in [
        (
            "LONGTX_MAX_BUDGET_USD",
            5.0,
            gh.run_budget_usd,
            "LONGTX_RUN_BUDGET_USD",
        ),
        (
            "LONGTX_PRE_REVIEW_MAX_BUDGET_USD",
            2.0,
            gh.pre_review_budget_usd,
            "LONGTX_PRE_REVIEW_BUDGET_USD",
        ),
    ] {
        let given = match client.actions_variable(repo, variable).await {
            Ok(value) => value
                .and_then(|v| v.trim().trim_start_matches('$').parse::<f64>().ok())
                .unwrap_or(template_default),
            Err(GitHubError::Refused { status: 403, .. }) => {
                return Check::warn(
                    id,
                    "longtx may not read Actions variables",
                    format!("grant the App Variables: read, or check by hand that vars.{variable} is at most {setting}"),
                )
            }
            Err(e) => return Check::fail(id, e.to_string(), "retry; GitHub did not answer"),
        };
        if given > counted {
            over.push(format!(
                "vars.{variable} lets a run spend ${given:.2}, and longtx counts ${counted:.2} ({setting})"
            ));
        }
    }
    if over.is_empty() {
        Check::pass(
            id,
            "no run may spend more than the budget longtx counts for it",
        )
    } else {
        Check::fail(
            id,
            over.join("; "),
            "set the variable and the setting to the same amount",
        )
    }
}

/// A run still going when longtx gives up on it (LONGTX_AGENT_TIMEOUT, the
/// pre-review's timeout) has its result thrown away: each job must end
/// first. Each entry: what, longtx's limit, its setting, the file.
fn timeouts(files: &[(&str, Duration, &str, WorkflowFile)]) -> Check {
    let id = "github.workflow.timeouts";
    let mut late = Vec::new();
    for (what, limit, knob, file) in files {
        for (job, minutes) in &file.timeout_minutes {
            if minutes * 60 >= limit.as_secs() {
                late.push(format!(
                    "{what}'s job `{job}` may run {minutes} min, and longtx gives up after {} min ({knob})",
                    limit.as_secs() / 60
                ));
            }
        }
    }
    if late.is_empty() {
        Check::pass(
            id,
            "every job's timeout-minutes ends before longtx stops waiting",
        )
    } else {
        Check::warn(
            id,
            late.join("; "),
            "lower the job's timeout-minutes, or raise longtx's timeout above it",
        )
    }
}

async fn labels(client: &OctocrabGitHub, repo: &RepoName, wontfix: &str, fix: bool) -> Check {
    let id = "github.labels";
    let wanted = [
        (
            longtx_core::fix_pr::FIX_LABEL,
            longtx_core::fix_pr::FIX_LABEL_COLOR,
            longtx_core::fix_pr::FIX_LABEL_DESCRIPTION,
        ),
        (
            wontfix,
            "b60205",
            "Do not fix this long transaction: longtx drops the commits and ignores the source",
        ),
    ];
    let names = match client.label_names(repo).await {
        Ok(names) => names,
        Err(e) => return Check::fail(id, e.to_string(), "grant Pull requests (or Issues): read"),
    };
    let missing: Vec<_> = wanted
        .iter()
        .filter(|(name, ..)| !names.iter().any(|n| n.eq_ignore_ascii_case(name)))
        .collect();
    if missing.is_empty() {
        return Check::pass(
            id,
            format!(
                "labels `{}` and `{wontfix}` exist",
                longtx_core::fix_pr::FIX_LABEL
            ),
        );
    }
    let list = missing
        .iter()
        .map(|(n, ..)| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if fix {
        for (name, color, description) in &missing {
            if let Err(e) = client.ensure_label(repo, name, color, description).await {
                return Check::fail(
                    id,
                    format!("creating {name}: {e}"),
                    "grant Pull requests (or Issues): write",
                );
            }
        }
        return Check::pass(id, format!("created {list}"));
    }
    Check::fail(
        id,
        format!("missing labels: {list} (reviewers add the wontfix label to decline a fix)"),
        "run `longtx doctor --fix` to create them",
    )
}

async fn webhook(client: &OctocrabGitHub, repo: &RepoName, public_url: &str) -> Check {
    let id = "github.webhook";
    let url = format!("{}/webhooks/github", public_url.trim_end_matches('/'));
    let events: Vec<&str> = WEBHOOK_EVENTS.iter().map(|(e, _)| *e).collect();
    let hooks = match client.app_hook().await {
        Ok(Some(hook)) => vec![hook],
        Ok(None) => match client.repo_hooks(repo).await {
            Ok(hooks) => hooks,
            Err(GitHubError::Refused {
                status: 403 | 404, ..
            }) => {
                return Check::warn(
                    id,
                    "this token may not read the repository's webhooks",
                    format!(
                    "check by hand: a webhook to {url}, content type JSON, with the secret, for {}",
                    events.join(", ")
                ),
                )
            }
            Err(e) => return Check::fail(id, e.to_string(), "retry; GitHub did not answer"),
        },
        Err(e) => {
            return Check::fail(
                id,
                format!("reading the App's webhook: {e}"),
                "check the App id and private key",
            )
        }
    };
    let Some(hook) = hooks.iter().find(|h| h.url.trim_end_matches('/') == url) else {
        let seen: Vec<&str> = hooks.iter().map(|h| h.url.as_str()).collect();
        return Check::fail(
            id,
            format!("no webhook delivers to {url} (found: {})", if seen.is_empty() { "none".to_owned() } else { seen.join(", ") }),
            format!("add a webhook to {url}, content type application/json, secret LONGTX_GITHUB_WEBHOOK_SECRET, events {}", events.join(", ")),
        );
    };
    if !hook.active {
        return Check::fail(
            id,
            format!("the webhook to {url} is inactive"),
            "activate it in the webhook's settings",
        );
    }
    let missing: Vec<&&str> = events
        .iter()
        .filter(|e| !hook.events.iter().any(|have| have == *e || have == "*"))
        .collect();
    if missing.is_empty() {
        Check::pass(
            id,
            format!("a webhook delivers {} to {url}", events.join(", ")),
        )
    } else {
        Check::fail(
            id,
            format!(
                "the webhook to {url} does not send {}",
                missing
                    .iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "tick these events in the webhook's (or the App's) settings",
        )
    }
}

/// The first call to GitHub failed: was it the network, the credentials or
/// the repository? Each has its own fix.
fn first_call_failed(e: &longtx_github::GitHubError, api_url: &str) -> (&'static str, String) {
    use longtx_github::GitHubError as E;
    match e {
        E::Unavailable(_) => (
            "github.network",
            format!(
                "longtx could not reach GitHub's API at {api_url}: check LONGTX_GITHUB_API_URL, \
                 and that this host reaches it (DNS, proxy, firewall)"
            ),
        ),
        E::Credentials(_) | E::Refused { status: 401, .. } => (
            "github.credentials",
            "GitHub refused the credentials: check LONGTX_GITHUB_TOKEN, or the App id, key \
             file and installation id"
                .to_owned(),
        ),
        E::Refused { status: 404, .. } => (
            "github.repo",
            "no such repository for these credentials: check LONGTX_GITHUB_REPO (owner/name), \
             and that the App is installed on it (or the token can see it)"
                .to_owned(),
        ),
        E::Refused { status: 403, .. } => (
            "github.permissions",
            "the credentials may not read the repository: grant Contents: read (and the \
             permissions under Setting up GitHub)"
                .to_owned(),
        ),
        E::RateLimited(_) | E::SecondaryRateLimited => (
            "github.rate_limit",
            "GitHub is rate limiting these credentials: run doctor again later".to_owned(),
        ),
        E::Refused { .. } => (
            "github.repo",
            "check LONGTX_GITHUB_REPO and that the App is installed on it (or the token can see it)"
                .to_owned(),
        ),
    }
}
