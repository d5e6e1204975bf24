//! The dispatcher: each queued job becomes exactly one workflow run.
//!
//! 1. Claim a job in a short transaction (state `dispatching`, a lease).
//! 2. With no connection held, call GitHub: first look for a run already
//!    carrying the job id when an earlier claim may have dispatched one,
//!    then dispatch, retrying rate limits and server errors.
//! 3. Record the run in a second short transaction.
//!
//! A dispatcher that dies between 2 and 3 leaves the job `dispatching`; when
//! the lease runs out another claims it, finds the run by its name, and
//! records it instead of dispatching again.

use crate::reviewers::ReviewerFinder;
use longtx_core::JobState;
use longtx_github::{
    retry, run_is_for_job, run_is_for_round, Dispatch, GitHub, GitHubError, RepoName, Run,
};
use longtx_store::{Caps, Claim, ClaimedJob, Store};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OnceCell;
use tracing::Instrument;

#[derive(Debug, Clone)]
pub struct DispatchSettings {
    pub repo: RepoName,
    /// The workflow file, `long-transaction-fix.yml`.
    pub workflow: String,
    /// The ref to run on; the repository's default branch when `None`.
    pub git_ref: Option<String>,
    pub caps: Caps,
    /// How long a claim is held before another dispatcher may take over.
    pub lease: Duration,
    /// A job with no PR this long after dispatch is `expired`.
    pub agent_timeout: Duration,
    /// Where the workflow reaches longtx to fetch the prompt.
    pub public_url: String,
    /// How often to look for work when there is none.
    pub idle_poll: Duration,
    /// How often to check running jobs' runs.
    pub run_poll: Duration,
    /// The first wait after a secondary rate limit with no `Retry-After`:
    /// [`retry::SECONDARY_FLOOR`] (GitHub asks for at least a minute).
    pub secondary_floor: Duration,
    /// The thresholds the queue's impact is measured against.
    pub policy: longtx_core::IntakePolicy,
}

/// Starts a dispatcher on the current runtime. `github` is `None` in
/// dry-run mode: every dispatch is recorded, not sent, and the job ends
/// `dry_run`.
pub fn spawn_dispatcher<G: GitHub>(
    store: Store,
    settings: DispatchSettings,
    github: Option<Arc<G>>,
) -> tokio::task::AbortHandle {
    spawn_dispatcher_with(store, settings, github, None)
}

/// The dispatcher with a reviewer finder: before paying for a job's run it
/// predicts the fix's reviewers, and holds the job while every one of them
/// is at capacity.
pub fn spawn_dispatcher_with<G: GitHub>(
    store: Store,
    settings: DispatchSettings,
    github: Option<Arc<G>>,
    reviewers: Option<Arc<ReviewerFinder<G>>>,
) -> tokio::task::AbortHandle {
    let dispatcher = Arc::new(Dispatcher {
        store,
        settings: Arc::new(settings),
        github,
        reviewers,
        default_branch: OnceCell::new(),
    });
    crate::workers::spawn("dispatcher", move || {
        let dispatcher = dispatcher.clone();
        async move { dispatcher.run().await }
    })
}

pub(crate) struct Dispatcher<G> {
    pub(crate) store: Store,
    pub(crate) settings: Arc<DispatchSettings>,
    pub(crate) github: Option<Arc<G>>,
    reviewers: Option<Arc<ReviewerFinder<G>>>,
    default_branch: OnceCell<String>,
}

/// What a dispatch is for: a job's first run, or one of its rounds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target {
    Job(i64),
    Round(i64, u32),
}

