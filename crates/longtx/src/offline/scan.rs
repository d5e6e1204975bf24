//! `longtx scan`: the checkout's transaction sites holding slow work, as
//! text, JSON or SARIF; with `--base`, only those the head adds.

use anyhow::{bail, Context};
use longtx_catalog::Catalogue;
use longtx_core::IgnoreList;
use std::path::{Path, PathBuf};
use std::process::Command;

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
    let head = longtx_scan::scan(&args.repo, catalogue.as_ref(), &ignore);
    let scan = match &args.base {
        None => head,
        Some(base) => {
            let tree = BaseTree::export(&args.repo, base)?;
            let before = longtx_scan::scan(tree.path(), catalogue.as_ref(), &ignore);
            head.new_since(&before)
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
    Ok(!(args.fail_on_findings && scan.active().next().is_some()))
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

/// The base revision's Ruby files in a folder of their own, dropped after:
/// `git archive` reads the object store, so the checkout is never touched.
/// Its `.git/HEAD` names the commit, so the analysis caches its indexes.
struct BaseTree {
    dir: PathBuf,
}

impl BaseTree {
    fn export(repo: &Path, revision: &str) -> anyhow::Result<BaseTree> {
        if revision.starts_with('-') {
            bail!("--base {revision}: not a revision");
        }
        let sha = git(
            repo,
            &["rev-parse", "--verify", &format!("{revision}^{{commit}}")],
        )
        .with_context(|| format!("--base {revision}: not a commit of {}", repo.display()))?;
        let dir = std::env::temp_dir().join(format!("longtx-scan-{}-{sha}", std::process::id()));
        std::fs::create_dir_all(dir.join(".git"))?;
        let tree = BaseTree { dir };
        std::fs::write(tree.dir.join(".git/HEAD"), format!("{sha}\n"))?;
        let archive = Command::new("git")
            .arg("-C")
            .arg(repo)
            // `.rb` and `.rake` in one pathspec: git refuses a pathspec
            // that matches nothing, and a tree without rake files is common.
            .args(["archive", "--format=tar", &sha, "--", ":(glob)**/*.r[ab]*"])
            .output()
            .context("running git archive")?;
        let stderr = String::from_utf8_lossy(&archive.stderr);
        if !archive.status.success() && stderr.contains("did not match any files") {
            // No Ruby at the base: everything at the head is new.
            return Ok(tree);
        }
        if !archive.status.success() {
            bail!(
                "git archive {sha}: {}",
                String::from_utf8_lossy(&archive.stderr).trim()
            );
        }
        let mut untar = Command::new("tar")
            .arg("-x")
            .arg("-C")
            .arg(&tree.dir)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .context("running tar")?;
        use std::io::Write;
        untar
            .stdin
            .take()
            .expect("piped")
            .write_all(&archive.stdout)?;
        if !untar.wait()?.success() {
            bail!("unpacking the base tree failed");
        }
        Ok(tree)
    }

    fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for BaseTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn git(repo: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()?;
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
