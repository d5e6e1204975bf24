use crate::auth::{DashboardAuth, WebhookAuth};
use crate::github::GitHubWebhook;
use longtx_core::pre_review::PreReviewMode;
use longtx_core::{IgnoreList, IntakePolicy};
use longtx_dashboard::Pages;
use longtx_pipeline::{
    LiveIgnoreList, PrCheckQueue, PrOpenQueue, PreReviewQueue, PromptQueue, RequestQueue,
    ReviewQueue, WontfixQueue,
};
use longtx_store::Store;
use std::sync::Arc;

/// What every handler shares. Cloning is cheap (all behind `Arc`).
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub policy: Arc<IntakePolicy>,
    pub auth: Arc<WebhookAuth>,
    pub dashboard_auth: Arc<DashboardAuth>,
    pub pages: Arc<Pages>,
    ignore_list: LiveIgnoreList,
    /// Told about every job intake creates; `None` renders no prompts.
    pub prompts: Option<PromptQueue>,
    /// What `/api/dispatch` reports; `None` when no dispatcher runs here.
    pub dispatch: Option<DispatchInfo>,
    /// `None` when no webhook secret is configured: deliveries get 503.
    pub github_webhook: Option<Arc<GitHubWebhook>>,
    /// Woken when a PR enters review; `None` when no reviewer worker runs.
    pub reviews: Option<ReviewQueue>,
    /// Woken by the wontfix label; `None` when no wontfix worker runs.
    pub wontfix: Option<WontfixQueue>,
    /// Woken when a fix PR waits for (or has) a pre-review verdict.
    pub pre_reviews: Option<PreReviewQueue>,
    /// Woken when an agent run ended well and its PR is to be opened.
    pub pr_opener: Option<PrOpenQueue>,
    /// Woken when a PR's new head asks for the "long transactions" check;
    /// `None` when PR checks are off.
    pub pr_checks: Option<PrCheckQueue>,
    /// The catalogue `/patterns/{id}` serves (the PR check links there);
    /// `None`: no pattern pages.
    pub patterns_dir: Option<std::path::PathBuf>,
    /// How verdicts are applied; `Off` when no pre-review runs.
    pub pre_review_mode: PreReviewMode,
    /// `LONGTX_MAX_REVISIONS`.
    pub max_revisions: u32,
    /// Woken when a person asked for a round (or to stop them).
    pub requests: Option<RequestQueue>,
    /// More gauges for `/metrics` (the in-process collector's).
    pub extra_gauges: Option<ExtraGauges>,
    /// The host of `LONGTX_PUBLIC_URL`: besides IP addresses and
    /// `localhost`, the one name longtx answers for (see `host_check`).
    pub public_host: Option<String>,
}

/// Gauges read at scrape time from outside this crate.
pub type ExtraGauges = Arc<dyn Fn() -> Vec<longtx_metrics::Gauge> + Send + Sync>;

/// The dispatcher's configuration, for the status endpoint.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DispatchInfo {
    pub max_per_day: i64,
    pub max_running: i64,
    pub dry_run: bool,
    /// Open longtx reviews per person and per team; `None` when no
    /// reviewers are asked (no GitHub).
    pub reviewer_capacity: Option<longtx_core::reviewers::Capacity>,
}

impl AppState {
    pub fn new(
        store: Store,
        policy: IntakePolicy,
        auth: WebhookAuth,
        ignore_list: IgnoreList,
    ) -> Self {
        AppState {
            store,
            policy: Arc::new(policy),
            dashboard_auth: Arc::new(DashboardAuth::new(auth.token().map(str::to_owned), None)),
            auth: Arc::new(auth),
            pages: Arc::new(Pages::new()),
            ignore_list: LiveIgnoreList::new(ignore_list),
            prompts: None,
            dispatch: None,
            github_webhook: None,
            reviews: None,
            wontfix: None,
            extra_gauges: None,
            pre_reviews: None,
            pr_opener: None,
            pr_checks: None,
            patterns_dir: None,
            pre_review_mode: PreReviewMode::Off,
            max_revisions: longtx_core::revision::DEFAULT_MAX_REVISIONS,
            requests: None,
            public_host: None,
        }
    }

    /// The host of the public URL (`LONGTX_PUBLIC_URL`), the one name
    /// besides `localhost` requests may be addressed to.
    pub fn with_public_url(mut self, url: &str) -> Self {
        self.public_host = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned));
        self
    }

    pub fn with_max_revisions(mut self, max: u32) -> Self {
        self.max_revisions = max;
        self
    }

    pub fn with_requests(mut self, queue: RequestQueue) -> Self {
        self.requests = Some(queue);
        self
    }

    /// Lets `LONGTX_DASHBOARD_TOKEN` open the pages too.
    pub fn with_dashboard_token(mut self, token: Option<String>) -> Self {
        self.dashboard_auth = Arc::new(DashboardAuth::new(
            self.auth.token().map(str::to_owned),
            token,
        ));
        self
    }

    /// What reviewers are held to, when longtx asks reviewers at all.
    pub fn reviewer_capacity(&self) -> Option<longtx_core::reviewers::Capacity> {
        self.dispatch.as_ref().and_then(|d| d.reviewer_capacity)
    }

    pub fn with_dispatch(mut self, info: DispatchInfo) -> Self {
        self.dispatch = Some(info);
        self
    }

    pub fn with_github_webhook(mut self, webhook: GitHubWebhook) -> Self {
        self.github_webhook = Some(Arc::new(webhook));
        self
    }

    pub fn with_reviews(mut self, queue: ReviewQueue) -> Self {
        self.reviews = Some(queue);
        self
    }

    pub fn with_patterns_dir(mut self, dir: std::path::PathBuf) -> Self {
        self.patterns_dir = Some(dir);
        self
    }

    pub fn with_pr_checks(mut self, queue: PrCheckQueue) -> Self {
        self.pr_checks = Some(queue);
        self
    }

    pub fn with_pr_opener(mut self, queue: PrOpenQueue) -> Self {
        self.pr_opener = Some(queue);
        self
    }

    pub fn with_pre_reviews(mut self, mode: PreReviewMode, queue: PreReviewQueue) -> Self {
        self.pre_review_mode = mode;
        self.pre_reviews = Some(queue);
        self
    }

    pub fn with_extra_gauges(mut self, gauges: ExtraGauges) -> Self {
        self.extra_gauges = Some(gauges);
        self
    }

    pub fn with_wontfix(mut self, queue: WontfixQueue) -> Self {
        self.wontfix = Some(queue);
        self
    }

    /// The ignore list's parts, for the workers that update it.
    pub fn live_ignore_list(&self) -> LiveIgnoreList {
        self.ignore_list.clone()
    }

    pub fn with_prompts(mut self, queue: PromptQueue) -> Self {
        self.prompts = Some(queue);
        self
    }

    /// The ignore list in force now; a snapshot, so a reload mid-request
    /// does not change the answer halfway through a batch.
    pub fn ignore_list(&self) -> Arc<IgnoreList> {
        self.ignore_list.snapshot()
    }

    /// Replaces the list read from the local file, for every request that
    /// starts after this.
    pub fn replace_ignore_list(&self, list: IgnoreList) {
        self.ignore_list.set_file(list);
    }
}
