//! The backlog section: the scan of the default branch by kind and by
//! source, what is new since the scan of a week before, and for each
//! source the longest transaction production showed in the window.

use longtx_core::backlog::{backlog, BranchScan};
use longtx_core::what_if::History;
use serde::Serialize;
use std::collections::BTreeMap;

/// Sources and new findings listed; the rest are counted.
const LISTED: usize = 20;

#[derive(Debug, Serialize)]
pub(crate) struct BacklogView {
    branch: String,
    commit: String,
    scanned_at: String,
    entry_points: usize,
    active: usize,
    silenced: usize,
    /// `None` when there is no older scan to compare with.
    since: Option<String>,
    new: usize,
    by_kind: Vec<Row>,
    by_source: Vec<Row>,
    more_sources: usize,
    new_findings: Vec<NewFinding>,
    more_new: usize,
}

#[derive(Debug, Serialize)]
struct Row {
    name: String,
    findings: usize,
    new: usize,
    /// The longest transaction seen from this source in the window.
    longest: Option<String>,
}

#[derive(Debug, Serialize)]
struct NewFinding {
    place: String,
    kind: String,
    method: String,
    entries: String,
}

pub(crate) fn view(
    latest: &BranchScan,
    baseline: Option<&BranchScan>,
    seen: &History,
) -> BacklogView {
    let b = backlog(latest, baseline);
    let mut longest: BTreeMap<String, f64> = BTreeMap::new();
    for o in &seen.observations {
        let key = longtx_core::query_source::canonical(&o.query_source);
        let entry = longest.entry(key).or_default();
        *entry = entry.max(o.max_seconds);
    }
    let longest_of = |source: &str| {
        longest
            .get(&longtx_core::query_source::canonical(source))
            .map(|s| format!("{s:.0} s"))
    };
    let row = |c: &longtx_core::backlog::Counted, with_longest: bool| Row {
        name: c.name.clone(),
        findings: c.findings,
        new: c.new,
        longest: if with_longest {
            longest_of(&c.name)
        } else {
            None
        },
    };
    BacklogView {
        branch: latest.branch.clone(),
        commit: latest.commit_sha.chars().take(12).collect(),
        scanned_at: latest.scanned_at.format("%Y-%m-%d %H:%M UTC").to_string(),
        entry_points: latest.entry_points,
        active: b.active,
        silenced: b.silenced,
        since: baseline.map(|s| {
            format!(
                "{} ({})",
                s.scanned_at.format("%Y-%m-%d"),
                s.commit_sha.chars().take(12).collect::<String>()
            )
        }),
        new: b.new,
        by_kind: b.by_kind.iter().map(|c| row(c, false)).collect(),
        by_source: b
            .by_source
            .iter()
            .take(LISTED)
            .map(|c| row(c, true))
            .collect(),
        more_sources: b.by_source.len().saturating_sub(LISTED),
        new_findings: b
            .new_findings
            .iter()
            .take(LISTED)
            .map(|f| NewFinding {
                place: format!("{}:{}", f.path, f.line),
                kind: f.kind.clone(),
                method: f.method.clone(),
                entries: f.entries.join(", "),
            })
            .collect(),
        more_new: b.new_findings.len().saturating_sub(LISTED),
    }
}
