//! `longtx scan`: every transaction site the analysis finds holding slow
//! work, read from every entry point of a checkout, before any alert.
//!
//! A finding is one kind of slow call inside one site. Its identity is the
//! site's file, the method around the site and the kind of call, so a line
//! moving does not make a new finding. A finding is silenced, never
//! dropped, by a `# longtx:ignore <reason>` comment on its site's line or
//! a slow call's line, or when the ignore list covers every source that
//! reaches it. Pure: reads the checkout's files, nothing else.

pub mod check_run;
mod confidence;
mod entries;
mod finding;
mod manifests;
mod queue_backend;
pub mod sarif;
pub mod text;
mod unique_keys;

pub use entries::entry_points;
pub use finding::{Finding, PatternRef, Silenced, SlowLine};

use longtx_analysis::{code_context, locate, Site};
use longtx_catalog::{rank, Catalogue, Evidence};
use longtx_core::{IgnoreList, QuerySource};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// What a scan found.
#[derive(Debug, Clone, Serialize)]
pub struct Scan {
    /// Entry points read (controller actions, jobs, rake tasks).
    pub entry_points: usize,
    /// Findings, unsilenced first, then by file and line.
    pub findings: Vec<Finding>,
    /// Every entry point that reached a finding (a finding lists at most
    /// 20): what a diff needs to read at the base.
    #[serde(skip)]
    pub reaching: Vec<String>,
    /// Why the scan reports nothing whatever the code holds, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Scan {
    pub fn active(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.silenced.is_none())
    }

    /// The active findings that fail a check or a CI step: slow calls,
    /// not work whose length depends on row counts.
    pub fn blocking(&self) -> impl Iterator<Item = &Finding> {
        self.active().filter(|f| !f.depends_on_rows)
    }

    /// The findings of `self` whose identity `base` lacks: what a change
    /// adds (diff mode).
    pub fn new_since(mut self, base: &Scan) -> Scan {
        self.findings
            .retain(|f| !base.findings.iter().any(|b| b.id == f.id));
        self
    }
}

/// Scans the checkout at `repo`. `catalogue` names the pattern that fits
/// each finding; `ignore` silences the findings only ignored sources reach.
pub fn scan(repo: &Path, catalogue: Option<&Catalogue>, ignore: &IgnoreList) -> Scan {
    scan_entries(repo, catalogue, ignore, entry_points(repo))
}

/// What `head` adds over `base` (diff mode): the head's findings whose
/// identity the base lacks. The base is read only from the entry points
/// that reach a finding at the head: a finding the base has is, but for a
/// path the change rerouted, reached there from the same entry point, so
/// the base's other entry points cannot make a head finding old. At worst
/// a rerouted one is reported as new; a new one is never missed, since the
/// full base lacks it too. This halves a diff's time on large applications.
pub fn diff(head: &Path, base: &Path, catalogue: Option<&Catalogue>, ignore: &IgnoreList) -> Scan {
    diff_against(scan(head, catalogue, ignore), base, catalogue, ignore)
}

/// [`diff`] with the head's scan already made (while the base was being
/// written out, say).
pub fn diff_against(
    at_head: Scan,
    base: &Path,
    catalogue: Option<&Catalogue>,
    ignore: &IgnoreList,
) -> Scan {
    let at_base = scan_entries(base, catalogue, ignore, at_head.reaching.clone());
    at_head.new_since(&at_base)
}

/// Scans the given entry points of `repo` only.
pub fn scan_entries(
    repo: &Path,
    catalogue: Option<&Catalogue>,
    ignore: &IgnoreList,
    entries: Vec<String>,
) -> Scan {
    // Each entry point is walked on its own, so they are spread over the
    // cores (the indexes are built once and shared); the results are
    // merged in the entries' order, so the output does not depend on it.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let facts = &confidence::CheckoutFacts::read(repo);
    if facts.document_database {
        return Scan {
            entry_points: entries.len(),
            findings: Vec::new(),
            reaching: Vec::new(),
            note: Some(DOCUMENT_DATABASE.to_owned()),
        };
    }
    // Entry points are taken one at a time from a shared counter, not in
    // fixed chunks: a few entries cost most of a scan (a job reaching half
    // the models), and a chunk holding them kept one core busy while the
    // other idled.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut per_entry: Vec<(usize, Vec<(String, Finding)>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(source) = entries.get(i) else {
                            return done;
                        };
                        done.push((i, findings_of(repo, facts, catalogue, source)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a scan worker panicked"))
            .collect()
    });
    per_entry.sort_by_key(|(i, _)| *i);
    let per_entry = per_entry.into_iter().map(|(_, found)| found);
    let mut found: BTreeMap<String, Finding> = BTreeMap::new();
    let mut reaching: Vec<String> = Vec::new();
    for (source, finding) in per_entry.flatten() {
        if reaching.last() != Some(&source) {
            reaching.push(source.clone());
        }
        found
            .entry(finding.id.clone())
            .and_modify(|f| f.add_entry(&source))
            .or_insert_with(|| {
                let mut f = finding;
                f.add_entry(&source);
                f
            });
    }
    let mut findings: Vec<Finding> = found.into_values().collect();
    for f in &mut findings {
        if f.silenced.is_none() {
            f.silenced = ignored_everywhere(&f.entries, ignore);
        }
    }
    findings.sort_by(|a, b| {
        a.silenced
            .is_some()
            .cmp(&b.silenced.is_some())
            .then(a.path.cmp(&b.path))
            .then(a.line.cmp(&b.line))
            .then(a.kind.cmp(&b.kind))
    });
    reaching.dedup();
    Scan {
        entry_points: entries.len(),
        findings,
        reaching,
        note: None,
    }
}

