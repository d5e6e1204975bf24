//! The fake's repository side, backed by a real bare git repository (the
//! test's remote): file contents, compare, PRs that longtx opens, and
//! labels. It refuses what GitHub refuses (docs "REST API endpoints for
//! pull requests", "... for labels", "... for repository contents"):
//! a PR whose head branch does not exist or has no commit ahead of the
//! base, a second open PR for the same head, a label created twice.
//! Facts beyond the reference page are in `docs/github-facts.md`.

use super::{admit, FakeGitHub, Shared};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path as FsPath, PathBuf};
use std::process::Command;

/// The labels GitHub gives every new repository (docs "Managing labels:
/// About default labels"); `longtx` is not among them.
const DEFAULT_LABELS: [&str; 9] = [
    "bug",
    "documentation",
    "duplicate",
    "enhancement",
    "good first issue",
    "help wanted",
    "invalid",
    "question",
    "wontfix",
];

/// Where `main` points in a fake with no git remote.
pub const MAIN_WITHOUT_REMOTE: &str = "5eed0000000000000000000000000000000000a1";

#[derive(Debug)]
pub(super) struct RepoState {
    /// The bare repository GitHub's git side stands for.
    pub git_dir: Option<PathBuf>,
    /// PRs opened through `POST pulls`, as GitHub returns them.
    pub opened: Vec<Value>,
    pub labels: Vec<String>,
    pub issue_labels: HashMap<u64, Vec<String>>,
    pub next_number: u64,
    /// Dispatches find the shipped templates where the remote has none.
    pub shipped_workflows: bool,
    /// Check runs created (`POST check-runs`), as sent.
    pub check_runs: Vec<Value>,
}

impl Default for RepoState {
    fn default() -> Self {
        RepoState {
            git_dir: None,
            opened: Vec::new(),
            labels: DEFAULT_LABELS.iter().map(|l| l.to_string()).collect(),
            issue_labels: HashMap::new(),
            next_number: 100,
            shipped_workflows: false,
            check_runs: Vec::new(),
        }
    }
}

impl FakeGitHub {
    /// Serves the repository's git side (contents, compare, branches of
    /// PRs) from this bare repository, as GitHub would after a push.
    pub fn with_remote(self, git_dir: &FsPath) -> Self {
        self.inner.lock().unwrap().repo.git_dir = Some(git_dir.to_owned());
        self
    }

    /// Dispatches of a workflow the remote lacks use the shipped template
    /// (for tests about other things than the user's copy of it).
    pub fn with_shipped_workflows(self) -> Self {
        self.inner.lock().unwrap().repo.shipped_workflows = true;
        self
    }

    /// Check runs created, as sent, with the `id` GitHub gave each.
    pub fn check_runs(&self) -> Vec<Value> {
        self.inner.lock().unwrap().repo.check_runs.clone()
    }

    /// A PR a person opened from `head_sha` (on `head_ref` of `head_repo`,
    /// a fork or the repository itself) onto `base`. Like GitHub, the fake
    /// keeps `refs/pull/<n>/head` in the base repository, where a fetch of
    /// the base repository finds a fork's commits. Returns the number.
    pub fn open_pull(&self, head_ref: &str, head_sha: &str, base: &str, head_repo: &str) -> u64 {
        let dir = git_dir(&self.inner).expect("a fake with a remote");
        let base_sha = resolve(&dir, base).expect("the base branch exists");
        let mut inner = self.inner.lock().unwrap();
        inner.repo.next_number += 1;
        let number = inner.repo.next_number;
        keep_pull_head(&dir, number, head_sha);
        inner.repo.opened.push(json!({
            "number": number,
            "state": "open",
            "user": {"login": "a-person"},
            "head": {"ref": head_ref, "sha": head_sha, "repo": {"full_name": head_repo}},
            "base": {"ref": base, "sha": base_sha},
        }));
        number
    }

