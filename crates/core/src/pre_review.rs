//! The AI pre-review: a second agent pass judges a fix PR on three points
//! before people are asked. This module holds the verdict's shape, its
//! checks and what longtx does with it; the adapters move it around.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// `LONGTX_PRE_REVIEW`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PreReviewMode {
    /// A failing PR is closed with the reasons.
    On,
    /// People are asked at once; no pre-review runs.
    #[default]
    Off,
    /// The verdict is recorded and shown, and never closes anything.
    Advisory,
}

impl FromStr for PreReviewMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "on" | "true" => Ok(PreReviewMode::On),
            "off" | "false" | "" => Ok(PreReviewMode::Off),
            "advisory" => Ok(PreReviewMode::Advisory),
            other => Err(format!("{other:?}: use on, off or advisory")),
        }
    }
}

impl PreReviewMode {
    pub fn is_enabled(self) -> bool {
        self != PreReviewMode::Off
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Fail,
    /// The review produced no usable answer (the agent gave no structured
    /// output, or no verdict came within `LONGTX_PRE_REVIEW_TIMEOUT`). A
    /// broken review never closes a fix: people are asked, and the job page
    /// shows that no verdict came.
    NoVerdict,
}

/// What the reviewing agent returns (and the workflow posts back), for one
/// head commit of the PR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    pub head_sha: String,
    /// Would the alert for this source and table stop firing?
    pub addresses_bottleneck: bool,
    /// Is it the smallest change that removes the long transaction?
    pub minimal_change: bool,
    /// Is the consistency the transaction protected kept by other means?
    pub preserves_behaviour: bool,
    pub verdict: Outcome,
    #[serde(default)]
    pub reasons: Vec<String>,
}

pub const MAX_REASONS: usize = 20;
pub const MAX_REASON_CHARS: usize = 2000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerdictError {
    #[error("head_sha must be a 40-character hex commit id")]
    HeadSha,
    #[error("a pass needs all three checks true")]
    InconsistentPass,
    #[error("a fail needs at least one reason")]
    FailWithoutReason,
    #[error("at most {MAX_REASONS} reasons of at most {MAX_REASON_CHARS} characters each")]
    ReasonsTooLong,
}

impl Verdict {
    pub fn validate(&self) -> Result<(), VerdictError> {
        if self.head_sha.len() != 40 || !self.head_sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(VerdictError::HeadSha);
        }
        let all_hold = self.addresses_bottleneck && self.minimal_change && self.preserves_behaviour;
        if self.verdict == Outcome::Pass && !all_hold {
            return Err(VerdictError::InconsistentPass);
        }
        if self.verdict == Outcome::Fail && self.reasons.iter().all(|r| r.trim().is_empty()) {
            return Err(VerdictError::FailWithoutReason);
        }
        if self.reasons.len() > MAX_REASONS
            || self
                .reasons
                .iter()
                .any(|r| r.chars().count() > MAX_REASON_CHARS)
        {
            return Err(VerdictError::ReasonsTooLong);
        }
        Ok(())
    }
}

/// What a valid verdict for the PR's current head leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Ask people (the reviewer choice runs now).
    RequestReviewers,
    /// Comment the reasons, close the PR: `rejected_by_review`.
    Reject,
}

/// The verdict recorded when a head waited past the timeout.
pub fn timed_out(head_sha: &str, timeout: std::time::Duration) -> Verdict {
    Verdict {
        head_sha: head_sha.to_owned(),
        addresses_bottleneck: false,
        minimal_change: false,
        preserves_behaviour: false,
        verdict: Outcome::NoVerdict,
        reasons: vec![format!(
            "no verdict within {} minutes of the review being requested; people are asked instead",
            timeout.as_secs().div_ceil(60)
        )],
    }
}

pub fn decide(mode: PreReviewMode, verdict: &Verdict) -> Action {
    match (verdict.verdict, mode) {
        (Outcome::Fail, PreReviewMode::On) => Action::Reject,
        _ => Action::RequestReviewers,
    }
}

/// The marker that makes the rejection comment once-only per head.
pub fn rejection_marker(job_id: i64, head_sha: &str) -> String {
    format!("<!-- longtx-pre-review job={job_id} head={head_sha} -->")
}

