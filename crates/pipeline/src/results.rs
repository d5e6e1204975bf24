//! A run's result, from the run longtx dispatched to a commit longtx made:
//! download the `longtx-result` artifact with longtx's own credentials,
//! check the patch against the policy, apply it onto the round's base in
//! the mirror, and commit it through `createCommitOnBranch`. Nothing here
//! touches the database: callers claim before and record after, with no
//! connection held across these calls.

use longtx_core::agent_run::{FixResult, PATCH_FILE, RESULT_ARTIFACT, RESULT_FILE};
use longtx_core::fix_pr::{self, is_round_commit};
use longtx_core::patch_check::PatchCheck;
use longtx_core::patch_policy::{self, PatchPolicy};
use longtx_git::patch::Changes;
use longtx_git::Mirror;
use longtx_github::{FileAddition, GitHub, GitHubError, NewCommit, RepoName};
use longtx_store::Store;
use std::collections::BTreeMap;
use std::time::Duration;

/// How results are fetched and checked.
#[derive(Debug, Clone)]
pub struct ResultSettings {
    /// longtx's own mirror for applying patches (not shared with the
    /// reviewer's, so fetches never race).
    pub mirror: Mirror,
    pub policy: PatchPolicy,
    pub fetch_timeout: Duration,
    /// Where Devin runs' ACUs are read; `None`: Devin runs carry no cost.
    pub devin: Option<crate::DevinSettings>,
    /// `LONGTX_RUN_BUDGET_USD`: the most a fix run's reported cost is
    /// taken to be.
    pub run_budget_usd: f64,
}

impl ResultSettings {
    /// The largest artifact downloaded: the patch cap, plus room for the
    /// result file and the zip's own bytes.
    pub fn max_artifact_bytes(&self) -> u64 {
        self.policy.max_bytes as u64 + 1024 * 1024
    }
}

/// Entries an artifact's zip may list: the templates upload two files.
const MAX_ARTIFACT_ENTRIES: usize = 64;

/// What a run left for longtx.
pub(crate) enum Fetched {
    Files(BTreeMap<String, Vec<u8>>),
    /// Nothing usable, and why (said on the job page).
    Missing(String),
}

/// The files of run `run_id`'s `longtx-result` artifact.
pub(crate) async fn fetch_result<G: GitHub>(
    github: &G,
    repo: &RepoName,
    run_id: u64,
    max_bytes: u64,
) -> Result<Fetched, GitHubError> {
    let artifacts = github.run_artifacts(repo, run_id).await?;
    let Some(artifact) = artifacts.iter().find(|a| a.name == RESULT_ARTIFACT) else {
        return Ok(Fetched::Missing(format!(
            "run {run_id} uploaded no `{RESULT_ARTIFACT}` artifact: a workflow copied from an older \
             longtx pushes its own branch, which longtx no longer takes; copy the shipped \
             .github/workflows/long-transaction-fix.yml (or its Codex or Devin edition) and \
             long-transaction-pre-review.yml again (docs/book/src/upgrading.md)"
        )));
    };
    if artifact.expired {
        return Ok(Fetched::Missing(format!(
            "run {run_id}'s `{RESULT_ARTIFACT}` artifact expired before longtx read it"
        )));
    }
    if artifact.size_in_bytes > max_bytes {
        return Ok(Fetched::Missing(format!(
            "run {run_id}'s result is {} bytes, over the {max_bytes} longtx reads (LONGTX_MAX_PATCH_BYTES)",
            artifact.size_in_bytes
        )));
    }
    let zip = match github.download_artifact(repo, artifact.id, max_bytes).await {
        Ok(zip) => zip,
        Err(GitHubError::Refused {
            status: 413,
            message,
        }) => {
            return Ok(Fetched::Missing(format!(
                "run {run_id}'s result: {message}"
            )))
        }
        Err(e) => return Err(e),
    };
    // The zip is the agent's to shape: read within one budget (only the two
    // files longtx uses, the whole inflated at most `max_bytes`), on a
    // blocking thread so a slow inflate never holds an async worker.
    let read = tokio::task::spawn_blocking(move || {
        longtx_github::zip::read(
            &zip,
            longtx_github::zip::Limits {
                wanted: &[RESULT_FILE, PATCH_FILE],
                max_entry: max_bytes as usize,
                max_total: max_bytes as usize,
                max_entries: MAX_ARTIFACT_ENTRIES,
            },
        )
    })
    .await
    .map_err(|e| GitHubError::Unavailable(format!("reading the artifact stopped: {e}")))?;
    match read {
        Ok(files) if files.contains_key(RESULT_FILE) => Ok(Fetched::Files(files)),
        Ok(_) => Ok(Fetched::Missing(format!(
            "run {run_id}'s `{RESULT_ARTIFACT}` holds no {RESULT_FILE}"
        ))),
        Err(e) => Ok(Fetched::Missing(format!("run {run_id}'s result: {e}"))),
    }
}

