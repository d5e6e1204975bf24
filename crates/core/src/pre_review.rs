//! The AI pre-review: a second agent pass judges a fix PR on three points
//! before people are asked. This module holds the verdict's shape, its
//! checks and what longtx does with it; the adapters move it around.

use crate::revision::{Budget, Finding};
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
    /// Findings the agent can act on (too broad, behaviour not kept, tests
    /// missing): the agent gets another round on the same branch.
    Revise,
    /// It does not address the bottleneck, or the approach is wrong: no
    /// round can save it. `fail` is what templates before the rounds sent.
    #[serde(alias = "fail")]
    Reject,
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
    /// What to change, with file and line where the reviewer has them.
    #[serde(default)]
    pub findings: Vec<Finding>,
}

pub const MAX_REASONS: usize = 20;
pub const MAX_REASON_CHARS: usize = 2000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerdictError {
    #[error("head_sha must be a 40-character hex commit id")]
    HeadSha,
    #[error("a pass needs all three checks true")]
    InconsistentPass,
    #[error("a revise or reject needs at least one reason or finding")]
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
        let says_why = self.reasons.iter().any(|r| !r.trim().is_empty())
            || self.findings.iter().any(|f| !f.text.trim().is_empty());
        if matches!(self.verdict, Outcome::Revise | Outcome::Reject) && !says_why {
            return Err(VerdictError::FailWithoutReason);
        }
        let too_long = |text: &str| text.chars().count() > MAX_REASON_CHARS;
        if self.reasons.len() > MAX_REASONS
            || self.findings.len() > MAX_REASONS
            || self.reasons.iter().any(|r| too_long(r))
            || self
                .findings
                .iter()
                .any(|f| too_long(&f.text) || f.file.as_deref().is_some_and(too_long))
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
    /// Dispatch the agent again on the PR's branch with the findings; in
    /// advisory mode people are asked at the same time.
    Revise,
    /// Comment the reasons, close the PR: `rejected_by_review`.
    Reject,
}

/// The verdict recorded when a head waited past the timeout.
pub fn timed_out(head_sha: &str, timeout: std::time::Duration) -> Verdict {
    no_verdict(
        head_sha,
        format!(
            "no verdict within {} minutes of the review being requested; people are asked instead",
            timeout.as_secs().div_ceil(60)
        ),
    )
}

/// The verdict recorded when a review run gave none (it failed, or its
/// result was missing or unreadable): people are asked, with `why`.
pub fn no_verdict(head_sha: &str, why: String) -> Verdict {
    Verdict {
        head_sha: head_sha.to_owned(),
        addresses_bottleneck: false,
        minimal_change: false,
        preserves_behaviour: false,
        verdict: Outcome::NoVerdict,
        reasons: vec![why],
        findings: Vec::new(),
    }
}

/// What a verdict leads to, given the PR's rounds so far. A person who said
/// `/longtx stop` has taken the PR over: nothing is closed or revised
/// automatically any more.
pub fn decide(mode: PreReviewMode, verdict: &Verdict, budget: &Budget) -> Action {
    if budget.stopped {
        return Action::RequestReviewers;
    }
    match (verdict.verdict, mode) {
        (Outcome::Pass | Outcome::NoVerdict, _) | (_, PreReviewMode::Off) => {
            Action::RequestReviewers
        }
        (Outcome::Revise, _) if budget.ai_rounds < budget.max => Action::Revise,
        (Outcome::Revise | Outcome::Reject, PreReviewMode::On) => Action::Reject,
        (Outcome::Revise | Outcome::Reject, PreReviewMode::Advisory) => Action::RequestReviewers,
    }
}

/// The marker that makes the rejection comment once-only per head.
pub fn rejection_marker(job_id: i64, head_sha: &str) -> String {
    format!("<!-- longtx-pre-review job={job_id} head={head_sha} -->")
}

/// The comment left on a PR the pre-review closes: the last verdict's
/// checks, `why` it ends here, and every round's reasons (`history`,
/// oldest first, the last verdict included).
pub fn rejection_comment(job_id: i64, history: &[Verdict], why: &str) -> String {
    let Some(last) = history.last() else {
        return format!("{}\n{why}\n", rejection_marker(job_id, ""));
    };
    let check = |ok: bool| if ok { "yes" } else { "**no**" };
    let mut text = format!(
        "{}\nThe AI pre-review closed this fix (commit {}): {}\n\n\
         | check | |\n| --- | --- |\n\
         | addresses the bottleneck that held the metadata lock | {} |\n\
         | the minimal change that removes the long transaction | {} |\n\
         | keeps the original behaviour | {} |\n\n",
        rejection_marker(job_id, &last.head_sha),
        short(&last.head_sha),
        one_line(why),
        check(last.addresses_bottleneck),
        check(last.minimal_change),
        check(last.preserves_behaviour),
    );
    for (round, verdict) in history.iter().enumerate() {
        text.push_str(&format!(
            "Round {round} (commit {}), {}:\n",
            short(&verdict.head_sha),
            outcome_word(verdict.verdict)
        ));
        for line in verdict_lines(verdict) {
            text.push_str(&format!("- {line}\n"));
        }
    }
    text.push_str(
        "\nIf the fix is right after all, reopen the PR: longtx then asks the reviewers as on a pass. \
         Otherwise the source may be tried again after the cooldown, and the next attempt's prompt \
         carries these reasons.\n",
    );
    text
}

fn short(sha: &str) -> &str {
    &sha[..12.min(sha.len())]
}

pub fn outcome_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "pass",
        Outcome::Revise => "revise",
        Outcome::Reject => "reject",
        Outcome::NoVerdict => "no verdict",
    }
}

