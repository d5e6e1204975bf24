//! History reviewers for one file against `git log` on the same file.
//!
//! Builds repositories of at least 10,000 commits with `git fast-import`
//! (several hundred files in nested directories, a dozen authors, the
//! measured file touched by about one commit in twenty), then times,
//! side by side and alternating so disk and cache state are shared:
//! - `git log --since-as-filter=<1 year> --format=%ae -- FILE`
//! - `longtx_git::file_history` for the same file and window (which also
//!   follows renames and reads `.mailmap` and `.git-blame-ignore-revs`).
//!
//! Two shapes: history spread over three years (the usual monolith), and
//! every commit inside the last year (the worst case for longtx, which can
//! then not stop early). The goal is a ratio of at most 1.5.
//!
//! Usage: `cargo run --release -p longtx-bench --bin history-bench [COMMITS]`

mod help;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FILE: &str = "app/models/order.rb";
const ROUNDS: usize = 9;

const USAGE: &str =
    "history-bench: history reviewers for one file against `git log` on the same file.

Usage: history-bench [COMMITS]
  COMMITS  commits in each generated repository (default 12000)";

fn main() -> anyhow::Result<()> {
    help::answer_help(USAGE);
    let commits: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(12_000);
    let now = chrono::Utc::now();
    println!("history-bench: {commits} commits per repository, {ROUNDS} rounds, median times");
    println!(
        "{:<28} {:>12} {:>12} {:>8} {:>8}",
        "shape", "git log", "longtx", "ratio", "authors"
    );
    let keep = std::env::var_os("KEEP").is_some();
    for (shape, span_days) in [
        ("spread over 3 years", 3 * 365),
        ("all in the last year", 360),
    ] {
        let dir = std::env::temp_dir().join(format!(
            "longtx-history-bench-{}-{span_days}",
            std::process::id()
        ));
        build(&dir, commits, span_days, now.timestamp())?;
        // Both read the repository as longtx keeps it: a mirror fetched
        // over git's pack protocol (file:// forces it), whose pack git's
        // pack-objects wrote. fast-import's own pack chains every tree
        // delta from oldest to newest, which no fetched repository does.
        let mirror = longtx_git::Mirror {
            path: dir.with_extension("mirror"),
            url: format!("file://{}", dir.display()),
        };
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(mirror.fetch("main", None, Duration::from_secs(600)))?;
        let status = Command::new("git")
            .arg("-C")
            .arg(&mirror.path)
            .args(["symbolic-ref", "HEAD", "refs/heads/main"])
            .status()?;
        anyhow::ensure!(status.success(), "git symbolic-ref failed");
        let (git_log, ours, authors) = measure(&mirror.path, now)?;
        let ratio = ours.as_secs_f64() / git_log.as_secs_f64();
        println!(
            "{shape:<28} {:>9.1} ms {:>9.1} ms {ratio:>8.2} {authors:>8}",
            git_log.as_secs_f64() * 1e3,
            ours.as_secs_f64() * 1e3,
        );
        println!(
            "  goal: ratio <= 1.5: {}",
            if ratio <= 1.5 { "met" } else { "NOT met" }
        );
        if !keep {
            std::fs::remove_dir_all(&dir).ok();
            std::fs::remove_dir_all(&mirror.path).ok();
        }
    }
    Ok(())
}

fn measure(
    dir: &Path,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<(Duration, Duration, usize)> {
    let since = (now - chrono::Duration::days(365)).to_rfc3339();
    let options = longtx_git::HistoryOptions::new(now, 365);
    let (mut git_times, mut our_times) = (Vec::new(), Vec::new());
    let mut authors = 0;
    for round in 0..ROUNDS + 1 {
        let start = Instant::now();
        let output = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "log",
                &format!("--since-as-filter={since}"),
                "--format=%ae",
                "--",
                FILE,
            ])
            .output()?;
        let git_time = start.elapsed();
        anyhow::ensure!(output.status.success(), "git log failed");
        let start = Instant::now();
        // Opening the repository is part of the work, as in the service.
        let repo = longtx_git::open(dir)?;
        let history = longtx_git::file_history(&repo, "HEAD", FILE, &options)?;
        let our_time = start.elapsed();
        authors = history.authors.len();
        if round > 0 {
            // Round 0 warms the page cache for both.
            git_times.push(git_time);
            our_times.push(our_time);
        }
    }
    git_times.sort();
    our_times.sort();
    Ok((git_times[ROUNDS / 2], our_times[ROUNDS / 2], authors))
}

/// A bare repository of `commits` commits, evenly spread over `span_days`
/// days up to `now`, written through one `git fast-import`.
fn build(dir: &PathBuf, commits: usize, span_days: i64, now: i64) -> anyhow::Result<()> {
    std::fs::remove_dir_all(dir).ok();
    let status = Command::new("git")
        .args(["init", "--quiet", "--bare", "--initial-branch=main"])
        .arg(dir)
        .status()?;
    anyhow::ensure!(status.success(), "git init failed");
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()?;
    let mut input = std::io::BufWriter::new(child.stdin.take().unwrap());
    let dirs = [
        "app/models",
        "app/controllers/admin",
        "app/jobs",
        "lib/tasks",
        "config",
        "spec/models",
    ];
    let start = now - span_days * 86_400;
    let step = (span_days * 86_400) / commits as i64;
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for n in 0..commits {
        let when = start + step * n as i64;
        let author = next() % 12;
        let path = if next() % 20 == 0 {
            FILE.to_owned()
        } else {
            format!(
                "{}/file_{}.rb",
                dirs[(next() % dirs.len() as u64) as usize],
                next() % 80
            )
        };
        let content = format!("# revision {n} by author {author}\n");
        writeln!(input, "commit refs/heads/main")?;
        writeln!(
            input,
            "author Author {author} <author{author}@example.com> {when} +0000"
        )?;
        writeln!(
            input,
            "committer Author {author} <author{author}@example.com> {when} +0000"
        )?;
        let message = format!("change {n}");
        writeln!(input, "data {}\n{message}", message.len())?;
        writeln!(input, "M 100644 inline {path}")?;
        writeln!(input, "data {}\n{content}", content.len())?;
    }
    input.flush()?;
    drop(input);
    anyhow::ensure!(child.wait()?.success(), "git fast-import failed");
    Ok(())
}
