//! realfix-bench: the prompt measured against real historical fixes of long
//! transactions (`corpus/real-fixes/*.yaml`, each labelled from its diff).
//! For each fix, longtx runs on the fix's parent commit, as it would have
//! the day the transaction was long, and the bench reports:
//! - the fixed site at top-1 and in the top 3 (a candidate whose excerpt,
//!   in the same file, spans the fixed line; in the top 3, also a version
//!   or a callback listed by its line under one of the first three leads);
//! - the top pattern against the one the fix matches (fixes labelled
//!   `none` are left out of this figure);
//! - whether the fixed file is named anywhere in the rendered prompt;
//! - for fixes labelled with the slow calls they moved, whether a call is
//!   missing from the prompt while its site is there (neither listed as
//!   slow work of a shown site nor inside a shown excerpt).
//!
//! It reports two halves: `corpus/real-fixes` (the rules were tuned on it)
//! and `corpus/real-fixes-heldout` (labelled blind, never used to tune a
//! rule): the held-out figure is the one that counts.
//!
//! The checkouts stay out of this repository and need their history:
//! `scripts/corpus-checkouts DIR corpus/real-fixes` clones each application;
//! the bench checks out each parent commit itself (`git checkout -f`, so use
//! clones made for it).
//!
//! Run: `cargo run --release -p longtx-bench --bin realfix-bench -- --checkouts DIR [--misses]`

mod corpus_run;
mod help;

use longtx_prompt::corpus::{RealFix, RealFixFile};
use longtx_prompt::{locate, Candidate, JobFacts, PromptSources, DEFAULT_BUDGET_BYTES};
use std::path::Path;

#[derive(Default)]
struct Tally {
    cases: usize,
    top1: usize,
    top3: usize,
    with_pattern: usize,
    pattern_top1: usize,
    file_named: usize,
    /// Fixes labelled with the slow calls they moved, whose site is shown.
    with_calls: usize,
    /// Of those, fixes with a moved call the prompt does not show.
    call_missing: usize,
    /// Each rendered prompt's length in bytes.
    prompt_bytes: Vec<usize>,
    /// Why a fixed site was not among the first three: no entry point
    /// was located, no transaction site was found from it, or sites were
    /// found and the fixed one was not among the first three.
    no_entry: usize,
    no_site: usize,
    other_sites: usize,
    /// Of those, the fixed site was found but ranked fourth or later.
    ranked_later: usize,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.cases += other.cases;
        self.top1 += other.top1;
        self.top3 += other.top3;
        self.with_pattern += other.with_pattern;
        self.pattern_top1 += other.pattern_top1;
        self.file_named += other.file_named;
        self.with_calls += other.with_calls;
        self.call_missing += other.call_missing;
        self.prompt_bytes.extend(&other.prompt_bytes);
        self.no_entry += other.no_entry;
        self.no_site += other.no_site;
        self.other_sites += other.other_sites;
        self.ranked_later += other.ranked_later;
    }

    fn median_prompt(&self) -> usize {
        let mut sizes = self.prompt_bytes.clone();
        sizes.sort_unstable();
        sizes.get(sizes.len() / 2).copied().unwrap_or(0)
    }

    fn print(&self, name: &str) {
        let pct = |n: usize, of: usize| 100.0 * n as f64 / of.max(1) as f64;
        println!(
            "{name:<40} fixes {:>3}  site top-1 {:>5.1}%  site in top 3 {:>5.1}%  pattern top-1 {}/{} ({:.0}%)  fixed file in the prompt {:>5.1}%",
            self.cases,
            pct(self.top1, self.cases),
            pct(self.top3, self.cases),
            self.pattern_top1,
            self.with_pattern,
            pct(self.pattern_top1, self.with_pattern),
            pct(self.file_named, self.cases),
        );
        println!("{:<40} median prompt {} bytes", "", self.median_prompt());
        println!(
            "{:<40} site missed: no entry point located {}, no site found {}, other sites first {} (the fixed one found, ranked 4th or later: {})",
            "", self.no_entry, self.no_site, self.other_sites, self.ranked_later
        );
        if self.with_calls > 0 {
            println!(
                "{:<40} moved slow call missing while its site is shown: {} of {}",
                "", self.call_missing, self.with_calls
            );
        }
    }
}

/// The lines a place of the prompt shows: (path, first, last) each.
type Shown = Vec<(String, usize, usize)>;

/// A candidate's method, as the prompt shows it.
fn shown(candidate: &Candidate) -> Shown {
    let Some(start) = candidate.line else {
        return Vec::new();
    };
    let lines = candidate
        .excerpt
        .as_deref()
        .map_or(1, |e| e.lines().count().max(1));
    vec![(candidate.path.clone(), start, start + lines - 1)]
}

