//! An in-process GitHub for tests: a real HTTP server that speaks the REST
//! calls longtx makes, keeps state (dispatched runs), records every
//! request, and injects faults on demand.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod artifacts;
mod commits;
mod pulls;
mod repo;
mod setup;
pub use pulls::{ReviewRequest, OWN_LOGIN};

/// The slug of the GitHub App the fake's installation tokens belong to;
/// what it does shows as `longtx-app[bot]`.
pub const APP_SLUG: &str = "longtx-app";

/// What the next dispatch request meets instead of a plain success.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Answer with this status and create no run.
    Status(u16),
    /// 403 with `Retry-After: secs` (a secondary rate limit).
    RetryAfter(u64),
    /// 403 "You have exceeded a secondary rate limit" with no
    /// `Retry-After` (GitHub then asks for at least a minute's wait).
    SecondaryLimit,
    /// Create the run, then take this long to answer: a caller that gives
    /// up (or dies) meanwhile does not know the run exists.
    AcceptThenHang(Duration),
}

#[derive(Debug, Default)]
struct Inner {
    runs: Vec<Value>,
    /// Every dispatch request that reached the server, faulted or not.
    dispatch_requests: Vec<Value>,
    faults: VecDeque<Fault>,
    requests: Vec<String>,
    latency: Duration,
    next_run_id: u64,
    last_auth: Option<String>,
    /// An older GitHub Enterprise Server: a dispatch body with
    /// `return_run_details` is refused (422) and creates no run.
    old_enterprise_server: bool,
    pulls: pulls::PullState,
    repo: repo::RepoState,
    setup: setup::SetupState,
    /// What an installation token may do, as `GET /app/installations/{id}`
    /// reports it; enforced per endpoint like GitHub does.
    installation_permissions: serde_json::Map<String, Value>,
    /// Tokens with permissions of their own: an Actions run's
    /// `GITHUB_TOKEN` gets exactly what its workflow's `permissions` grant.
    token_permissions: std::collections::HashMap<String, serde_json::Map<String, Value>>,
    artifacts: artifacts::ArtifactState,
    /// Commits made through `createCommitOnBranch`.
    api_commits: Vec<Value>,
    /// Where this server answers (the artifact download's redirect host).
    self_url: String,
}

/// What longtx's App needs, as README's setup table lists it.
pub fn full_app_permissions() -> serde_json::Map<String, Value> {
    let permissions = json!({
        "actions": "write",
        "contents": "write",
        "pull_requests": "write",
        "issues": "write",
        "checks": "write",
        "members": "read",
        "metadata": "read",
        "secrets": "read",
        "actions_variables": "read",
    });
    permissions.as_object().unwrap().clone()
}

#[derive(Clone, Default)]
pub struct FakeGitHub {
    inner: Arc<Mutex<Inner>>,
    pub url: String,
}

impl FakeGitHub {
    pub async fn start() -> FakeGitHub {
        let inner = Arc::new(Mutex::new(Inner {
            next_run_id: 9000,
            installation_permissions: full_app_permissions(),
            ..Inner::default()
        }));
        let app = Router::new()
            .route("/repos/{owner}/{repo}", get(repository))
            .route(
                "/app/installations/{id}/access_tokens",
                post(installation_token),
            )
            .route(
                "/repos/{owner}/{repo}/actions/workflows/{workflow}/dispatches",
                post(dispatch),
            )
            .route(
                "/repos/{owner}/{repo}/actions/workflows/{workflow}/runs",
                get(list_runs),
            )
            .route("/repos/{owner}/{repo}/actions/runs/{id}", get(one_run))
            .merge(pulls::routes())
            .merge(repo::routes())
            .merge(setup::routes())
            .merge(artifacts::routes())
            .merge(commits::routes())
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        inner.lock().unwrap().self_url = url.clone();
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        FakeGitHub { inner, url }
    }

