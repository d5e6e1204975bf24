//! The GitHub calls longtx makes, behind one small trait.
//!
//! [`GitHub`] names exactly what the pipeline needs; [`OctocrabGitHub`] is
//! the one real implementation, and tests talk to an in-process fake server
//! through that same implementation. [`retry`] holds the policy for rate
//! limits and server errors.

mod octo;
mod probe;
pub mod retry;
pub mod zip;

pub use longtx_core::revision::round_run_marker;
pub use octo::{Credentials, OctocrabGitHub};
pub use probe::{Grants, Hook, SecretNames};

/// Items per page on list calls; lists longer than `MAX_PAGES` pages are cut.
pub const PER_PAGE: usize = 100;
pub const MAX_PAGES: usize = 30;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

/// `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoName {
    pub owner: String,
    pub name: String,
}

impl std::str::FromStr for RepoName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (owner, name) = s
            .split_once('/')
            .filter(|(o, n)| !o.is_empty() && !n.is_empty() && !n.contains('/'))
            .ok_or_else(|| format!("{s:?} is not owner/name"))?;
        Ok(RepoName {
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }
}

impl std::fmt::Display for RepoName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// A `workflow_dispatch` request.
#[derive(Debug, Clone, Serialize)]
pub struct Dispatch {
    pub workflow: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub inputs: BTreeMap<String, String>,
}

/// A workflow run, as far as longtx cares.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Run {
    pub id: u64,
    pub html_url: Option<String>,
    pub status: Option<String>,
    pub conclusion: Option<String>,
    /// The run's name, which carries `longtx job <id>`.
    pub display_title: Option<String>,
    /// `.github/workflows/<file>`: what ties a run to the workflow longtx
    /// dispatched (with `event`, `head_repository` and `created_at`).
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub event: Option<String>,
    #[serde(default)]
    pub head_repository: Option<RepoRef>,
    #[serde(default)]
    pub created_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// `{"full_name": "owner/name"}`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct RepoRef {
    pub full_name: String,
}

impl Run {
    /// The facts [`longtx_core::agent_run::check`] ties a run by.
    pub fn observed(&self) -> longtx_core::agent_run::Observed<'_> {
        longtx_core::agent_run::Observed {
            run_id: self.id,
            path: self.path.as_deref(),
            event: self.event.as_deref(),
            head_repository: self.head_repository.as_ref().map(|r| r.full_name.as_str()),
            created_at: self.created_at,
        }
    }
}

/// A workflow run's artifact (`GET .../runs/{id}/artifacts`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Artifact {
    pub id: u64,
    pub name: String,
    #[serde(default)]
    pub size_in_bytes: u64,
    #[serde(default)]
    pub expired: bool,
}

/// A file a commit adds or replaces, whole.
#[derive(Debug, Clone, PartialEq)]
pub struct FileAddition {
    pub path: String,
    pub contents: Vec<u8>,
}

/// A commit longtx makes through `createCommitOnBranch`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCommit {
    pub branch: String,
    /// GitHub refuses the commit unless the branch points here now.
    pub expected_head: String,
    pub headline: String,
    pub body: String,
    pub additions: Vec<FileAddition>,
    pub deletions: Vec<String>,
}

/// A commit as longtx reads it back: enough to know whether it is one
/// longtx made for a given round.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitSummary {
    pub sha: String,
    pub parents: Vec<String>,
    pub message: String,
    /// The commit's tree.
    pub tree: String,
    /// The GitHub login its author is tied to (`<slug>[bot]` for an App's
    /// `createCommitOnBranch`), if GitHub ties it to one.
    pub author_login: Option<String>,
}

/// One file of a pull request's diff.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct PullFile {
    pub filename: String,
    #[serde(default)]
    pub changes: u64,
    #[serde(default)]
    pub status: String,
}

/// An issue or PR comment.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: String,
    /// Who wrote it (`null` for a deleted account).
    #[serde(default)]
    pub user: Option<CommentUser>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct CommentUser {
    pub login: String,
}

impl Comment {
    /// The author's login, or "" when GitHub names none.
    pub fn author(&self) -> &str {
        self.user.as_ref().map(|u| u.login.as_str()).unwrap_or("")
    }
}

/// An inline comment of a PR review (`GET .../reviews/{id}/comments`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct ReviewComment {
    pub path: String,
    /// The line in the file's new version; `None` for a comment on an
    /// outdated diff.
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default)]
    pub body: String,
}