    /// A push to an open PR: its `refs/pull/<n>/head` moves to `head_sha`.
    pub fn push_to_pull(&self, number: u64, head_sha: &str) {
        let dir = git_dir(&self.inner).expect("a fake with a remote");
        keep_pull_head(&dir, number, head_sha);
        let mut inner = self.inner.lock().unwrap();
        if let Some(pull) = inner.repo.opened.iter_mut().find(|p| p["number"] == number) {
            pull["head"]["sha"] = json!(head_sha);
        }
    }

    /// PRs opened through the API, oldest first.
    pub fn opened_pulls(&self) -> Vec<Value> {
        self.inner.lock().unwrap().repo.opened.clone()
    }

    /// The labels a PR (or issue) carries.
    pub fn labels_on(&self, number: u64) -> Vec<String> {
        let inner = self.inner.lock().unwrap();
        inner
            .repo
            .issue_labels
            .get(&number)
            .cloned()
            .unwrap_or_default()
    }

    pub fn repository_labels(&self) -> Vec<String> {
        self.inner.lock().unwrap().repo.labels.clone()
    }

    /// Removes a label from the repository (a user deleted it).
    pub fn delete_label(&self, name: &str) {
        self.inner.lock().unwrap().repo.labels.retain(|l| l != name);
    }
}

pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/repos/{owner}/{repo}/contents/{*path}", get(contents))
        .route("/repos/{owner}/{repo}/compare/{*basehead}", get(compare))
        .route(
            "/repos/{owner}/{repo}/pulls",
            get(list_pulls).post(create_pull),
        )
        .route(
            "/repos/{owner}/{repo}/labels",
            get(list_labels).post(create_label),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}/labels",
            post(add_labels),
        )
        .route("/repos/{owner}/{repo}/check-runs", post(create_check_run))
        .route(
            "/repos/{owner}/{repo}/commits/{sha}/check-runs",
            get(list_check_runs),
        )
        .route("/repos/{owner}/{repo}/pulls/{number}", get(one_pull))
        .route("/repos/{owner}/{repo}/git/ref/{*git_ref}", get(one_ref))
}

/// docs "Get a reference" (`git/ref/heads/<branch>`): the commit a branch
/// points at in the remote now, or 404. Needs `contents: read`.
async fn one_ref(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, git_ref)): Path<(String, String, String)>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/git/ref/{git_ref}"),
        &[("contents", "read")],
    )
    .await
    {
        return refused;
    }
    let sha = match git_dir(&inner) {
        Some(git_dir) => git_ref
            .strip_prefix("heads/")
            .and_then(|branch| resolve(&git_dir, branch)),
        // Without a remote, a repository whose only branch is `main`.
        None => (git_ref == "heads/main").then(|| MAIN_WITHOUT_REMOTE.to_owned()),
    };
    match sha {
        Some(sha) => Json(json!({
            "ref": format!("refs/{git_ref}"),
            "object": {"type": "commit", "sha": sha},
        }))
        .into_response(),
        None => not_found(),
    }
}

/// `Accept: application/vnd.github.diff` gives the PR's diff as text (docs
/// "Media types" for pulls); anything else the PR as JSON.
async fn one_pull(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number)): Path<(String, String, u64)>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/pulls/{number}"),
        &[("pull_requests", "read"), ("contents", "read")],
    )
    .await
    {
        return refused;
    }
    let (pull, dir) = {
        let inner = inner.lock().unwrap();
        let pull = inner
            .repo
            .opened
            .iter()
            .find(|p| p["number"] == number)
            .cloned();
        (pull, inner.repo.git_dir.clone())
    };
    let Some(pull) = pull else { return not_found() };
    let wants_diff = headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("diff"));
    if !wants_diff {
        return Json(pull).into_response();
    }
    let Some(dir) = dir else { return no_remote() };
    let range = format!(
        "{}...{}",
        pull["base"]["sha"].as_str().unwrap_or(""),
        pull["head"]["sha"].as_str().unwrap_or("")
    );
    git(&dir, &["diff", &range])
        .unwrap_or_default()
        .into_response()
}

