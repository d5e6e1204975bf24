//! The pre-review worker: dispatches the reviewing workflow once per head
//! commit of a fix PR, reads the verdict from the run's `longtx-result`
//! artifact once the run longtx dispatched has ended, and closes PRs whose
//! verdict failed (a comment with the reasons, then the close). Each step
//! claims in one statement, calls GitHub with no connection held, and
//! records in another.

use crate::comments::comment_once;
use crate::results::{fetch_result, Fetched};
use longtx_core::agent_run::{ReviewResult, RESULT_FILE};
use longtx_core::pre_review::{
    no_verdict, rejection_comment, rejection_marker, timed_out, PreReviewMode, Verdict,
};
use longtx_github::{pre_review_run_marker, retry, Dispatch, GitHub, GitHubError, RepoName, Run};
use longtx_store::{CloseClaim, PreReviewClaim, Store};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, OnceCell};
use tracing::Instrument;

#[derive(Debug, Clone)]
pub struct PreReviewSettings {
    pub repo: RepoName,
    /// The reviewing workflow, `long-transaction-pre-review.yml`.
    pub workflow: String,
    pub git_ref: Option<String>,
    /// Where the workflow fetches the prompt and posts the verdict.
    pub public_url: String,
    pub lease: Duration,
    pub idle_poll: Duration,
    /// A head with no verdict this long goes to people as "no verdict".
    pub timeout: Duration,
    /// How verdicts (and so a timeout's "no verdict") are applied.
    pub mode: PreReviewMode,
    /// `LONGTX_MAX_REVISIONS`: rounds the pre-review may start on one PR.
    pub max_revisions: u32,
    /// How often running review runs are looked at when no webhook says
    /// one ended.
    pub run_poll: Duration,
    /// The largest result artifact read.
    pub max_artifact_bytes: u64,
    /// The dispatcher's caps: a pre-review run counts against them, with
    /// `caps.pre_review_budget_usd`.
    pub caps: longtx_store::Caps,
}

/// Wakes the worker when a PR waits for a run or a verdict failed.
#[derive(Clone, Default)]
pub struct PreReviewQueue {
    wake: Arc<Notify>,
}

impl PreReviewQueue {
    pub fn poke(&self) {
        self.wake.notify_one();
    }
}

pub fn spawn_pre_reviewer<G: GitHub>(
    store: Store,
    settings: PreReviewSettings,
    github: Arc<G>,
) -> PreReviewQueue {
    let queue = PreReviewQueue::default();
    let worker = Worker {
        store,
        settings,
        github,
        wake: queue.wake.clone(),
        default_branch: OnceCell::new(),
    };
    let worker = Arc::new(worker);
    crate::workers::spawn("pre_reviewer", move || {
        let worker = worker.clone();
        async move { worker.run().await }
    });
    queue
}

struct Worker<G> {
    store: Store,
    settings: PreReviewSettings,
    github: Arc<G>,
    wake: Arc<Notify>,
    default_branch: OnceCell<String>,
}

impl<G: GitHub> Worker<G> {
    async fn run(&self) {
        let mut last_collect: Option<tokio::time::Instant> = None;
        loop {
            let mut worked = false;
            match self
                .store
                .claim_pre_review(self.settings.lease, self.settings.caps)
                .await
            {
                Ok(Some(claim)) => {
                    worked = true;
                    let span = tracing::info_span!("pre_review", job_id = claim.job_id, query_source = %claim.query_source);
                    self.dispatch(claim).instrument(span).await;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "could not claim a pre-review"),
            }
            match self.store.claim_pre_review_close(self.settings.lease).await {
                Ok(Some(claim)) => {
                    worked = true;
                    let span = tracing::info_span!("pre_review_close", job_id = claim.job_id);
                    self.close(claim).instrument(span).await;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "could not claim a PR to close"),
            }
            if last_collect.is_none_or(|t| t.elapsed() >= self.settings.run_poll) {
                self.collect_verdicts().await;
                last_collect = Some(tokio::time::Instant::now());
            }
            self.expire_overdue().await;
            if !worked {
                tokio::select! {
                    // A webhook said a review run ended: look at once.
                    _ = self.wake.notified() => last_collect = None,
                    _ = tokio::time::sleep(self.settings.idle_poll) => {}
                }
            }
        }
    }

