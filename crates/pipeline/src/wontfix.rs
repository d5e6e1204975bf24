//! Applies the `long-transaction-wontfix` label: checks the labeler may
//! decide, replaces the PR branch with the base branch plus one commit
//! adding the source to the ignore list (pushed with a lease), retitles the
//! PR, cancels the agent run, comments, and records the decision. Every
//! step outside the two short transactions (claim, finish) holds no
//! connection; every GitHub step is idempotent or guarded by a marker.

use crate::ignore::LiveIgnoreList;
use chrono::{SecondsFormat, Utc};
use longtx_core::wontfix::{self as rules};
use longtx_core::{IgnoreEntry, IgnoreList, QuerySource};
use longtx_git::wontfix::{prepare, Prepared, WontfixCommit};
use longtx_git::{Mirror, Pushed};
use longtx_github::{GitHub, GitHubError, RepoName};
use longtx_store::{Store, WontfixClaim, WontfixOutcome};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tracing::Instrument;

const MAX_ATTEMPTS: i32 = 5;

pub struct WontfixSettings {
    pub repo: RepoName,
    /// longtx's own bare clone for these commits.
    pub mirror: Mirror,
    /// The ignore list's path in the target repository.
    pub ignore_list_path: String,
    pub label: String,
    pub author_name: String,
    pub author_email: String,
    /// The branch whose ignore list is in force, read at start and every
    /// `base_reload`; `None`: the repository's default branch.
    pub default_branch: Option<String>,
    pub base_reload: Duration,
    pub lease: Duration,
    pub idle_poll: Duration,
    pub git_timeout: Duration,
}

/// Wakes the worker: a label to apply, or a base branch to re-read.
#[derive(Clone, Default)]
pub struct WontfixQueue {
    wake: Arc<Notify>,
    reload: Arc<Mutex<Option<String>>>,
}

impl WontfixQueue {
    pub fn poke(&self) {
        self.wake.notify_one();
    }

    /// Re-read the ignore list from `branch` (an ignore-list PR merged).
    pub fn reload_from(&self, branch: &str) {
        *self.reload.lock().unwrap() = Some(branch.to_owned());
        self.wake.notify_one();
    }
}

pub fn spawn_wontfix_worker<G: GitHub>(
    store: Store,
    settings: WontfixSettings,
    github: Arc<G>,
    live: LiveIgnoreList,
) -> WontfixQueue {
    let queue = WontfixQueue::default();
    let worker = Worker {
        store,
        settings,
        github,
        live,
        queue: queue.clone(),
    };
    let worker = Arc::new(worker);
    crate::workers::spawn("wontfix", move || {
        let worker = worker.clone();
        async move { worker.run().await }
    });
    queue
}

/// The comment markers, so a retried step finds its earlier comment.
fn done_marker(job_id: i64) -> String {
    format!("<!-- longtx-wontfix: {job_id} -->")
}

fn refused_marker(job_id: i64, labeler: &str) -> String {
    format!("<!-- longtx-wontfix-refused: {job_id} {labeler} -->")
}

