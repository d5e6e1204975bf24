//! The PR opener: once the agent run longtx dispatched has ended well,
//! longtx commits what it proposed and opens the fix PR with its own
//! credentials (so the repository's CI runs on it, which a PR opened with
//! the Actions token would not get). Revision rounds' results are applied
//! here too (`apply_rounds`): one place turns a run's patch into a commit.
//!
//! Per claimed job, with no connection held:
//! 1. look for a PR whose head is the job's branch in any state: a retry, a
//!    redelivery or a person may have opened it already;
//! 2. unless round 0's commit is recorded: download the run's result, check
//!    the patch, create the job's branch at the pinned base and commit onto it
//!    (`expectedHeadOid`), then record the commit in a short transaction;
//!    nothing to commit, or a refused patch, ends the job `no_pr` with why;
//! 3. make sure the label exists, open the PR, label it.
//!
//! Then one short transaction records the PR as a webhook would. GitHub
//! refuses a second open PR for the same head, and step 1 runs on every
//! attempt, so a crash anywhere never opens two; the commit is guarded by
//! `expectedHeadOid` and the recorded commit, so it is never made twice.

use crate::results::{self, ResultOutcome, ResultSettings};
use crate::PreReviewQueue;
use crate::ReviewQueue;
use longtx_core::fix_pr::{self, FixFacts, FIX_LABEL};
use longtx_core::github_events::{PrEvent, ReviewGate};
use longtx_core::patch_check::PatchCheck;
use longtx_github::{GitHub, GitHubError, NewPull, PullSummary, RepoName};
use longtx_store::{Applied, PrFacts, PrOpenClaim, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, OnceCell};
use tracing::Instrument;

/// Claims of one job's PR opening before longtx gives up on it. A rate
/// limit never ends a job by itself, but a claim that keeps failing does.
const MAX_OPEN_ATTEMPTS: i32 = 12;

#[derive(Debug, Clone)]
pub struct PrOpenSettings {
    pub repo: RepoName,
    /// The PR's base when the job's dispatch did not record its ref: the
    /// configured workflow ref, else the default branch.
    pub git_ref: Option<String>,
    /// Where a new PR goes first: the pre-review, or people.
    pub gate: ReviewGate,
    pub lease: Duration,
    pub idle_poll: Duration,
    /// How results are downloaded, checked and applied.
    pub results: ResultSettings,
}

/// Wakes the opener when a run has ended well.
#[derive(Clone, Default)]
pub struct PrOpenQueue {
    wake: Arc<Notify>,
}

impl PrOpenQueue {
    pub fn poke(&self) {
        self.wake.notify_one();
    }
}

/// Who to wake once a PR is recorded.
#[derive(Clone, Default)]
pub struct AfterOpen {
    pub reviews: Option<ReviewQueue>,
    pub pre_reviews: Option<PreReviewQueue>,
}

pub fn spawn_pr_opener<G: GitHub>(
    store: Store,
    settings: PrOpenSettings,
    github: Arc<G>,
    after: AfterOpen,
) -> PrOpenQueue {
    let queue = PrOpenQueue::default();
    let opener = Opener {
        store,
        settings,
        github,
        after,
        wake: queue.wake.clone(),
        default_branch: OnceCell::new(),
    };
    let opener = Arc::new(opener);
    crate::workers::spawn("pr_opener", move || {
        let opener = opener.clone();
        async move { opener.run().await }
    });
    queue
}

pub(crate) struct Opener<G> {
    pub(crate) store: Store,
    pub(crate) settings: PrOpenSettings,
    pub(crate) github: Arc<G>,
    pub(crate) after: AfterOpen,
    wake: Arc<Notify>,
    default_branch: OnceCell<String>,
}

/// What GitHub said about the job's branch.
enum Found {
    Pull(PullSummary, Option<String>),
    NoBranch(String),
}

