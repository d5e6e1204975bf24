//! The request worker: answers people's "changes requested" reviews and
//! `/longtx revise` / `/longtx stop` comments. Per request, with no
//! connection held: ask GitHub for the person's permission (and a review's
//! inline comments); then one transaction judges it (a round begins, the
//! rounds stop, or nothing); then the answer is posted once (a marker
//! makes a retry find it) and recorded.

use crate::comments::comment_once;
use longtx_core::pre_review::PreReviewMode;
use longtx_core::revision::{clean_text, Finding, RequestOutcome, MAX_FINDINGS, MAX_FINDING_CHARS};
use longtx_github::{GitHub, GitHubError, RepoName};
use longtx_store::{Caps, RequestClaim, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tracing::Instrument;

#[derive(Debug, Clone)]
pub struct RequestSettings {
    pub repo: RepoName,
    pub lease: Duration,
    pub idle_poll: Duration,
    /// What a round that pushes nothing leads to, recorded with the round.
    pub mode: PreReviewMode,
    /// `LONGTX_MAX_REVISIONS`: rounds people may start on one PR.
    pub max_revisions: u32,
    /// The dispatch caps, so the answer can say a round must wait.
    pub caps: Caps,
}

/// Wakes the worker when a request was recorded.
#[derive(Clone, Default)]
pub struct RequestQueue {
    wake: Arc<Notify>,
}

impl RequestQueue {
    pub fn poke(&self) {
        self.wake.notify_one();
    }
}

pub fn spawn_request_worker<G: GitHub>(
    store: Store,
    settings: RequestSettings,
    github: Arc<G>,
) -> RequestQueue {
    let queue = RequestQueue::default();
    let worker = Worker {
        store,
        settings,
        github,
        wake: queue.wake.clone(),
    };
    let worker = Arc::new(worker);
    crate::workers::spawn("revision_requests", move || {
        let worker = worker.clone();
        async move { worker.run().await }
    });
    queue
}

struct Worker<G> {
    store: Store,
    settings: RequestSettings,
    github: Arc<G>,
    wake: Arc<Notify>,
}

impl<G: GitHub> Worker<G> {
    async fn run(&self) {
        loop {
            match self.store.claim_request(self.settings.lease).await {
                Ok(Some(claim)) => {
                    let span = tracing::info_span!("revision_request", job_id = claim.job_id, request = claim.id, login = %claim.login);
                    self.answer(claim).instrument(span).await;
                    continue;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "could not claim a revision request"),
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(self.settings.idle_poll) => {}
            }
        }
    }

    async fn answer(&self, claim: RequestClaim) {
        if claim.answer.is_none() {
            match self.store.drop_repeated_reader(claim.id).await {
                Ok(true) => {
                    return tracing::info!(login = %claim.login, "a reader's request again; told once already, not answered")
                }
                Ok(false) => {}
                Err(e) => {
                    return tracing::warn!(error = %e, "checking the request failed; retried after the lease")
                }
            }
        }
        let answer = match &claim.answer {
            Some(answer) => answer.clone(),
            None => match self.judge(&claim).await {
                Ok(Some(answer)) => answer,
                Ok(None) => return,
                Err(e) => {
                    return tracing::warn!(error = %e, "asking GitHub about the request failed; retried after the lease")
                }
            },
        };
        let marker = longtx_core::revision::request_marker(&claim.source, claim.github_id);
        match comment_once(
            self.github.as_ref(),
            &self.settings.repo,
            claim.pr_number,
            claim.attempts,
            &marker,
            &answer,
        )
        .await
        {
            Ok(()) => {
                if let Err(e) = self.store.finish_request(claim.id).await {
                    tracing::warn!(error = %e, "recording the answer failed; the retry finds the comment");
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "posting the answer failed; retried after the lease")
            }
        }
    }

    /// Permission and inline comments from GitHub, then the decision in
    /// one transaction. The stored answer, or `None` when another worker
    /// decided it meanwhile.
    async fn judge(&self, claim: &RequestClaim) -> Result<Option<String>, GitHubError> {
        let repo = &self.settings.repo;
        let permission = self.github.permission(repo, &claim.login).await?;
        let inline = if claim.source == "review" && claim.kind == "revise" {
            self.github
                .review_comments(repo, claim.pr_number, claim.github_id)
                .await?
                .into_iter()
                .take(MAX_FINDINGS)
                .map(|c| Finding {
                    file: Some(c.path),
                    line: c.line,
                    text: clean_text(&c.body, MAX_FINDING_CHARS),
                })
                .collect()
        } else {
            Vec::new()
        };
        let decided = self
            .store
            .decide_request(
                claim.id,
                &permission,
                &inline,
                self.settings.mode,
                self.settings.max_revisions,
                self.settings.caps,
            )
            .await
            .map_err(|e| GitHubError::Unavailable(format!("recording the decision: {e}")))?;
        let Some((outcome, answer)) = decided else {
            return Ok(None);
        };
        match &outcome {
            RequestOutcome::Refused(longtx_core::revision::Refusal::NoPermission { .. }) => {
                tracing::warn!(%permission, "a request from someone without write access; ignored")
            }
            other => tracing::info!(outcome = ?other, "revision request judged"),
        }
        let kind = match &outcome {
            RequestOutcome::Started { .. } => "started",
            RequestOutcome::Stopped { .. } => "stopped",
            RequestOutcome::Refused(_) => "refused",
        };
        longtx_metrics::inc(
            "longtx_revision_requests_total",
            "People's revision requests and stops, by what longtx did.",
            &[("outcome", kind)],
        );
        Ok(Some(answer))
    }
}