/// What a fix run cost: Devin's from Devin's API (the run only names its
/// session), any other agent's as its result says.
pub(crate) async fn fix_cost(
    settings: &ResultSettings,
    result: &FixResult,
) -> longtx_core::agent_run::RunCost {
    if result.cost.agent.as_deref() == Some("devin") {
        return crate::devin::devin_cost(settings, result.devin_session_id.as_deref()).await;
    }
    result.cost.clone()
}

/// A patch, judged and applied.
pub(crate) enum Proposal {
    Commit(Changes),
    /// The agent changed nothing.
    Empty,
    /// The policy (or the patch itself) refused it; why.
    Refused(String),
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ApplyError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error("{0}")]
    Git(#[from] longtx_git::GitError),
}

/// Checks `patch` against the policy, then applies it onto `base` in the
/// mirror (fetching `branch`, which holds `base`), where the policy judges
/// the tree change it makes. git2 runs on blocking threads only after the
/// patch's text has passed the preflight, and a panic in it (a thread's
/// `JoinError`) refuses the patch instead of ending the worker.
pub(crate) async fn prepare<G: GitHub>(
    github: &G,
    settings: &ResultSettings,
    branch: &str,
    base: &str,
    patch: &[u8],
) -> Result<Proposal, ApplyError> {
    // One copy of the patch, shared by the two blocking steps.
    let patch: std::sync::Arc<[u8]> = patch.into();
    let (policy, text) = (settings.policy.clone(), patch.clone());
    let judged = tokio::task::spawn_blocking(move || -> Result<bool, String> {
        longtx_git::patch::preflight(&policy, &text).map_err(|e| e.to_string())?;
        let files = longtx_git::patch::files_of(&text).map_err(|e| e.to_string())?;
        patch_policy::check(&policy, text.len(), &files).map_err(|e| e.to_string())?;
        Ok(!files.is_empty())
    })
    .await;
    match judged {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => return Ok(Proposal::Empty),
        Ok(Err(why)) => return Ok(Proposal::Refused(why)),
        Err(e) => {
            return Ok(Proposal::Refused(format!(
                "git could not read the patch: {e}"
            )))
        }
    }
    let token = github.git_token().await?;
    settings
        .mirror
        .fetch(branch, token.as_deref(), settings.fetch_timeout)
        .await?;
    let path = settings.mirror.path.clone();
    let (base, policy) = (base.to_owned(), settings.policy.clone());
    let applied = tokio::task::spawn_blocking(move || {
        let repo = longtx_git::open(&path)?;
        longtx_git::patch::apply(&repo, &base, &patch, &policy)
    })
    .await;
    match applied {
        Ok(Ok(changes)) if changes.is_empty() => Ok(Proposal::Empty),
        Ok(Ok(changes)) => Ok(Proposal::Commit(changes)),
        Ok(Err(longtx_git::GitError::Invalid(why))) => Ok(Proposal::Refused(why)),
        Ok(Err(e)) => Err(e.into()),
        Err(e) => Ok(Proposal::Refused(format!(
            "git could not apply the patch: {e}"
        ))),
    }
}