/// Check runs need `checks: write`, which the Actions token has when the
/// workflow's `permissions` grant it.
async fn create_check_run(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("POST /repos/{owner}/{repo}/check-runs"),
        &[("checks", "write")],
    )
    .await
    {
        return refused;
    }
    // Only a GitHub App (an installation or an Actions token) may create
    // check runs; a user's token is refused (docs "REST API endpoints for
    // check runs": "OAuth apps and authenticated users ... are not able to
    // create them").
    if !super::bearer(&headers).starts_with("ghs_") {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({"message": "You must authenticate via a GitHub App.",
                "documentation_url": "https://docs.github.com/rest/checks/runs#create-a-check-run"})),
        )
            .into_response();
    }
    if body["name"].as_str().is_none_or(str::is_empty)
        || body["head_sha"].as_str().is_none_or(str::is_empty)
    {
        return validation_failed(json!([{"resource": "CheckRun", "code": "missing_field"}]));
    }
    // At most 50 annotations per request; `conclusion` is required once
    // the run is completed.
    let annotations = body["output"]["annotations"].as_array().map_or(0, Vec::len);
    let completed = body["status"] == "completed";
    // An annotation's level is one of `notice`, `warning` or `failure`.
    let levels_known = body["output"]["annotations"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|a| {
            matches!(
                a["annotation_level"].as_str(),
                Some("notice" | "warning" | "failure")
            )
        });
    if annotations > 50 || !levels_known || (completed && body["conclusion"].as_str().is_none()) {
        return validation_failed(json!([{"resource": "CheckRun", "code": "invalid"}]));
    }
    let mut inner = inner.lock().unwrap();
    let id = 7000 + inner.repo.check_runs.len() as u64;
    let mut run = body.clone();
    run["id"] = json!(id);
    if run["status"].is_null() {
        run["status"] = json!("queued");
    }
    inner.repo.check_runs.push(run);
    (
        StatusCode::CREATED,
        Json(json!({"id": id, "name": body["name"], "head_sha": body["head_sha"]})),
    )
        .into_response()
}

/// `GET .../commits/{ref}/check-runs?check_name=...`: the commit's runs,
/// newest first, as `{total_count, check_runs}`.
async fn list_check_runs(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, sha)): Path<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/commits/{sha}/check-runs"),
        &[("checks", "read")],
    )
    .await
    {
        return refused;
    }
    let inner = inner.lock().unwrap();
    let runs: Vec<Value> = inner
        .repo
        .check_runs
        .iter()
        .rev()
        .filter(|r| r["head_sha"] == sha.as_str())
        .filter(|r| {
            query
                .get("check_name")
                .is_none_or(|n| r["name"] == n.as_str())
        })
        .map(|r| {
            json!({"id": r["id"], "external_id": r["external_id"], "status": r["status"],
            "conclusion": r["conclusion"], "name": r["name"], "head_sha": r["head_sha"]})
        })
        .collect();
    Json(json!({"total_count": runs.len(), "check_runs": runs})).into_response()
}

/// `git --git-dir=<remote> args`: stdout when it succeeds.
pub(super) fn git(git_dir: &FsPath, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A branch name or commit id as a commit id, if it names one.
fn resolve(git_dir: &FsPath, name: &str) -> Option<String> {
    let spec = if name.len() == 40 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
        format!("{name}^{{commit}}")
    } else {
        format!("refs/heads/{name}^{{commit}}")
    };
    git(git_dir, &["rev-parse", "--verify", "--quiet", &spec]).map(|s| s.trim().to_owned())
}

/// A file at a ref of the remote, when there is one.
pub(super) fn file_at(git_dir: &FsPath, git_ref: &str, path: &str) -> Option<String> {
    let commit = resolve(git_dir, git_ref)?;
    git(git_dir, &["show", &format!("{commit}:{path}")])
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})),
    )
        .into_response()
}

fn validation_failed(errors: Value) -> Response {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        Json(json!({"message": "Validation Failed", "errors": errors})),
    )
        .into_response()
}

fn no_remote() -> Response {
    (
        StatusCode::NOT_IMPLEMENTED,
        Json(json!({"message": "the fake has no git remote: call FakeGitHub::with_remote"})),
    )
        .into_response()
}

