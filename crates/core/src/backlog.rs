//! The backlog a team starts from: the scan of the default branch, grouped
//! by kind of slow call and by the source that reaches it, and what is new
//! since the scan of a week before. Pure: the scans are given.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One finding of a branch scan, as stored (the scan's own type carries
/// the calls' code, which the backlog does not keep).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BacklogFinding {
    /// The scan's stable identity (file, method, kind).
    pub id: String,
    pub kind: String,
    pub path: String,
    pub line: usize,
    pub method: String,
    /// The `query_source`s that reach it.
    pub entries: Vec<String>,
    pub silenced: bool,
}

/// A stored scan of the branch.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchScan {
    pub branch: String,
    pub commit_sha: String,
    pub scanned_at: chrono::DateTime<chrono::Utc>,
    pub entry_points: usize,
    pub findings: Vec<BacklogFinding>,
}

/// A count of findings, and how many of them are new.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Counted {
    pub name: String,
    pub findings: usize,
    pub new: usize,
}

/// The backlog as the dashboard shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Backlog {
    pub active: usize,
    pub silenced: usize,
    /// Active findings the baseline scan lacks.
    pub new: usize,
    /// Kinds of slow call, most findings first.
    pub by_kind: Vec<Counted>,
    /// Sources reaching active findings, most findings first.
    pub by_source: Vec<Counted>,
    /// The new active findings, by file and line.
    pub new_findings: Vec<BacklogFinding>,
}

/// How old the baseline scan should be: "new since last week".
pub const BASELINE_AGE_DAYS: i64 = 7;

/// The backlog of `latest`, with `baseline` (the newest scan at least a
/// week older, else the oldest kept) as what counts as known.
pub fn backlog(latest: &BranchScan, baseline: Option<&BranchScan>) -> Backlog {
    let known: BTreeSet<&str> = baseline
        .map(|b| b.findings.iter().map(|f| f.id.as_str()).collect())
        .unwrap_or_default();
    let is_new = |f: &BacklogFinding| baseline.is_some() && !known.contains(f.id.as_str());
    let active: Vec<&BacklogFinding> = latest.findings.iter().filter(|f| !f.silenced).collect();
    let mut kinds: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut sources: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for f in &active {
        let new = usize::from(is_new(f));
        let k = kinds.entry(&f.kind).or_default();
        k.0 += 1;
        k.1 += new;
        for source in &f.entries {
            let s = sources.entry(source).or_default();
            s.0 += 1;
            s.1 += new;
        }
    }
    let mut new_findings: Vec<BacklogFinding> = active
        .iter()
        .filter(|f| is_new(f))
        .map(|f| (*f).clone())
        .collect();
    new_findings.sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
    Backlog {
        active: active.len(),
        silenced: latest.findings.len() - active.len(),
        new: new_findings.len(),
        by_kind: counted(kinds),
        by_source: counted(sources),
        new_findings,
    }
}

fn counted(map: BTreeMap<&str, (usize, usize)>) -> Vec<Counted> {
    let mut rows: Vec<Counted> = map
        .into_iter()
        .map(|(name, (findings, new))| Counted {
            name: name.to_owned(),
            findings,
            new,
        })
        .collect();
    // Most findings first; the name keeps the order stable.
    rows.sort_by(|a, b| b.findings.cmp(&a.findings).then(a.name.cmp(&b.name)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(id: &str, kind: &str, entries: &[&str], silenced: bool) -> BacklogFinding {
        BacklogFinding {
            id: id.into(),
            kind: kind.into(),
            path: format!("app/{id}.rb"),
            line: 3,
            method: "X#y".into(),
            entries: entries.iter().map(|e| e.to_string()).collect(),
            silenced,
        }
    }

    fn scan(findings: Vec<BacklogFinding>) -> BranchScan {
        BranchScan {
            branch: "main".into(),
            commit_sha: "a".repeat(40),
            scanned_at: chrono::Utc::now(),
            entry_points: 10,
            findings,
        }
    }

    #[test]
    fn the_backlog_counts_by_kind_and_by_source_and_what_the_week_added() {
        let week_ago = scan(vec![finding(
            "old",
            "an HTTP call",
            &["orders#create"],
            false,
        )]);
        let now = scan(vec![
            finding("old", "an HTTP call", &["orders#create"], false),
            finding(
                "mail",
                "a mail delivery",
                &["orders#create", "SendWorker"],
                false,
            ),
            finding("quiet", "an HTTP call", &["rake:sync"], true),
        ]);
        let b = backlog(&now, Some(&week_ago));
        assert_eq!((b.active, b.silenced, b.new), (2, 1, 1));
        assert_eq!(b.by_source[0].name, "orders#create");
        assert_eq!((b.by_source[0].findings, b.by_source[0].new), (2, 1));
        assert!(
            b.by_source.iter().all(|s| s.name != "rake:sync"),
            "silenced ones are not counted"
        );
        let http = b.by_kind.iter().find(|k| k.name == "an HTTP call").unwrap();
        assert_eq!((http.findings, http.new), (1, 0));
        assert_eq!(b.new_findings[0].id, "mail");
    }

    #[test]
    fn without_a_baseline_nothing_is_called_new() {
        let now = scan(vec![finding(
            "a",
            "an HTTP call",
            &["orders#create"],
            false,
        )]);
        let b = backlog(&now, None);
        assert_eq!((b.active, b.new), (1, 0));
    }
}
