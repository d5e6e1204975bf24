//! locate-bench: the code locator and the pattern ranking measured on a
//! labelled corpus of public Rails applications (`corpus/locate/*.yaml`:
//! repository, commit, `query_source` -> file:line, or `none`).
//!
//! The checkouts stay out of this repository: `scripts/corpus-checkouts DIR`
//! clones each application at its labelled commit into `DIR/<owner>+<name>`.
//!
//! Prints, per application and in total: top-1 accuracy (the first
//! candidate is the labelled file and line; for `none`, nothing is found),
//! in-candidates accuracy (the label is among the candidates), wrong
//! answers where `none` is right, time per call, and for the ranking
//! subset whether the top pattern is the one a person picked. Goals: top-1
//! at least 97%, no wrong answer where `none` is right, ranking at least 80%.
//!
//! Run: `cargo run --release -p longtx-bench --bin locate-bench -- --checkouts DIR [--corpus corpus/locate] [--misses]`
//! (`--corpus corpus/heldout` for the held-out ranking set, cloned by
//! `scripts/corpus-checkouts DIR corpus/heldout`).

mod corpus_run;
mod help;

use longtx_catalog::Catalogue;
use longtx_prompt::corpus::CorpusFile;
use longtx_prompt::{locate, rank_patterns, Candidate, JobFacts};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Tally {
    cases: usize,
    top1: usize,
    in_candidates: usize,
    none_expected: usize,
    wrong_where_none: usize,
    time: Duration,
    /// The slowest timed call (the index of code roots warm).
    slowest: Duration,
    /// The first call on the checkout: it discovers the code roots and
    /// builds their class index when the app's own layout does not hold
    /// the code.
    first: Duration,
    ranked: usize,
    ranked_right: usize,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.cases += other.cases;
        self.top1 += other.top1;
        self.in_candidates += other.in_candidates;
        self.none_expected += other.none_expected;
        self.slowest = self.slowest.max(other.slowest);
        self.first = self.first.max(other.first);
        self.wrong_where_none += other.wrong_where_none;
        self.time += other.time;
        self.ranked += other.ranked;
        self.ranked_right += other.ranked_right;
    }

    fn print(&self, name: &str) {
        let pct = |n: usize, of: usize| {
            if of == 0 {
                0.0
            } else {
                n as f64 * 100.0 / of as f64
            }
        };
        if self.cases == 0 {
            // A ranking-only set (`corpus/heldout`): no location figures.
            println!(
                "{name:<40} ranking {}/{} ({:.0}%)",
                self.ranked_right,
                self.ranked,
                pct(self.ranked_right, self.ranked)
            );
            return;
        }
        println!(
            "{name:<40} cases {:>3}  top-1 {:>5.1}%  in candidates {:>5.1}%  wrong where none is right {}/{}  {:>6.2} ms/call (max {:.1}, first {:.0})  ranking {}/{} ({:.0}%)",
            self.cases,
            pct(self.top1, self.cases),
            pct(self.in_candidates, self.cases),
            self.wrong_where_none,
            self.none_expected,
            self.time.as_secs_f64() * 1000.0 / self.cases.max(1) as f64,
            self.slowest.as_secs_f64() * 1000.0,
            self.first.as_secs_f64() * 1000.0,
            self.ranked_right,
            self.ranked,
            pct(self.ranked_right, self.ranked),
        );
    }
}

/// Whether `candidate` is the labelled answer.
fn matches(candidate: &Candidate, expect: &str) -> bool {
    match expect.rsplit_once(':') {
        Some((path, line)) if line.chars().all(|c| c.is_ascii_digit()) => {
            candidate.path == path && candidate.line.map(|l| l.to_string()).as_deref() == Some(line)
        }
        _ => candidate.path == expect,
    }
}

const USAGE: &str = "locate-bench: the code locator and the pattern ranking on a labelled corpus of public Rails applications.

Usage: locate-bench --checkouts DIR [--corpus FOLDER] [--misses]
  --checkouts  clones made by `scripts/corpus-checkouts DIR FOLDER`
  --corpus     the corpus folder (default corpus/locate; also corpus/modular, corpus/heldout)
  --misses     print each miss";

