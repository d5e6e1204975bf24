//! The "long transactions" check on every pull request of the target
//! repository, longtx's own included: no agent and no cost, one check run
//! per head commit.
//!
//! Per claimed head commit, with no connection held:
//! 1. fetch the PR's head (`refs/pull/<n>/head`, which GitHub keeps in the
//!    base repository, forks' PRs included) and its base branch into the
//!    checker's own mirror;
//! 2. scan the head and the merge base (their Ruby exported from the
//!    mirror, on a blocking thread) and keep what the head adds;
//! 3. find longtx's run among the commit's check runs by its
//!    `external_id`, or create it, completed, with its annotations.
//!
//! Then one statement records the run. A crash after step 3 leaves a run
//! that the next attempt finds in step 3, so a commit never gets two.

use longtx_core::pr_check::{self, PrCheckMode, CHECK_NAME};
use longtx_core::IgnoreList;
use longtx_git::Mirror;
use longtx_github::{GitHub, GitHubError, NewCheckRun, RepoName};
use longtx_store::{PrCheckClaim, PrCheckEnd, Store};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tracing::Instrument;

use crate::ignore::LiveIgnoreList;

/// Claims of one head commit before its check is given up.
const MAX_ATTEMPTS: i32 = 6;

#[derive(Debug, Clone)]
pub struct PrCheckSettings {
    pub repo: RepoName,
    /// The checker's own mirror: its fetches never race the other workers'.
    pub mirror: Mirror,
    pub mode: PrCheckMode,
    /// The catalogue, read afresh for each check.
    pub patterns_dir: PathBuf,
    /// `LONGTX_PUBLIC_URL`: the annotations link each pattern there.
    pub public_url: Option<String>,
    pub lease: Duration,
    pub idle_poll: Duration,
    pub fetch_timeout: Duration,
}

/// Wakes the checker when a PR event asked for a check.
#[derive(Clone, Default)]
pub struct PrCheckQueue {
    wake: Arc<Notify>,
}

impl PrCheckQueue {
    pub fn poke(&self) {
        self.wake.notify_one();
    }
}

pub fn spawn_pr_checker<G: GitHub>(
    store: Store,
    settings: PrCheckSettings,
    github: Arc<G>,
    ignore_list: LiveIgnoreList,
) -> PrCheckQueue {
    let queue = PrCheckQueue::default();
    let checker = Arc::new(Checker {
        store,
        settings,
        github,
        ignore_list,
        wake: queue.wake.clone(),
    });
    crate::workers::spawn("pr_checks", move || {
        let checker = checker.clone();
        async move { checker.run().await }
    });
    queue
}

struct Checker<G> {
    store: Store,
    settings: PrCheckSettings,
    github: Arc<G>,
    ignore_list: LiveIgnoreList,
    wake: Arc<Notify>,
}

/// What the scan of a head commit came to.
enum Scanned {
    Report {
        report: pr_check::CheckReport,
        findings: usize,
    },
    /// The head commit is not in the mirror after the fetch.
    Gone,
}

impl<G: GitHub> Checker<G> {
    async fn run(&self) {
        loop {
            match self.store.claim_pr_check(self.settings.lease).await {
                Ok(Some(claim)) => {
                    let span = tracing::info_span!(
                        "pr_check",
                        pr = claim.pr_number,
                        head = %short(&claim.head_sha),
                        attempt = claim.attempts
                    );
                    self.check(claim).instrument(span).await;
                    continue;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "could not claim a PR check"),
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(self.settings.idle_poll) => {}
            }
        }
    }

    async fn check(&self, claim: PrCheckClaim) {
        let end = match self.attempt(&claim).await {
            Ok(end) => end,
            Err(e) if claim.attempts >= MAX_ATTEMPTS && !e.is_rate_limit() => PrCheckEnd::Failed(
                format!("given up after {} attempts; the last: {e}", claim.attempts),
            ),
            Err(GitHubError::Refused { status, message }) if crate::results::is_final(status) => {
                PrCheckEnd::Failed(format!(
                    "GitHub refused the check run (HTTP {status}): {message}"
                ))
            }
            Err(e) => {
                tracing::warn!(error = %e, "the PR check failed; retried after the lease");
                return;
            }
        };
        match &end {
            PrCheckEnd::Posted {
                check_run_id,
                conclusion,
                findings,
            } => tracing::info!(check_run_id, %conclusion, findings, "PR check posted"),
            PrCheckEnd::Superseded => {
                tracing::info!("the PR's head moved on before this commit was fetched; not checked")
            }
            PrCheckEnd::Failed(why) => tracing::warn!(%why, "PR check given up"),
        }
        longtx_metrics::inc(
            "longtx_pr_checks_total",
            "PR checks ended, by outcome.",
            &[(
                "outcome",
                match &end {
                    PrCheckEnd::Posted { .. } => "posted",
                    PrCheckEnd::Superseded => "superseded",
                    PrCheckEnd::Failed(_) => "failed",
                },
            )],
        );
        if let Err(e) = self.store.end_pr_check(claim.id, &end).await {
            tracing::warn!(error = %e, "recording the PR check failed; it is found again after the lease");
        }
    }