/// The lines a site shows: its excerpts, and each slow call it lists by
/// file and line (the prompt names that line as slow work inside it).
fn site_shows(site: &longtx_prompt::locate::Site) -> Shown {
    let mut shown = site.covers.clone();
    shown.extend(site.slow.iter().map(|c| (c.path.clone(), c.line, c.line)));
    shown
}

/// What a lead names: its site's lines, and each other class's version of
/// its method and each other callback of its save listed under it, by its
/// line and its slow calls' lines. They count among the candidates (at the
/// lead's rank), never as the first.
fn lead_shows(site: &longtx_prompt::locate::Site) -> Shown {
    let mut shown = site_shows(site);
    for other in site.listed() {
        shown.push((other.path.clone(), other.line, other.line));
        shown.extend(other.slow.iter().map(|c| (c.path.clone(), c.line, c.line)));
    }
    shown
}

/// The place shows the fixed line, in the same file.
fn spans(place: &Shown, site: &str) -> bool {
    let Some((path, line)) = site.rsplit_once(':') else {
        return false;
    };
    let Ok(line) = line.parse::<usize>() else {
        return false;
    };
    place
        .iter()
        .any(|(p, first, last)| p == path && (*first..=*last).contains(&line))
}

fn measure(
    dir: &Path,
    fix: &RealFix,
    sources: &PromptSources,
    catalogue: &longtx_catalog::Catalogue,
    tally: &mut Tally,
    misses: bool,
) {
    let found = locate(dir, &fix.query_source);
    let facts = JobFacts {
        query_source: fix.query_source.clone(),
        tables: vec![fix.table.clone()],
        ..JobFacts::default()
    };
    let code = longtx_prompt::locate::lead_context(dir, &fix.query_source, &facts.tables, &found);
    // The prompt's "where it most likely lives": the transaction sites,
    // else the entry point.
    let places: Vec<(String, Shown)> = if code.sites.is_empty() {
        found
            .iter()
            .map(|c| (format!("{}:{}", c.path, c.line.unwrap_or(0)), shown(c)))
            .collect()
    } else {
        code.sites
            .iter()
            .take(longtx_prompt::locate::MAX_SITES)
            .map(|s| (format!("{}:{}", s.path, s.line), site_shows(s)))
            .collect()
    };
    // The same, with the alternatives each lead lists.
    let leads: Vec<Shown> = if code.sites.is_empty() {
        places.iter().map(|(_, p)| p.clone()).collect()
    } else {
        code.sites
            .iter()
            .take(longtx_prompt::locate::MAX_SITES)
            .map(lead_shows)
            .collect()
    };
    if std::env::var("REALFIX_SHOW").is_ok_and(|v| fix.fix_commit.starts_with(&v)) {
        corpus_run::print_sites(&code.sites);
        let ranked = longtx_prompt::rank_patterns(&facts, &found, &code, catalogue);
        for r in ranked.iter().take(3) {
            println!(
                "    pattern {} {} {:?}",
                catalogue.patterns[r.index].id(),
                r.score,
                r.matched
            );
        }
    }
    if std::env::var("REALFIX_PROMPT").is_ok_and(|v| fix.fix_commit.starts_with(&v)) {
        let text = sources.build(&facts).map(|p| p.text).unwrap_or_default();
        println!("{text}");
    }
    let top1 = places
        .first()
        .is_some_and(|(_, p)| spans(p, &fix.fixed_site));
    let top3 = leads.iter().take(3).any(|p| spans(p, &fix.fixed_site));
    let ranked = longtx_prompt::rank_patterns(&facts, &found, &code, catalogue);
    let top = ranked
        .first()
        .filter(|r| r.score > 0)
        .map(|r| catalogue.patterns[r.index].id().to_owned());
    let text = sources.build(&facts).map(|p| p.text).unwrap_or_default();
    let file = fix
        .fixed_site
        .rsplit_once(':')
        .map_or(fix.fixed_site.as_str(), |(p, _)| p);
    // The moved slow calls, when labelled: each listed as slow work of a
    // shown site (or as the call it is reached from), or inside a shown
    // excerpt.
    let shown_sites = code.sites.iter().take(longtx_prompt::locate::MAX_SITES);
    let listed: Vec<String> = shown_sites
        .flat_map(|s| {
            s.slow
                .iter()
                .chain(s.listed().flat_map(|a| &a.slow))
                .flat_map(|c| {
                    // The call in the transaction's code it is reached
                    // from is named with it.
                    let through = c.through.iter().map(|t| format!("{}:{}", t.path, t.line));
                    std::iter::once(format!("{}:{}", c.path, c.line)).chain(through)
                })
        })
        .collect();
    let missing: Vec<&String> = fix
        .slow_calls
        .iter()
        .filter(|call| !listed.contains(call) && !leads.iter().take(3).any(|p| spans(p, call)))
        .collect();
    if top3 && !fix.slow_calls.is_empty() {
        tally.with_calls += 1;
        if !missing.is_empty() {
            tally.call_missing += 1;
            if misses {
                println!(
                    "  CALL   {} {}: moved call(s) {:?} not in the prompt",
                    &fix.fix_commit[..10.min(fix.fix_commit.len())],
                    fix.query_source,
                    missing
                );
            }
        }
    }
    tally.prompt_bytes.push(text.len());
    tally.cases += 1;
    tally.top1 += top1 as usize;
    tally.top3 += top3 as usize;
    if !top3 {
        if found.is_empty() {
            tally.no_entry += 1;
        } else if code.sites.is_empty() {
            tally.no_site += 1;
        } else {
            tally.other_sites += 1;
            tally.ranked_later +=
                code.sites
                    .iter()
                    .any(|s| spans(&lead_shows(s), &fix.fixed_site)) as usize;
        }
    }
    tally.file_named += text.contains(file) as usize;
    if fix.pattern != "none" {
        tally.with_pattern += 1;
        tally.pattern_top1 += (top.as_deref() == Some(fix.pattern.as_str())) as usize;
    }
    if misses && (!top3 || (fix.pattern != "none" && top.as_deref() != Some(fix.pattern.as_str())))
    {
        let got: Vec<String> = places.iter().take(3).map(|(at, _)| at.clone()).collect();
        println!(
            "  {}{} {} {}: site {} (got {:?}{}), pattern {} (got {})",
            if top3 { "site ok" } else { "SITE  " },
            if fix.pattern == "none" || top.as_deref() == Some(fix.pattern.as_str()) {
                ""
            } else {
                " PATTERN"
            },
            &fix.fix_commit[..10.min(fix.fix_commit.len())],
            fix.query_source,
            fix.fixed_site,
            got,
            if text.contains(file) {
                ", file in the prompt"
            } else {
                ""
            },
            fix.pattern,
            top.as_deref().unwrap_or("nothing")
        );
    }
}