fn main() -> anyhow::Result<()> {
    help::answer_help(USAGE);
    let run = corpus_run::CorpusRun::from_args("corpus/locate")?;
    let show_misses = run.misses;
    let catalogue = Catalogue::load(&run.root.join("patterns"))?;

    let mut total = Tally::default();
    let mut missing = Vec::new();
    for corpus in run.files::<CorpusFile>()? {
        let Some(dir) = run.checkout_of(&corpus.repository) else {
            missing.push(corpus.repository.clone());
            continue;
        };
        let head = std::process::Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(["rev-parse", "HEAD"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        if head != corpus.commit {
            println!(
                "WARNING {}: the checkout is at {head}, the labels are for {}",
                corpus.repository, corpus.commit
            );
        }
        let mut tally = Tally::default();
        for (n, case) in corpus.cases.iter().enumerate() {
            // Warm the file cache once, then time the call as the service makes it.
            let warming = Instant::now();
            let _ = locate(&dir, &case.query_source);
            if n == 0 {
                tally.first = warming.elapsed();
            }
            let started = Instant::now();
            let found = locate(&dir, &case.query_source);
            let took = started.elapsed();
            tally.time += took;
            tally.slowest = tally.slowest.max(took);
            if show_misses && took > Duration::from_millis(10) {
                println!(
                    "  slow {} took {:.1} ms (the goal is under 10 ms a call)",
                    case.query_source,
                    took.as_secs_f64() * 1000.0
                );
            }
            tally.cases += 1;
            let (top1, listed) = if case.expect == "none" {
                tally.none_expected += 1;
                if !found.is_empty() {
                    tally.wrong_where_none += 1;
                }
                (found.is_empty(), found.is_empty())
            } else {
                (
                    found.first().is_some_and(|c| matches(c, &case.expect)),
                    found.iter().any(|c| matches(c, &case.expect)),
                )
            };
            tally.top1 += top1 as usize;
            tally.in_candidates += listed as usize;
            if show_misses && !top1 {
                let got: Vec<String> = found
                    .iter()
                    .map(|c| {
                        format!(
                            "{}:{}",
                            c.path,
                            c.line.map_or("-".into(), |l| l.to_string())
                        )
                    })
                    .collect();
                println!(
                    "  miss [{}] {} expected {} got {:?}",
                    case.form, case.query_source, case.expect, got
                );
            }
        }
        for case in &corpus.patterns {
            let found = locate(&dir, &case.query_source);
            let job = JobFacts {
                query_source: case.query_source.clone(),
                tables: case.tables.clone(),
                ..JobFacts::default()
            };
            let code =
                longtx_prompt::locate::lead_context(&dir, &job.query_source, &job.tables, &found);
            let ranked = rank_patterns(&job, &found, &code, &catalogue);
            // A top pattern at score 0 is no pick, whatever the catalogue order.
            let top = ranked
                .first()
                .filter(|r| r.score > 0)
                .map(|r| catalogue.patterns[r.index].id().to_owned());
            tally.ranked += 1;
            let right = top.as_deref() == Some(case.expect_pattern.as_str());
            tally.ranked_right += right as usize;
            if show_misses && !right {
                let why: Vec<String> = ranked
                    .iter()
                    .take(3)
                    .map(|r| {
                        format!(
                            "{} {} {:?}",
                            catalogue.patterns[r.index].id(),
                            r.score,
                            r.matched
                        )
                    })
                    .collect();
                println!(
                    "  ranking miss {} expected {} got {:?} (found {:?}) {why:?}",
                    case.query_source,
                    case.expect_pattern,
                    top,
                    found
                        .iter()
                        .map(|c| format!("{}:{:?}", c.path, c.line))
                        .collect::<Vec<_>>()
                );
                let shown = code.sites.len().min(longtx_prompt::locate::MAX_SITES);
                corpus_run::print_sites(&code.sites[..shown]);
            }
        }
        tally.print(&corpus.repository);
        total.add(&tally);
    }
    total.print("all");
    if !missing.is_empty() {
        anyhow::bail!(
            "{} checkout(s) missing: {}",
            missing.len(),
            missing.join(", ")
        );
    }
    Ok(())
}
