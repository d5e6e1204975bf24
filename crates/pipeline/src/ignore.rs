//! The ignore list in force: the file longtx started with, the list on the
//! target repository's base branch (read from the mirror), and the sources
//! declined through the wontfix label (from Postgres, so every replica
//! agrees before the ignore-list PR merges). Intake reads one snapshot per
//! request.

use longtx_core::{IgnoreEntry, IgnoreList};
use std::sync::{Arc, RwLock};

#[derive(Clone, Default)]
pub struct LiveIgnoreList {
    inner: Arc<RwLock<Parts>>,
}

#[derive(Default)]
struct Parts {
    file: IgnoreList,
    base_branch: IgnoreList,
    declined: Vec<IgnoreEntry>,
    combined: Arc<IgnoreList>,
}

impl Parts {
    fn combine(&mut self) {
        let entries = self
            .file
            .entries()
            .iter()
            .chain(self.base_branch.entries())
            .chain(&self.declined)
            .cloned()
            .collect();
        self.combined = Arc::new(IgnoreList::from_entries(entries));
    }
}

impl LiveIgnoreList {
    pub fn new(file: IgnoreList) -> Self {
        let list = LiveIgnoreList::default();
        list.update(|parts| parts.file = file);
        list
    }

    /// The list now; a snapshot, so a change mid-request does not alter
    /// the answer halfway through a batch.
    pub fn snapshot(&self) -> Arc<IgnoreList> {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .combined
            .clone()
    }

    /// Replaces the list read from the local file.
    pub fn set_file(&self, list: IgnoreList) {
        self.update(|parts| parts.file = list);
    }

    /// Replaces the list read from the base branch.
    pub fn set_base_branch(&self, list: IgnoreList) {
        self.update(|parts| parts.base_branch = list);
    }

    /// Replaces the declined sources (all of them, as stored).
    pub fn set_declined(&self, entries: Vec<IgnoreEntry>) {
        self.update(|parts| parts.declined = entries);
    }

    /// Adds one declined source at once, before the next refresh.
    pub fn add_declined(&self, entry: IgnoreEntry) {
        self.update(|parts| {
            parts
                .declined
                .retain(|e| e.query_source != entry.query_source);
            parts.declined.push(entry);
        });
    }

    fn update(&self, change: impl FnOnce(&mut Parts)) {
        let mut parts = self.inner.write().unwrap_or_else(|p| p.into_inner());
        change(&mut parts);
        parts.combine();
    }
}
