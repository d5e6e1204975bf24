//! scan-bench: `longtx scan` against real historical fixes of long
//! transactions (`corpus/real-fixes*/`). For each fix, the whole checkout
//! is scanned at the fix's parent and again at the fix, and the bench
//! reports:
//! - recall: the parent's scan has a finding at the site the fix changed
//!   (its site, the line a helper it calls opens the transaction at, or one
//!   of its slow calls at the labelled `fixed_site`, at one of the labelled
//!   `slow_calls`, or within 3 lines of the fixed site in the same file);
//! - gone after the fix: of those, the matching finding's identity is
//!   absent from the scan at the fix commit;
//! - the findings per scan and the time a whole scan takes.
//!
//! Both halves are reported; the held-out one was labelled blind.
//!
//! With `--history DIR --commits N` it measures noise instead: diff mode
//! over the last N first-parent commits of the clone at DIR (each against
//! its parent, oldest first), printing every commit it would flag with the
//! findings that commit adds. It checks commits out in DIR: use a clone
//! made for it.
//!
//! Run: `cargo run --release -p longtx-bench --bin scan-bench -- --checkouts DIR [--corpus DIR] [--misses]`
//! or `... --bin scan-bench -- --history DIR [--commits 200]`

mod corpus_run;
mod help;

use longtx_core::IgnoreList;
use longtx_prompt::corpus::{RealFix, RealFixFile};
use longtx_scan::{Finding, Scan};
use std::time::{Duration, Instant};

const USAGE: &str = "
scan-bench: longtx scan at each real fix's parent and at the fix
Usage: scan-bench --checkouts DIR [--corpus DIR] [--misses]
       scan-bench --history DIR [--commits N]
  --checkouts DIR   clones of the corpus applications (scripts/corpus-checkouts)
  --corpus DIR      one corpus folder (default: both halves)
  --misses          print each fix the scan missed (tuned-on half only)
  --history DIR     diff mode over the last commits of the clone at DIR (it checks them out)
  --commits N       how many (default 200)";

#[derive(Default)]
struct Tally {
    fixes: usize,
    found: usize,
    /// Found, but only as work as long as its rows (a notice).
    found_as_notice: usize,
    gone: usize,
    findings: usize,
    scans: usize,
    slowest: Duration,
    total: Duration,
}

fn main() -> anyhow::Result<()> {
    help::answer_help(USAGE);
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    if let Some(dir) = value("--history") {
        let commits = value("--commits").map_or(Ok(200), |n| n.parse())?;
        return history(std::path::Path::new(dir), commits);
    }
    let run = corpus_run::CorpusRun::from_args("corpus/real-fixes")?;
    let halves = run.halves();
    let catalogue = longtx_catalog::Catalogue::load(&run.root.join("patterns"))?;
    let mut totals = Vec::new();
    for (name, half) in halves {
        println!("== {name}");
        let mut tally = Tally::default();
        for corpus in half.files::<RealFixFile>()? {
            let Some(dir) = half.checkout_of(&corpus.repository) else {
                continue;
            };
            for fix in &corpus.cases {
                let Some(parent) = scan_at(&dir, &fix.parent_commit, &catalogue, &mut tally) else {
                    continue;
                };
                tally.fixes += 1;
                // A finding at the fixed site or a moved call itself, before
                // one a few lines off (the next callback declared below it).
                let hit = parent
                    .findings
                    .iter()
                    .find(|f| matches_exactly(f, fix))
                    .or_else(|| parent.findings.iter().find(|f| matches(f, fix)));
                let Some(hit) = hit else {
                    if half.misses {
                        println!(
                            "  MISS {} {} {} ({} findings)",
                            corpus.repository,
                            &fix.fix_commit[..10],
                            fix.fixed_site,
                            parent.findings.len()
                        );
                    }
                    continue;
                };
                tally.found += 1;
                // Found only as database work as long as its rows: shown as
                // a notice, which fails no check.
                if parent
                    .findings
                    .iter()
                    .filter(|f| matches(f, fix))
                    .all(|f| f.depends_on_rows)
                {
                    tally.found_as_notice += 1;
                }
                let Some(after) = scan_at(&dir, &fix.fix_commit, &catalogue, &mut tally) else {
                    continue;
                };
                if after.findings.iter().all(|f| f.id != hit.id) {
                    tally.gone += 1;
                } else if half.misses {
                    println!(
                        "  STAYS {} {} {}:{} {}",
                        corpus.repository,
                        &fix.fix_commit[..10],
                        hit.path,
                        hit.line,
                        hit.kind
                    );
                }
            }
        }
        print(name, &tally);
        totals.push((name, tally));
    }
    println!("==");
    for (name, tally) in &totals {
        print(name, tally);
    }
    Ok(())
}