    /// A review run that died, or never started, must not keep the job in
    /// `pre_review`: past the timeout its head gets a recorded "no
    /// verdict", which asks people (the same path as a verdict posted back).
    async fn expire_overdue(&self) {
        let overdue = match self.store.overdue_pre_reviews(self.settings.timeout).await {
            Ok(overdue) => overdue,
            Err(e) => return tracing::warn!(error = %e, "could not list overdue pre-reviews"),
        };
        for (job_id, head) in overdue {
            let verdict = timed_out(&head, self.settings.timeout);
            match self
                .store
                .record_verdict(
                    job_id,
                    &verdict,
                    self.settings.mode,
                    self.settings.max_revisions,
                )
                .await
            {
                Ok(applied) => {
                    tracing::warn!(job_id, %head, ?applied, "no pre-review verdict in time; people are asked")
                }
                Err(e) => {
                    tracing::warn!(job_id, error = %e, "recording the missing verdict failed; retried")
                }
            }
        }
    }

    /// Reads the verdict of every review run that ended: from the run
    /// longtx dispatched (found by name, and tied, when the dispatch gave no
    /// id), from its artifact. A run that failed or left no readable
    /// verdict asks people, with why.
    async fn collect_verdicts(&self) {
        let running = match self.store.running_pre_reviews().await {
            Ok(running) => running,
            Err(e) => return tracing::warn!(error = %e, "listing running pre-reviews failed"),
        };
        let repo = &self.settings.repo;
        for review in running {
            let span = tracing::info_span!("pre_review_result", job_id = review.job_id, query_source = %review.query_source);
            async {
                let run = match review.run_id {
                    Some(id) => self.github.run(repo, id as u64).await.ok(),
                    None => {
                        let found = match review.started_at {
                            Some(at) => self.existing(&pre_review_run_marker(review.job_id, &review.head_sha), at).await.ok().flatten(),
                            None => None,
                        };
                        if let Some(run) = &found {
                            let _ = self.store.set_pre_review_run(review.job_id, &review.head_sha, run.id as i64).await;
                        }
                        found
                    }
                };
                let Some(run) = run.filter(|r| r.status.as_deref() == Some("completed")) else {
                    return;
                };
                let verdict = match self.verdict_of(&run, &review.head_sha, review.job_id).await {
                    Ok(verdict) => verdict,
                    Err(e) => return tracing::warn!(error = %e, "reading the review's result failed; retried"),
                };
                match self
                    .store
                    .record_verdict(review.job_id, &verdict, self.settings.mode, self.settings.max_revisions)
                    .await
                {
                    Ok(applied) => tracing::info!(head = %review.head_sha, verdict = ?verdict.verdict, ?applied, "pre-review verdict"),
                    Err(e) => tracing::warn!(error = %e, "recording the verdict failed; retried"),
                }
            }
            .instrument(span)
            .await;
        }
    }

    /// The verdict a completed review run left, or a "no verdict" saying
    /// why there is none.
    async fn verdict_of(&self, run: &Run, head: &str, job_id: i64) -> Result<Verdict, GitHubError> {
        let url = run.html_url.as_deref().unwrap_or("its run");
        if run.conclusion.as_deref() != Some("success") {
            return Ok(no_verdict(
                head,
                format!(
                    "the review run ended {} without a verdict ({url}); people are asked instead",
                    run.conclusion.as_deref().unwrap_or("with no conclusion")
                ),
            ));
        }
        let files = match fetch_result(
            self.github.as_ref(),
            &self.settings.repo,
            run.id,
            self.settings.max_artifact_bytes,
        )
        .await?
        {
            Fetched::Files(files) => files,
            Fetched::Missing(why) => {
                return Ok(no_verdict(head, format!("{why}; people are asked instead")))
            }
        };
        let result = match ReviewResult::parse(&files[RESULT_FILE]) {
            Ok(result) => result,
            Err(e) => {
                return Ok(no_verdict(
                    head,
                    format!("run {}: {e}; people are asked instead", run.id),
                ))
            }
        };
        crate::results::record_cost(
            &self.store,
            job_id,
            (run.id, 0),
            &result.cost,
            Some(self.settings.caps.pre_review_budget_usd),
        )
        .await;
        if let Err(e) = result.verdict.validate() {
            return Ok(no_verdict(
                head,
                format!(
                    "run {}'s verdict is not usable ({e}); people are asked instead",
                    run.id
                ),
            ));
        }
        Ok(result.verdict)
    }