fn git_dir(inner: &Shared) -> Option<PathBuf> {
    inner.lock().unwrap().repo.git_dir.clone()
}

async fn contents(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, path)): Path<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/contents/{path}"),
        &[("contents", "read")],
    )
    .await
    {
        return refused;
    }
    let Some(dir) = git_dir(&inner) else {
        return no_remote();
    };
    let git_ref = query.get("ref").map(String::as_str).unwrap_or("main");
    let Some(text) = file_at(&dir, git_ref, &path) else {
        return not_found();
    };
    // GitHub wraps the base64 at 60 characters.
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    let wrapped: Vec<String> = encoded
        .as_bytes()
        .chunks(60)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    Json(json!({
        "type": "file",
        "encoding": "base64",
        "path": path,
        "name": path.rsplit('/').next(),
        "size": text.len(),
        "content": wrapped.join("\n") + "\n",
    }))
    .into_response()
}

async fn compare(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, basehead)): Path<(String, String, String)>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/compare/{basehead}"),
        &[("contents", "read")],
    )
    .await
    {
        return refused;
    }
    let Some(dir) = git_dir(&inner) else {
        return no_remote();
    };
    let Some((base, head)) = basehead.split_once("...") else {
        return not_found();
    };
    let (Some(base_sha), Some(head_sha)) = (resolve(&dir, base), resolve(&dir, head)) else {
        return not_found();
    };
    let count = |range: &str| {
        git(&dir, &["rev-list", "--count", range])
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let ahead_by = count(&format!("{base_sha}..{head_sha}"));
    let behind_by = count(&format!("{head_sha}..{base_sha}"));
    let log = git(
        &dir,
        &[
            "log",
            "--reverse",
            "--format=%H%x1f%B%x1e",
            &format!("{base_sha}..{head_sha}"),
        ],
    )
    .unwrap_or_default();
    let commits: Vec<Value> = log
        .split('\x1e')
        .filter_map(|entry| {
            let (sha, message) = entry.trim_start_matches('\n').split_once('\x1f')?;
            Some(json!({"sha": sha, "commit": {"message": message.trim_end()}}))
        })
        .collect();
    let status = match (ahead_by, behind_by) {
        (0, 0) => "identical",
        (_, 0) => "ahead",
        (0, _) => "behind",
        _ => "diverged",
    };
    Json(json!({
        "status": status,
        "ahead_by": ahead_by,
        "behind_by": behind_by,
        "total_commits": ahead_by,
        "commits": commits,
    }))
    .into_response()
}

async fn list_pulls(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/pulls"),
        &[("pull_requests", "read")],
    )
    .await
    {
        return refused;
    }
    let state = query.get("state").map(String::as_str).unwrap_or("open");
    let head = query.get("head");
    let inner = inner.lock().unwrap();
    let pulls: Vec<Value> = inner
        .repo
        .opened
        .iter()
        .rev()
        .filter(|p| state == "all" || p["state"] == state)
        .filter(|p| head.is_none_or(|h| p["head"]["label"] == h.as_str()))
        .cloned()
        .collect();
    Json(pulls).into_response()
}

#[derive(serde::Deserialize)]
struct NewPull {
    title: String,
    head: String,
    base: String,
    #[serde(default)]
    body: Option<String>,
}