/// A pull request, as longtx reads it back (`GET`/`POST .../pulls`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PullSummary {
    pub number: u64,
    pub html_url: String,
    /// `open` or `closed`.
    pub state: String,
    pub merged: bool,
    pub head_ref: String,
    pub head_sha: String,
    pub base_ref: String,
    /// Who opened it (longtx's own login, or `<app>[bot]`).
    pub author: String,
}

/// What a branch holds beyond its base (`GET .../compare/{base}...{head}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub ahead_by: u64,
    /// The full messages of the commits ahead, oldest first.
    pub messages: Vec<String>,
}

/// A PR longtx opens.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewPull {
    pub title: String,
    pub body: String,
    /// The branch, in the repository itself (never a fork).
    pub head: String,
    pub base: String,
}

/// A check run already on a commit, as far as longtx tells its own apart
/// (`GET .../commits/{ref}/check-runs`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CheckRunSummary {
    pub id: u64,
    #[serde(default)]
    pub external_id: Option<String>,
    /// `queued`, `in_progress` or `completed`.
    pub status: String,
}

/// A completed check run longtx posts on a PR's head commit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewCheckRun {
    pub head_sha: String,
    /// Ties the run to longtx's request, so a retry finds it.
    pub external_id: String,
    pub details_url: Option<String>,
    pub report: longtx_core::pr_check::CheckReport,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GitHubError {
    /// 403/429 with a rate-limit signal: wait this long, then retry.
    #[error("rate limited by GitHub; retry after {0:?}")]
    RateLimited(Duration),
    /// 403/429 for GitHub's secondary rate limit with no `Retry-After`:
    /// "wait at least one minute", then back off exponentially (docs "Rate
    /// limits for the REST API"). Never final.
    #[error("GitHub's secondary rate limit was hit")]
    SecondaryRateLimited,
    /// 5xx, or no answer in time: safe to retry after a backoff.
    #[error("GitHub is unavailable ({0})")]
    Unavailable(String),
    /// Any other 4xx: retrying will not help.
    #[error("GitHub refused the request ({status}): {message}")]
    Refused { status: u16, message: String },
    #[error("GitHub credentials are not usable: {0}")]
    Credentials(String),
}

impl GitHubError {
    /// Errors that only time cures: a job is never failed for them,
    /// however many tries they took.
    pub fn is_rate_limit(&self) -> bool {
        matches!(
            self,
            GitHubError::RateLimited(_) | GitHubError::SecondaryRateLimited
        )
    }

    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            GitHubError::RateLimited(_)
                | GitHubError::SecondaryRateLimited
                | GitHubError::Unavailable(_)
        )
    }
}