    /// longtx's real GitHub client, pointed at this server with a token.
    pub fn client(&self, timeout: Duration) -> longtx_github::OctocrabGitHub {
        longtx_github::OctocrabGitHub::new(
            &self.url,
            &longtx_github::Credentials::Token("ghp_test_token".into()),
            timeout,
        )
        .expect("a client for the fake")
    }

    /// Limits what installation tokens may do (keys like `actions`,
    /// `pull_requests`; values `read` or `write`).
    pub fn set_installation_permissions(&self, permissions: Value) {
        self.inner.lock().unwrap().installation_permissions =
            permissions.as_object().cloned().unwrap_or_default();
    }

    /// A run's `GITHUB_TOKEN` for `workflow_yaml`: it may do what the
    /// workflow's `permissions` (job-level first) grant, nothing else, as
    /// GitHub documents for "Permissions for the GITHUB_TOKEN".
    pub fn actions_token(&self, workflow_yaml: &str) -> String {
        self.actions_token_for(workflow_yaml, None)
    }

    /// As [`FakeGitHub::actions_token`], for job `job` (the first when `None`).
    pub fn actions_token_for(&self, workflow_yaml: &str, job: Option<&str>) -> String {
        let doc: serde_yaml::Value = serde_yaml::from_str(workflow_yaml).expect("workflow YAML");
        let job_permissions = doc["jobs"]
            .as_mapping()
            .and_then(|jobs| match job {
                Some(name) => jobs.get(name),
                None => jobs.values().next(),
            })
            .map(|job| job["permissions"].clone())
            .filter(|p| !p.is_null());
        let permissions = job_permissions.unwrap_or_else(|| doc["permissions"].clone());
        let granted: serde_json::Map<String, Value> = permissions
            .as_mapping()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.as_str()?.replace('-', "_"), json!(v.as_str()?))))
                    .collect()
            })
            .unwrap_or_default();
        let mut inner = self.inner.lock().unwrap();
        let token = format!("ghs_actions_{}", inner.token_permissions.len() + 1);
        inner.token_permissions.insert(token.clone(), granted);
        token
    }

    /// Behave as a GitHub Enterprise Server older than the 2026-02-19
    /// change: `return_run_details` is an unknown key (422), and a
    /// successful dispatch answers 204 with no body.
    pub fn set_old_enterprise_server(&self) {
        self.inner.lock().unwrap().old_enterprise_server = true;
    }

    /// Faults for the next dispatch requests, in order.
    pub fn fail_next(&self, faults: impl IntoIterator<Item = Fault>) {
        self.inner.lock().unwrap().faults.extend(faults);
    }

    /// Every call takes this long before it is answered.
    pub fn set_latency(&self, latency: Duration) {
        self.inner.lock().unwrap().latency = latency;
    }

    /// Runs created, one per successful dispatch.
    pub fn runs(&self) -> Vec<Value> {
        self.inner.lock().unwrap().runs.clone()
    }

    /// The `job_id` input of every created run.
    pub fn dispatched_job_ids(&self) -> Vec<i64> {
        self.runs()
            .iter()
            .map(|r| r["inputs"]["job_id"].as_str().unwrap().parse().unwrap())
            .collect()
    }

    pub fn dispatch_requests(&self) -> Vec<Value> {
        self.inner.lock().unwrap().dispatch_requests.clone()
    }

    /// `METHOD path` of every request, in order.
    pub fn requests(&self) -> Vec<String> {
        self.inner.lock().unwrap().requests.clone()
    }

    /// The Authorization header of the last repository request.
    pub fn last_auth(&self) -> Option<String> {
        self.inner.lock().unwrap().last_auth.clone()
    }

    /// Ends a run the way GitHub would report it.
    pub fn complete_run(&self, run_id: u64, conclusion: &str) {
        let mut inner = self.inner.lock().unwrap();
        for run in inner.runs.iter_mut() {
            if run["id"] == run_id {
                run["status"] = json!("completed");
                run["conclusion"] = json!(conclusion);
            }
        }
    }
}

