//! Revision rounds: the agent answers a review on its own branch.
//!
//! Round 0 is the job's first agent run. A `revise` verdict of the AI
//! pre-review, a person's "changes requested" review or a `/longtx revise`
//! comment starts round 1, 2, ...: the fix workflow is dispatched again for
//! the same job with the findings, and pushes onto the job's branch. This
//! module holds the rules (who may ask, how many rounds) and the texts; the
//! store and the workers carry them out.

use crate::JobState;
use serde::{Deserialize, Serialize};

/// `LONGTX_MAX_REVISIONS` when unset.
pub const DEFAULT_MAX_REVISIONS: u32 = 2;
/// Caps on what a person's review brings into a prompt.
pub const MAX_FINDINGS: usize = 30;
pub const MAX_FINDING_CHARS: usize = 2000;
pub const MAX_REQUEST_CHARS: usize = 8000;

/// One thing to change, with file and line where the reviewer gave them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub line: Option<u32>,
    pub text: String,
}

impl Finding {
    /// `` `file:line`: text`` on one markdown line.
    pub fn one_line(&self) -> String {
        let text = self.text.split_whitespace().collect::<Vec<_>>().join(" ");
        match (&self.file, self.line) {
            (Some(file), Some(line)) => format!("`{}:{line}`: {text}", clean_path(file)),
            (Some(file), None) => format!("`{}`: {text}", clean_path(file)),
            _ => text,
        }
    }
}

fn clean_path(path: &str) -> String {
    path.chars()
        .filter(|c| !c.is_control() && *c != '`')
        .take(300)
        .collect()
}

/// What started a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A `revise` verdict of the AI pre-review.
    PreReview,
    /// A person's review with state `changes_requested`.
    ChangesRequested,
    /// A person's `/longtx revise` comment.
    Comment,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::PreReview => "pre_review",
            Trigger::ChangesRequested => "changes_requested",
            Trigger::Comment => "comment",
        }
    }

    pub fn parse(text: &str) -> Option<Trigger> {
        [
            Trigger::PreReview,
            Trigger::ChangesRequested,
            Trigger::Comment,
        ]
        .into_iter()
        .find(|t| t.as_str() == text)
    }

    pub fn by_people(self) -> bool {
        self != Trigger::PreReview
    }
}

/// A PR's rounds so far, as the rules need them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Budget {
    /// Rounds the pre-review started.
    pub ai_rounds: u32,
    /// Rounds people started.
    pub human_rounds: u32,
    /// `LONGTX_MAX_REVISIONS`: for each kind of round separately.
    pub max: u32,
    /// A writer said `/longtx stop`.
    pub stopped: bool,
    /// A round is queued or running now.
    pub open_round: Option<u32>,
}

/// A command in a PR comment: the first line starts with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/longtx revise` and what follows it (the request).
    Revise(String),
    /// `/longtx stop`.
    Stop,
}

pub fn parse_command(body: &str) -> Option<Command> {
    let body = body.trim_start();
    let (first, rest) = body.split_once('\n').unwrap_or((body, ""));
    let mut words = first.split_whitespace();
    if words.next() != Some("/longtx") {
        return None;
    }
    let verb = words.next()?;
    let tail: Vec<&str> = words.collect();
    match verb.to_ascii_lowercase().as_str() {
        "revise" => {
            let request = format!("{}\n{rest}", tail.join(" "));
            Some(Command::Revise(request.trim().to_owned()))
        }
        "stop" => Some(Command::Stop),
        _ => None,
    }
}

/// Write access, as GitHub's collaborator permission reports it.
pub fn may_write(permission: &str) -> bool {
    matches!(permission, "admin" | "maintain" | "write")
}

/// Why a person's request starts no round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    NoPermission { login: String, permission: String },
    NotOpen(JobState),
    Stopped,
    CapReached { max: u32 },
    RoundOpen { round: u32 },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NoPermission { login, permission } => write!(
                f,
                "@{login} has `{permission}` access to this repository; only people with write access can ask longtx for changes"
            ),
            Refusal::NotOpen(state) => write!(f, "this fix is {state}, so no more rounds run"),
            Refusal::Stopped => write!(
                f,
                "automatic rounds were stopped on this PR with `/longtx stop`"
            ),
            Refusal::CapReached { max } => write!(
                f,
                "the {max} revision rounds people may ask for on one PR (LONGTX_MAX_REVISIONS) are used up"
            ),
            Refusal::RoundOpen { round } => write!(
                f,
                "round {round} is still going; ask again once it has pushed"
            ),
        }
    }
}