const DOCUMENT_DATABASE: &str = "this checkout keeps its data in MongoDB through Mongoid (no \
    config/database.yml, schema or migrations): MongoDB takes no metadata lock and Mongoid opens \
    no transaction around a save or a delete_all, so no site holds one";

/// The findings one entry point reaches, each with the entry's source.
fn findings_of(
    repo: &Path,
    facts: &confidence::CheckoutFacts,
    catalogue: Option<&Catalogue>,
    source: &str,
) -> Vec<(String, Finding)> {
    let candidates = locate(repo, source);
    if candidates.is_empty() {
        return Vec::new();
    }
    let context = code_context(repo, source, &[], &candidates);
    let owners = owners_of_slow_calls(&context.sites);
    let mut out = Vec::new();
    for (i, site) in context.sites.iter().enumerate() {
        let owned = |path: &str, line: usize| owners.get(&(path.to_owned(), line)) == Some(&i);
        let findings = finding::of_site(repo, facts, site, &owned);
        // One ranking per site, shared by its kinds of slow call.
        let pattern = if findings.is_empty() {
            None
        } else {
            catalogue.and_then(|c| pattern_for(c, site))
        };
        for mut finding in findings {
            finding.pattern = pattern.clone();
            out.push((source.to_owned(), finding));
        }
    }
    out
}

/// Which site each slow call is reported at when several hold it (an
/// action's `transaction do` around a save whose callback mails): the one
/// in the same file as the call, the closest to it, else the first.
fn owners_of_slow_calls(sites: &[Site]) -> BTreeMap<(String, usize), usize> {
    let mut owners: BTreeMap<(String, usize), usize> = BTreeMap::new();
    for (i, site) in sites.iter().enumerate() {
        for call in &site.slow {
            let key = (call.path.clone(), call.line);
            match owners.get(&key) {
                Some(&j) if sites[j].path == call.path || site.path != call.path => {}
                _ => {
                    owners.insert(key, i);
                }
            }
        }
    }
    owners
}

/// The catalogue's best pattern for the work inside the site, as the
/// prompt weighs it: the code near the boundary, the shapes recognised.
fn pattern_for(catalogue: &Catalogue, site: &Site) -> Option<finding::PatternRef> {
    let evidence = Evidence {
        inside: site
            .inside
            .iter()
            .filter(|(_, d)| *d <= 1)
            .map(|(t, _)| t.clone())
            .collect(),
        excerpts: site
            .inside
            .iter()
            .filter(|(_, d)| *d > 1)
            .map(|(t, _)| t.clone())
            .collect(),
        shapes: site.shapes.clone(),
        ..Evidence::default()
    };
    let best = rank(&catalogue.patterns, &evidence).into_iter().next()?;
    (best.score > 0).then(|| {
        let p = &catalogue.patterns[best.index];
        finding::PatternRef {
            id: p.id().to_owned(),
            title: p.front.title.clone(),
        }
    })
}

/// Silenced when every source reaching the finding is on the ignore list.
fn ignored_everywhere(entries: &[String], ignore: &IgnoreList) -> Option<Silenced> {
    let mut reasons = Vec::new();
    for entry in entries {
        let source = QuerySource::parse(entry).ok()?;
        let matched = ignore.matching(&source)?;
        reasons.push(format!(
            "{}: {}",
            matched.query_source,
            matched.reason.as_deref().unwrap_or("no reason given")
        ));
    }
    reasons.dedup();
    (!reasons.is_empty()).then(|| Silenced {
        by: "ignore-list".into(),
        reason: reasons.join("; "),
    })
}

/// What the scan says of a patch: `before` is the base's scan, `after` the
/// patched tree's; `source` the alerted `query_source` (compared in its
/// canonical form, as jobs are).
pub fn patch_check(
    before: &Scan,
    after: &Scan,
    source: &str,
) -> longtx_core::patch_check::PatchCheck {
    use longtx_core::patch_check::{CheckedCall, PatchCheck};
    let key = longtx_core::query_source::canonical(source);
    let reached = |f: &&Finding| {
        f.entries
            .iter()
            .any(|e| longtx_core::query_source::canonical(e) == key)
    };
    let calls = |findings: Vec<&Finding>| -> Vec<CheckedCall> {
        findings
            .into_iter()
            .flat_map(|f| {
                f.slow.iter().map(|s| CheckedCall {
                    kind: f.kind.clone(),
                    path: s.path.clone(),
                    line: s.line,
                    code: s.code.clone(),
                })
            })
            .collect()
    };
    let added: Vec<&Finding> = after
        .active()
        .filter(|f| !before.findings.iter().any(|b| b.id == f.id))
        .collect();
    PatchCheck {
        held_before: before.active().filter(reached).map(|f| f.slow.len()).sum(),
        still_held: calls(after.active().filter(reached).collect()),
        added: calls(added),
    }
}

/// The scan's findings as the backlog keeps them (no code, no calls).
pub fn backlog_findings(scan: &Scan) -> Vec<longtx_core::backlog::BacklogFinding> {
    scan.findings
        .iter()
        .map(|f| longtx_core::backlog::BacklogFinding {
            id: f.id.clone(),
            kind: f.kind.clone(),
            path: f.path.clone(),
            line: f.line,
            method: f.method.clone(),
            entries: f.entries.clone(),
            silenced: f.silenced.is_some(),
        })
        .collect()
}
