use crate::db::TestDatabase;
use longtx_core::{IgnoreList, IntakePolicy};
use longtx_http::{AppState, WebhookAuth};
use longtx_store::{PoolSettings, Store};
use std::time::Duration;

/// How a test wants its app; defaults match the service's defaults.
pub struct TestAppBuilder {
    policy: IntakePolicy,
    token: Option<String>,
    pool: PoolSettings,
    ignore_list: IgnoreList,
    database: Option<TestDatabase>,
}

impl TestAppBuilder {
    pub fn token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    pub fn policy(mut self, change: impl FnOnce(&mut IntakePolicy)) -> Self {
        change(&mut self.policy);
        self
    }

    pub fn max_connections(mut self, n: u32) -> Self {
        self.pool.max_connections = n;
        self
    }

    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.pool.acquire_timeout = timeout;
        self
    }

    pub fn ignore_list(mut self, yaml: &str) -> Self {
        self.ignore_list = IgnoreList::parse(yaml).expect("test ignore list parses");
        self
    }

    /// Serve from an existing database, as a second replica would.
    pub fn database(mut self, db: TestDatabase) -> Self {
        self.database = Some(db);
        self
    }

    pub async fn spawn(self) -> TestApp {
        let db = match self.database {
            Some(db) => db,
            None => TestDatabase::create().await,
        };
        let store = db.store(&self.pool);
        let state = AppState::new(
            store.clone(),
            self.policy,
            WebhookAuth::new(self.token),
            self.ignore_list,
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding a loopback port");
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            axum::serve(listener, longtx_http::router(state))
                .with_graceful_shutdown(async {
                    stopped.await.ok();
                })
                .await
                .expect("serving");
        });
        TestApp {
            base_url: format!("http://{addr}"),
            client: reqwest::Client::new(),
            store,
            db,
            stop: Some(stop),
            server: Some(server),
        }
    }
}

/// The real router on a real socket, with its own database.
pub struct TestApp {
    pub base_url: String,
    pub client: reqwest::Client,
    pub store: Store,
    pub db: TestDatabase,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl TestApp {
    pub fn builder() -> TestAppBuilder {
        TestAppBuilder {
            policy: IntakePolicy::default(),
            token: None,
            pool: PoolSettings::default(),
            ignore_list: IgnoreList::default(),
            database: None,
        }
    }

    pub async fn spawn() -> TestApp {
        Self::builder().spawn().await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// POSTs a JSON body to a webhook path with the right content type.
    pub async fn post_json(&self, path: &str, body: &serde_json::Value) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("request reaches the app")
    }

    pub async fn get_json(&self, path: &str) -> (reqwest::StatusCode, serde_json::Value) {
        let response = self
            .client
            .get(self.url(path))
            .send()
            .await
            .expect("request reaches the app");
        let status = response.status();
        (status, response.json().await.expect("a JSON response"))
    }

    /// Stops accepting, lets in-flight requests finish, and waits for it.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
        if let Some(server) = self.server.take() {
            server.await.ok();
        }
    }
}
