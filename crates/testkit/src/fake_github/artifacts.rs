//! Workflow artifacts as GitHub serves them (docs "REST API endpoints for
//! workflow artifacts"): listed per run (`actions: read`); a download
//! answers 302 to a short-lived URL ("This URL expires after 1 minute")
//! whose host refuses a request that also carries an `Authorization`
//! header (Azure Blob answers 400 `InvalidAuthenticationInfo`: octocrab
//! PR #562, rapid7/metakitty PR #30); an expired artifact is 410 "Artifact
//! has expired". What a run uploads arrives through
//! [`FakeGitHub::store_artifact`], which the upload-artifact stand-in
//! calls, refusing a second artifact of the same name in one run as
//! upload-artifact v4 does (409 Conflict) unless `overwrite`.

use super::{admit, FakeGitHub, Shared};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a download URL lives (docs: one minute).
const URL_LIFETIME: Duration = Duration::from_secs(60);

#[derive(Debug, Default)]
pub(super) struct ArtifactState {
    artifacts: Vec<Stored>,
    /// Signatures of download URLs handed out, with when.
    signed: HashMap<String, (u64, Instant)>,
    next_id: u64,
}

#[derive(Debug, Clone)]
struct Stored {
    id: u64,
    run_id: u64,
    name: String,
    zip: Vec<u8>,
    expired: bool,
}

impl FakeGitHub {
    /// A run uploads an artifact (the upload-artifact stand-in). `Err` as
    /// upload-artifact v4 fails: a name already uploaded in this run.
    pub fn store_artifact(
        &self,
        run_id: u64,
        name: &str,
        zip: Vec<u8>,
        overwrite: bool,
    ) -> Result<u64, String> {
        let mut inner = self.inner.lock().unwrap();
        let state = &mut inner.artifacts;
        if let Some(at) = state
            .artifacts
            .iter()
            .position(|a| a.run_id == run_id && a.name == name)
        {
            if !overwrite {
                return Err(format!(
                    "Failed to CreateArtifact: Received non-retryable error: Failed request: (409) Conflict: \
                     an artifact with this name already exists on the workflow run ({name})"
                ));
            }
            state.artifacts.remove(at);
        }
        state.next_id += 1;
        let id = 7000 + state.next_id;
        state.artifacts.push(Stored {
            id,
            run_id,
            name: name.to_owned(),
            zip,
            expired: false,
        });
        Ok(id)
    }

    /// Artifacts past their retention.
    pub fn expire_artifacts(&self) {
        for a in self.inner.lock().unwrap().artifacts.artifacts.iter_mut() {
            a.expired = true;
        }
    }

    /// The artifacts of a run, by name.
    pub fn artifact_names(&self, run_id: u64) -> Vec<String> {
        let inner = self.inner.lock().unwrap();
        inner
            .artifacts
            .artifacts
            .iter()
            .filter(|a| a.run_id == run_id)
            .map(|a| a.name.clone())
            .collect()
    }
}

pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route(
            "/repos/{owner}/{repo}/actions/runs/{id}/artifacts",
            get(list),
        )
        .route(
            "/repos/{owner}/{repo}/actions/artifacts/{id}/{format}",
            get(download),
        )
        .route("/_blob/artifacts/{id}", get(blob))
}

async fn list(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, run_id)): Path<(String, String, u64)>,
) -> Response {
    let line = format!("GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts");
    if let Some(refused) = admit(&inner, &headers, line, &[("actions", "read")]).await {
        return refused;
    }
    let artifacts: Vec<_> = inner
        .lock()
        .unwrap()
        .artifacts
        .artifacts
        .iter()
        .filter(|a| a.run_id == run_id)
        .map(|a| {
            json!({
                "id": a.id,
                "node_id": format!("MDg6QXJ0aWZhY3Q{}", a.id),
                "name": a.name,
                "size_in_bytes": a.zip.len(),
                "url": format!("https://api.github.example/repos/{owner}/{repo}/actions/artifacts/{}", a.id),
                "archive_download_url": format!("https://api.github.example/repos/{owner}/{repo}/actions/artifacts/{}/zip", a.id),
                "expired": a.expired,
                "workflow_run": {"id": run_id},
            })
        })
        .collect();
    Json(json!({"total_count": artifacts.len(), "artifacts": artifacts})).into_response()
}

async fn download(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, id, format)): Path<(String, String, u64, String)>,
) -> Response {
    let line = format!("GET /repos/{owner}/{repo}/actions/artifacts/{id}/{format}");
    if let Some(refused) = admit(&inner, &headers, line, &[("actions", "read")]).await {
        return refused;
    }
    if format != "zip" {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"message": "archive_format must be zip"})),
        )
            .into_response();
    }
    let mut guard = inner.lock().unwrap();
    let state = &mut guard.artifacts;
    let Some(artifact) = state.artifacts.iter().find(|a| a.id == id).cloned() else {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response();
    };
    if artifact.expired {
        return (
            StatusCode::GONE,
            Json(json!({"message": "Artifact has expired"})),
        )
            .into_response();
    }
    let signature = format!("sv{}-{}", id, state.signed.len() + 1);
    state.signed.insert(signature.clone(), (id, Instant::now()));
    let host = guard.self_url.clone();
    (
        StatusCode::FOUND,
        [(
            "location",
            format!("{host}/_blob/artifacts/{id}?sig={signature}"),
        )],
    )
        .into_response()
}

/// The blob host: signed URLs only, never with an `Authorization` header.
async fn blob(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    super::arrive(&inner, format!("GET /_blob/artifacts/{id}")).await;
    if headers.contains_key("authorization") {
        return (
            StatusCode::BAD_REQUEST,
            "<Error><Code>InvalidAuthenticationInfo</Code><Message>Authentication information is not given in the correct format. Check the value of Authorization header.</Message></Error>",
        )
            .into_response();
    }
    let guard = inner.lock().unwrap();
    let signed = query
        .get("sig")
        .and_then(|sig| guard.artifacts.signed.get(sig))
        .filter(|(for_id, at)| *for_id == id && at.elapsed() < URL_LIFETIME);
    if signed.is_none() {
        return (
            StatusCode::FORBIDDEN,
            "<Error><Code>AuthenticationFailed</Code></Error>",
        )
            .into_response();
    }
    match guard.artifacts.artifacts.iter().find(|a| a.id == id) {
        Some(a) => ([("content-type", "application/zip")], a.zip.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
