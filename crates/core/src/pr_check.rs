//! The "long transactions" check on a pull request: which PR events ask
//! for one, how its conclusion follows from what the change adds, and the
//! bounds GitHub puts on what a check run carries.
//!
//! GitHub's "REST API endpoints for check runs": only a GitHub App may
//! create one; a request carries at most 50 annotations (an update appends
//! more, which is why longtx sends all of them in the one request that
//! creates the run: a retried update would add them twice); `summary` and
//! `text` hold at most 65,535 characters, an annotation's `title` 255.

use serde::{Deserialize, Serialize};

/// The check's name on the PR.
pub const CHECK_NAME: &str = "long transactions";
/// Annotations GitHub takes in one request.
pub const MAX_ANNOTATIONS: usize = 50;
/// GitHub's bound on `output.summary` and `output.text`, in characters.
pub const MAX_OUTPUT_CHARS: usize = 65_535;
/// GitHub's bound on an annotation's title.
pub const MAX_TITLE_CHARS: usize = 255;

/// `LONGTX_PR_CHECK`: what the check concludes when a PR adds slow work
/// inside a transaction, or whether it runs at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrCheckMode {
    Off,
    /// Shown on the PR, never blocks a merge (the default).
    #[default]
    Neutral,
    /// Fails the check, so branch protection can require it.
    Failure,
}

impl std::str::FromStr for PrCheckMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" => Ok(PrCheckMode::Off),
            "neutral" => Ok(PrCheckMode::Neutral),
            "failure" => Ok(PrCheckMode::Failure),
            other => Err(format!(
                "{other:?} is not a PR check mode: write neutral, failure or off"
            )),
        }
    }
}

impl std::fmt::Display for PrCheckMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PrCheckMode::Off => "off",
            PrCheckMode::Neutral => "neutral",
            PrCheckMode::Failure => "failure",
        })
    }
}

impl PrCheckMode {
    pub fn is_on(self) -> bool {
        self != PrCheckMode::Off
    }

    /// The conclusion for a change that adds `calls` unsilenced findings
    /// of slow calls and `rows` of database work whose length depends on
    /// how many rows it touches. Only the first fail a check: how many rows
    /// a loop or a bulk statement meets, only production shows.
    pub fn conclusion(self, calls: usize, rows: usize) -> Conclusion {
        match (calls, rows, self) {
            (0, 0, _) => Conclusion::Success,
            (1.., _, PrCheckMode::Failure) => Conclusion::Failure,
            _ => Conclusion::Neutral,
        }
    }

    /// The level of an annotation on a line that adds slow work: a notice
    /// for database work whose length depends on row counts.
    pub fn annotation_level(self, depends_on_rows: bool) -> AnnotationLevel {
        match (self, depends_on_rows) {
            (_, true) => AnnotationLevel::Notice,
            (PrCheckMode::Failure, false) => AnnotationLevel::Failure,
            _ => AnnotationLevel::Warning,
        }
    }
}

/// The PR actions that put a new head commit in front of reviewers. A
/// check is per head commit, so a reopened PR whose head was checked
/// already gets none again.
pub fn action_wants_check(action: &str) -> bool {
    matches!(action, "opened" | "synchronize" | "reopened")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Conclusion {
    Success,
    Neutral,
    Failure,
}

impl Conclusion {
    pub fn as_str(self) -> &'static str {
        match self {
            Conclusion::Success => "success",
            Conclusion::Neutral => "neutral",
            Conclusion::Failure => "failure",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationLevel {
    Notice,
    Warning,
    Failure,
}

/// One annotation, as GitHub's `output.annotations[]` takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Annotation {
    pub path: String,
    pub start_line: usize,
    pub end_line: usize,
    pub annotation_level: AnnotationLevel,
    pub title: String,
    /// Plain text on GitHub (not Markdown).
    pub message: String,
}

/// What the check run says: its conclusion and its `output`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    pub conclusion: Conclusion,
    pub title: String,
    /// Markdown.
    pub summary: String,
    /// Markdown; empty when there is nothing more to say.
    pub text: String,
    /// At most [`MAX_ANNOTATIONS`].
    pub annotations: Vec<Annotation>,
}

impl CheckReport {
    /// Holds the report within GitHub's bounds, whatever the findings were.
    pub fn bounded(mut self) -> CheckReport {
        self.annotations.truncate(MAX_ANNOTATIONS);
        for a in &mut self.annotations {
            a.title = cut(&a.title, MAX_TITLE_CHARS);
            a.message = cut(&a.message, 4_000);
        }
        self.title = cut(&self.title, MAX_TITLE_CHARS);
        self.summary = cut(&self.summary, MAX_OUTPUT_CHARS);
        self.text = cut(&self.text, MAX_OUTPUT_CHARS);
        self
    }
}

/// `text` cut to `max` characters, saying so when it was.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    const MORE: &str = "\n… (cut)";
    let keep = max - MORE.chars().count();
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(MORE);
    out
}

/// The `external_id` of longtx's check run for request `id`: how a retry
/// finds the run an earlier attempt created before it could record it.
pub fn external_id(installation: &str, id: i64) -> String {
    format!("longtx-{installation}-pr-check-{id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conclusion_is_neutral_by_default_and_failure_only_when_configured() {
        assert_eq!(PrCheckMode::default(), PrCheckMode::Neutral);
        assert_eq!(PrCheckMode::Neutral.conclusion(0, 0), Conclusion::Success);
        assert_eq!(PrCheckMode::Neutral.conclusion(2, 1), Conclusion::Neutral);
        assert_eq!(PrCheckMode::Failure.conclusion(1, 0), Conclusion::Failure);
        assert_eq!(PrCheckMode::Failure.conclusion(0, 0), Conclusion::Success);
        // Work whose length depends on row counts is shown, never blocks.
        assert_eq!(PrCheckMode::Failure.conclusion(0, 3), Conclusion::Neutral);
        assert_eq!(
            PrCheckMode::Failure.annotation_level(true),
            AnnotationLevel::Notice
        );
        assert_eq!("FAILURE".parse::<PrCheckMode>(), Ok(PrCheckMode::Failure));
        assert!("block"
            .parse::<PrCheckMode>()
            .unwrap_err()
            .contains("neutral, failure or off"));
    }

    #[test]
    fn only_a_new_head_asks_for_a_check() {
        for action in ["opened", "synchronize", "reopened"] {
            assert!(action_wants_check(action), "{action}");
        }
        for action in ["closed", "labeled", "edited", "review_requested"] {
            assert!(!action_wants_check(action), "{action}");
        }
    }

    #[test]
    fn a_report_is_held_within_what_github_takes() {
        let annotation = Annotation {
            path: "app/models/order.rb".into(),
            start_line: 3,
            end_line: 3,
            annotation_level: AnnotationLevel::Warning,
            title: "t".repeat(400),
            message: "m".into(),
        };
        let report = CheckReport {
            conclusion: Conclusion::Neutral,
            title: "x".into(),
            summary: "s".repeat(70_000),
            text: String::new(),
            annotations: vec![annotation; 60],
        }
        .bounded();
        assert_eq!(report.annotations.len(), MAX_ANNOTATIONS);
        assert_eq!(report.annotations[0].title.chars().count(), MAX_TITLE_CHARS);
        assert_eq!(report.summary.chars().count(), MAX_OUTPUT_CHARS);
        assert!(report.summary.ends_with("(cut)"));
    }
}