/// A verdict's reasons and findings, one markdown line each.
pub fn verdict_lines(verdict: &Verdict) -> Vec<String> {
    let reasons = verdict.reasons.iter().map(|r| one_line(r));
    let findings = verdict.findings.iter().map(Finding::one_line);
    reasons.chain(findings).filter(|r| !r.is_empty()).collect()
}

/// Every round's reasons, for the next attempt's prompt.
pub fn prompt_note(history: &[Verdict]) -> Vec<String> {
    history
        .iter()
        .enumerate()
        .flat_map(|(round, v)| {
            verdict_lines(v).into_iter().map(move |line| {
                if round == 0 {
                    line
                } else {
                    format!("(round {round}) {line}")
                }
            })
        })
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
            findings: Vec::new(),
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
            verdict(Outcome::Reject, [true; 3]).validate(),
            Ok(()),
            "a reject may have other reasons"
        );
        let mut no_reason = verdict(Outcome::Revise, [false; 3]);
        no_reason.reasons = vec![" ".into()];
        assert_eq!(no_reason.validate(), Err(VerdictError::FailWithoutReason));
        no_reason.findings = vec![Finding {
            file: Some("app/models/order.rb".into()),
            line: Some(12),
            text: "add a spec for the retry".into(),
        }];
        assert_eq!(no_reason.validate(), Ok(()), "a finding says why");
        let mut bad_sha = verdict(Outcome::Pass, [true; 3]);
        bad_sha.head_sha = "main".into();
        assert_eq!(bad_sha.validate(), Err(VerdictError::HeadSha));
        let mut long = verdict(Outcome::Reject, [false; 3]);
        long.reasons = vec!["x".repeat(MAX_REASON_CHARS + 1)];
        assert_eq!(long.validate(), Err(VerdictError::ReasonsTooLong));
    }

    #[test]
    fn the_old_fail_verdict_reads_as_reject() {
        let old: Verdict = serde_json::from_value(serde_json::json!({
            "head_sha": "a".repeat(40), "addresses_bottleneck": false, "minimal_change": true,
            "preserves_behaviour": true, "verdict": "fail", "reasons": ["wrong table"]
        }))
        .unwrap();
        assert_eq!(old.verdict, Outcome::Reject);
        assert_eq!(serde_json::to_value(old.verdict).unwrap(), "reject");
    }

    #[test]
    fn revise_runs_rounds_until_the_budget_then_closes_in_on_mode_only() {
        let revise = verdict(Outcome::Revise, [true, false, true]);
        let reject = verdict(Outcome::Reject, [false, true, true]);
        let pass = verdict(Outcome::Pass, [true; 3]);
        let fresh = Budget {
            max: 2,
            ..Budget::default()
        };
        let spent = Budget {
            ai_rounds: 2,
            ..fresh
        };
        let stopped = Budget {
            stopped: true,
            ..fresh
        };
        use PreReviewMode::*;
        assert_eq!(decide(On, &revise, &fresh), Action::Revise);
        assert_eq!(decide(Advisory, &revise, &fresh), Action::Revise);
        assert_eq!(decide(On, &revise, &spent), Action::Reject);
        assert_eq!(decide(Advisory, &revise, &spent), Action::RequestReviewers);
        assert_eq!(
            decide(On, &reject, &fresh),
            Action::Reject,
            "no round saves a wrong approach"
        );
        assert_eq!(decide(Advisory, &reject, &fresh), Action::RequestReviewers);
        assert_eq!(decide(On, &pass, &spent), Action::RequestReviewers);
        assert_eq!(
            decide(On, &reject, &stopped),
            Action::RequestReviewers,
            "a person took over"
        );
        assert_eq!(decide(On, &revise, &stopped), Action::RequestReviewers);
        let none = timed_out(&"b".repeat(40), std::time::Duration::from_secs(1800));
        assert_eq!(none.validate(), Ok(()));
        assert!(none.reasons[0].contains("30 minutes"));
        assert_eq!(
            decide(On, &none, &fresh),
            Action::RequestReviewers,
            "a review that never answered must not close the fix"
        );
        assert_eq!("ADVISORY".parse::<PreReviewMode>(), Ok(Advisory));
        assert!("maybe".parse::<PreReviewMode>().is_err());
    }

    #[test]
    fn the_rejection_comment_names_the_failed_checks_and_every_round() {
        let mut first = verdict(Outcome::Revise, [true, false, true]);
        first.findings = vec![Finding {
            file: Some("app/models/order.rb".into()),
            line: Some(3),
            text: "the retry loop is new behaviour".into(),
        }];
        let mut second = verdict(Outcome::Revise, [true, false, true]);
        second.head_sha = "c".repeat(40);
        second.reasons = vec!["still rewrites the checkout flow".into()];
        let text = rejection_comment(
            7,
            &[first.clone(), second.clone()],
            "the revision limit (1 round) is reached.",
        );
        assert!(text.starts_with(&rejection_marker(7, &"c".repeat(40))));
        assert!(text.contains("| the minimal change that removes the long transaction | **no** |"));
        assert!(
            text.contains("- moves the HTTP call out of the transaction\n"),
            "{text}"
        );
        assert!(
            text.contains("- `app/models/order.rb:3`: the retry loop is new behaviour"),
            "{text}"
        );
        assert!(
            text.contains("Round 1 (commit cccccccccccc), revise:\n- still rewrites"),
            "{text}"
        );
        assert!(text.contains("revision limit"));
        assert!(text.contains("reopen the PR"));
        let note = prompt_note(&[first, second]);
        assert_eq!(
            note.last().unwrap(),
            "(round 1) still rewrites the checkout flow"
        );
    }
}
