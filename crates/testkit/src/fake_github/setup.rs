//! The fake's set-up side, for `longtx doctor`: repository webhooks and
//! Actions secret names (a token's view), and the App's own webhook and
//! installation (read with the App's JWT only, as GitHub requires).

use super::{admit, arrive, FakeGitHub, Shared, APP_SLUG};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

#[derive(Debug, Default)]
pub(super) struct SetupState {
    /// (url, active, events) of each repository webhook.
    pub hooks: Vec<(String, bool, Vec<String>)>,
    pub secrets: Vec<String>,
    /// Organisation secrets shared with the repository.
    pub org_secrets: Vec<String>,
    /// Environments and their secrets.
    pub environments: Vec<(String, Vec<String>)>,
    /// Repository and organisation (shared) Actions variables.
    pub variables: Vec<(String, String)>,
    pub org_variables: Vec<(String, String)>,
    /// The App's webhook URL and subscribed events.
    pub app_hook_url: String,
    pub app_events: Vec<String>,
}

impl FakeGitHub {
    pub fn add_repo_hook(&self, url: &str, active: bool, events: &[&str]) {
        self.inner.lock().unwrap().setup.hooks.push((
            url.to_owned(),
            active,
            events.iter().map(|e| e.to_string()).collect(),
        ));
    }

    pub fn set_actions_secrets(&self, names: &[&str]) {
        self.inner.lock().unwrap().setup.secrets = names.iter().map(|n| n.to_string()).collect();
    }

    /// Organisation secrets shared with the repository.
    pub fn set_org_secrets(&self, names: &[&str]) {
        self.inner.lock().unwrap().setup.org_secrets =
            names.iter().map(|n| n.to_string()).collect();
    }

    /// An environment and its secrets.
    pub fn add_environment(&self, name: &str, secrets: &[&str]) {
        self.inner.lock().unwrap().setup.environments.push((
            name.to_owned(),
            secrets.iter().map(|n| n.to_string()).collect(),
        ));
    }

    /// A repository Actions variable.
    pub fn set_actions_variable(&self, name: &str, value: &str) {
        let mut inner = self.inner.lock().unwrap();
        inner.setup.variables.retain(|(n, _)| n != name);
        inner
            .setup
            .variables
            .push((name.to_owned(), value.to_owned()));
    }

    /// An organisation Actions variable shared with the repository.
    pub fn set_org_variable(&self, name: &str, value: &str) {
        self.inner
            .lock()
            .unwrap()
            .setup
            .org_variables
            .push((name.to_owned(), value.to_owned()));
    }

    /// The App's webhook, as configured in its settings.
    pub fn set_app_hook(&self, url: &str, events: &[&str]) {
        let mut inner = self.inner.lock().unwrap();
        inner.setup.app_hook_url = url.to_owned();
        inner.setup.app_events = events.iter().map(|e| e.to_string()).collect();
    }
}

pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/repos/{owner}/{repo}/hooks", get(hooks))
        .route("/repos/{owner}/{repo}/actions/secrets", get(secrets))
        .route(
            "/repos/{owner}/{repo}/actions/organization-secrets",
            get(org_secrets),
        )
        .route("/repos/{owner}/{repo}/environments", get(environments))
        .route(
            "/repos/{owner}/{repo}/environments/{env}/secrets",
            get(environment_secrets),
        )
        .route(
            "/repos/{owner}/{repo}/actions/variables/{name}",
            get(variable),
        )
        .route(
            "/repos/{owner}/{repo}/actions/organization-variables",
            get(org_variables),
        )
        .route("/app/hook/config", get(app_hook_config))
        .route("/app", get(app))
        .route("/app/installations/{id}", get(installation))
}

/// A JWT is three base64url parts; the `/app` endpoints take nothing else.
fn jwt(headers: &HeaderMap) -> bool {
    super::bearer(headers).split('.').count() == 3
}

/// Records the request, then refuses anything but the App's JWT.
async fn admit_jwt(inner: &Shared, headers: &HeaderMap, line: String) -> Option<Response> {
    arrive(inner, line).await;
    (!jwt(headers)).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            Json(json!({"message": "A JSON web token could not be decoded"})),
        )
            .into_response()
    })
}

async fn hooks(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((o, r)): Path<(String, String)>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{o}/{r}/hooks"),
        &[("repository_hooks", "read")],
    )
    .await
    {
        return refused;
    }
    let hooks: Vec<Value> = inner
        .lock()
        .unwrap()
        .setup
        .hooks
        .iter()
        .map(|(url, active, events)| json!({"active": active, "events": events, "config": {"url": url, "content_type": "json"}}))
        .collect();
    Json(hooks).into_response()
}

