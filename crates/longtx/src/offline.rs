//! Commands that need no database: linting the catalogue, previewing a
//! prompt, showing who would review a change.

mod alerting;
pub mod ignore;
mod reviewers;
pub mod scan;

pub use reviewers::{print_reviewers, ReviewersArgs};

use crate::config::Config;
use anyhow::{bail, Context};
use longtx_core::QuerySource;
use longtx_prompt::JobFacts;
use std::path::{Path, PathBuf};

pub fn lint_patterns(dir: &Path) -> anyhow::Result<()> {
    let problems = longtx_catalog::lint_dir(dir).context("linting the pattern catalogue")?;
    let count = longtx_catalog::pattern_files(dir)?.len();
    for problem in &problems {
        println!("{problem}");
    }
    if problems.is_empty() {
        println!("{}: {count} patterns, no problems", dir.display());
        Ok(())
    } else {
        bail!("{} problem(s) in {}", problems.len(), dir.display())
    }
}

pub fn print_prompt(
    config: &Config,
    query_source: &str,
    tables: Vec<String>,
    duration: Option<f64>,
    repo: Option<PathBuf>,
) -> anyhow::Result<()> {
    // The same validation and normalisation as intake.
    let source =
        QuerySource::parse(query_source).map_err(|e| anyhow::anyhow!("--query-source: {e}"))?;
    let mut sources = config.prompt_sources();
    if let Some(repo) = &repo {
        if !repo.is_dir() {
            bail!(
                "--repo {}: no such directory (give a checkout of the target repository)",
                repo.display()
            );
        }
    }
    if repo.is_some() {
        sources.repo = repo;
    }
    let policy = config.policy();
    let facts = JobFacts {
        id: None,
        threshold_seconds: policy.threshold_for(tables.first().map(String::as_str)),
        query_source: source.as_str().to_owned(),
        tables,
        max_duration_seconds: duration,
        alert_count: 1,
        first_seen_at: None,
        last_seen_at: None,
        alert_links: Vec::new(),
        previous_rejection: Vec::new(),
        previous_fix: None,
    };
    let prompt = sources.build(&facts).map_err(|e| anyhow::anyhow!(e))?;
    print!("{}", prompt.text);
    eprintln!("longtx: {} bytes, {}", prompt.text.len(), prompt.revision);
    if let Some(note) = prompt.truncation {
        eprintln!("longtx: {note}");
    }
    Ok(())
}