#[derive(Debug, thiserror::Error)]
enum WontfixError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error(transparent)]
    Git(#[from] longtx_git::GitError),
    #[error(transparent)]
    Store(#[from] longtx_store::StoreError),
    #[error("{0}")]
    Invalid(String),
}

struct Worker<G> {
    store: Store,
    settings: WontfixSettings,
    github: Arc<G>,
    live: LiveIgnoreList,
    queue: WontfixQueue,
}

impl<G: GitHub> Worker<G> {
    async fn run(&self) {
        let mut next_base_read = Instant::now();
        let mut default_branch = self.settings.default_branch.clone();
        loop {
            self.refresh_declined().await;
            if default_branch.is_none() {
                match self.github.default_branch(&self.settings.repo).await {
                    Ok(branch) => default_branch = Some(branch),
                    Err(e) => tracing::warn!(error = %e, "could not learn the default branch"),
                }
            }
            let requested = self.queue.reload.lock().unwrap().take();
            let periodic = default_branch
                .clone()
                .filter(|_| Instant::now() >= next_base_read);
            if let Some(branch) = requested.or(periodic) {
                if let Err(e) = self.reload_base(&branch).await {
                    tracing::warn!(error = %e, %branch, "could not read the ignore list from the base branch");
                }
                next_base_read = Instant::now() + self.settings.base_reload;
            }
            match self.store.claim_wontfix(self.settings.lease).await {
                Ok(Some(claim)) => {
                    let span = tracing::info_span!("wontfix", job_id = claim.job_id, query_source = %claim.query_source);
                    self.handle(claim).instrument(span).await;
                    continue;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "could not claim a wontfix request"),
            }
            tokio::select! {
                _ = self.queue.wake.notified() => {}
                _ = tokio::time::sleep(self.settings.idle_poll) => {}
            }
        }
    }

    async fn refresh_declined(&self) {
        match self.store.ignored_sources().await {
            Ok(rows) => self
                .live
                .set_declined(rows.into_iter().map(|r| r.entry).collect()),
            Err(e) => tracing::warn!(error = %e, "could not read the declined sources"),
        }
    }

    /// Reads the list from `branch`; declined sources merged earlier whose
    /// entry is gone from it were undone by someone, and are forgotten.
    async fn reload_base(&self, branch: &str) -> Result<(), WontfixError> {
        let token = self.github.git_token().await?;
        self.settings
            .mirror
            .fetch(branch, token.as_deref(), self.settings.git_timeout)
            .await?;
        let path = self.settings.mirror.path.clone();
        let (rev, file) = (
            format!("refs/heads/{branch}"),
            self.settings.ignore_list_path.clone(),
        );
        let text = tokio::task::spawn_blocking(move || {
            let repo = longtx_git::open(&path)?;
            let commit = longtx_git::commit_at(&repo, &rev)?;
            longtx_git::read_at(&repo, &commit, &file)
        })
        .await
        .map_err(|e| WontfixError::Invalid(format!("the git task failed: {e}")))??;
        let list = IgnoreList::parse(text.as_deref().unwrap_or("")).map_err(|e| {
            WontfixError::Invalid(format!(
                "{} on {branch}: {e}",
                self.settings.ignore_list_path
            ))
        })?;
        let undone: Vec<String> = self
            .store
            .ignored_sources()
            .await?
            .into_iter()
            .filter(|row| row.merged)
            .filter(|row| {
                QuerySource::parse(&row.entry.query_source)
                    .map_or(true, |source| list.matching(&source).is_none())
            })
            .map(|row| row.entry.query_source)
            .collect();
        if !undone.is_empty() {
            let forgotten = self.store.forget_ignored(&undone).await?;
            tracing::info!(
                forgotten,
                "declined sources removed from the base branch's list are proposed again"
            );
        }
        tracing::info!(%branch, entries = list.entries().len(), "ignore list read from the base branch");
        self.live.set_base_branch(list);
        self.refresh_declined().await;
        Ok(())
    }

    async fn handle(&self, claim: WontfixClaim) {
        match self.apply(&claim).await {
            Ok(outcome) => tracing::info!(%outcome, "wontfix label handled"),
            Err(e) if claim.attempts >= MAX_ATTEMPTS => {
                tracing::error!(error = %e, attempts = claim.attempts, "giving up on the wontfix label");
                let detail = e.to_string();
                if let Err(e) = self
                    .store
                    .finish_wontfix(claim.job_id, WontfixOutcome::Failed(&detail))
                    .await
                {
                    tracing::warn!(error = %e, "could not record the give-up");
                }
            }
            // The lease runs out and a later claim retries.
            Err(e) => {
                tracing::warn!(error = %e, attempts = claim.attempts, "applying the wontfix label failed; will retry")
            }
        }
    }

    async fn apply(&self, claim: &WontfixClaim) -> Result<&'static str, WontfixError> {
        let repo = &self.settings.repo;
        let permission = self.github.permission(repo, &claim.labeler).await?;
        if !rules::may_decide(&permission) {
            let marker = refused_marker(claim.job_id, &claim.labeler);
            let body = format!(
                "{}\n\n{marker}",
                rules::refused_comment(&claim.labeler, &self.settings.label)
            );
            self.comment_once(claim, &marker, &body).await?;
            let detail = format!("@{} has {permission} permission", claim.labeler);
            self.store
                .finish_wontfix(claim.job_id, WontfixOutcome::Refused(&detail))
                .await?;
            return Ok("refused");
        }
        let source = QuerySource::parse(&claim.query_source)
            .map_err(|e| WontfixError::Invalid(e.to_string()))?;
        let (reason, reason_by) = self.reason(claim).await?;
        let mut entry = IgnoreEntry::exact(&source);
        entry.reason = Some(reason.clone());
        entry.pr = Some(claim.pr_url.clone());
        entry.added_by = Some(claim.labeler.clone());
        entry.added_at = Some(Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true));

        // Stop the agent's runs first (round 0's, and a round's the
        // decision cancelled), so none ends into a commit after the reset.
        for run_id in claim.run_id.iter().chain(&claim.round_run_ids) {
            self.github.cancel_run(repo, *run_id).await?;
        }
        let Some((commit, replaced)) = self.replace_branch(claim, &entry).await? else {
            let marker = format!("<!-- longtx-wontfix-lost: {} -->", claim.job_id);
            let body = format!(
                "{}\n\n{marker}",
                rules::lost_race_comment(&self.settings.label)
            );
            self.comment_once(claim, &marker, &body).await?;
            self.store
                .finish_wontfix(
                    claim.job_id,
                    WontfixOutcome::Failed("the PR branch moved during both pushes"),
                )
                .await?;
            return Ok("lost the race twice");
        };
        let path = &self.settings.ignore_list_path;
        let marker = self.store.installation().await?.body_marker(claim.job_id);
        let body = rules::pr_body(
            &marker,
            source.as_str(),
            (&reason, &reason_by),
            path,
            &claim.labeler,
        );
        self.github
            .update_pull(
                repo,
                claim.pr_number,
                &rules::pr_title(source.as_str()),
                &body,
            )
            .await?;
        let short = &commit[..commit.len().min(12)];
        let done = rules::done_comment(source.as_str(), path, short, replaced.as_deref());
        let comment = format!("{done}\n\n{}", done_marker(claim.job_id));
        self.comment_once(claim, &done_marker(claim.job_id), &comment)
            .await?;
        self.store
            .finish_wontfix(
                claim.job_id,
                WontfixOutcome::Done {
                    entry: &entry,
                    commit: &commit,
                },
            )
            .await?;
        self.live.add_declined(entry);
        Ok("applied")
    }

    /// Fetches, builds the commit and pushes it with a lease on the head it
    /// saw; after a lost race, once more from a fresh fetch. Returns the
    /// commit and the head it replaced; `None` when both pushes lost.
    async fn replace_branch(
        &self,
        claim: &WontfixClaim,
        entry: &IgnoreEntry,
    ) -> Result<Option<(String, Option<String>)>, WontfixError> {
        let settings = &self.settings;
        let branch = self.store.installation().await?.branch_of(claim.job_id);
        let token = self.github.git_token().await?;
        for round in 1..=2 {
            settings
                .mirror
                .fetch_all(
                    &[&claim.base_ref, &branch],
                    token.as_deref(),
                    settings.git_timeout,
                )
                .await?;
            let prepared = self.prepare(claim, &branch, entry).await?;
            let (commit, expected) = match prepared {
                Prepared::AlreadyDone { commit } => return Ok(Some((commit, None))),
                Prepared::Push {
                    commit,
                    expected_head,
                } => (commit, expected_head),
            };
            match settings
                .mirror
                .push_with_lease(
                    &commit,
                    &branch,
                    expected.as_deref(),
                    token.as_deref(),
                    settings.git_timeout,
                )
                .await?
            {
                Pushed::Done => return Ok(Some((commit, expected))),
                Pushed::Stale(message) => {
                    tracing::warn!(round, %message, "the PR branch moved before the push")
                }
            }
        }
        Ok(None)
    }

    async fn prepare(
        &self,
        claim: &WontfixClaim,
        branch: &str,
        entry: &IgnoreEntry,
    ) -> Result<Prepared, WontfixError> {
        let path = self.settings.mirror.path.clone();
        let (base, branch, entry) = (claim.base_ref.clone(), branch.to_owned(), entry.clone());
        let (file, name, email) = (
            self.settings.ignore_list_path.clone(),
            self.settings.author_name.clone(),
            self.settings.author_email.clone(),
        );
        let job_id = claim.job_id;
        let prepared = tokio::task::spawn_blocking(move || {
            let repo = longtx_git::open(&path)?;
            prepare(
                &repo,
                &WontfixCommit {
                    job_id,
                    base_branch: &base,
                    pr_branch: &branch,
                    path: &file,
                    entry: &entry,
                    author_name: &name,
                    author_email: &email,
                    time: Utc::now().timestamp(),
                },
            )
        })
        .await
        .map_err(|e| WontfixError::Invalid(format!("the git task failed: {e}")))??;
        Ok(prepared)
    }

    /// The reason for the entry, and whose it is: the newest `wontfix:`
    /// comment by the labeller or by someone with write access (a reader's
    /// counts for nothing, and longtx's own comments give none), else a
    /// default naming the labeller.
    async fn reason(&self, claim: &WontfixClaim) -> Result<(String, String), WontfixError> {
        let repo = &self.settings.repo;
        let comments = self.github.comments(repo, claim.pr_number).await?;
        let me = self.github.own_login().await?.unwrap_or_default();
        let given = rules::reasons_newest_first(
            comments
                .iter()
                .filter(|c| !c.author().eq_ignore_ascii_case(&me))
                .map(|c| (c.author(), c.body.as_str())),
        );
        for (author, reason) in given {
            let may = author.eq_ignore_ascii_case(&claim.labeler)
                || (!author.is_empty()
                    && rules::may_decide(&self.github.permission(repo, author).await?));
            if may {
                return Ok((reason, format!("@{author}")));
            }
            tracing::info!(%author, "a won't-fix reason from someone without write access is not taken");
        }
        Ok((
            rules::default_reason(&claim.labeler),
            format!("@{}", claim.labeler),
        ))
    }

    async fn comment_once(
        &self,
        claim: &WontfixClaim,
        marker: &str,
        body: &str,
    ) -> Result<(), WontfixError> {
        let github = self.github.as_ref();
        crate::comments::comment_once(
            github,
            &self.settings.repo,
            claim.pr_number,
            claim.attempts,
            marker,
            body,
        )
        .await?;
        Ok(())
    }
}