async fn secrets(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((o, r)): Path<(String, String)>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{o}/{r}/actions/secrets"),
        &[("secrets", "read")],
    )
    .await
    {
        return refused;
    }
    let names = inner.lock().unwrap().setup.secrets.clone();
    let secrets: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
    Json(json!({"total_count": secrets.len(), "secrets": secrets})).into_response()
}

async fn app_hook_config(State(inner): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(refused) = admit_jwt(&inner, &headers, "GET /app/hook/config".into()).await {
        return refused;
    }
    let url = inner.lock().unwrap().setup.app_hook_url.clone();
    Json(json!({"url": url, "content_type": "json", "insecure_ssl": "0"})).into_response()
}

async fn app(State(inner): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(refused) = admit_jwt(&inner, &headers, "GET /app".into()).await {
        return refused;
    }
    let events = inner.lock().unwrap().setup.app_events.clone();
    Json(json!({"slug": APP_SLUG, "events": events})).into_response()
}

async fn installation(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Response {
    if let Some(refused) = admit_jwt(&inner, &headers, format!("GET /app/installations/{id}")).await
    {
        return refused;
    }
    let permissions = inner.lock().unwrap().installation_permissions.clone();
    Json(json!({"id": id, "app_slug": APP_SLUG, "permissions": permissions})).into_response()
}

/// docs "List repository organization secrets": names shared with the
/// repository; needs the repository's Secrets: read.
async fn org_secrets(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((o, r)): Path<(String, String)>,
) -> Response {
    let line = format!("GET /repos/{o}/{r}/actions/organization-secrets");
    if let Some(refused) = admit(&inner, &headers, line, &[("secrets", "read")]).await {
        return refused;
    }
    let names = inner.lock().unwrap().setup.org_secrets.clone();
    let secrets: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
    Json(json!({"total_count": secrets.len(), "secrets": secrets})).into_response()
}

/// docs "List environments": needs Actions: read.
async fn environments(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((o, r)): Path<(String, String)>,
) -> Response {
    let line = format!("GET /repos/{o}/{r}/environments");
    if let Some(refused) = admit(&inner, &headers, line, &[("actions", "read")]).await {
        return refused;
    }
    let names: Vec<Value> = inner
        .lock()
        .unwrap()
        .setup
        .environments
        .iter()
        .map(|(n, _)| json!({"name": n}))
        .collect();
    Json(json!({"total_count": names.len(), "environments": names})).into_response()
}

/// docs "List environment secrets": needs Secrets: read.
async fn environment_secrets(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((o, r, env)): Path<(String, String, String)>,
) -> Response {
    let line = format!("GET /repos/{o}/{r}/environments/{env}/secrets");
    if let Some(refused) = admit(&inner, &headers, line, &[("secrets", "read")]).await {
        return refused;
    }
    let found = inner
        .lock()
        .unwrap()
        .setup
        .environments
        .iter()
        .find(|(n, _)| *n == env)
        .cloned();
    let Some((_, names)) = found else {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response();
    };
    let secrets: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
    Json(json!({"total_count": secrets.len(), "secrets": secrets})).into_response()
}

/// docs "Get a repository variable": needs Variables (`actions_variables`): read.
async fn variable(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((o, r, name)): Path<(String, String, String)>,
) -> Response {
    let line = format!("GET /repos/{o}/{r}/actions/variables/{name}");
    if let Some(refused) = admit(&inner, &headers, line, &[("actions_variables", "read")]).await {
        return refused;
    }
    let found = inner
        .lock()
        .unwrap()
        .setup
        .variables
        .iter()
        .find(|(n, _)| *n == name)
        .cloned();
    match found {
        Some((name, value)) => Json(json!({"name": name, "value": value})).into_response(),
        None => (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response(),
    }
}

/// docs "List repository organization variables": needs Variables: read.
async fn org_variables(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((o, r)): Path<(String, String)>,
) -> Response {
    let line = format!("GET /repos/{o}/{r}/actions/organization-variables");
    if let Some(refused) = admit(&inner, &headers, line, &[("actions_variables", "read")]).await {
        return refused;
    }
    let variables: Vec<Value> = inner
        .lock()
        .unwrap()
        .setup
        .org_variables
        .iter()
        .map(|(n, v)| json!({"name": n, "value": v, "visibility": "all"}))
        .collect();
    Json(json!({"total_count": variables.len(), "variables": variables})).into_response()
}
