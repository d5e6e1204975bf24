//! Devin's API v3 as longtx reads it (docs.devin.ai, "Get session"):
//! `GET /v3/organizations/{org}/sessions/{devin_id}` answers the session
//! with `acus_consumed`, to a `cog_` service token only (401 otherwise),
//! and 404 for a session the organisation does not have.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub const DEVIN_ORG: &str = "org-acme";
pub const DEVIN_SERVICE_TOKEN: &str = "cog_test_service_token";

#[derive(Default)]
struct Inner {
    acus: HashMap<String, f64>,
    requests: Vec<String>,
}

#[derive(Clone)]
pub struct FakeDevin {
    inner: Arc<Mutex<Inner>>,
    pub url: String,
}

impl FakeDevin {
    pub async fn start() -> FakeDevin {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new()
            .route("/v3/organizations/{org}/sessions/{id}", get(session))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        FakeDevin { inner, url }
    }

    /// A session of the organisation, with the ACUs it consumed.
    pub fn add_session(&self, devin_id: &str, acus: f64) {
        self.inner
            .lock()
            .unwrap()
            .acus
            .insert(devin_id.to_owned(), acus);
    }

    pub fn requests(&self) -> Vec<String> {
        self.inner.lock().unwrap().requests.clone()
    }

    /// longtx's settings for this server.
    pub fn settings(&self, usd_per_acu: Option<f64>) -> longtx_pipeline::DevinSettings {
        longtx_pipeline::DevinSettings {
            api_url: self.url.clone(),
            org_id: DEVIN_ORG.into(),
            service_token: DEVIN_SERVICE_TOKEN.into(),
            usd_per_acu,
        }
    }
}

async fn session(
    State(inner): State<Arc<Mutex<Inner>>>,
    headers: HeaderMap,
    Path((org, id)): Path<(String, String)>,
) -> Response {
    let mut inner = inner.lock().unwrap();
    inner
        .requests
        .push(format!("GET /v3/organizations/{org}/sessions/{id}"));
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if auth != format!("Bearer {DEVIN_SERVICE_TOKEN}") {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"detail": "Invalid API key"})),
        )
            .into_response();
    }
    match (org == DEVIN_ORG, inner.acus.get(&id)) {
        (true, Some(acus)) => {
            Json(json!({"devin_id": id, "status": "exit", "acus_consumed": acus})).into_response()
        }
        _ => (
            StatusCode::NOT_FOUND,
            Json(json!({"detail": "Session not found"})),
        )
            .into_response(),
    }
}