/// Commits `changes` onto `branch` at `base` as round `round` of `job_id`.
/// When the branch moved, the commit an earlier attempt made is the answer,
/// and only that one: its parent `base`, its trailers this job and round,
/// its tree the very tree longtx computed from the checked patch, and its
/// author longtx's own login. Trailers can be copied by anyone who may push
/// (or by an agent's own GitHub integration), a tree that met the policy
/// and longtx's authorship cannot; anything else on the branch is refused
/// (409) with the reason, never adopted and never overwritten.
pub(crate) async fn commit<G: GitHub>(
    github: &G,
    repo: &RepoName,
    branch: &str,
    base: &str,
    (headline, body): (String, String),
    changes: Changes,
    (job_id, round): (i64, u32),
) -> Result<String, GitHubError> {
    let tree = changes.tree.clone();
    let new = NewCommit {
        branch: branch.to_owned(),
        expected_head: base.to_owned(),
        headline,
        body,
        additions: changes
            .additions
            .into_iter()
            .map(|(path, contents)| FileAddition { path, contents })
            .collect(),
        deletions: changes.deletions,
    };
    match github.create_commit_on_branch(repo, &new).await {
        Ok(sha) => Ok(sha),
        Err(moved @ GitHubError::Refused { status: 409, .. }) => {
            let Some(head) = github.branch_head(repo, branch).await? else {
                return Err(moved);
            };
            let own = github.own_login().await?;
            let found = github.commit(repo, &head).await?;
            match found.as_ref().map(|c| adoptable(c, base, &tree, own.as_deref(), (job_id, round))) {
                Some(Ok(())) => Ok(head),
                Some(Err(why)) => Err(GitHubError::Refused {
                    status: 409,
                    message: format!(
                        "{branch} moved from {base} to {head}, a commit longtx did not make for this round: {why}"
                    ),
                }),
                None => Err(moved),
            }
        }
        Err(e) => Err(e),
    }
}

/// Why commit `c` is not the one longtx made of `tree` on `base` for this
/// round, if it is not.
fn adoptable(
    c: &longtx_github::CommitSummary,
    base: &str,
    tree: &str,
    own_login: Option<&str>,
    (job_id, round): (i64, u32),
) -> Result<(), &'static str> {
    if c.parents != [base] {
        return Err("its parent is not the pinned base");
    }
    if !is_round_commit(&c.message, job_id, round) {
        return Err("its trailers name another job or round");
    }
    if c.tree != tree {
        return Err("its files are not the checked patch's");
    }
    if own_login.is_none() || c.author_login.as_deref() != own_login {
        return Err("its author is not longtx");
    }
    Ok(())
}

/// The round a fix run's result is applied as.
pub(crate) struct Round<'a> {
    pub job_id: i64,
    pub round: u32,
    pub query_source: &'a str,
    /// The run longtx dispatched for it.
    pub run_id: u64,
    /// The commit longtx pinned for the run to start from.
    pub base: &'a str,
    /// The branch the mirror fetches to hold `base`.
    pub fetch: &'a str,
    /// The job's fix branch (`Installation::branch_of`), which the commit
    /// goes on.
    pub branch: &'a str,
    /// Round 0 creates the fix branch at `base` first.
    pub create_branch: bool,
}

/// What a fix run's result came to.
pub(crate) enum ResultOutcome {
    /// longtx's commit, made now or found from an earlier attempt, with
    /// longtx's scan of the patch (`None` when it could not run).
    Committed {
        sha: String,
        result: FixResult,
        check: Option<PatchCheck>,
    },
    /// The agent changed nothing.
    Unchanged(FixResult),
    /// The patch policy (or the patch itself) refused the patch; why.
    PatchRefused(String),
    /// No usable result (missing, unreadable, from another base), or the
    /// branch moved under the commit; why.
    Unusable(String),
}