/// May this person's `/longtx revise` (or review) start a round now?
pub fn judge_revise(
    state: JobState,
    login: &str,
    permission: &str,
    budget: &Budget,
) -> Result<(), Refusal> {
    if !may_write(permission) {
        return Err(Refusal::NoPermission {
            login: login.to_owned(),
            permission: permission.to_owned(),
        });
    }
    if !matches!(state, JobState::PreReview | JobState::InReview) {
        return Err(Refusal::NotOpen(state));
    }
    if budget.stopped {
        return Err(Refusal::Stopped);
    }
    if let Some(round) = budget.open_round {
        return Err(Refusal::RoundOpen { round });
    }
    if budget.human_rounds >= budget.max {
        return Err(Refusal::CapReached { max: budget.max });
    }
    Ok(())
}

/// May this person stop the automatic rounds?
pub fn judge_stop(login: &str, permission: &str) -> Result<(), Refusal> {
    if may_write(permission) {
        Ok(())
    } else {
        Err(Refusal::NoPermission {
            login: login.to_owned(),
            permission: permission.to_owned(),
        })
    }
}

/// Makes longtx's answer to one request once-only across retries.
/// People's requests (`/longtx` commands and change-requesting reviews)
/// longtx acts on per PR, and per person across PRs, in an hour. Past
/// either, requests are recorded and not acted on; the first one past it
/// is answered once, the rest silently, so a flood cannot make longtx
/// flood the PR back.
pub const REQUESTS_PER_PR_PER_HOUR: i64 = 6;
pub const REQUESTS_PER_PERSON_PER_HOUR: i64 = 10;

/// Whether a new request is past a limit, given the requests already
/// recorded in the last hour on its PR and by its author.
pub fn over_rate_limit(on_pr: i64, by_person: i64) -> bool {
    on_pr >= REQUESTS_PER_PR_PER_HOUR || by_person >= REQUESTS_PER_PERSON_PER_HOUR
}

/// The one answer to a burst past the limit.
pub fn rate_limit_answer(marker: &str, login: &str) -> String {
    format!(
        "@{}, longtx acts on at most {REQUESTS_PER_PR_PER_HOUR} requests on a PR, and \
         {REQUESTS_PER_PERSON_PER_HOUR} by one person, in an hour. This one and any more \
         within the hour are not acted on (and get no further answer); ask again later.\n\n{marker}",
        crate::text::one_line(login)
    )
}

#[cfg(test)]
mod rate_limit_tests {
    use super::*;

    #[test]
    fn the_limits_hold_per_pr_and_per_person() {
        assert!(!over_rate_limit(5, 9));
        assert!(over_rate_limit(6, 0));
        assert!(over_rate_limit(0, 10));
        assert!(
            rate_limit_answer("<!-- m -->", "a\nb").starts_with("@a b, longtx acts on at most 6")
        );
    }
}

pub fn request_marker(source: &str, github_id: i64) -> String {
    format!("<!-- longtx-request: {source} {github_id} -->")
}

/// What longtx did with a person's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestOutcome {
    /// Round `round` began; `waits` says why it has not been dispatched yet
    /// (the pause, a cap), when it must wait.
    Started {
        round: u32,
        waits: Option<String>,
    },
    /// `/longtx stop` took effect; `cancelled` rounds had not started.
    Stopped {
        login: String,
        cancelled: u32,
    },
    Refused(Refusal),
}

/// longtx's one comment answering a request.
pub fn answer_comment(marker: &str, outcome: &RequestOutcome) -> String {
    let text = match outcome {
        RequestOutcome::Started { round, waits: None } => format!(
            "Revision round {round} started: the agent is dispatched on this branch with the review's comments. \
             Its commits will appear here."
        ),
        RequestOutcome::Started { round, waits: Some(why) } => format!(
            "Revision round {round} is queued and starts by itself when dispatching may go on ({why})."
        ),
        RequestOutcome::Stopped { login, cancelled } => format!(
            "Stopped by @{login}: longtx starts no more rounds on this PR and the pre-review no longer closes it{}.",
            if *cancelled > 0 { "; the queued round is cancelled" } else { "" }
        ),
        RequestOutcome::Refused(refusal) => format!("No round was started: {refusal}."),
    };
    format!("{marker}\n{text}\n")
}

/// The run name of a revision round; the fix template renders it from the
/// `job_id` and `round` inputs, and longtx finds the run by it.
pub fn round_run_marker(job_id: i64, round: u32) -> String {
    format!("longtx job {job_id} round {round}")
}

/// The job and round a fix run's name carries: `longtx job 12: ...` (round
/// 0, templates before rounds) or `longtx job 12 round 2: ...`.
pub fn job_and_round_of_title(title: &str) -> Option<(i64, u32)> {
    let rest = title.strip_prefix("longtx job ")?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let job = digits.parse().ok()?;
    let after = &rest[digits.len()..];
    let round = match after.strip_prefix(" round ") {
        Some(r) => {
            let digits: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse().ok()?
        }
        None => 0,
    };
    Some((job, round))
}