const USAGE: &str =
    "realfix-bench: the prompt measured against real historical fixes of long transactions,
on the tuned-on half (corpus/real-fixes) and the held-out half (corpus/real-fixes-heldout).

Usage: realfix-bench --checkouts DIR [--corpus FOLDER] [--misses]
  --checkouts  clones made by `scripts/corpus-checkouts DIR corpus/real-fixes` (and -heldout)
  --corpus     measure this folder alone instead of both halves
  --misses     print each miss of the tuned-on half (the held-out half prints totals only)
REALFIX_SHOW=<commit prefix> prints one fix's sites; REALFIX_PROMPT=<prefix> its prompt.";

fn main() -> anyhow::Result<()> {
    help::answer_help(USAGE);
    let run = corpus_run::CorpusRun::from_args("corpus/real-fixes")?;
    let halves = run.halves();
    let mut totals = Vec::new();
    for (name, half) in halves {
        println!("== {name}");
        totals.push((name, measure_half(&half)?));
    }
    println!("==");
    for (name, total) in &totals {
        total.print(name);
    }
    Ok(())
}

fn measure_half(run: &corpus_run::CorpusRun) -> anyhow::Result<Tally> {
    let root = &run.root;
    let catalogue = longtx_catalog::Catalogue::load(&root.join("patterns"))?;
    let mut total = Tally::default();
    for corpus in run.files::<RealFixFile>()? {
        let Some(dir) = run.checkout_of(&corpus.repository) else {
            continue;
        };
        let sources = PromptSources {
            patterns_dir: root.join("patterns"),
            template: root.join("patterns/_prompt.md.tera"),
            repo: Some(dir.clone()),
            budget_bytes: DEFAULT_BUDGET_BYTES,
        };
        let mut tally = Tally::default();
        for fix in &corpus.cases {
            if let Err(e) = corpus_run::checkout(&dir, &fix.parent_commit) {
                println!("SKIPPED {}: {e}", fix.fix_commit);
                continue;
            }
            measure(&dir, fix, &sources, &catalogue, &mut tally, run.misses);
        }
        tally.print(&corpus.repository);
        total.add(&tally);
    }
    Ok(total)
}
