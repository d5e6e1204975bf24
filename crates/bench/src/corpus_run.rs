//! What the corpus benches (`locate-bench`, `realfix-bench`, `scan-bench`)
//! share: their command line, the corpus files of a folder and its two
//! halves, where each application's checkout is and how to check a commit
//! out there, and how a miss shows its transaction sites. Each bench uses
//! its part of it.
#![allow(dead_code)]

use anyhow::Context;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

#[derive(Clone)]
pub struct CorpusRun {
    /// The repository root (for `patterns/` and the default corpus).
    pub root: PathBuf,
    pub checkouts: PathBuf,
    pub corpus: PathBuf,
    /// `--corpus` was given (else the default folder); realfix-bench
    /// then measures that folder alone instead of its two halves.
    #[allow(dead_code)]
    pub corpus_given: bool,
    /// `--misses`: print each miss.
    pub misses: bool,
}

impl CorpusRun {
    /// `--checkouts DIR [--corpus DIR] [--misses]`; the corpus defaults to
    /// `default_corpus` under the repository root.
    pub fn from_args(default_corpus: &str) -> anyhow::Result<CorpusRun> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let flag = |name: &str| {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
                .cloned()
        };
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let checkouts = PathBuf::from(flag("--checkouts").with_context(|| {
            format!("--checkouts DIR is required: the clones made by `scripts/corpus-checkouts DIR {default_corpus}`")
        })?);
        let given = flag("--corpus");
        let corpus_given = given.is_some();
        let corpus = given
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(default_corpus));
        Ok(CorpusRun {
            corpus_given,
            misses: args.iter().any(|a| a == "--misses"),
            root,
            checkouts,
            corpus,
        })
    }

    /// The corpus given, or both halves: the one the rules were tuned on
    /// and the held-out one (labelled blind), each as a run of its own with
    /// the name benches print. The held-out half never prints its misses:
    /// a miss read is a miss tuned on, and the half would stop measuring
    /// anything unseen. Only `--corpus corpus/real-fixes-heldout`, asked for
    /// by name, shows them.
    pub fn halves(&self) -> Vec<(&'static str, CorpusRun)> {
        if self.corpus_given {
            return vec![("all", self.clone())];
        }
        let tuned = CorpusRun {
            corpus: self.corpus.clone(),
            ..self.clone()
        };
        let held_out = CorpusRun {
            corpus: self.root.join("corpus/real-fixes-heldout"),
            misses: false,
            ..self.clone()
        };
        vec![
            ("tuned on (corpus/real-fixes)", tuned),
            ("HELD OUT (corpus/real-fixes-heldout)", held_out),
        ]
    }

    /// Every `*.yaml` of the corpus folder, parsed, in name order.
    pub fn files<T: DeserializeOwned>(&self) -> anyhow::Result<Vec<T>> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&self.corpus)
            .with_context(|| format!("reading {}", self.corpus.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        paths.sort();
        paths
            .iter()
            .map(|path| {
                serde_yaml::from_str(&std::fs::read_to_string(path)?)
                    .with_context(|| format!("parsing {}", path.display()))
            })
            .collect()
    }

    /// `repository`'s checkout, or `None` (said as MISSING) when it is not
    /// there.
    pub fn checkout_of(&self, repository: &str) -> Option<PathBuf> {
        let dir = self.checkouts.join(repository.replace('/', "+"));
        if dir.is_dir() {
            return Some(dir);
        }
        println!(
            "MISSING {repository}: no checkout at {} (run `scripts/corpus-checkouts {} {}`)",
            dir.display(),
            self.checkouts.display(),
            self.corpus.display()
        );
        None
    }
}

/// A job's transaction sites as a miss shows them: score, place, route, why.
pub fn print_sites(sites: &[longtx_prompt::locate::Site]) {
    for site in sites {
        println!(
            "    {} {}:{} {}\n      {}",
            site.score,
            site.path,
            site.line,
            site.route(),
            site.why
        );
    }
}

/// Checks `commit` out in the corpus checkout at `dir`.
pub fn checkout(dir: &Path, commit: &str) -> anyhow::Result<()> {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "-q",
            "-f",
            commit,
        ])
        .status()?;
    if status.success() {
        return Ok(());
    }
    // A mirror without its large binary blobs cannot check out a commit
    // that has one: write the Ruby and YAML the bench reads instead, into a
    // tree emptied of every other commit's files, and point HEAD at it
    // (the indexes are cached by the commit HEAD names).
    let script = format!(
        "find . -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {{}} + && \
         git ls-tree -r --name-only {commit} | grep -E '[.](rb|rake|yml)$|(^|/)Gemfile$' | \
         grep -vE '^(spec|test)/.*[.]yml$' | \
         xargs -d '\\n' sh -c 'git archive {commit} -- \"$@\" | tar -x' _ && \
         git update-ref --no-deref HEAD {commit}"
    );
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()?;
    anyhow::ensure!(
        status.success(),
        "git checkout {commit} in {}",
        dir.display()
    );
    Ok(())
}