/// The comment left on a PR the pre-review closes.
pub fn rejection_comment(job_id: i64, verdict: &Verdict) -> String {
    let check = |ok: bool| if ok { "yes" } else { "**no**" };
    let mut text = format!(
        "{}\nThe AI pre-review closed this fix (commit {}): it did not pass all three checks.\n\n\
         | check | |\n| --- | --- |\n\
         | addresses the bottleneck that held the metadata lock | {} |\n\
         | the minimal change that removes the long transaction | {} |\n\
         | keeps the original behaviour | {} |\n\nReasons:\n",
        rejection_marker(job_id, &verdict.head_sha),
        &verdict.head_sha[..12.min(verdict.head_sha.len())],
        check(verdict.addresses_bottleneck),
        check(verdict.minimal_change),
        check(verdict.preserves_behaviour),
    );
    for reason in &verdict.reasons {
        text.push_str(&format!("- {}\n", one_line(reason)));
    }
    text.push_str(
        "\nIf the fix is right after all, reopen the PR: longtx then asks the reviewers as on a pass. \
         Otherwise the source may be tried again after the cooldown, and the next attempt's prompt \
         carries these reasons.\n",
    );
    text
}

/// The reasons, for the next attempt's prompt.
pub fn prompt_note(verdict: &Verdict) -> Vec<String> {
    verdict
        .reasons
        .iter()
        .map(|r| one_line(r))
        .filter(|r| !r.is_empty())
        .collect()
}

/// Keeps a reason on one markdown line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(outcome: Outcome, checks: [bool; 3]) -> Verdict {
        Verdict {
            head_sha: "a".repeat(40),
            addresses_bottleneck: checks[0],
            minimal_change: checks[1],
            preserves_behaviour: checks[2],
            verdict: outcome,
            reasons: vec!["moves the HTTP call\nout of the transaction".into()],
        }
    }

    #[test]
    fn verdicts_are_checked_for_consistency() {
        assert_eq!(verdict(Outcome::Pass, [true; 3]).validate(), Ok(()));
        assert_eq!(
            verdict(Outcome::Pass, [true, false, true]).validate(),
            Err(VerdictError::InconsistentPass)
        );
        assert_eq!(
            verdict(Outcome::Fail, [true; 3]).validate(),
            Ok(()),
            "a fail may have other reasons"
        );
        let mut no_reason = verdict(Outcome::Fail, [false; 3]);
        no_reason.reasons = vec![" ".into()];
        assert_eq!(no_reason.validate(), Err(VerdictError::FailWithoutReason));
        let mut bad_sha = verdict(Outcome::Pass, [true; 3]);
        bad_sha.head_sha = "main".into();
        assert_eq!(bad_sha.validate(), Err(VerdictError::HeadSha));
        let mut long = verdict(Outcome::Fail, [false; 3]);
        long.reasons = vec!["x".repeat(MAX_REASON_CHARS + 1)];
        assert_eq!(long.validate(), Err(VerdictError::ReasonsTooLong));
    }

    #[test]
    fn only_a_fail_in_on_mode_rejects() {
        let fail = verdict(Outcome::Fail, [true, false, true]);
        let pass = verdict(Outcome::Pass, [true; 3]);
        assert_eq!(decide(PreReviewMode::On, &fail), Action::Reject);
        assert_eq!(
            decide(PreReviewMode::Advisory, &fail),
            Action::RequestReviewers
        );
        assert_eq!(decide(PreReviewMode::On, &pass), Action::RequestReviewers);
        let none = timed_out(&"b".repeat(40), std::time::Duration::from_secs(1800));
        assert_eq!(none.validate(), Ok(()));
        assert!(none.reasons[0].contains("30 minutes"));
        assert_eq!(
            decide(PreReviewMode::On, &none),
            Action::RequestReviewers,
            "a review that never answered must not close the fix"
        );
        assert_eq!(
            "ADVISORY".parse::<PreReviewMode>(),
            Ok(PreReviewMode::Advisory)
        );
        assert!("maybe".parse::<PreReviewMode>().is_err());
    }

    #[test]
    fn the_rejection_comment_names_the_failed_checks_and_the_way_back() {
        let text = rejection_comment(7, &verdict(Outcome::Fail, [true, false, true]));
        assert!(text.starts_with(&rejection_marker(7, &"a".repeat(40))));
        assert!(text.contains("| the minimal change that removes the long transaction | **no** |"));
        assert!(
            text.contains("- moves the HTTP call out of the transaction\n"),
            "{text}"
        );
        assert!(text.contains("reopen the PR"));
    }
}
