use crate::db::TestDatabase;
use longtx_core::{IgnoreList, IntakePolicy};
use longtx_http::{AppState, WebhookAuth};
use longtx_store::{PoolSettings, Store};
use std::time::Duration;

/// The target repository of test apps and the fake GitHub.
pub const GITHUB_REPO: &str = crate::github_events::TARGET_REPO;

/// How a test wants its app; defaults match the service's defaults.
pub struct TestAppBuilder {
    policy: IntakePolicy,
    token: Option<String>,
    dashboard_token: Option<String>,
    dispatch_info: Option<longtx_http::DispatchInfo>,
    pool: PoolSettings,
    ignore_list: IgnoreList,
    database: Option<TestDatabase>,
    prompts: Option<longtx_prompt::PromptSources>,
    dispatcher: Option<(
        longtx_pipeline::DispatchSettings,
        Option<longtx_github::OctocrabGitHub>,
    )>,
    github_webhook: Option<String>,
    own_login: Option<String>,
    pre_review: Option<(
        longtx_core::pre_review::PreReviewMode,
        longtx_pipeline::PreReviewSettings,
        longtx_github::OctocrabGitHub,
    )>,
    reviewer: Option<(
        longtx_pipeline::ReviewSettings,
        longtx_github::OctocrabGitHub,
    )>,
    wontfix: Option<(
        longtx_pipeline::WontfixSettings,
        longtx_github::OctocrabGitHub,
    )>,
    pr_opener: Option<(
        longtx_pipeline::PrOpenSettings,
        longtx_github::OctocrabGitHub,
    )>,
    pr_checks: Option<(
        longtx_pipeline::PrCheckSettings,
        longtx_github::OctocrabGitHub,
    )>,
    backlog: Option<longtx_pipeline::BacklogSettings>,
    server_limits: longtx_http::ServerLimits,
    requests: Option<(
        longtx_pipeline::RequestSettings,
        longtx_github::OctocrabGitHub,
    )>,
}

impl TestAppBuilder {
    /// Run the request worker (people's revision requests), as `longtx
    /// serve` does with a client.
    pub fn requests(
        mut self,
        settings: longtx_pipeline::RequestSettings,
        github: longtx_github::OctocrabGitHub,
    ) -> Self {
        self.requests = Some((settings, github));
        self
    }

    /// Run a dispatcher too (`github` `None`: dry-run mode).
    pub fn dispatcher(
        mut self,
        settings: longtx_pipeline::DispatchSettings,
        github: Option<longtx_github::OctocrabGitHub>,
    ) -> Self {
        self.dispatcher = Some((settings, github));
        self
    }

    /// Run the prompt worker on these sources, as `longtx serve` does.
    pub fn prompts(mut self, sources: longtx_prompt::PromptSources) -> Self {
        self.prompts = Some(sources);
        self
    }

    /// Accept GitHub deliveries signed with `secret`, for [`GITHUB_REPO`].
    pub fn github_webhook(mut self, secret: &str) -> Self {
        self.github_webhook = Some(secret.to_owned());
        self
    }

    /// longtx's own login as `serve` reads it at start: webhook PRs by
    /// anyone else never become a job's PR. Unset, the webhook takes any
    /// author, as the tests that stand in for the PR opener need.
    pub fn own_login(mut self, login: &str) -> Self {
        self.own_login = Some(login.to_owned());
        self
    }

    /// `LONGTX_PRE_REVIEW` on or advisory: new PRs wait for a verdict, and
    /// the pre-review worker dispatches and closes through `github`.
    pub fn pre_review(
        mut self,
        mode: longtx_core::pre_review::PreReviewMode,
        settings: longtx_pipeline::PreReviewSettings,
        github: longtx_github::OctocrabGitHub,
    ) -> Self {
        // The worker applies verdicts in the mode the service runs in, as
        // `longtx serve` configures it.
        let mut settings = settings;
        settings.mode = mode;
        self.pre_review = Some((mode, settings, github));
        self
    }

    /// Run the reviewer worker, as `longtx serve` does with a client.
    pub fn reviewer(
        mut self,
        settings: longtx_pipeline::ReviewSettings,
        github: longtx_github::OctocrabGitHub,
    ) -> Self {
        self.reviewer = Some((settings, github));
        self
    }

    /// Run the wontfix worker, as `longtx serve` does with a client.
    pub fn wontfix(
        mut self,
        settings: longtx_pipeline::WontfixSettings,
        github: longtx_github::OctocrabGitHub,
    ) -> Self {
        self.wontfix = Some((settings, github));
        self
    }