/// The calls longtx makes. Every one is safe to retry: dispatch is guarded
/// by the caller, which looks for an existing run before dispatching again.
pub trait GitHub: Send + Sync + 'static {
    /// The repository's default branch, the dispatch ref unless configured.
    fn default_branch(
        &self,
        repo: &RepoName,
    ) -> impl Future<Output = Result<String, GitHubError>> + Send;

    /// Dispatches a workflow run and returns it when GitHub reports it
    /// (`return_run_details`).
    fn dispatch_workflow(
        &self,
        repo: &RepoName,
        dispatch: &Dispatch,
    ) -> impl Future<Output = Result<Option<Run>, GitHubError>> + Send;

    /// Recent `workflow_dispatch` runs of a workflow, newest first.
    fn recent_runs(
        &self,
        repo: &RepoName,
        workflow: &str,
    ) -> impl Future<Output = Result<Vec<Run>, GitHubError>> + Send;

    fn run(
        &self,
        repo: &RepoName,
        run_id: u64,
    ) -> impl Future<Output = Result<Run, GitHubError>> + Send;

    /// The files a PR changes (GitHub lists at most 3000).
    fn pull_files(
        &self,
        repo: &RepoName,
        number: u64,
    ) -> impl Future<Output = Result<Vec<PullFile>, GitHubError>> + Send;

    /// Asks users and teams (`slug` only, the repository's org) for a
    /// review. GitHub answers 422 when any of them cannot be asked.
    fn request_reviewers(
        &self,
        repo: &RepoName,
        number: u64,
        users: &[String],
        team_slugs: &[String],
    ) -> impl Future<Output = Result<(), GitHubError>> + Send;

    fn comments(
        &self,
        repo: &RepoName,
        number: u64,
    ) -> impl Future<Output = Result<Vec<Comment>, GitHubError>> + Send;

    fn create_comment(
        &self,
        repo: &RepoName,
        number: u64,
        body: &str,
    ) -> impl Future<Output = Result<(), GitHubError>> + Send;

    fn is_collaborator(
        &self,
        repo: &RepoName,
        login: &str,
    ) -> impl Future<Output = Result<bool, GitHubError>> + Send;

    /// The slugs of an organisation's teams, or `None` when longtx may not
    /// see them (an App without `members: read`, or a user account).
    fn org_teams(
        &self,
        org: &str,
    ) -> impl Future<Output = Result<Option<Vec<String>>, GitHubError>> + Send;

    /// True when `login` is an active member of `org/slug`.
    fn is_team_member(
        &self,
        org: &str,
        slug: &str,
        login: &str,
    ) -> impl Future<Output = Result<bool, GitHubError>> + Send;

    /// `login`'s permission on the repository: `admin`, `maintain`,
    /// `write`, `triage`, `read` or `none`.
    fn permission(
        &self,
        repo: &RepoName,
        login: &str,
    ) -> impl Future<Output = Result<String, GitHubError>> + Send;

    /// Sets a PR's title and body (the same values twice is a no-op).
    fn update_pull(
        &self,
        repo: &RepoName,
        number: u64,
        title: &str,
        body: &str,
    ) -> impl Future<Output = Result<(), GitHubError>> + Send;

    /// Closes a PR (closing a closed PR is a no-op).
    fn close_pull(
        &self,
        repo: &RepoName,
        number: u64,
    ) -> impl Future<Output = Result<(), GitHubError>> + Send;

    /// Cancels a workflow run; a run that already ended is left as is.
    fn cancel_run(
        &self,
        repo: &RepoName,
        run_id: u64,
    ) -> impl Future<Output = Result<(), GitHubError>> + Send;

    /// Every PR, open or closed, whose head is `branch` of the repository
    /// itself, newest first.
    fn pulls_for_branch(
        &self,
        repo: &RepoName,
        branch: &str,
    ) -> impl Future<Output = Result<Vec<PullSummary>, GitHubError>> + Send;

    /// The commits `head` has beyond `base`; `None` when either ref does
    /// not exist.
    fn compare(
        &self,
        repo: &RepoName,
        base: &str,
        head: &str,
    ) -> impl Future<Output = Result<Option<Comparison>, GitHubError>> + Send;

    /// Opens a PR. GitHub refuses a second open PR for the same head (422),
    /// so callers look first and look again after a refusal.
    fn create_pull(
        &self,
        repo: &RepoName,
        pull: &NewPull,
    ) -> impl Future<Output = Result<PullSummary, GitHubError>> + Send;

    /// The artifacts a run uploaded.
    fn run_artifacts(
        &self,
        repo: &RepoName,
        run_id: u64,
    ) -> impl Future<Output = Result<Vec<Artifact>, GitHubError>> + Send;

    /// An artifact's zip, at most `max_bytes` (GitHub answers a redirect to
    /// a short-lived URL, fetched without longtx's credentials).
    fn download_artifact(
        &self,
        repo: &RepoName,
        artifact_id: u64,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Vec<u8>, GitHubError>> + Send;

    /// Deletes `branch`; `false` when there was no such branch.
    fn delete_branch(
        &self,
        repo: &RepoName,
        branch: &str,
    ) -> impl Future<Output = Result<bool, GitHubError>> + Send;

    /// Creates `branch` at `sha`; `false` when it exists already.
    fn create_branch(
        &self,
        repo: &RepoName,
        branch: &str,
        sha: &str,
    ) -> impl Future<Output = Result<bool, GitHubError>> + Send;

    /// Commits onto a branch through GraphQL `createCommitOnBranch` (signed
    /// by GitHub); the new commit's id. A branch that moved away from
    /// `expected_head` is refused as [`GitHubError::Refused`] with 409.
    fn create_commit_on_branch(
        &self,
        repo: &RepoName,
        commit: &NewCommit,
    ) -> impl Future<Output = Result<String, GitHubError>> + Send;

    /// One commit's id, parents and message; `None` when there is none.
    fn commit(
        &self,
        repo: &RepoName,
        sha: &str,
    ) -> impl Future<Output = Result<Option<CommitSummary>, GitHubError>> + Send;

    /// Creates a label unless it exists (an existing one is left as is).
    fn ensure_label(
        &self,
        repo: &RepoName,
        name: &str,
        color: &str,
        description: &str,
    ) -> impl Future<Output = Result<(), GitHubError>> + Send;

    /// Adds labels to a PR (a label it has already is kept once).
    fn add_labels(
        &self,
        repo: &RepoName,
        number: u64,
        labels: &[String],
    ) -> impl Future<Output = Result<(), GitHubError>> + Send;

    /// The inline comments of one review of a PR.
    fn review_comments(
        &self,
        repo: &RepoName,
        number: u64,
        review_id: i64,
    ) -> impl Future<Output = Result<Vec<ReviewComment>, GitHubError>> + Send;

    /// The commit a branch points at now; `None` when there is no such
    /// branch.
    fn branch_head(
        &self,
        repo: &RepoName,
        branch: &str,
    ) -> impl Future<Output = Result<Option<String>, GitHubError>> + Send;

    /// The GitHub login GitHub tied a commit's author to, if any.
    fn commit_author_login(
        &self,
        repo: &RepoName,
        sha: &str,
    ) -> impl Future<Output = Result<Option<String>, GitHubError>> + Send;

    /// longtx's own login: the token's user, or `<slug>[bot]` for an App
    /// (read once with the App's JWT); `None` when GitHub does not say.
    fn own_login(&self) -> impl Future<Output = Result<Option<String>, GitHubError>> + Send;

    /// A token `git fetch` can use for the mirror.
    fn git_token(&self) -> impl Future<Output = Result<Option<String>, GitHubError>> + Send;

    /// The check runs named `name` on commit `sha` (only a GitHub App can
    /// create them; anyone with read access can list them).
    fn check_runs(
        &self,
        repo: &RepoName,
        sha: &str,
        name: &str,
    ) -> impl Future<Output = Result<Vec<CheckRunSummary>, GitHubError>> + Send;

    /// Creates a completed check run, its annotations included; returns
    /// its id.
    fn create_check_run(
        &self,
        repo: &RepoName,
        check: &NewCheckRun,
    ) -> impl Future<Output = Result<u64, GitHubError>> + Send;
}

