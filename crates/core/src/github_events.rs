//! The GitHub webhook events longtx uses, typed, and how a fix PR is tied
//! back to its job.
//!
//! A PR belongs to job N only when both its head branch and its body's
//! marker name job N of this installation (`crate::installation`), and it
//! comes from the target repository itself. Anyone can open a PR from a fork with a copied body,
//! and the body alone can be edited by anyone with write access, so one
//! signal is never enough.

use crate::installation::Installation;
use crate::JobState;
use serde::Deserialize;

pub const BRANCH_PREFIX: &str = "longtx/";
pub const WONTFIX_LABEL: &str = "long-transaction-wontfix";

#[derive(Debug, Clone, Deserialize)]
pub struct Repository {
    pub full_name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub login: String,
    /// `User`, `Bot` or `Organization`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

impl User {
    pub fn is_bot(&self) -> bool {
        self.kind.as_deref() == Some("Bot") || self.login.ends_with("[bot]")
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Label {
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Branch {
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub sha: String,
    /// `None` when the fork the PR came from was deleted.
    pub repo: Option<Repository>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    pub html_url: String,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub merged: bool,
    pub user: User,
    pub head: Branch,
    pub base: Branch,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PullRequestEvent {
    pub action: String,
    pub pull_request: PullRequest,
    pub repository: Repository,
    /// Who did it (the labeler, for `labeled`).
    #[serde(default)]
    pub sender: Option<User>,
    #[serde(default)]
    pub label: Option<Label>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct WorkflowRun {
    pub id: u64,
    #[serde(default)]
    pub display_title: Option<String>,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub html_url: Option<String>,
    /// `.github/workflows/<file>`, the trigger, the repository the run ran
    /// on and when it was made: what ties it to a dispatch.
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub event: Option<String>,
    #[serde(default)]
    pub head_repository: Option<Repository>,
    #[serde(default)]
    pub created_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl WorkflowRun {
    /// The facts [`crate::agent_run::check`] ties a run by.
    pub fn observed(&self) -> crate::agent_run::Observed<'_> {
        crate::agent_run::Observed {
            run_id: self.id,
            path: self.path.as_deref(),
            event: self.event.as_deref(),
            head_repository: self.head_repository.as_ref().map(|r| r.full_name.as_str()),
            created_at: self.created_at,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct WorkflowRunEvent {
    pub action: String,
    pub workflow_run: WorkflowRun,
    pub repository: Repository,
}

/// A submitted PR review (`pull_request_review`).
#[derive(Debug, Clone, Deserialize)]
pub struct Review {
    pub id: i64,
    #[serde(default)]
    pub body: Option<String>,
    /// `approved`, `changes_requested` or `commented` (lowercase in
    /// webhooks, uppercase in the REST API).
    pub state: String,
    pub user: User,
    #[serde(default)]
    pub commit_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PullRequestReviewEvent {
    pub action: String,
    pub review: Review,
    pub pull_request: PullRequest,
    pub repository: Repository,
}

impl PullRequestReviewEvent {
    pub fn requests_changes(&self) -> bool {
        self.action == "submitted" && self.review.state.eq_ignore_ascii_case("changes_requested")
    }
}

/// The issue an `issue_comment` is on; PRs are issues with `pull_request`.
#[derive(Debug, Clone, Deserialize)]
pub struct IssueRef {
    pub number: u64,
    #[serde(default)]
    pub pull_request: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IssueComment {
    pub id: i64,
    #[serde(default)]
    pub body: String,
    pub user: User,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IssueCommentEvent {
    pub action: String,
    pub issue: IssueRef,
    pub comment: IssueComment,
    pub repository: Repository,
}

/// What a PR says about its job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Correlation {
    /// Not a longtx PR at all.
    NotOurs,
    Job(i64),
    /// Looks like a longtx PR but cannot be trusted; act on nothing.
    Suspicious(String),
}

/// Ties `pr` to a job of `target_repo` (`owner/name`) in `installation`,
/// or says why not. Names of another installation are not ours at all.
pub fn correlate(pr: &PullRequest, target_repo: &str, installation: &Installation) -> Correlation {
    let branch_job = installation.job_of_branch(&pr.head.git_ref);
    let body_jobs = installation.jobs_in_body(pr.body.as_deref().unwrap_or(""));
    if branch_job.is_none() && body_jobs.is_empty() {
        return Correlation::NotOurs;
    }
    let base_repo = pr.base.repo.as_ref().map(|r| r.full_name.as_str());
    if !base_repo.is_some_and(|r| r.eq_ignore_ascii_case(target_repo)) {
        return Correlation::Suspicious(format!(
            "PR #{} targets {}, not {target_repo}",
            pr.number,
            base_repo.unwrap_or("an unknown repository")
        ));
    }
    let head_repo = pr.head.repo.as_ref().map(|r| r.full_name.as_str());
    if head_repo != base_repo {
        return Correlation::Suspicious(format!(
            "PR #{} comes from a fork ({}) but names a longtx job",
            pr.number,
            head_repo.unwrap_or("a deleted repository")
        ));
    }
    match (branch_job, body_jobs.as_slice()) {
        (Some(branch), [body]) if branch == *body => Correlation::Job(branch),
        (_, body) => Correlation::Suspicious(format!(
            "PR #{}: branch {:?} and body markers {:?} do not name the same job",
            pr.number, pr.head.git_ref, body
        )),
    }
}

/// The job a workflow run was dispatched for, from its run name
/// (`longtx job <id>: <query_source>`, or `longtx job <id> round <n>: ...`).
pub fn job_of_run(run: &WorkflowRun) -> Option<i64> {
    job_and_round_of_run(run).map(|(job, _)| job)
}

/// The job and the revision round (0: the first run) of a fix run.
pub fn job_and_round_of_run(run: &WorkflowRun) -> Option<(i64, u32)> {
    crate::revision::job_and_round_of_title(run.display_title.as_deref()?)
}

/// What happened on GitHub, as far as a job's state goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrEvent {
    Opened,
    Reopened,
    /// New commits on the PR branch.
    Synchronized,
    Closed {
        merged: bool,
    },
    Labeled(String),
    /// The won't-fix label, added by `by`. The state moves only once longtx
    /// has applied it (see [`crate::wontfix`]).
    WontfixLabeled {
        by: String,
    },
    /// The run longtx dispatched finished. The workflow only uploads its
    /// result: after a successful run longtx commits it and opens the PR
    /// itself (the job stays where it is until then); any other conclusion
    /// means no PR.
    RunCompleted {
        success: bool,
    },
    /// The fix run of revision round `round` (1, 2, ...) finished. After a
    /// good run longtx applies its result onto the branch.
    RoundRunCompleted {
        round: u32,
        success: bool,
    },
}

/// The state a job moves to, or `None` when the event changes nothing.
/// A PR event for a job that already ended only revives it when a person
/// reopened the PR (or a late `opened` shows the PR exists after all).
pub fn next_state(current: JobState, event: &PrEvent, gate: ReviewGate) -> Option<JobState> {
    use JobState::*;
    let waiting_for_pr = matches!(current, Dispatching | AgentRunning);
    let open = matches!(current, InReview | PreReview);
    let to = match event {
        PrEvent::Opened | PrEvent::Synchronized
            if waiting_for_pr || matches!(current, NoPr | Expired | Failed) =>
        {
            match gate {
                ReviewGate::PreReviewFirst => PreReview,
                ReviewGate::PeopleAtOnce => InReview,
            }
        }
        // A person reopening a PR the pre-review closed overrides it.
        PrEvent::Reopened
            if waiting_for_pr
                || matches!(current, NoPr | Expired | Failed | Closed | RejectedByReview) =>
        {
            InReview
        }
        PrEvent::Closed { merged: true } if waiting_for_pr || open => Merged,
        PrEvent::Closed { merged: false } if waiting_for_pr || open => Closed,
        PrEvent::RunCompleted { success: false } if waiting_for_pr => NoPr,
        _ => return None,
    };
    (to != current).then_some(to)
}

/// Where a newly opened fix PR goes: to the AI pre-review first
/// (`LONGTX_PRE_REVIEW` on or advisory), or straight to people.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewGate {
    PreReviewFirst,
    PeopleAtOnce,
}

#[cfg(test)]
mod tests;