    async fn attempt(&self, claim: &PrCheckClaim) -> Result<PrCheckEnd, GitHubError> {
        let s = &self.settings;
        let token = self.github.git_token().await?;
        s.mirror
            .fetch_pull(
                claim.pr_number,
                &claim.base_ref,
                token.as_deref(),
                s.fetch_timeout,
            )
            .await
            .map_err(|e| GitHubError::Unavailable(e.to_string()))?;
        let (report, findings) = match self.scan(claim).await? {
            Scanned::Gone => return Ok(PrCheckEnd::Superseded),
            Scanned::Report { report, findings } => (report, findings),
        };
        let installation = crate::installation::installation(&self.store).await?;
        let external_id = pr_check::external_id(installation.id(), claim.id);
        let existing = self
            .github
            .check_runs(&s.repo, &claim.head_sha, CHECK_NAME)
            .await?;
        let conclusion = report.conclusion.as_str().to_owned();
        let check_run_id = match existing
            .iter()
            .find(|r| r.external_id.as_deref() == Some(external_id.as_str()))
        {
            Some(found) => {
                tracing::info!(
                    check_run_id = found.id,
                    "an earlier attempt posted this check"
                );
                found.id
            }
            None => {
                let new = NewCheckRun {
                    head_sha: claim.head_sha.clone(),
                    external_id,
                    details_url: None,
                    report,
                };
                self.github.create_check_run(&s.repo, &new).await?
            }
        };
        Ok(PrCheckEnd::Posted {
            check_run_id,
            conclusion,
            findings,
        })
    }

    /// Scans the head and its merge base on a blocking thread.
    async fn scan(&self, claim: &PrCheckClaim) -> Result<Scanned, GitHubError> {
        let s = &self.settings;
        let (mirror, patterns, head, base) = (
            s.mirror.path.clone(),
            s.patterns_dir.clone(),
            claim.head_sha.clone(),
            claim.base_sha.clone(),
        );
        let base_branch = format!("refs/heads/{}", claim.base_ref);
        let (mode, public_url) = (s.mode, s.public_url.clone());
        let ignore: Arc<IgnoreList> = self.ignore_list.snapshot();
        let scanned = tokio::task::spawn_blocking(move || -> Result<Scanned, String> {
            let repo = longtx_git::open(&mirror).map_err(|e| e.to_string())?;
            // The event's base commit, else the branch as fetched (a base
            // force-pushed since the event).
            let merge_base = longtx_git::merge_base(&repo, &head, &base)
                .or_else(|_| longtx_git::merge_base(&repo, &head, &base_branch))
                .map_err(|e| e.to_string())?;
            let Some(merge_base) = merge_base else {
                return Ok(Scanned::Gone);
            };
            let catalogue = match longtx_catalog::Catalogue::load(&patterns) {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, "the catalogue did not load; the check names no patterns");
                    None
                }
            };
            let export = |rev: &str| {
                longtx_git::export::ExportedTree::of(&repo, rev).map_err(|e| e.to_string())
            };
            let (before, after) = (export(&merge_base)?, export(&head)?);
            let added = longtx_scan::diff(after.path(), before.path(), catalogue.as_ref(), &ignore);
            let compared = longtx_scan::check_run::Compared {
                base: &merge_base,
                head: &head,
                entry_points: added.entry_points,
            };
            let findings = added.active().count();
            let link = |id: &str| {
                public_url
                    .as_deref()
                    .map(|url| format!("{}/patterns/{id}", url.trim_end_matches('/')))
            };
            let report = longtx_scan::check_run::report(&added, &compared, mode, &link);
            Ok(Scanned::Report { report, findings })
        })
        .await;
        match scanned {
            Ok(Ok(scanned)) => Ok(scanned),
            Ok(Err(why)) => Err(GitHubError::Unavailable(format!("scanning the PR: {why}"))),
            Err(e) => Err(GitHubError::Unavailable(format!(
                "scanning the PR panicked: {e}"
            ))),
        }
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}