/// The run name the workflow template sets; how a run is found by job.
pub fn run_name_marker(job_id: i64) -> String {
    format!("longtx job {job_id}")
}

/// The run name of a job's pre-review for one head commit.
pub fn pre_review_run_marker(job_id: i64, head_sha: &str) -> String {
    format!(
        "longtx pre-review {job_id} {}",
        &head_sha[..head_sha.len().min(12)]
    )
}

/// True when `run` is the first run of `job_id` (its name carries the
/// marker, not followed by another digit, job 1 is not job 12, and names
/// round 0 or no round).
pub fn run_is_for_job(run: &Run, job_id: i64) -> bool {
    run_is_for_round(run, job_id, 0)
}

/// True when `run` is revision round `round` of `job_id`.
pub fn run_is_for_round(run: &Run, job_id: i64, round: u32) -> bool {
    run.display_title
        .as_deref()
        .and_then(longtx_core::revision::job_and_round_of_title)
        == Some((job_id, round))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_matched_to_their_job_exactly() {
        let run = |title: &str| Run {
            id: 1,
            html_url: None,
            status: None,
            conclusion: None,
            display_title: Some(title.into()),
            ..Run::default()
        };
        assert!(run_is_for_job(
            &run("longtx job 12: admin/users#update"),
            12
        ));
        assert!(!run_is_for_job(&run("longtx job 12: x"), 1));
        assert!(!run_is_for_job(&run("other"), 12));
        assert!(run_is_for_job(&run("longtx job 12 round 0: x"), 12));
        assert!(!run_is_for_job(&run("longtx job 12 round 1: x"), 12));
        assert!(run_is_for_round(&run("longtx job 12 round 1: x"), 12, 1));
        assert!(!run_is_for_round(&run("longtx job 12 round 11: x"), 12, 1));
        assert_eq!("o/r".parse::<RepoName>().unwrap().to_string(), "o/r");
        assert!("o".parse::<RepoName>().is_err());
    }
}