impl<G: GitHub> Dispatcher<G> {
    async fn run(&self) {
        let mut last_run_check = tokio::time::Instant::now();
        let mut last_blocked: Option<String> = None;
        loop {
            let token = match random_token() {
                Ok(token) => token,
                Err(e) => {
                    tracing::warn!(error = %e, "no randomness for a job token; trying again shortly");
                    tokio::time::sleep(self.settings.idle_poll).await;
                    continue;
                }
            };
            match self
                .store
                .claim_dispatch(
                    self.settings.caps,
                    self.settings.lease,
                    &token,
                    &self.settings.policy,
                )
                .await
            {
                Ok(Claim::Job(job)) => {
                    last_blocked = None;
                    let span = tracing::info_span!("dispatch", job_id = job.id, query_source = %job.query_source);
                    self.dispatch(job).instrument(span).await;
                    continue;
                }
                Ok(Claim::Round(round)) => {
                    last_blocked = None;
                    let span = tracing::info_span!("round", job_id = round.job_id, round = round.round, query_source = %round.query_source);
                    self.dispatch_round(round).instrument(span).await;
                    continue;
                }
                Ok(Claim::Blocked(reason)) => {
                    if last_blocked.as_deref() != Some(reason.as_str()) {
                        tracing::info!(%reason, "queued jobs wait");
                        last_blocked = Some(reason);
                    }
                }
                Ok(Claim::Idle) => last_blocked = None,
                Err(err) => tracing::warn!(error = %err, "claiming a job failed"),
            }
            if last_run_check.elapsed() >= self.settings.run_poll {
                self.check_running().await;
                self.check_rounds().await;
                last_run_check = tokio::time::Instant::now();
            }
            tokio::time::sleep(self.settings.idle_poll).await;
        }
    }

    fn request(&self, job: &ClaimedJob, git_ref: &str) -> (Dispatch, serde_json::Value) {
        let inputs = fix_inputs(job, &self.settings.public_url);
        let mut shown = inputs.clone();
        shown.insert("prompt_token".to_owned(), "<redacted>".to_owned());
        let record = serde_json::json!({
            "repo": self.settings.repo.to_string(),
            "workflow": self.settings.workflow,
            "ref": git_ref,
            "inputs": shown,
        });
        let dispatch = Dispatch {
            workflow: self.settings.workflow.clone(),
            git_ref: git_ref.to_owned(),
            inputs,
        };
        (dispatch, record)
    }

    async fn dispatch(&self, job: ClaimedJob) {
        let Some(github) = &self.github else {
            let (_, record) = self.request(
                &job,
                self.settings
                    .git_ref
                    .as_deref()
                    .unwrap_or("<default branch>"),
            );
            tracing::info!(request = %record, "dry run: this dispatch would be sent");
            count_dispatch("dry_run");
            if let Err(err) = self.store.record_dry_run(job.id, &record).await {
                tracing::warn!(error = %err, "recording the dry run failed; the lease will expire and it is retried");
            }
            return;
        };
        let git_ref = match self.git_ref(github).await {
            Ok(git_ref) => git_ref,
            Err(err) => {
                let (_, record) = self.request(&job, "<unknown>");
                return self.fail_or_leave(&job, err, &record).await;
            }
        };
        if self.waits_for_reviewers(&job, &git_ref).await {
            return;
        }
        let mut job = job;
        if let Err(err) = self.pin_base(github, &mut job, &git_ref).await {
            let (_, record) = self.request(&job, &git_ref);
            return self.fail_or_leave(&job, err, &record).await;
        }
        let (dispatch, record) = self.request(&job, &git_ref);
        match self
            .send(
                github,
                &dispatch,
                Target::Job(job.id),
                job.attempts,
                job.started_at,
            )
            .await
        {
            Ok((run, outcome)) => self.record(&job, run, &record, outcome).await,
            Err(err) => self.fail_or_leave(&job, err, &record).await,
        }
    }

