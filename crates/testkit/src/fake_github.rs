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

mod pulls;
pub use pulls::{ReviewRequest, OWN_LOGIN};

/// What the next dispatch request meets instead of a plain success.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Answer with this status and create no run.
    Status(u16),
    /// 403 with `Retry-After: secs` (a secondary rate limit).
    RetryAfter(u64),
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
    pulls: pulls::PullState,
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
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
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
    (
        StatusCode::CREATED,
        Json(json!({
            "token": format!("ghs_installation_{id}"),
            "expires_at": "2099-01-01T00:00:00Z",
            "permissions": {"actions": "write", "contents": "write", "pull_requests": "write"},
            "repository_selection": "selected",
        })),
    )
        .into_response()
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
    Json(json!({"full_name": format!("{owner}/{repo}"), "default_branch": "main"})).into_response()
}

async fn dispatch(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, workflow)): Path<(String, String, String)>,
    Json(body): Json<Value>,
) -> Response {
    arrive(
        &inner,
        format!("POST /repos/{owner}/{repo}/actions/workflows/{workflow}/dispatches"),
    )
    .await;
    if !authorised(&headers) {
        return bad_credentials();
    }
    let (fault, run) = {
        let mut inner = inner.lock().unwrap();
        inner.dispatch_requests.push(body.clone());
        let fault = inner.faults.pop_front();
        let creates = !matches!(fault, Some(Fault::Status(_)) | Some(Fault::RetryAfter(_)));
        let run = creates.then(|| {
            inner.next_run_id += 1;
            let id = inner.next_run_id;
            let job_id = body["inputs"]["job_id"].as_str().unwrap_or("?").to_owned();
            let source = body["inputs"]["query_source"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            // The templates' run-names: "longtx job <id>: <query_source>",
            // and "longtx pre-review <id> <head, 12>: ..." for the review.
            let title = if workflow.contains("pre-review") {
                let head = body["inputs"]["head_sha"].as_str().unwrap_or("");
                format!(
                    "longtx pre-review {job_id} {}: {source}",
                    &head[..head.len().min(12)]
                )
            } else {
                format!("longtx job {job_id}: {source}")
            };
            let run = json!({
                "id": id,
                "html_url": format!("https://github.example/{owner}/{repo}/actions/runs/{id}"),
                "status": "queued",
                "conclusion": null,
                "workflow": workflow,
                "display_title": title,
                "event": "workflow_dispatch",
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

async fn list_runs(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, workflow)): Path<(String, String, String)>,
) -> Response {
    if !authorised(&headers) {
        return bad_credentials();
    }
    arrive(
        &inner,
        format!("GET /repos/{owner}/{repo}/actions/workflows/{workflow}/runs"),
    )
    .await;
    let runs: Vec<Value> = inner.lock().unwrap().runs.iter().rev().cloned().collect();
    Json(json!({"total_count": runs.len(), "workflow_runs": runs})).into_response()
}

async fn one_run(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, id)): Path<(String, String, u64)>,
) -> Response {
    if !authorised(&headers) {
        return bad_credentials();
    }
    arrive(
        &inner,
        format!("GET /repos/{owner}/{repo}/actions/runs/{id}"),
    )
    .await;
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