    /// A review run already dispatched under `marker`, tied to the
    /// dispatch (workflow, trigger, repository, created after `started_at`).
    async fn existing(
        &self,
        marker: &str,
        started_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<Run>, GitHubError> {
        crate::results::find_dispatched_run(
            self.github.as_ref(),
            &self.settings.repo,
            &self.settings.workflow,
            started_at,
            |r| {
                r.display_title
                    .as_deref()
                    .is_some_and(|t| t.contains(marker))
            },
        )
        .await
    }

    async fn dispatch(&self, claim: PreReviewClaim) {
        let marker = pre_review_run_marker(claim.job_id, &claim.head_sha);
        let result = async {
            // An earlier attempt may have dispatched and died before recording.
            if claim.attempts > 1 {
                if let Some(run) = self.existing(&marker, claim.started_at).await? {
                    return Ok(Some(run));
                }
            }
            let git_ref = match &self.settings.git_ref {
                Some(r) => r.clone(),
                None => self
                    .default_branch
                    .get_or_try_init(|| self.github.default_branch(&self.settings.repo))
                    .await?
                    .clone(),
            };
            let dispatch = self.request(&claim, git_ref);
            let mut attempt = 1;
            loop {
                match self
                    .github
                    .dispatch_workflow(&self.settings.repo, &dispatch)
                    .await
                {
                    Ok(run) => return Ok::<Option<Run>, GitHubError>(run),
                    Err(err) => {
                        let Some(wait) = retry::delay(&err, attempt, retry::jitter()) else {
                            return Err(err);
                        };
                        if wait * 2 > self.settings.lease {
                            return Err(err);
                        }
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                }
            }
        }
        .await;
        match result {
            Ok(run) => {
                tracing::info!(head = %claim.head_sha, run = ?run.as_ref().map(|r| r.id), "pre-review dispatched");
                if let Err(e) = self
                    .store
                    .record_pre_review_dispatched(
                        claim.job_id,
                        &claim.head_sha,
                        run.map(|r| r.id),
                        self.settings.caps.pre_review_budget_usd,
                    )
                    .await
                {
                    tracing::warn!(error = %e, "recording the pre-review run failed; the lease expires and the run is looked up");
                }
            }
            // A copy of an older template never takes this dispatch: no
            // verdict, people are asked, and the reason names the file.
            Err(e) if crate::dispatch::is_old_template(&e) => {
                let why = crate::dispatch::explain_for(
                    &e,
                    ".github/workflows/long-transaction-pre-review.yml",
                );
                tracing::error!(error = %why, "the pre-review workflow refused the dispatch");
                let verdict =
                    no_verdict(&claim.head_sha, format!("{why}; people are asked instead"));
                if let Err(e) = self
                    .store
                    .record_verdict(
                        claim.job_id,
                        &verdict,
                        self.settings.mode,
                        self.settings.max_revisions,
                    )
                    .await
                {
                    tracing::warn!(error = %e, "recording the refusal failed; retried after the lease");
                }
            }
            // The lease runs out and another attempt looks for the run first.
            Err(e) => {
                tracing::warn!(error = %e, attempt = claim.attempts, "dispatching the pre-review failed; retried after the lease")
            }
        }
    }

    fn request(&self, claim: &PreReviewClaim, git_ref: String) -> Dispatch {
        Dispatch {
            workflow: self.settings.workflow.clone(),
            git_ref,
            inputs: pre_review_inputs(claim, &self.settings.public_url),
        }
    }

    async fn close(&self, claim: CloseClaim) {
        let head = claim
            .history
            .last()
            .map(|v| v.head_sha.as_str())
            .unwrap_or("");
        let marker = rejection_marker(claim.job_id, head);
        let body = rejection_comment(claim.job_id, &claim.history, &claim.why);
        let repo = &self.settings.repo;
        let done = async {
            // Always look for the marker: a crash may fall between comment and record.
            comment_once(
                self.github.as_ref(),
                repo,
                claim.pr_number,
                2,
                &marker,
                &body,
            )
            .await?;
            self.github.close_pull(repo, claim.pr_number).await
        }
        .await;
        match done {
            Ok(()) => {
                tracing::info!(
                    pr = claim.pr_number,
                    "fix PR closed after a failed pre-review"
                );
                if let Err(e) = self.store.finish_pre_review_close(claim.job_id).await {
                    tracing::warn!(error = %e, "recording the close failed; it is retried (both steps are idempotent)");
                }
            }
            Err(e) => tracing::warn!(error = %e, "closing the PR failed; retried after the lease"),
        }
    }
}

/// The reviewing workflow's `workflow_dispatch` inputs for `claim`: what
/// the template must declare, and what `longtx doctor` checks.
pub fn pre_review_inputs(claim: &PreReviewClaim, public_url: &str) -> BTreeMap<String, String> {
    let base = public_url.trim_end_matches('/');
    [
        ("job_id", claim.job_id.to_string()),
        ("pr_number", claim.pr_number.to_string()),
        ("head_sha", claim.head_sha.clone()),
        ("query_source", claim.query_source.clone()),
        ("table", claim.tables.first().cloned().unwrap_or_default()),
        (
            "duration_seconds",
            claim
                .max_duration_seconds
                .map(|d| format!("{d:.0}"))
                .unwrap_or_default(),
        ),
        (
            "prompt_url",
            format!("{base}/api/jobs/{}/prompt", claim.job_id),
        ),
        ("prompt_token", claim.prompt_token.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}