fn scan_at(
    dir: &std::path::Path,
    commit: &str,
    catalogue: &longtx_catalog::Catalogue,
    tally: &mut Tally,
) -> Option<Scan> {
    if let Err(e) = corpus_run::checkout(dir, commit) {
        println!("  SKIPPED {commit}: {e}");
        return None;
    }
    let start = Instant::now();
    let scan = longtx_scan::scan(dir, Some(catalogue), &IgnoreList::default());
    let took = start.elapsed();
    tally.scans += 1;
    tally.total += took;
    tally.slowest = tally.slowest.max(took);
    tally.findings += scan.findings.len();
    Some(scan)
}

/// The finding is at the fixed site, or lists a slow call the fix moved.
fn matches_exactly(finding: &Finding, fix: &RealFix) -> bool {
    let at = |path: &str, line: usize| format!("{path}:{line}");
    std::iter::once(at(&finding.path, finding.line))
        .chain(finding.opens.iter().map(|o| at(&o.path, o.line)))
        .chain(finding.slow.iter().map(|s| at(&s.path, s.line)))
        .any(|p| p == fix.fixed_site || fix.slow_calls.contains(&p))
}

/// Exactly, or within three lines of the fixed site (a site's line moves
/// by a comment or a blank line between a labeller's reading and ours).
fn matches(finding: &Finding, fix: &RealFix) -> bool {
    if matches_exactly(finding, fix) {
        return true;
    }
    let Some((path, line)) = fix.fixed_site.rsplit_once(':') else {
        return false;
    };
    let line: usize = line.parse().unwrap_or(0);
    std::iter::once((&finding.path, finding.line))
        .chain(finding.opens.iter().map(|o| (&o.path, o.line)))
        .chain(finding.slow.iter().map(|s| (&s.path, s.line)))
        .any(|(p, l)| p == path && l.abs_diff(line) <= 3)
}

fn print(name: &str, t: &Tally) {
    let pct = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    println!(
        "{name}: {} fixes; fixed site found {} ({:.1}%, {} of them only as notices); gone after the fix {} of {} ({:.1}%); {:.1} findings per scan; scan mean {:.2} s, slowest {:.2} s",
        t.fixes,
        t.found,
        pct(t.found, t.fixes),
        t.found_as_notice,
        t.gone,
        t.found,
        pct(t.gone, t.found),
        t.findings as f64 / t.scans.max(1) as f64,
        t.total.as_secs_f64() / t.scans.max(1) as f64,
        t.slowest.as_secs_f64()
    );
}

/// Diff mode over the last `commits` first-parent commits of `dir`.
fn history(dir: &std::path::Path, commits: usize) -> anyhow::Result<()> {
    let log = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["log", "--first-parent", "--format=%H %s", "-n"])
        .arg((commits + 1).to_string())
        .output()?;
    anyhow::ensure!(log.status.success(), "git log in {}", dir.display());
    let mut lines: Vec<String> = String::from_utf8_lossy(&log.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.reverse();
    let catalogue = longtx_catalog::Catalogue::load(std::path::Path::new("patterns")).ok();
    let mut tally = Tally::default();
    let mut previous: Option<Scan> = None;
    let (mut compared, mut flagged) = (0, 0);
    for line in &lines {
        let (commit, subject) = line.split_once(' ').unwrap_or((line, ""));
        if let Err(e) = corpus_run::checkout(dir, commit) {
            // A clone missing a blob: this commit and the next comparison are skipped.
            println!("SKIP {}: {e}", &commit[..10]);
            previous = None;
            continue;
        }
        let start = Instant::now();
        let scan = longtx_scan::scan(dir, catalogue.as_ref(), &IgnoreList::default());
        let took = start.elapsed();
        tally.scans += 1;
        tally.total += took;
        tally.slowest = tally.slowest.max(took);
        tally.findings += scan.findings.len();
        if let Some(before) = &previous {
            compared += 1;
            let new = scan.clone().new_since(before);
            if new.active().next().is_some() {
                flagged += 1;
                println!(
                    "FLAG {} {}",
                    &commit[..10],
                    subject.chars().take(80).collect::<String>()
                );
                for f in new.active() {
                    let call = f
                        .slow
                        .first()
                        .map(|s| format!("{}:{}: {}", s.path, s.line, s.code))
                        .unwrap_or_default();
                    println!(
                        "  {} in {} ({}:{}): {call}",
                        f.kind, f.method, f.path, f.line
                    );
                }
            }
        }
        previous = Some(scan);
    }
    println!(
        "{}: {compared} commits compared, {flagged} flagged ({:.1}%); {:.1} findings per scan; scan mean {:.2} s, slowest {:.2} s",
        dir.display(),
        100.0 * flagged as f64 / compared.max(1) as f64,
        tally.findings as f64 / tally.scans.max(1) as f64,
        tally.total.as_secs_f64() / tally.scans.max(1) as f64,
        tally.slowest.as_secs_f64()
    );
    Ok(())
}