    /// Predicts the fix's reviewers from the files the prompt located
    /// (core's `choose`, as the reviewer worker will run it) and reserves
    /// their seats; when every candidate is at capacity the job goes back
    /// to the queue with the reason, and no run is paid for. A claim that
    /// may already have dispatched (a retry) is never held, and a failed
    /// prediction holds nothing: it is no evidence that nobody can review.
    async fn waits_for_reviewers(&self, job: &ClaimedJob, git_ref: &str) -> bool {
        let Some(finder) = self.reviewers.as_ref().filter(|f| f.capacity().is_some()) else {
            return false;
        };
        if job.attempts > 1 {
            return false;
        }
        // Within half the lease: a slow fetch must not let the claim lapse
        // and a second dispatcher send a run of its own meanwhile.
        let predicted = tokio::time::timeout(
            self.settings.lease / 2,
            finder.predict(git_ref, &job.located_paths, job.id),
        )
        .await;
        let choice = match predicted {
            Ok(Ok(choice)) => choice,
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "predicting the reviewers failed; dispatching without a reservation");
                return false;
            }
            Err(_) => {
                tracing::warn!("predicting the reviewers took over half the lease; dispatching without a reservation");
                return false;
            }
        };
        if let Some(reason) = choice.capacity_wait() {
            tracing::info!(%reason, "the job waits for reviewer capacity");
            longtx_metrics::inc(
                "longtx_capacity_holds_total",
                "Claimed jobs put back to wait because every predicted reviewer was at capacity.",
                &[],
            );
            if let Err(err) = self.store.hold_for_capacity(job.id, &reason).await {
                tracing::warn!(error = %err, "holding the job failed; its lease will expire and it is claimed again");
            }
            return true;
        }
        let keys: Vec<String> = choice.reviewers.iter().map(|c| c.reviewer.key()).collect();
        if let Err(err) = self.store.reserve_reviewers(job.id, &keys).await {
            tracing::warn!(error = %err, "reserving the predicted reviewers failed; dispatching anyway");
        }
        false
    }

    /// Pins the commit the run starts from (the ref's head now; a retried
    /// claim keeps the one pinned first), so longtx knows what the run's
    /// patch applies to without believing the run.
    async fn pin_base(
        &self,
        github: &G,
        job: &mut ClaimedJob,
        git_ref: &str,
    ) -> Result<(), GitHubError> {
        if job.base_sha.is_some() {
            return Ok(());
        }
        let head = github
            .branch_head(&self.settings.repo, git_ref)
            .await?
            .ok_or_else(|| GitHubError::Refused {
                status: 404,
                message: format!(
                    "the dispatch ref {git_ref} is not a branch of {}",
                    self.settings.repo
                ),
            })?;
        job.base_sha = self
            .store
            .pin_job_base(job.id, &head)
            .await
            .map_err(|e| GitHubError::Unavailable(format!("pinning the base commit: {e}")))?;
        Ok(())
    }

    /// Sends a dispatch with the crash-safe lookup around it: when an
    /// earlier claim may have dispatched (`attempts` > 1) its run is looked
    /// for first, and after a server error, which may have created the run
    /// anyway. Rate limits and server errors are retried, the lease renewed
    /// while waiting.
    pub(crate) async fn send(
        &self,
        github: &G,
        dispatch: &Dispatch,
        target: Target,
        attempts: i32,
        started_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<(Option<Run>, &'static str), GitHubError> {
        if attempts > 1 {
            if let Some(run) = self.existing(github, target, started_at).await? {
                return Ok((Some(run), "found the run of an earlier attempt"));
            }
        }
        let mut attempt = 1;
        loop {
            match github
                .dispatch_workflow(&self.settings.repo, dispatch)
                .await
            {
                Ok(run) => return Ok((run, "dispatched")),
                Err(err) => {
                    let Some(wait) = retry::delay_with_floor(
                        &err,
                        attempt,
                        retry::jitter(),
                        self.settings.secondary_floor,
                    ) else {
                        return Err(err);
                    };
                    tracing::warn!(error = %err, attempt, wait_ms = wait.as_millis() as u64, "dispatch failed; retrying");
                    if wait * 2 > self.settings.lease {
                        let lease = wait + self.settings.lease;
                        let _ = match target {
                            Target::Job(id) => self.store.renew_lease(id, lease).await.map(drop),
                            Target::Round(id, round) => {
                                self.store.renew_round_lease(id, round, lease).await
                            }
                        };
                    }
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                    // A 5xx or a time-out may still have created the run.
                    if let GitHubError::Unavailable(_) = err {
                        if let Ok(Some(run)) = self.existing(github, target, started_at).await {
                            return Ok((Some(run), "found the run after an error"));
                        }
                    }
                }
            }
        }
    }

    pub(crate) async fn git_ref(&self, github: &G) -> Result<String, GitHubError> {
        if let Some(git_ref) = &self.settings.git_ref {
            return Ok(git_ref.clone());
        }
        self.default_branch
            .get_or_try_init(|| github.default_branch(&self.settings.repo))
            .await
            .cloned()
    }

    async fn existing_run(&self, github: &G, job_id: i64) -> Result<Option<Run>, GitHubError> {
        let started_at = match self.store.dispatched_run(job_id, 0).await {
            Ok(Some(d)) => d.started_at,
            Ok(None) => None,
            Err(e) => {
                return Err(GitHubError::Unavailable(format!(
                    "reading the dispatch: {e}"
                )))
            }
        };
        let Some(started_at) = started_at else {
            return Ok(None);
        };
        self.existing(github, Target::Job(job_id), started_at).await
    }

    /// The run already dispatched for `target`, found by its name and tied
    /// to the dispatch (`results::find_dispatched_run`).
    pub(crate) async fn existing(
        &self,
        github: &G,
        target: Target,
        started_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<Run>, GitHubError> {
        crate::results::find_dispatched_run(
            github,
            &self.settings.repo,
            &self.settings.workflow,
            started_at,
            |run| match target {
                Target::Job(id) => run_is_for_job(run, id),
                Target::Round(id, round) => run_is_for_round(run, id, round),
            },
        )
        .await
    }

    async fn record(
        &self,
        job: &ClaimedJob,
        run: Option<Run>,
        request: &serde_json::Value,
        outcome: &str,
    ) {
        let run_id = run.as_ref().map(|r| r.id as i64);
        let url = run.as_ref().and_then(|r| r.html_url.clone());
        match self
            .store
            .record_dispatched(
                job.id,
                run_id,
                url.as_deref(),
                request,
                outcome,
                self.settings.caps.run_budget_usd,
            )
            .await
        {
            Ok(true) => {
                tracing::info!(run_id, outcome, "agent run started");
                count_dispatch("dispatched");
            }
            Ok(false) => tracing::warn!(
                run_id,
                "the job moved on while dispatching; nothing changed"
            ),
            Err(err) => {
                tracing::error!(error = %err, "recording the run failed; after the lease another dispatcher finds it by name")
            }
        }
    }

    /// A final error fails the job; a retryable one that outlived its
    /// retries leaves the claim to expire, so the run lookup happens again.
    async fn fail_or_leave(&self, job: &ClaimedJob, err: GitHubError, request: &serde_json::Value) {
        // A rate limit is never a reason to give a job up: only time cures it.
        let again = err.is_rate_limit()
            || (err.is_retryable() && job.attempts < retry::MAX_ATTEMPTS as i32);
        longtx_metrics::inc(
            "longtx_dispatch_failures_total",
            "Dispatch attempts that failed, by whether they will be retried.",
            &[("final", if again { "false" } else { "true" })],
        );
        if again {
            tracing::warn!(error = %err, "GitHub did not answer usefully; the claim expires and the job is tried again");
            return;
        }
        tracing::error!(error = %err, "dispatch failed for good");
        if let Err(store_err) = self
            .store
            .record_dispatch_failed(job.id, &explain(&err), request)
            .await
        {
            tracing::warn!(error = %store_err, "recording the failure failed");
        }
    }

    /// Runs that failed make their job `no_pr`; runs that ended well hand
    /// the job to the PR opener; jobs past the agent timeout are `expired`.
    async fn check_running(&self) {
        let Some(github) = &self.github else { return };
        let running = match self.store.running_jobs(self.settings.agent_timeout).await {
            Ok(running) => running,
            Err(err) => return tracing::warn!(error = %err, "listing running jobs failed"),
        };
        for (id, run_id, overdue) in running {
            if overdue {
                let _ = self
                    .store
                    .end_running_job(id, JobState::Expired, "no PR within the agent timeout")
                    .await;
                continue;
            }
            let run = match run_id {
                Some(run_id) => github.run(&self.settings.repo, run_id as u64).await.ok(),
                None => match self.existing_run(github, id).await {
                    Ok(Some(run)) => {
                        let _ = self
                            .store
                            .set_run(id, run.id as i64, run.html_url.as_deref())
                            .await;
                        Some(run)
                    }
                    _ => None,
                },
            };
            let Some(run) = run else { continue };
            if run.status.as_deref() != Some("completed") {
                continue;
            }
            // A good run pushed the branch: the PR opener takes it from here
            // (the same mark the `workflow_run` webhook sets; whichever
            // comes first wins, the other changes nothing).
            if run.conclusion.as_deref() == Some("success") {
                if let Err(e) = self.store.request_pr_open(id).await {
                    tracing::warn!(job_id = id, error = %e, "marking the PR to be opened failed; the next poll retries");
                }
                continue;
            }
            let reason = format!(
                "the agent run ended ({}) without a PR{}",
                run.conclusion.as_deref().unwrap_or("no conclusion"),
                run.html_url
                    .as_deref()
                    .map(|u| format!(": {u}"))
                    .unwrap_or_default()
            );
            let _ = self
                .store
                .end_running_job(id, JobState::NoPr, &reason)
                .await;
        }
    }
}

/// The fix workflow's `workflow_dispatch` inputs for `job` (the prompt
/// token included): what the template must declare, and what `longtx
/// doctor` checks a user's copy against.
pub fn fix_inputs(job: &ClaimedJob, public_url: &str) -> BTreeMap<String, String> {
    let mut inputs = BTreeMap::new();
    // Round 0 is the first run; rounds 1, 2, ... answer reviews on the
    // same branch (see `rounds.rs`).
    inputs.insert("round".to_owned(), "0".to_owned());
    inputs.insert("findings".to_owned(), String::new());
    inputs.insert("job_id".to_owned(), job.id.to_string());
    inputs.insert("query_source".to_owned(), job.query_source.clone());
    inputs.insert(
        "table".to_owned(),
        job.tables.first().cloned().unwrap_or_default(),
    );
    inputs.insert(
        "duration_seconds".to_owned(),
        job.max_duration_seconds
            .map(|d| format!("{d:.0}"))
            .unwrap_or_default(),
    );
    inputs.insert(
        "prompt_url".to_owned(),
        format!(
            "{}/api/jobs/{}/prompt",
            public_url.trim_end_matches('/'),
            job.id
        ),
    );
    inputs.insert("prompt_sha256".to_owned(), job.prompt_sha256.clone());
    inputs.insert("prompt_token".to_owned(), job.prompt_token.clone());
    inputs.insert(
        "base_sha".to_owned(),
        job.base_sha.clone().unwrap_or_default(),
    );
    inputs
}

/// A final dispatch error as the job page says it. GitHub refuses inputs
/// the workflow does not declare, or ones it requires that longtx no
/// longer sends: the workflow on the dispatch ref is a copy of an older
/// template, and the fix is to copy the new one.
pub(crate) fn explain(err: &GitHubError) -> String {
    explain_for(
        err,
        ".github/workflows/long-transaction-fix.yml (or its Codex or Devin edition)",
    )
}

/// As [`explain`], naming `template` as the file to copy.
pub(crate) fn explain_for(err: &GitHubError, template: &str) -> String {
    if is_old_template(err) {
        format!(
            "{err}: the workflow on the dispatch ref is older than this longtx; copy the shipped \
             {template} again (docs/book/src/upgrading.md)"
        )
    } else {
        err.to_string()
    }
}

/// GitHub's 422 for inputs that do not match the workflow's declaration.
pub(crate) fn is_old_template(err: &GitHubError) -> bool {
    matches!(err, GitHubError::Refused { status: 422, message }
        if message.contains("Unexpected inputs") || message.contains("Required input"))
}

/// A per-job secret for the prompt fetch: 32 random bytes as hex, from
/// the kernel's `getrandom(2)`: no file
/// descriptor is opened, so a process out of descriptors still gets one,
/// and a failure is an error for the caller, never a panic (opening
/// /dev/urandom once panicked the dispatcher for good at the descriptor
/// limit).
pub(crate) fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    let mut filled = 0;
    while filled < bytes.len() {
        let rest = &mut bytes[filled..];
        // SAFETY: the pointer and length describe `rest`, which is writable.
        let got = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if got < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        filled += got as usize;
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

pub(crate) fn count_dispatch(mode: &str) {
    longtx_metrics::inc(
        "longtx_dispatches_total",
        "Jobs dispatched to the agent workflow (`dry_run`: recorded, not sent).",
        &[("mode", mode)],
    );
}