    /// The server's timeouts and connection cap (the service's by default).
    pub fn server_limits(mut self, limits: longtx_http::ServerLimits) -> Self {
        self.server_limits = limits;
        self
    }

    /// Run the backlog worker on a checkout, as `longtx serve` does with
    /// `LONGTX_REPO_PATH` and no GitHub.
    pub fn backlog(mut self, settings: longtx_pipeline::BacklogSettings) -> Self {
        self.backlog = Some(settings);
        self
    }

    /// Run the PR checker, as `longtx serve` does with a GitHub App.
    pub fn pr_checks(
        mut self,
        settings: longtx_pipeline::PrCheckSettings,
        github: longtx_github::OctocrabGitHub,
    ) -> Self {
        self.pr_checks = Some((settings, github));
        self
    }

    /// Run the PR opener, as `longtx serve` does with a client.
    pub fn pr_opener(
        mut self,
        settings: longtx_pipeline::PrOpenSettings,
        github: longtx_github::OctocrabGitHub,
    ) -> Self {
        self.pr_opener = Some((settings, github));
        self
    }

    /// `LONGTX_DASHBOARD_TOKEN`: opens the pages only.
    pub fn dashboard_token(mut self, token: &str) -> Self {
        self.dashboard_token = Some(token.to_owned());
        self
    }