type Shared = Arc<Mutex<Inner>>;

async fn arrive(inner: &Shared, line: String) {
    let latency = {
        let mut inner = inner.lock().unwrap();
        inner.requests.push(line);
        inner.latency
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
}

/// A GitHub App exchanges its JWT for an installation token here.
async fn installation_token(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Response {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    arrive(
        &inner,
        format!("POST /app/installations/{id}/access_tokens"),
    )
    .await;
    // A JWT is three base64url parts; anything else is refused.
    let jwt = auth.strip_prefix("Bearer ").unwrap_or("");
    if jwt.split('.').count() != 3 {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"message": "A JSON web token could not be decoded"})),
        )
            .into_response();
    }
    let permissions = inner.lock().unwrap().installation_permissions.clone();
    (
        StatusCode::CREATED,
        Json(json!({
            "token": format!("ghs_installation_{id}"),
            "expires_at": "2099-01-01T00:00:00Z",
            "permissions": permissions,
            "repository_selection": "selected",
        })),
    )
        .into_response()
}

/// Who the caller acts as: the App's bot for an installation token, the
/// token's user otherwise.
pub(super) fn caller_login(headers: &HeaderMap) -> String {
    if bearer(headers).starts_with("ghs_") {
        format!("{APP_SLUG}[bot]")
    } else {
        OWN_LOGIN.to_owned()
    }
}

fn bearer(headers: &HeaderMap) -> String {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    auth.split_once(' ')
        .map(|(_, t)| t)
        .unwrap_or(auth)
        .to_owned()
}

/// GitHub answers an installation token that lacks the endpoint's
/// permission with 403 "Resource not accessible by integration" (docs
/// "Permissions required for GitHub Apps"; where the docs list
/// alternatives, as for labels, any one of `needs` is enough). Other
/// tokens pass.
fn gate(inner: &Shared, headers: &HeaderMap, needs: &[(&str, &str)]) -> Option<Response> {
    if needs.is_empty() || !bearer(headers).starts_with("ghs_") {
        return None;
    }
    let inner = inner.lock().unwrap();
    let token = bearer(headers);
    let permissions = inner
        .token_permissions
        .get(&token)
        .unwrap_or(&inner.installation_permissions);
    let enough = needs.iter().any(|(permission, level)| {
        let granted = permissions
            .get(*permission)
            .and_then(Value::as_str)
            .unwrap_or("none");
        match *level {
            "read" => matches!(granted, "read" | "write" | "admin"),
            _ => matches!(granted, "write" | "admin"),
        }
    });
    (!enough).then(|| {
        (
            StatusCode::FORBIDDEN,
            Json(json!({
                "message": "Resource not accessible by integration",
                "documentation_url": "https://docs.github.com/rest",
            })),
        )
            .into_response()
    })
}

/// Records the request, then refuses it as GitHub would: 401 without
/// credentials, 403 when an installation token lacks all of `needs`.
async fn admit(
    inner: &Shared,
    headers: &HeaderMap,
    line: String,
    needs: &[(&str, &str)],
) -> Option<Response> {
    arrive(inner, line).await;
    if !authorised(headers) {
        return Some(bad_credentials());
    }
    gate(inner, headers, needs)
}

fn bad_credentials() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        Json(json!({"message": "Bad credentials"})),
    )
        .into_response()
}

fn authorised(headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .is_some_and(|v| v.to_str().unwrap_or("").len() > 8)
}

async fn repository(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
) -> Response {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    arrive(
        &inner,
        format!(
            "GET /repos/{owner}/{repo} auth={}",
            auth.split(' ').next().unwrap_or("")
        ),
    )
    .await;
    inner.lock().unwrap().last_auth = Some(auth);
    if !authorised(&headers) {
        return bad_credentials();
    }
    // GitHub answers 404 for a repository that does not exist or that the
    // credentials cannot see (docs: "Get a repository"); the fake holds one.
    if !format!("{owner}/{repo}").eq_ignore_ascii_case(crate::github_events::TARGET_REPO) {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest/repos/repos#get-a-repository", "status": "404"})),
        )
            .into_response();
    }
    Json(json!({"full_name": format!("{owner}/{repo}"), "default_branch": "main"})).into_response()
}

