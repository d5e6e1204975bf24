//! The ignore list: sources a team decided not to fix.
//!
//! A YAML list of `{query_source, reason, pr, added_by, added_at}` entries;
//! `query_source` is an exact name or a glob. An empty or comment-only file
//! is an empty list.

mod edit;

pub use edit::{add_entry, quote, render_entry, Added};

use crate::glob;
use crate::query_source::QuerySource;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IgnoreEntry {
    pub query_source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_at: Option<String>,
    /// `true`: `query_source` is a name even if it holds `*` or `?`. longtx
    /// sets it on the entries it writes for such names.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exact: bool,
}

impl IgnoreEntry {
    /// An entry for exactly `source`.
    pub fn exact(source: &QuerySource) -> Self {
        IgnoreEntry {
            query_source: source.as_str().to_owned(),
            reason: None,
            pr: None,
            added_by: None,
            added_at: None,
            exact: glob::is_glob(source.as_str()),
        }
    }

    /// Compared in the canonical form every origin shares, so an entry
    /// written `Billing::SyncWorker` also covers Datadog's
    /// `billing::syncworker`.
    pub fn covers(&self, source: &QuerySource) -> bool {
        let pattern = self.query_source.trim();
        if !self.exact && glob::is_glob(pattern) {
            glob::matches(
                &crate::query_source::canonical_pattern(pattern),
                &source.key(),
            )
        } else {
            crate::query_source::canonical(pattern) == source.key()
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct IgnoreList {
    entries: Vec<IgnoreEntry>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IgnoreListError {
    #[error("not a valid ignore list: {0}")]
    Yaml(String),
    #[error("entry {index}: query_source {reason}")]
    Entry { index: usize, reason: String },
}

impl IgnoreList {
    pub fn parse(yaml: &str) -> Result<Self, IgnoreListError> {
        let entries: Option<Vec<IgnoreEntry>> =
            serde_yaml::from_str(yaml).map_err(|e| IgnoreListError::Yaml(e.to_string()))?;
        let entries = entries.unwrap_or_default();
        for (index, entry) in entries.iter().enumerate() {
            QuerySource::parse(&entry.query_source).map_err(|e| IgnoreListError::Entry {
                index,
                reason: e.to_string(),
            })?;
        }
        Ok(IgnoreList { entries })
    }

    pub fn from_entries(entries: Vec<IgnoreEntry>) -> Self {
        IgnoreList { entries }
    }

    pub fn entries(&self) -> &[IgnoreEntry] {
        &self.entries
    }

    /// The first entry that covers `source`, exactly or by glob.
    pub fn matching(&self, source: &QuerySource) -> Option<&IgnoreEntry> {
        self.entries.iter().find(|entry| entry.covers(source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(s: &str) -> QuerySource {
        QuerySource::parse(s).unwrap()
    }

    #[test]
    fn entries_match_every_origin_s_form() {
        let list = IgnoreList::parse(
            "- query_source: Billing::SyncWorker\n- query_source: Api::*Controller#create\n",
        )
        .unwrap();
        assert!(list.matching(&source("billing::syncworker")).is_some());
        assert!(list.matching(&source("BILLING::SYNCWORKER")).is_some());
        assert!(list.matching(&source("api::v1controller_create")).is_some());
        assert!(list.matching(&source("billing::otherworker")).is_none());
    }

    #[test]
    fn comment_only_file_is_empty() {
        let list = IgnoreList::parse("# nothing ignored yet\n# - query_source: x\n").unwrap();
        assert!(list.entries().is_empty());
    }

    #[test]
    fn exact_and_glob_entries_match() {
        let list = IgnoreList::parse(
            "- query_source: admin/reports#export\n  reason: export must see one snapshot\n  pr: https://github.com/o/r/pull/9\n  added_by: alice\n  added_at: 2026-11-30\n- query_source: 'Legacy::*'\n",
        )
        .unwrap();
        assert_eq!(list.entries()[0].added_at.as_deref(), Some("2026-11-30"));
        assert!(list.matching(&source("admin/reports#export")).is_some());
        assert!(list.matching(&source("admin/reports#index")).is_none());
        assert!(list.matching(&source("Legacy::ImportWorker")).is_some());
    }

    #[test]
    fn the_shipped_ignore_list_parses() {
        let shipped = include_str!("../../../ignore-list.yaml");
        assert!(IgnoreList::parse(shipped).is_ok());
    }

    #[test]
    fn broken_files_say_what_is_wrong() {
        assert!(matches!(
            IgnoreList::parse("- reason: x\n"),
            Err(IgnoreListError::Yaml(_))
        ));
        assert!(matches!(
            IgnoreList::parse("- query_source: \"\"\n"),
            Err(IgnoreListError::Entry { index: 0, .. })
        ));
    }
}