/// Text from a person, made safe to store and to quote: control
/// characters (NUL included) become spaces, lines stay, length is capped.
pub fn clean_text(text: &str, max_chars: usize) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
        .collect();
    let mut out: String = cleaned.trim().chars().take(max_chars).collect();
    if cleaned.trim().chars().count() > max_chars {
        out.push_str(" [cut]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_from_the_first_line_only() {
        assert_eq!(
            parse_command("/longtx revise please add a spec\nfor the retry"),
            Some(Command::Revise("please add a spec\nfor the retry".into()))
        );
        assert_eq!(parse_command("  /longtx stop"), Some(Command::Stop));
        assert_eq!(
            parse_command("/longtx revise"),
            Some(Command::Revise(String::new()))
        );
        assert_eq!(
            parse_command("LGTM\n/longtx revise"),
            None,
            "not on the first line"
        );
        assert_eq!(parse_command("/longtxrevise"), None);
        assert_eq!(parse_command("/longtx merge"), None);
    }

    #[test]
    fn only_writers_start_rounds_and_each_kind_has_its_own_cap() {
        let budget = Budget {
            max: 2,
            ..Budget::default()
        };
        let open = JobState::InReview;
        assert_eq!(judge_revise(open, "alice", "write", &budget), Ok(()));
        assert_eq!(judge_revise(open, "alice", "maintain", &budget), Ok(()));
        assert!(matches!(
            judge_revise(open, "mallory", "read", &budget),
            Err(Refusal::NoPermission { .. })
        ));
        let ai_spent = Budget {
            ai_rounds: 2,
            ..budget
        };
        assert_eq!(judge_revise(open, "alice", "admin", &ai_spent), Ok(()));
        let human_spent = Budget {
            human_rounds: 2,
            ..budget
        };
        assert_eq!(
            judge_revise(open, "alice", "admin", &human_spent),
            Err(Refusal::CapReached { max: 2 })
        );
        let busy = Budget {
            open_round: Some(1),
            ..budget
        };
        assert_eq!(
            judge_revise(open, "alice", "admin", &busy),
            Err(Refusal::RoundOpen { round: 1 })
        );
        let stopped = Budget {
            stopped: true,
            ..budget
        };
        assert_eq!(
            judge_revise(open, "alice", "admin", &stopped),
            Err(Refusal::Stopped)
        );
        assert_eq!(
            judge_revise(JobState::Merged, "alice", "admin", &budget),
            Err(Refusal::NotOpen(JobState::Merged))
        );
        assert!(judge_stop("bob", "triage").is_err());
        assert!(Refusal::NoPermission {
            login: "bob".into(),
            permission: "triage".into()
        }
        .to_string()
        .contains("@bob has `triage`"));
    }

    #[test]
    fn each_answer_says_what_happened() {
        let marker = request_marker("comment", 9);
        let started = answer_comment(
            &marker,
            &RequestOutcome::Started {
                round: 2,
                waits: None,
            },
        );
        assert!(started.starts_with("<!-- longtx-request: comment 9 -->\nRevision round 2 started"));
        let waits = answer_comment(
            &marker,
            &RequestOutcome::Started {
                round: 1,
                waits: Some("dispatch is paused".into()),
            },
        );
        assert!(waits.contains("queued") && waits.contains("dispatch is paused"));
        let refused = answer_comment(
            &marker,
            &RequestOutcome::Refused(Refusal::CapReached { max: 2 }),
        );
        assert!(refused.contains("No round was started: the 2 revision rounds"));
    }

    #[test]
    fn run_names_carry_job_and_round() {
        assert_eq!(job_and_round_of_title("longtx job 12: a#b"), Some((12, 0)));
        assert_eq!(
            job_and_round_of_title("longtx job 12 round 0: a#b"),
            Some((12, 0))
        );
        assert_eq!(
            job_and_round_of_title("longtx job 12 round 3: a#b"),
            Some((12, 3))
        );
        assert_eq!(job_and_round_of_title("longtx pre-review 12 abc"), None);
        assert!(round_run_marker(12, 3).starts_with("longtx job 12 round 3"));
    }

    #[test]
    fn findings_and_peoples_text_stay_on_their_lines() {
        let finding = Finding {
            file: Some("app/`x`.rb".into()),
            line: Some(4),
            text: "too\nbroad".into(),
        };
        assert_eq!(finding.one_line(), "`app/x.rb:4`: too broad");
        assert_eq!(clean_text("a\u{0}b\nc", 100), "a b\nc");
        assert_eq!(clean_text("abcdef", 3), "abc [cut]");
    }
}