async fn dispatch(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, workflow)): Path<(String, String, String)>,
    Json(body): Json<Value>,
) -> Response {
    let line = format!("POST /repos/{owner}/{repo}/actions/workflows/{workflow}/dispatches");
    if let Some(refused) = admit(&inner, &headers, line, &[("actions", "write")]).await {
        return refused;
    }
    // GitHub reads the workflow at the dispatched ref: it must exist, have
    // a `workflow_dispatch` trigger and declare every input sent; the run's
    // `display_title` is its `run-name` rendered with the inputs.
    let display_title = match workflow_title(&inner, &owner, &repo, &workflow, &body) {
        Ok(title) => title,
        Err(refusal) => {
            inner.lock().unwrap().dispatch_requests.push(body.clone());
            return refusal;
        }
    };
    {
        let mut inner = inner.lock().unwrap();
        if inner.old_enterprise_server && body.get("return_run_details").is_some() {
            inner.dispatch_requests.push(body.clone());
            return (
                StatusCode::UNPROCESSABLE_ENTITY,
                Json(json!({"message": "Invalid request.\n\n\"return_run_details\" is not a permitted key."})),
            )
                .into_response();
        }
    }
    let (fault, run) = {
        let mut inner = inner.lock().unwrap();
        inner.dispatch_requests.push(body.clone());
        let fault = inner.faults.pop_front();
        let creates = !matches!(
            fault,
            Some(Fault::Status(_)) | Some(Fault::RetryAfter(_)) | Some(Fault::SecondaryLimit)
        );
        let run = creates.then(|| {
            inner.next_run_id += 1;
            let id = inner.next_run_id;
            let title = display_title.clone();
            let run = json!({
                "id": id,
                "html_url": format!("https://github.example/{owner}/{repo}/actions/runs/{id}"),
                "status": "queued",
                "conclusion": null,
                "workflow": workflow,
                "display_title": title,
                "event": "workflow_dispatch",
                // What ties a run to its dispatch (docs "Get a workflow run").
                "path": format!(".github/workflows/{workflow}"),
                "head_repository": {"full_name": format!("{owner}/{repo}")},
                "created_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "ref": body["ref"],
                "inputs": body["inputs"],
            });
            inner.runs.push(run.clone());
            run
        });
        (fault, run)
    };
    match fault {
        Some(Fault::Status(status)) => {
            return (
                StatusCode::from_u16(status).unwrap(),
                Json(json!({"message": "injected fault"})),
            )
                .into_response()
        }
        Some(Fault::RetryAfter(secs)) => {
            return (
                StatusCode::FORBIDDEN,
                [("retry-after", secs.to_string())],
                Json(json!({"message": "You have exceeded a secondary rate limit."})),
            )
                .into_response()
        }
        Some(Fault::SecondaryLimit) => {
            return (
                StatusCode::FORBIDDEN,
                Json(json!({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."})),
            )
                .into_response()
        }
        Some(Fault::AcceptThenHang(wait)) => tokio::time::sleep(wait).await,
        None => {}
    }
    let run = run.expect("a run was created");
    let wants_details = body["return_run_details"] == true;
    if !wants_details {
        return StatusCode::NO_CONTENT.into_response();
    }
    Json(json!({
        "workflow_run_id": run["id"],
        "run_url": format!("https://api.github.example/repos/{owner}/{repo}/actions/runs/{}", run["id"]),
        "html_url": run["html_url"],
    }))
    .into_response()
}

/// The dispatched workflow's file, from the remote at the ref. Without a
/// remote, or with [`FakeGitHub::with_shipped_workflows`] when the remote
/// lacks the file, the template this repository ships under that name, as
/// if the user had copied it to the default branch.
fn workflow_text(inner: &Shared, workflow: &str, git_ref: &str) -> Option<String> {
    let (git_dir, overlay) = {
        let inner = inner.lock().unwrap();
        (inner.repo.git_dir.clone(), inner.repo.shipped_workflows)
    };
    let from_remote = git_dir
        .as_deref()
        .and_then(|dir| repo::file_at(dir, git_ref, &format!(".github/workflows/{workflow}")));
    if from_remote.is_some() || (git_dir.is_some() && !overlay) {
        return from_remote;
    }
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../.github/workflows")
            .join(workflow),
    )
    .ok()
}

// The refusal is the handler's whole response, returned as it is built; a
// fake's hot path does not need it boxed.
#[allow(clippy::result_large_err)]
fn workflow_title(
    inner: &Shared,
    owner: &str,
    repo: &str,
    workflow: &str,
    body: &Value,
) -> Result<String, Response> {
    let refuse = |status: StatusCode, message: String| {
        (status, Json(json!({"message": message}))).into_response()
    };
    let git_ref = body["ref"].as_str().unwrap_or("main");
    let Some(text) = workflow_text(inner, workflow, git_ref) else {
        return Err(refuse(StatusCode::NOT_FOUND, "Not Found".into()));
    };
    let declared = crate::workflow_runner::dispatch_inputs(&text).map_err(|_| {
        refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Workflow does not have 'workflow_dispatch' trigger".into(),
        )
    })?;
    let inputs: std::collections::BTreeMap<String, String> = body["inputs"]
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let unexpected: Vec<&String> = inputs
        .keys()
        .filter(|k| !declared.contains_key(*k))
        .collect();
    if !unexpected.is_empty() {
        return Err(refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Unexpected inputs provided: {unexpected:?}"),
        ));
    }
    if let Some((name, _)) = declared
        .iter()
        .find(|(name, spec)| spec.required && spec.default.is_none() && !inputs.contains_key(*name))
    {
        return Err(refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Required input '{name}' not provided"),
        ));
    }
    let github = crate::workflow_runner::GithubContext {
        repository: format!("{owner}/{repo}"),
        ref_name: git_ref.to_owned(),
        token: String::new(),
        api_url: String::new(),
        server_url: "https://github.example".into(),
        actor: OWN_LOGIN.into(),
        run_id: 0,
    };
    let title = crate::workflow_runner::run_name(&text, &inputs, &github)
        .map_err(|e| refuse(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
    // Without `run-name`, a dispatched run is titled with the workflow's name.
    Ok(title.unwrap_or_else(|| workflow.trim_end_matches(".yml").to_owned()))
}

async fn list_runs(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, workflow)): Path<(String, String, String)>,
) -> Response {
    let line = format!("GET /repos/{owner}/{repo}/actions/workflows/{workflow}/runs");
    if let Some(refused) = admit(&inner, &headers, line, &[("actions", "read")]).await {
        return refused;
    }
    // A workflow's runs only, newest first.
    let runs: Vec<Value> = inner
        .lock()
        .unwrap()
        .runs
        .iter()
        .rev()
        .filter(|run| run["workflow"] == workflow.as_str())
        .cloned()
        .collect();
    Json(json!({"total_count": runs.len(), "workflow_runs": runs})).into_response()
}

async fn one_run(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, id)): Path<(String, String, u64)>,
) -> Response {
    let line = format!("GET /repos/{owner}/{repo}/actions/runs/{id}");
    if let Some(refused) = admit(&inner, &headers, line, &[("actions", "read")]).await {
        return refused;
    }
    let run = inner
        .lock()
        .unwrap()
        .runs
        .iter()
        .find(|r| r["id"] == id)
        .cloned();
    match run {
        Some(run) => Json(run).into_response(),
        None => (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response(),
    }
}
