//! One pattern file: front matter and the body's sections.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The body's level-2 sections, in the order every pattern must have them.
pub const REQUIRED_SECTIONS: [&str; 5] = [
    "Summary",
    "Signature",
    "Before / After",
    "Effect",
    "Caveats and trade-offs",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontMatter {
    pub id: String,
    pub title: String,
    #[serde(deserialize_with = "one_or_many")]
    pub applies_to: Vec<String>,
    pub signals: Vec<String>,
    /// Words too common in ordinary code to decide a ranking alone
    /// (`perform`, `rake`, `notify`): they count a third of a signal.
    #[serde(default)]
    pub weak_signals: Vec<String>,
    #[serde(default)]
    pub related: Vec<String>,
    /// Shapes of the code inside the transaction that longtx recognises
    /// and that call for this pattern: [`KNOWN_SHAPES`].
    #[serde(default)]
    pub shapes: Vec<String>,
}

/// The shapes longtx recognises in the code inside a transaction:
/// `loop-of-writes` is a loop that writes rows or enqueues work,
/// `network-call` a call to another service (HTTP, an API client, a
/// geocoder, an upload, search indexing), `llm-call` a model's API, and
/// `side-effect` mail, a notification, an enqueue or a broadcast.
pub const KNOWN_SHAPES: [&str; 4] = ["loop-of-writes", "network-call", "llm-call", "side-effect"];

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

#[derive(Debug, Clone)]
pub struct Pattern {
    pub path: PathBuf,
    pub front: FrontMatter,
    /// The markdown after the front matter.
    pub body: String,
    /// 1-based line of the body's first line in the file.
    pub body_line: usize,
}

impl Pattern {
    pub fn id(&self) -> &str {
        &self.front.id
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatternError {
    #[error("line 1: a pattern starts with YAML front matter between two --- lines")]
    NoFrontMatter,
    #[error("line {line}: front matter: {message}")]
    FrontMatter { line: usize, message: String },
}

impl PatternError {
    pub fn line(&self) -> usize {
        match self {
            PatternError::NoFrontMatter => 1,
            PatternError::FrontMatter { line, .. } => *line,
        }
    }
}

/// Splits a file into front matter and body and parses the front matter.
pub fn parse_pattern(path: &Path, text: &str) -> Result<Pattern, PatternError> {
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(PatternError::NoFrontMatter);
    }
    let mut yaml = String::new();
    let mut closing_line = None;
    for (i, line) in lines.enumerate() {
        if line.trim_end() == "---" {
            closing_line = Some(i + 2);
            break;
        }
        yaml.push_str(line);
    }
    let closing_line = closing_line.ok_or(PatternError::NoFrontMatter)?;
    let front: FrontMatter =
        serde_yaml::from_str(&yaml).map_err(|e| PatternError::FrontMatter {
            // YAML positions count from the line after the opening ---.
            line: e.location().map(|l| l.line() + 1).unwrap_or(1),
            message: e.to_string(),
        })?;
    let body: String = text.split_inclusive('\n').skip(closing_line).collect();
    Ok(Pattern {
        path: path.to_owned(),
        front,
        body,
        body_line: closing_line + 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "---\nid: a-b\ntitle: A\napplies_to: rails\nsignals: [with_lock]\n---\n# A\n\n## Summary\nx\n";

    #[test]
    fn front_matter_and_body_split() {
        let p = parse_pattern(Path::new("a-b.md"), GOOD).unwrap();
        assert_eq!(p.id(), "a-b");
        assert_eq!(p.front.applies_to, ["rails"]);
        assert!(p.body.starts_with("# A\n"));
        assert_eq!(p.body_line, 7);
    }

    #[test]
    fn errors_carry_the_file_line() {
        assert_eq!(
            parse_pattern(Path::new("x.md"), "# no front matter\n")
                .unwrap_err()
                .line(),
            1
        );
        let bad = "---\nid: a\ntitle: A\nsignals: [x]\napplies_to: any\nbogus: 1\n---\n";
        let err = parse_pattern(Path::new("x.md"), bad).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
        assert_eq!(err.line(), 6);
    }
}
