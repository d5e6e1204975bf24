//! `longtx scan`: the checkout's transaction sites holding slow work, as
//! text, JSON or SARIF; with `--base`, only those the head adds (the base's
//! Ruby read from the object store into a folder of its own, so the
//! checkout is never touched).

use anyhow::{bail, Context};
use longtx_catalog::Catalogue;
use longtx_core::IgnoreList;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Sarif,
}

pub struct ScanArgs {
    pub repo: PathBuf,
    pub base: Option<String>,
    pub format: Format,
    pub patterns: PathBuf,
    pub ignore_list: Option<PathBuf>,
    pub fail_on_findings: bool,
    /// A running longtx whose sources with jobs select the findings.
    pub alerting_from: Option<String>,
}

/// Runs the scan and prints it; `Ok(false)` when `--fail-on-findings` was
/// given and an unsilenced finding was printed.
pub fn run(args: ScanArgs) -> anyhow::Result<bool> {
    if !args.repo.is_dir() {
        bail!("--repo {}: no such directory", args.repo.display());
    }
    // A missing catalogue only loses the pattern names.
    let catalogue = Catalogue::load(&args.patterns).ok();
    let ignore = ignore_list(&args.repo, args.ignore_list.as_deref())?;
    let scan = match &args.base {
        None => longtx_scan::scan(&args.repo, catalogue.as_ref(), &ignore),
        Some(base) => {
            if base.starts_with('-') {
                bail!("--base {base}: not a revision");
            }
            // The base is written out while the head is scanned: one
            // waits on the disk and git's inflating, the other on the cores.
            let (head, tree) = std::thread::scope(|threads| {
                let export = threads.spawn(|| {
                    let repo = longtx_git::open(&args.repo).with_context(|| {
                        format!("--base needs a git repository: {}", args.repo.display())
                    })?;
                    longtx_git::export::ExportedTree::of(&repo, &format!("{base}^{{commit}}"))
                        .map_err(|_| {
                            anyhow::anyhow!(
                                "--base {base}: not a commit of {}",
                                args.repo.display()
                            )
                        })
                });
                let head = longtx_scan::scan(&args.repo, catalogue.as_ref(), &ignore);
                (head, export.join().expect("the export thread panicked"))
            });
            longtx_scan::diff_against(head, tree?.path(), catalogue.as_ref(), &ignore)
        }
    };
    let scan = match &args.alerting_from {
        None => scan,
        Some(url) => {
            let alerting = super::alerting::alerting_sources(url)?;
            let mut scan = scan;
            scan.findings.retain(|f| {
                f.entries
                    .iter()
                    .any(|e| alerting.contains(&longtx_core::query_source::canonical(e)))
            });
            scan
        }
    };
    match args.format {
        Format::Text => print!("{}", longtx_scan::text::render(&scan)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&scan)?),
        Format::Sarif => println!(
            "{}",
            serde_json::to_string_pretty(&longtx_scan::sarif::render(&scan))?
        ),
    }
    Ok(!(args.fail_on_findings && scan.blocking().next().is_some()))
}

/// `--ignore-list`, else the checkout's own `ignore-list.yaml` when it has
/// one (the file longtx keeps in the target repository), else nothing.
fn ignore_list(repo: &Path, given: Option<&Path>) -> anyhow::Result<IgnoreList> {
    let path = match given {
        Some(p) => p.to_owned(),
        None => {
            let own = repo.join("ignore-list.yaml");
            if !own.is_file() {
                return Ok(IgnoreList::default());
            }
            own
        }
    };
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    IgnoreList::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}