/// One fix run's result, from the artifact to longtx's commit: fetched
/// from the run longtx dispatched, its cost kept, its base checked against
/// the pinned one, the patch checked and applied, and committed with
/// `expectedHeadOid`. The same for round 0 and every later round.
pub(crate) async fn apply_result<G: GitHub>(
    github: &G,
    store: &Store,
    settings: &ResultSettings,
    repo: &RepoName,
    round: &Round<'_>,
) -> Result<ResultOutcome, ApplyError> {
    let run_id = round.run_id;
    let files = match fetch_result(github, repo, run_id, settings.max_artifact_bytes()).await? {
        Fetched::Files(files) => files,
        Fetched::Missing(why) => return Ok(ResultOutcome::Unusable(why)),
    };
    let result = match FixResult::parse(&files[RESULT_FILE]) {
        Ok(result) => result,
        Err(e) => return Ok(ResultOutcome::Unusable(format!("run {run_id}: {e}"))),
    };
    let cost = fix_cost(settings, &result).await;
    let from_the_run = result.cost.agent.as_deref() != Some("devin");
    if !from_the_run {
        // Devin pushed its work to a scratch branch with its own access; the
        // run has turned it into the patch, so the branch goes.
        let scratch = longtx_core::agent_run::devin_branch(round.job_id, round.round);
        match github.delete_branch(repo, &scratch).await {
            Ok(deleted) => {
                tracing::info!(branch = %scratch, deleted, "Devin's scratch branch read and deleted")
            }
            Err(e) => {
                tracing::warn!(branch = %scratch, error = %e, "deleting Devin's scratch branch failed; delete it by hand")
            }
        }
    }
    record_cost(
        store,
        round.job_id,
        (run_id, round.round),
        &cost,
        from_the_run.then_some(settings.run_budget_usd),
    )
    .await;
    if result.base != round.base {
        return Ok(ResultOutcome::Unusable(format!(
            "run {run_id} started from {}, not the commit longtx pinned ({})",
            result.base, round.base
        )));
    }
    let patch = files.get(PATCH_FILE).map(Vec::as_slice).unwrap_or_default();
    let changes = match prepare(github, settings, round.fetch, round.base, patch).await? {
        Proposal::Commit(changes) => changes,
        Proposal::Empty => return Ok(ResultOutcome::Unchanged(result)),
        Proposal::Refused(why) => {
            tracing::warn!(%why, "the agent's patch was refused");
            return Ok(ResultOutcome::PatchRefused(why));
        }
    };
    let check = check_patch(settings, round.base, &changes.tree, round.query_source).await;
    let branch = round.branch;
    if round.create_branch {
        if let Err(e) = github.create_branch(repo, branch, round.base).await {
            return permanent(e, "creating the fix branch");
        }
    }
    let message = fix_pr::commit_message(
        round.job_id,
        round.round,
        round.query_source,
        result.pattern.as_deref(),
        result.cost.agent.as_deref(),
    );
    match commit(
        github,
        repo,
        branch,
        round.base,
        message,
        changes,
        (round.job_id, round.round),
    )
    .await
    {
        Ok(sha) => {
            tracing::info!(commit = %sha, round = round.round, "longtx committed the agent's patch");
            Ok(ResultOutcome::Committed { sha, result, check })
        }
        Err(GitHubError::Refused {
            status: 409,
            message,
        }) => Ok(ResultOutcome::Unusable(message)),
        Err(e) => permanent(e, "longtx's commit"),
    }
}

/// longtx's own scan of the patched tree against the base, both read from
/// the mirror (where `apply` wrote the patched tree): whether the alerted
/// source still reaches slow work inside a transaction, and what the patch
/// added. Run off the async threads with no connection held; a scan that
/// fails is logged and the patch goes on unchecked.
async fn check_patch(
    settings: &ResultSettings,
    base: &str,
    tree: &str,
    query_source: &str,
) -> Option<PatchCheck> {
    let (path, base, tree, source) = (
        settings.mirror.path.clone(),
        base.to_owned(),
        tree.to_owned(),
        query_source.to_owned(),
    );
    let checked =
        tokio::task::spawn_blocking(move || -> Result<PatchCheck, longtx_git::GitError> {
            let repo = longtx_git::open(&path)?;
            let before = longtx_git::export::ExportedTree::of(&repo, &base)?;
            let after = longtx_git::export::ExportedTree::of(&repo, &tree)?;
            let nothing_ignored = longtx_core::IgnoreList::default();
            let scan = |dir: &std::path::Path| longtx_scan::scan(dir, None, &nothing_ignored);
            Ok(longtx_scan::patch_check(
                &scan(before.path()),
                &scan(after.path()),
                &source,
            ))
        })
        .await;
    match checked {
        Ok(Ok(check)) => {
            tracing::info!(
                still_held = check.still_held.len(),
                added = check.added.len(),
                "the patch scanned"
            );
            Some(check)
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "scanning the patch failed; it goes on unchecked");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "scanning the patch panicked; it goes on unchecked");
            None
        }
    }
}

