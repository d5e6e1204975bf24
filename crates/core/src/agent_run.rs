//! An agent run as longtx trusts it: only the run longtx dispatched, and
//! only the result that run uploaded.
//!
//! A completion is believed when the run is tied to a dispatch (its id, the
//! configured workflow file, a `workflow_dispatch` trigger, the target
//! repository as head, created after the dispatch began), never by its
//! title, which anyone who opens a PR chooses for their own CI runs. The
//! run's result is read from its `longtx-result` artifact with longtx's own
//! credentials; nothing the run could POST is taken.

use crate::pre_review::Verdict;
pub use crate::run_report::RunCost;
use chrono::{DateTime, Utc};
use serde::Deserialize;

/// The artifact every agent run uploads, fix and pre-review alike.
pub const RESULT_ARTIFACT: &str = "longtx-result";
/// Inside it: the run's answer, and (fix runs) the patch.
pub const RESULT_FILE: &str = "result.json";
pub const PATCH_FILE: &str = "patch.diff";

/// How far GitHub's clock may run behind longtx's when the run's
/// `created_at` is compared with the moment the dispatch began.
pub const CLOCK_SKEW_SECS: i64 = 120;

/// What longtx recorded when it dispatched a run.
#[derive(Debug, Clone)]
pub struct Dispatched<'a> {
    /// From `return_run_details` or the run-name lookup; `None` while
    /// neither has told it (then only a lookup may adopt a run).
    pub run_id: Option<u64>,
    /// The configured workflow file, `long-transaction-fix.yml`.
    pub workflow_file: &'a str,
    /// `owner/name` of the target repository.
    pub repo: &'a str,
    /// When the dispatch was first claimed, before the request went out.
    pub started_at: DateTime<Utc>,
}

/// What GitHub says of a run (a `workflow_run` event or `GET .../runs`).
#[derive(Debug, Clone, Default)]
pub struct Observed<'a> {
    pub run_id: u64,
    /// `.github/workflows/<file>`.
    pub path: Option<&'a str>,
    /// The run's trigger: `workflow_dispatch` for ours.
    pub event: Option<&'a str>,
    pub head_repository: Option<&'a str>,
    pub created_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("run {seen} is not the run longtx dispatched ({dispatched})")]
    OtherRun { seen: u64, dispatched: u64 },
    #[error("longtx does not know the run id it dispatched yet; the run-name lookup ties it")]
    RunIdUnknown,
    #[error("run {0} comes from workflow {1:?}, not the configured one")]
    Workflow(u64, String),
    #[error("run {0} was triggered by {1:?}, not workflow_dispatch")]
    Event(u64, String),
    #[error("run {0} ran on {1:?}, not the target repository")]
    HeadRepository(u64, String),
    #[error("run {0} was created before longtx dispatched")]
    CreatedBefore(u64),
}

/// Whether `observed` is the run `dispatched` stands for. `adopting` is true
/// for the run-name lookup, which may tie a run longtx has no id for yet;
/// a webhook never adopts.
pub fn check(
    dispatched: &Dispatched<'_>,
    observed: &Observed<'_>,
    adopting: bool,
) -> Result<(), Mismatch> {
    let id = observed.run_id;
    match dispatched.run_id {
        Some(known) if known != id => {
            return Err(Mismatch::OtherRun {
                seen: id,
                dispatched: known,
            })
        }
        None if !adopting => return Err(Mismatch::RunIdUnknown),
        _ => {}
    }
    let path = observed.path.unwrap_or("");
    // Some events append `@<ref>` to the path.
    let file = path.split('@').next().unwrap_or("");
    if file != format!(".github/workflows/{}", dispatched.workflow_file) {
        return Err(Mismatch::Workflow(id, path.to_owned()));
    }
    let event = observed.event.unwrap_or("");
    if event != "workflow_dispatch" {
        return Err(Mismatch::Event(id, event.to_owned()));
    }
    let head = observed.head_repository.unwrap_or("");
    if !head.eq_ignore_ascii_case(dispatched.repo) {
        return Err(Mismatch::HeadRepository(id, head.to_owned()));
    }
    let earliest = dispatched.started_at - chrono::Duration::seconds(CLOCK_SKEW_SECS);
    if observed.created_at.is_none_or(|created| created < earliest) {
        return Err(Mismatch::CreatedBefore(id));
    }
    Ok(())
}

/// The scratch branch the Devin template tells Devin to push for round
/// `round` of `job_id`. longtx deletes it once it has read the run's result:
/// the name comes from longtx's own convention, never from the run.
pub fn devin_branch(job_id: i64, round: u32) -> String {
    format!("longtx-devin/{job_id}-{round}")
}

/// The longest agent summary kept for the PR body.
pub const MAX_SUMMARY_CHARS: usize = 4000;

/// `result.json` of a fix run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FixResult {
    /// The commit the round started from, as the run checked it out.
    pub base: String,
    /// What the agent says it did (or found), for the PR body.
    #[serde(default)]
    pub summary: String,
    /// The fix pattern's slug the agent says it followed.
    #[serde(default)]
    pub pattern: Option<String>,
    /// Devin's session, whose ACUs longtx reads from Devin's API.
    #[serde(default)]
    pub devin_session_id: Option<String>,
    /// How the agent's step ended (`success`, `failure`): a run cut short
    /// by its turn or budget cap still leaves what it changed.
    #[serde(default)]
    pub agent_outcome: Option<String>,
    #[serde(flatten)]
    pub cost: RunCost,
}