impl<G: GitHub> Opener<G> {
    async fn run(&self) {
        loop {
            self.apply_rounds().await;
            match self.store.claim_pr_open(self.settings.lease).await {
                Ok(Some(claim)) => {
                    let span = tracing::info_span!("open_pr", job_id = claim.job_id, query_source = %claim.query_source);
                    self.open(claim).instrument(span).await;
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "could not claim a job whose PR is to be opened")
                }
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(self.settings.idle_poll) => {}
            }
        }
    }

    async fn open(&self, claim: PrOpenClaim) {
        // A job claimed this often never got through (a worker that died
        // on it, an error that keeps coming back): it ends with the reason
        // instead of being claimed for ever.
        if claim.attempts > MAX_OPEN_ATTEMPTS {
            let reason = format!(
                "longtx gave up opening the PR after {MAX_OPEN_ATTEMPTS} attempts; none of them ended (see longtx's log for this job)"
            );
            return self.end_without_pr(&claim, &reason).await;
        }
        let found = match self.find_or_open(&claim).await {
            Ok(found) => found,
            Err(GitHubError::Refused { status, message }) if results::is_final(status) => {
                let reason = format!("GitHub refused opening the PR (HTTP {status}): {message}");
                return self.end_without_pr(&claim, &reason).await;
            }
            Err(e) if claim.attempts >= MAX_OPEN_ATTEMPTS && !e.is_rate_limit() => {
                let reason = format!(
                    "longtx gave up opening the PR after {} attempts; the last failed: {e}",
                    claim.attempts
                );
                return self.end_without_pr(&claim, &reason).await;
            }
            Err(e) => {
                // The lease runs out and the next attempt looks again first.
                tracing::warn!(error = %e, attempt = claim.attempts, "opening the PR failed; retried after the lease");
                return;
            }
        };
        match found {
            Found::NoBranch(reason) => {
                tracing::info!(%reason, "no PR: the run pushed nothing to review");
                if let Err(e) = self.store.record_no_branch(claim.job_id, &reason).await {
                    tracing::warn!(error = %e, "recording no_pr failed; retried after the lease");
                }
            }
            Found::Pull(pull, pattern) => self.record(&claim, pull, pattern).await,
        }
    }

    async fn end_without_pr(&self, claim: &PrOpenClaim, reason: &str) {
        tracing::warn!(%reason, attempt = claim.attempts, "no PR: the job ends");
        if let Err(e) = self.store.record_no_branch(claim.job_id, reason).await {
            tracing::warn!(error = %e, "recording no_pr failed; retried after the lease");
        }
    }

    async fn find_or_open(&self, claim: &PrOpenClaim) -> Result<Found, GitHubError> {
        let repo = &self.settings.repo;
        let installation = crate::installation::installation(&self.store).await?;
        let branch = installation.branch_of(claim.job_id);
        let base = match &claim.dispatch_ref {
            Some(base) => base.clone(),
            None => self.base().await?,
        };
        if let Some(pull) = self.existing(&branch, &base).await? {
            return Ok(Found::Pull(pull, None));
        }
        let run = claim.run_url.as_deref().unwrap_or("its run");
        let mut summary = claim.agent_summary.clone();
        let mut check = claim.patch_check.clone();
        if claim.fix_commit_sha.is_none() {
            match self.commit_result(claim, &base).await? {
                Ok((said, checked)) => {
                    summary = Some(said);
                    check = checked;
                }
                Err(why) => return Ok(Found::NoBranch(format!("{why} ({run})"))),
            }
        }
        let Some(comparison) = self.github.compare(repo, &base, &branch).await? else {
            return Ok(Found::NoBranch(format!(
                "the agent run ended without pushing {branch} ({run})"
            )));
        };
        if comparison.ahead_by == 0 {
            return Ok(Found::NoBranch(format!(
                "{branch} has no commit ahead of {base}: the agent changed nothing ({run})"
            )));
        }
        let pattern = fix_pr::pattern_of(&comparison.messages);
        let facts = FixFacts {
            job_id: claim.job_id,
            query_source: &claim.query_source,
            table: claim.tables.first().map(String::as_str),
            duration_seconds: claim.max_duration_seconds,
            pattern: pattern.as_deref(),
            run_url: claim.run_url.as_deref(),
            summary: summary.as_deref(),
            patch_check: check.as_ref(),
        };
        let new = NewPull {
            title: fix_pr::title(&facts),
            body: fix_pr::body(&facts, &installation),
            head: branch.clone(),
            base: base.clone(),
        };
        self.github
            .ensure_label(
                repo,
                FIX_LABEL,
                fix_pr::FIX_LABEL_COLOR,
                fix_pr::FIX_LABEL_DESCRIPTION,
            )
            .await?;
        let pull = match self.github.create_pull(repo, &new).await {
            Ok(pull) => pull,
            // 422 "A pull request already exists": a racing attempt won, or
            // someone else opened one from longtx's branch, which is never
            // taken for longtx's.
            Err(GitHubError::Refused {
                status: 422,
                message,
            }) => match self.existing(&branch, &base).await? {
                Some(pull) => pull,
                None => {
                    return Ok(Found::NoBranch(format!(
                        "GitHub refused longtx's PR ({message}): a PR from {branch} that longtx did not open is in the way; close it and re-queue the job"
                    )))
                }
            },
            Err(e) => return Err(e),
        };
        self.github
            .add_labels(repo, pull.number, &[FIX_LABEL.to_owned()])
            .await?;
        tracing::info!(pr = pull.number, "fix PR opened");
        Ok(Found::Pull(pull, pattern))
    }

    /// Round 0's result becomes longtx's commit on the job's branch: the
    /// agent's summary and longtx's scan of the patch, or (inner `Err`) why
    /// there is nothing to open a PR
    /// from. Transient GitHub and git failures are the outer `Err`, retried
    /// after the lease.
    async fn commit_result(
        &self,
        claim: &PrOpenClaim,
        base_branch: &str,
    ) -> Result<Result<(String, Option<PatchCheck>), String>, GitHubError> {
        let (Some(run_id), Some(base)) = (claim.run_id, claim.base_sha.as_deref()) else {
            return Ok(Err(
                "longtx recorded no run id or base commit for this job's run".to_owned(),
            ));
        };
        let branch = crate::installation::branch_of(&self.store, claim.job_id).await?;
        let round = results::Round {
            job_id: claim.job_id,
            round: 0,
            query_source: &claim.query_source,
            run_id: run_id as u64,
            base,
            fetch: base_branch,
            branch: &branch,
            create_branch: true,
        };
        let applied = results::apply_result(
            self.github.as_ref(),
            &self.store,
            &self.settings.results,
            &self.settings.repo,
            &round,
        )
        .await;
        let (sha, result, check) = match applied {
            Ok(ResultOutcome::Committed { sha, result, check }) => (sha, result, check),
            Ok(ResultOutcome::Unchanged(result)) => {
                let stopped = if result.stopped_early() {
                    " (its step failed: a turn or budget cap, or an error)"
                } else {
                    ""
                };
                let said = if result.summary.trim().is_empty() {
                    String::new()
                } else {
                    format!(
                        "; it said: {}",
                        longtx_core::text::one_line(&result.summary)
                    )
                };
                return Ok(Err(format!("the agent changed nothing{stopped}{said}")));
            }
            Ok(ResultOutcome::PatchRefused(why)) => {
                return Ok(Err(format!("the patch was refused: {why}")))
            }
            Ok(ResultOutcome::Unusable(why)) => return Ok(Err(why)),
            Err(results::ApplyError::GitHub(e)) => return Err(e),
            Err(results::ApplyError::Git(e)) => {
                return Err(GitHubError::Unavailable(e.to_string()))
            }
        };
        let summary = if result.stopped_early() {
            format!(
                "(The agent's step ended early, at its turn or budget cap or on an error: this is what it changed until then.)\n\n{}",
                result.summary
            )
        } else {
            result.summary
        };
        if let Err(e) = self
            .store
            .record_fix_commit(claim.job_id, &sha, &summary, check.as_ref())
            .await
        {
            // The next attempt finds the commit on the branch and adopts it.
            tracing::warn!(error = %e, "recording the commit failed");
        }
        Ok(Ok((summary, check)))
    }

    /// The newest PR longtx itself opened from the branch onto `base`, open
    /// ones first. Anyone with read access may open a PR from longtx's
    /// branch; only one authored by longtx's own login is longtx's.
    async fn existing(&self, branch: &str, base: &str) -> Result<Option<PullSummary>, GitHubError> {
        let own = self.github.own_login().await?;
        let mut pulls: Vec<PullSummary> = self
            .github
            .pulls_for_branch(&self.settings.repo, branch)
            .await?
            .into_iter()
            .filter(|p| {
                let ours = own
                    .as_deref()
                    .is_some_and(|own| p.author.eq_ignore_ascii_case(own));
                if !ours || p.base_ref != base {
                    tracing::warn!(pr = p.number, author = %p.author, base = %p.base_ref,
                        "a PR from longtx's branch that longtx did not open (or onto another base); not taken");
                }
                ours && p.base_ref == base
            })
            .collect();
        pulls.sort_by_key(|p| (p.state == "open", p.number));
        Ok(pulls.pop())
    }

    async fn base(&self) -> Result<String, GitHubError> {
        if let Some(git_ref) = &self.settings.git_ref {
            return Ok(git_ref.clone());
        }
        self.default_branch
            .get_or_try_init(|| self.github.default_branch(&self.settings.repo))
            .await
            .cloned()
    }

    async fn record(&self, claim: &PrOpenClaim, pull: PullSummary, pattern: Option<String>) {
        let event = match (pull.state.as_str(), pull.merged) {
            ("open", _) => PrEvent::Opened,
            (_, merged) => PrEvent::Closed { merged },
        };
        let facts = PrFacts {
            number: pull.number,
            url: pull.html_url.clone(),
            head_sha: pull.head_sha.clone(),
            base_ref: pull.base_ref.clone(),
            author: pull.author.clone(),
            // Opened now, or found with longtx's own login as its author.
            opened_by_longtx: true,
        };
        match self
            .store
            .record_pr_opened(
                claim.job_id,
                &facts,
                &event,
                self.settings.gate,
                pattern.as_deref(),
            )
            .await
        {
            Ok(applied) => {
                tracing::info!(
                    pr = pull.number,
                    applied = applied.as_str(),
                    "fix PR recorded"
                );
                if let Applied::Moved { .. } = applied {
                    if let Some(q) = &self.after.pre_reviews {
                        q.poke();
                    }
                    if let Some(q) = &self.after.reviews {
                        q.poke();
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "recording the PR failed; the next attempt finds it")
            }
        }
    }
}