/// A refusal that no retry changes (a validation error, a ruleset, a
/// commit too large) ends the round with GitHub's own words; anything
/// else is retried after the lease.
fn permanent(e: GitHubError, what: &str) -> Result<ResultOutcome, ApplyError> {
    match e {
        GitHubError::Refused { status, message } if is_final(status) => Ok(
            ResultOutcome::Unusable(format!("GitHub refused {what} (HTTP {status}): {message}")),
        ),
        e => Err(e.into()),
    }
}

/// Statuses of [`GitHubError::Refused`] that end a round: every 4xx but
/// an expired credential (401, renewed on the next call), a missing object
/// (404, which replication lag can cause) and a moved branch (409, handled
/// by adoption).
pub(crate) fn is_final(status: u16) -> bool {
    !matches!(status, 401 | 404 | 409)
}

/// Keeps a run's cost as its report. A figure the run wrote is kept
/// within `budget_usd` (see `RunCost::within_budget`): the caps count
/// budgets, and the figure shown is never more than longtx gave the run.
/// `None` is for figures longtx read itself (Devin's ACUs, from Devin's
/// API), kept as they are.
pub(crate) async fn record_cost(
    store: &Store,
    job_id: i64,
    (run_id, round): (u64, u32),
    cost: &longtx_core::agent_run::RunCost,
    budget_usd: Option<f64>,
) {
    let cost = match budget_usd {
        Some(budget) => {
            let (cost, note) = cost.within_budget(budget);
            if let Some(note) = note {
                tracing::warn!(run_id, %note, "the run's cost report was not taken as it came");
            }
            cost
        }
        None => cost.clone(),
    };
    match cost.report(run_id, round) {
        Ok(report) => {
            if let Err(e) = store.record_run_report(job_id, &report).await {
                tracing::warn!(error = %e, "recording the run's cost failed");
            }
        }
        Err(why) => {
            tracing::warn!(%why, run_id, "the run's cost figures were not believable; dropped")
        }
    }
}

/// The run longtx already dispatched under a name `named` recognises,
/// among the workflow's recent runs, tied to the dispatch: the configured
/// workflow, a `workflow_dispatch` run of the target repository, created
/// after `started_at`. A title alone (which anyone's CI run can carry)
/// ties nothing.
pub(crate) async fn find_dispatched_run<G: GitHub>(
    github: &G,
    repo: &RepoName,
    workflow: &str,
    started_at: chrono::DateTime<chrono::Utc>,
    named: impl Fn(&longtx_github::Run) -> bool,
) -> Result<Option<longtx_github::Run>, GitHubError> {
    let runs = github.recent_runs(repo, workflow).await?;
    let repo = repo.to_string();
    let dispatched = longtx_core::agent_run::Dispatched {
        run_id: None,
        workflow_file: workflow,
        repo: &repo,
        started_at,
    };
    Ok(runs.into_iter().find(|run| {
        if !named(run) {
            return false;
        }
        match longtx_core::agent_run::check(&dispatched, &run.observed(), true) {
            Ok(()) => true,
            Err(why) => {
                // A run carrying the job's name but failing a tie is someone
                // else's (a PR's CI, an older dispatch): said, then passed by.
                tracing::warn!(run = run.id, %why, "a run named for this job is not the one longtx dispatched; not taken");
                false
            }
        }
    }))
}