async fn create_pull(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
    Json(new): Json<NewPull>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("POST /repos/{owner}/{repo}/pulls"),
        &[("pull_requests", "write")],
    )
    .await
    {
        return refused;
    }
    let Some(dir) = git_dir(&inner) else {
        return no_remote();
    };
    let branch = new
        .head
        .split_once(':')
        .map(|(_, b)| b.to_owned())
        .unwrap_or_else(|| new.head.clone());
    let label = format!("{owner}:{branch}");
    let Some(base_sha) = resolve(&dir, &new.base) else {
        return validation_failed(
            json!([{"resource": "PullRequest", "field": "base", "code": "invalid"}]),
        );
    };
    let Some(head_sha) = resolve(&dir, &branch) else {
        return validation_failed(
            json!([{"resource": "PullRequest", "field": "head", "code": "invalid"}]),
        );
    };
    let ahead = git(
        &dir,
        &["rev-list", "--count", &format!("{base_sha}..{head_sha}")],
    )
    .and_then(|s| s.trim().parse::<u64>().ok())
    .unwrap_or(0);
    if ahead == 0 {
        return validation_failed(json!([{"resource": "PullRequest", "code": "custom",
            "message": format!("No commits between {} and {branch}", new.base)}]));
    }
    let author = super::caller_login(&headers);
    let mut inner = inner.lock().unwrap();
    let duplicate = inner.repo.opened.iter().any(|p| {
        p["state"] == "open" && p["head"]["label"] == label && p["base"]["ref"] == new.base
    });
    if duplicate {
        return validation_failed(json!([{"resource": "PullRequest", "code": "custom",
            "message": format!("A pull request already exists for {label}.")}]));
    }
    inner.repo.next_number += 1;
    let number = inner.repo.next_number;
    let full_name = format!("{owner}/{repo}");
    let pull = json!({
        "number": number,
        "html_url": format!("https://github.example/{full_name}/pull/{number}"),
        "state": "open",
        "merged_at": null,
        "title": new.title,
        "body": new.body,
        "user": {"login": author},
        "head": {"ref": branch, "sha": head_sha, "label": label, "repo": {"full_name": full_name}},
        "base": {"ref": new.base, "sha": base_sha, "repo": {"full_name": full_name}},
    });
    keep_pull_head(&dir, number, &head_sha);
    inner.repo.opened.push(pull.clone());
    (StatusCode::CREATED, Json(pull)).into_response()
}

/// GitHub's `refs/pull/<n>/head` in the base repository.
fn keep_pull_head(git_dir: &FsPath, number: u64, sha: &str) {
    git(
        git_dir,
        &["update-ref", &format!("refs/pull/{number}/head"), sha],
    )
    .expect("the PR's head commit is in the remote");
}

async fn list_labels(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/labels"),
        &[("issues", "read"), ("pull_requests", "read")],
    )
    .await
    {
        return refused;
    }
    let labels: Vec<Value> = inner
        .lock()
        .unwrap()
        .repo
        .labels
        .iter()
        .map(|name| json!({"name": name}))
        .collect();
    Json(labels).into_response()
}

#[derive(serde::Deserialize)]
struct NewLabel {
    name: String,
}

async fn create_label(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
    Json(new): Json<NewLabel>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("POST /repos/{owner}/{repo}/labels"),
        &[("issues", "write"), ("pull_requests", "write")],
    )
    .await
    {
        return refused;
    }
    let mut inner = inner.lock().unwrap();
    if inner
        .repo
        .labels
        .iter()
        .any(|l| l.eq_ignore_ascii_case(&new.name))
    {
        return validation_failed(
            json!([{"resource": "Label", "code": "already_exists", "field": "name"}]),
        );
    }
    inner.repo.labels.push(new.name.clone());
    (StatusCode::CREATED, Json(json!({"name": new.name}))).into_response()
}

#[derive(serde::Deserialize)]
struct LabelsBody {
    labels: Vec<String>,
}

async fn add_labels(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Json(body): Json<LabelsBody>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("POST /repos/{owner}/{repo}/issues/{number}/labels"),
        &[("issues", "write"), ("pull_requests", "write")],
    )
    .await
    {
        return refused;
    }
    let mut inner = inner.lock().unwrap();
    // The REST call creates a label the repository lacks (colour ededed,
    // no description: github/docs issue #35718), unlike `gh pr create
    // --label`, which fails. longtx creates its label first anyway so that
    // it gets its colour and description.
    for label in &body.labels {
        if !inner
            .repo
            .labels
            .iter()
            .any(|have| have.eq_ignore_ascii_case(label))
        {
            inner.repo.labels.push(label.clone());
        }
    }
    let on = inner.repo.issue_labels.entry(number).or_default();
    for label in body.labels {
        if !on.contains(&label) {
            on.push(label);
        }
    }
    let all: Vec<Value> = on.iter().map(|name| json!({"name": name})).collect();
    Json(all).into_response()
}