    /// What the dashboard says about dispatch, without running a dispatcher.
    pub fn dispatch_info(mut self, max_per_day: i64, dry_run: bool) -> Self {
        self.dispatch_info = Some(longtx_http::DispatchInfo {
            max_per_day,
            max_running: 3,
            dry_run,
            reviewer_capacity: None,
        });
        self
    }

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
        let policy = std::sync::Arc::new(self.policy.clone());
        let policy_for_dispatch = self.policy.clone();
        let mut state = AppState::new(
            store.clone(),
            self.policy,
            WebhookAuth::new(self.token),
            self.ignore_list,
        )
        .with_dashboard_token(self.dashboard_token)
        // As `serve`: the shipped catalogue behind `/patterns/{id}`.
        .with_patterns_dir(crate::shipped_prompt_sources().patterns_dir);
        if let Some(info) = self.dispatch_info {
            state = state.with_dispatch(info);
        }
        if let Some(sources) = self.prompts {
            state = state.with_prompts(longtx_pipeline::spawn_prompt_worker(
                store.clone(),
                sources,
                policy,
            ));
        }
        // The reviewer worker and the dispatcher share one finder, as in
        // `serve`: the dispatcher predicts reviewers before it pays.
        let finder = self.reviewer.map(|(settings, github)| {
            longtx_pipeline::ReviewerFinder::new(
                store.clone(),
                settings,
                std::sync::Arc::new(github),
            )
        });
        if let Some((mut settings, github)) = self.dispatcher {
            state = state.with_dispatch(longtx_http::DispatchInfo {
                max_per_day: settings.caps.max_per_day,
                max_running: settings.caps.max_running,
                dry_run: github.is_none(),
                reviewer_capacity: finder.as_ref().and_then(|f| f.capacity()),
            });
            settings.policy = policy_for_dispatch;
            longtx_pipeline::spawn_dispatcher_with(
                store.clone(),
                settings,
                github.map(std::sync::Arc::new),
                finder.clone(),
            );
        }
        let pre_review_mode = self.pre_review.as_ref().map(|p| p.0).unwrap_or_default();
        if let Some(secret) = &self.github_webhook {
            let mut webhook = longtx_http::GitHubWebhook::new(secret, GITHUB_REPO)
                .with_pre_review(pre_review_mode);
            if let Some(login) = &self.own_login {
                webhook = webhook.with_own_login(login);
            }
            state = state.with_github_webhook(webhook);
        }
        if let Some((settings, github)) = self.requests {
            state = state
                .with_max_revisions(settings.max_revisions)
                .with_requests(longtx_pipeline::spawn_request_worker(
                    store.clone(),
                    settings,
                    std::sync::Arc::new(github),
                ));
        }
        if let Some((mode, settings, github)) = self.pre_review {
            state = state.with_max_revisions(settings.max_revisions);
            let queue = longtx_pipeline::spawn_pre_reviewer(
                store.clone(),
                settings,
                std::sync::Arc::new(github),
            );
            state = state.with_pre_reviews(mode, queue);
        }
        if let Some(finder) = finder {
            state = state.with_reviews(longtx_pipeline::spawn_reviewer_with(finder));
        }
        if let Some((settings, github)) = self.wontfix {
            let live = state.live_ignore_list();
            let queue = longtx_pipeline::spawn_wontfix_worker(
                store.clone(),
                settings,
                std::sync::Arc::new(github),
                live,
            );
            state = state.with_wontfix(queue);
        }
        if let Some((settings, github)) = self.pr_opener {
            let queue = longtx_pipeline::spawn_pr_opener(
                store.clone(),
                settings,
                std::sync::Arc::new(github),
                longtx_pipeline::AfterOpen {
                    reviews: state.reviews.clone(),
                    pre_reviews: state.pre_reviews.clone(),
                },
            );
            state = state.with_pr_opener(queue);
        }
        if let Some(settings) = self.backlog {
            longtx_pipeline::spawn_backlog_worker::<longtx_github::OctocrabGitHub>(
                store.clone(),
                settings,
                None,
                state.live_ignore_list(),
            );
        }
        if let Some((settings, github)) = self.pr_checks {
            let live = state.live_ignore_list();
            state = state.with_pr_checks(longtx_pipeline::spawn_pr_checker(
                store.clone(),
                settings,
                std::sync::Arc::new(github),
                live,
            ));
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding a loopback port");
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let limits = self.server_limits;
        let server = tokio::spawn(async move {
            longtx_http::serve(listener, longtx_http::router(state), limits, async {
                stopped.await.ok();
            })
            .await
            .expect("serving");
        });
        let installation = store
            .installation()
            .await
            .expect("the migrated database has an installation id");
        TestApp {
            base_url: format!("http://{addr}"),
            client: reqwest::Client::new(),
            installation,
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
    /// The database's installation id: the fix branches and PR markers of
    /// this app's jobs are `installation.branch_of(job)` and
    /// `installation.body_marker(job)`.
    pub installation: longtx_core::installation::Installation,
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
            dashboard_token: None,
            dispatch_info: None,
            pool: PoolSettings::default(),
            ignore_list: IgnoreList::default(),
            database: None,
            prompts: None,
            dispatcher: None,
            github_webhook: None,
            own_login: None,
            pre_review: None,
            requests: None,
            reviewer: None,
            wontfix: None,
            pr_opener: None,
            pr_checks: None,
            backlog: None,
            server_limits: longtx_http::ServerLimits::default(),
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

    /// Delivers a GitHub event signed with `secret` under `delivery` id.
    pub async fn post_github(
        &self,
        event: &str,
        delivery: &str,
        body: &serde_json::Value,
        secret: &str,
    ) -> reqwest::Response {
        // Builders name the receiving app's installation by a placeholder
        // (`github_events::THIS_INSTALLATION`); it becomes this app's id.
        let body = body.to_string().replace(
            crate::github_events::THIS_INSTALLATION,
            self.installation.id(),
        );
        self.client
            .post(self.url("/webhooks/github"))
            .header("content-type", "application/json")
            .header("x-github-event", event)
            .header("x-github-delivery", delivery)
            .header(
                "x-hub-signature-256",
                crate::github_events::sign(secret, body.as_bytes()),
            )
            .body(body)
            .send()
            .await
            .expect("request reaches the app")
    }

    /// Polls a job's prompt until it is rendered or failed (at most 10 s).
    pub async fn wait_for_prompt(&self, job_id: i64) -> reqwest::Response {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let response = self
                .client
                .get(self.url(&format!("/api/jobs/{job_id}/prompt")))
                .send()
                .await
                .unwrap();
            let pending = response.status() == 409
                && response
                    .headers()
                    .get("content-type")
                    .is_some_and(|v| v.to_str().unwrap_or("").contains("json"))
                && std::time::Instant::now() < deadline;
            if !pending {
                return response;
            }
            let body: serde_json::Value = response.json().await.unwrap();
            if body["error"] != "prompt_pending" {
                return self
                    .client
                    .get(self.url(&format!("/api/jobs/{job_id}/prompt")))
                    .send()
                    .await
                    .unwrap();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request reaches the app")
    }

    pub async fn get_json(&self, path: &str) -> (reqwest::StatusCode, serde_json::Value) {
        let response = self.get(path).await;
        let status = response.status();
        (status, response.json().await.expect("a JSON response"))
    }

    /// A page or text endpoint's body; panics unless it answered 200.
    pub async fn get_text(&self, path: &str) -> String {
        let response = self.get(path).await;
        assert_eq!(response.status(), 200, "GET {path}");
        response.text().await.expect("a text response")
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