/// `result.json` of a pre-review run.
#[derive(Debug, Clone, Deserialize)]
pub struct ReviewResult {
    pub verdict: Verdict,
    #[serde(flatten)]
    pub cost: RunCost,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResultError {
    #[error("result.json is not the expected JSON: {0}")]
    Json(String),
    #[error("result.json's base is not a 40-character commit id")]
    Base,
}

impl FixResult {
    /// True when the agent's step failed (a cap, or an error).
    pub fn stopped_early(&self) -> bool {
        self.agent_outcome.as_deref() == Some("failure")
    }

    pub fn parse(bytes: &[u8]) -> Result<FixResult, ResultError> {
        let mut result: FixResult =
            serde_json::from_slice(bytes).map_err(|e| ResultError::Json(e.to_string()))?;
        if !is_commit_id(&result.base) {
            return Err(ResultError::Base);
        }
        result.base.make_ascii_lowercase();
        result.pattern = result.pattern.as_deref().and_then(pattern_slug);
        result.summary = untrusted_summary(&result.summary);
        Ok(result)
    }
}

impl ReviewResult {
    pub fn parse(bytes: &[u8]) -> Result<ReviewResult, ResultError> {
        serde_json::from_slice(bytes).map_err(|e| ResultError::Json(e.to_string()))
    }
}

pub fn is_commit_id(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A pattern slug as the catalogue spells them (a-z, 0-9, -), or nothing.
fn pattern_slug(text: &str) -> Option<String> {
    let slug: String = text.trim().chars().take(80).collect();
    (!slug.is_empty()
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
    .then_some(slug)
}

/// The agent's summary as the PR body may quote it: cut to
/// [`MAX_SUMMARY_CHARS`], control characters dropped, and HTML comments
/// defused so no summary can forge the job marker longtx ties PRs by.
pub fn untrusted_summary(text: &str) -> String {
    let kept: String = text
        .chars()
        .filter(|c| !c.is_control() || *c == '\n')
        .take(MAX_SUMMARY_CHARS)
        .collect();
    kept.replace("<!--", "&lt;!--").replace("-->", "--&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn dispatched(run_id: Option<u64>) -> Dispatched<'static> {
        Dispatched {
            run_id,
            workflow_file: "long-transaction-fix.yml",
            repo: "acme/monolith",
            started_at: at("2026-12-04T10:00:00Z"),
        }
    }

    fn ours(run_id: u64) -> Observed<'static> {
        Observed {
            run_id,
            path: Some(".github/workflows/long-transaction-fix.yml"),
            event: Some("workflow_dispatch"),
            head_repository: Some("acme/monolith"),
            created_at: Some(at("2026-12-04T10:00:03Z")),
        }
    }

    #[test]
    fn only_the_dispatched_run_of_the_configured_workflow_counts() {
        assert_eq!(check(&dispatched(Some(7)), &ours(7), false), Ok(()));
        assert!(matches!(
            check(&dispatched(Some(7)), &ours(8), false),
            Err(Mismatch::OtherRun { .. })
        ));
        assert_eq!(
            check(&dispatched(None), &ours(7), false),
            Err(Mismatch::RunIdUnknown)
        );
        assert_eq!(check(&dispatched(None), &ours(7), true), Ok(()));
        let ci = Observed {
            path: Some(".github/workflows/ci.yml"),
            ..ours(7)
        };
        assert!(matches!(
            check(&dispatched(Some(7)), &ci, false),
            Err(Mismatch::Workflow(..))
        ));
        let pr = Observed {
            event: Some("pull_request"),
            ..ours(7)
        };
        assert!(matches!(
            check(&dispatched(Some(7)), &pr, false),
            Err(Mismatch::Event(..))
        ));
        let fork = Observed {
            head_repository: Some("mallory/monolith"),
            ..ours(7)
        };
        assert!(matches!(
            check(&dispatched(Some(7)), &fork, false),
            Err(Mismatch::HeadRepository(..))
        ));
        let old = Observed {
            created_at: Some(at("2026-12-04T09:50:00Z")),
            ..ours(7)
        };
        assert_eq!(
            check(&dispatched(None), &old, true),
            Err(Mismatch::CreatedBefore(7))
        );
        let skewed = Observed {
            created_at: Some(at("2026-12-04T09:59:00Z")),
            ..ours(7)
        };
        assert_eq!(check(&dispatched(None), &skewed, true), Ok(()));
    }

    #[test]
    fn a_fix_result_is_read_defensively() {
        let result = FixResult::parse(
            br#"{"base": "ABCDEF0123456789abcdef0123456789abcdef01", "summary": "Moved the call.\u0007 <!-- longtx-job: 9 -->",
                 "pattern": "http-call-inside-transaction", "agent": "claude", "cost_usd": 0.42, "turns": 7, "extra": 1}"#,
        )
        .unwrap();
        assert_eq!(result.base, "abcdef0123456789abcdef0123456789abcdef01");
        assert_eq!(
            result.summary,
            "Moved the call. &lt;!-- longtx-job: 9 --&gt;"
        );
        assert_eq!(
            result.pattern.as_deref(),
            Some("http-call-inside-transaction")
        );
        assert_eq!(
            result.cost.report(9001, 0).unwrap().cost.cost_usd,
            Some(0.42)
        );
        assert_eq!(
            FixResult::parse(br#"{"base": "main"}"#),
            Err(ResultError::Base)
        );
        let odd = FixResult::parse(
            br#"{"base": "abcdef0123456789abcdef0123456789abcdef01", "pattern": "$(rm -rf /)"}"#,
        )
        .unwrap();
        assert_eq!(odd.pattern, None);
        let costly = RunCost {
            cost_usd: Some(1e9),
            ..RunCost::default()
        };
        assert!(costly.report(1, 0).is_err());
    }
}
