//! The locator corpus's file format (`corpus/locate/<owner>+<name>.yaml`):
//! one public Rails application at a fixed commit, its `query_source`
//! cases labelled by reading the code, and a subset labelled with the
//! pattern a person would pick. `locate-bench` measures against it.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct CorpusFile {
    /// `owner/name` on GitHub.
    pub repository: String,
    /// The commit the labels were read at.
    pub commit: String,
    #[serde(default)]
    pub cases: Vec<CorpusCase>,
    #[serde(default)]
    pub patterns: Vec<PatternCase>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CorpusCase {
    pub query_source: String,
    /// `path:line`, a path alone (an action inherited from a gem: the
    /// app's file, no line), or `none`.
    pub expect: String,
    /// What the case exercises: `controller-namespaced`, `missing`...
    #[serde(default)]
    pub form: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PatternCase {
    pub query_source: String,
    pub expect: String,
    pub expect_pattern: String,
    /// The alerted tables, when the labeller gave them.
    #[serde(default)]
    pub tables: Vec<String>,
}

/// A file of `corpus/real-fixes/`: real historical commits of one
/// application that shortened a transaction, each labelled from its diff.
#[derive(Debug, Clone, Deserialize)]
pub struct RealFixFile {
    pub repository: String,
    pub cases: Vec<RealFix>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RealFix {
    pub fix_commit: String,
    /// The code longtx is run on: the fix's only parent.
    pub parent_commit: String,
    pub query_source: String,
    pub table: String,
    /// The entry point's own `path:line` in the parent commit.
    pub entry: String,
    /// `path:line` in the parent commit where the fix changed the
    /// transaction (its opening, a lock, a callback) or the slow call.
    pub fixed_site: String,
    /// `path:line`s in the parent commit of the slow calls the fix moved
    /// out of the transaction or batched (labelled on the held-out half).
    #[serde(default)]
    pub slow_calls: Vec<String>,
    /// A catalogue pattern id, or `none`.
    pub pattern: String,
    #[serde(default)]
    pub note: String,
}
