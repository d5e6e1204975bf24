//! Job states for the whole pipeline, and the outcome of one received alert.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where a job is in the pipeline from alert to merged fix (or decision not
/// to fix). The database stores `as_str()`; the names are a stable contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for the dispatcher.
    Queued,
    /// Claimed by a dispatcher that is calling GitHub.
    Dispatching,
    /// The agent's workflow run is going.
    AgentRunning,
    /// A fix PR is open; the AI pre-review judges it before people see it.
    PreReview,
    /// A fix PR is open and waits for people.
    InReview,
    Merged,
    /// Closed without merging.
    Closed,
    /// A reviewer labelled the PR won't-fix; the source went to the ignore list.
    Wontfix,
    /// The AI pre-review judged the fix not worth a person's time.
    RejectedByReview,
    /// Dispatch failed for good.
    Failed,
    /// No PR appeared within the agent timeout.
    Expired,
    /// No GitHub credentials: the dispatch was recorded, not sent.
    DryRun,
    /// The agent run ended without opening a PR.
    NoPr,
    /// Merged, and no alert over the threshold came in the verification
    /// window after the deploy grace: the fix held.
    Verified,
    /// Merged, and an alert over the threshold came after the deploy
    /// grace: the fix did not hold, and a new job took over at once.
    Regressed,
}

impl JobState {
    pub const ALL: [JobState; 15] = [
        JobState::Queued,
        JobState::Dispatching,
        JobState::AgentRunning,
        JobState::PreReview,
        JobState::InReview,
        JobState::Merged,
        JobState::Closed,
        JobState::Wontfix,
        JobState::RejectedByReview,
        JobState::Failed,
        JobState::Expired,
        JobState::DryRun,
        JobState::NoPr,
        JobState::Verified,
        JobState::Regressed,
    ];

    /// States in which a job holds its `query_source`: a new alert for the
    /// same source joins this job instead of starting another agent run.
    pub const ACTIVE: [JobState; 5] = [
        JobState::Queued,
        JobState::Dispatching,
        JobState::AgentRunning,
        JobState::PreReview,
        JobState::InReview,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Dispatching => "dispatching",
            JobState::AgentRunning => "agent_running",
            JobState::PreReview => "pre_review",
            JobState::InReview => "in_review",
            JobState::Merged => "merged",
            JobState::Closed => "closed",
            JobState::Wontfix => "wontfix",
            JobState::RejectedByReview => "rejected_by_review",
            JobState::Failed => "failed",
            JobState::Expired => "expired",
            JobState::DryRun => "dry_run",
            JobState::NoPr => "no_pr",
            JobState::Verified => "verified",
            JobState::Regressed => "regressed",
        }
    }

    pub fn is_active(self) -> bool {
        Self::ACTIVE.contains(&self)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown job state {0:?}")]
pub struct UnknownState(pub String);

impl FromStr for JobState {
    type Err = UnknownState;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| UnknownState(s.to_owned()))
    }
}

/// What happened to one received alert. Part of the intake response contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Created,
    Deduped,
    Ignored,
    Excluded,
    BelowThreshold,
    Resolved,
    Rejected,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Created => "created",
            Outcome::Deduped => "deduped",
            Outcome::Ignored => "ignored",
            Outcome::Excluded => "excluded",
            Outcome::BelowThreshold => "below_threshold",
            Outcome::Resolved => "resolved",
            Outcome::Rejected => "rejected",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_their_names() {
        for state in JobState::ALL {
            assert_eq!(state.as_str().parse::<JobState>().unwrap(), state);
        }
        assert!("running".parse::<JobState>().is_err());
    }

    #[test]
    fn only_pipeline_states_are_active() {
        assert!(JobState::AgentRunning.is_active());
        assert!(!JobState::Merged.is_active());
        assert!(!JobState::DryRun.is_active());
    }
}
