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
