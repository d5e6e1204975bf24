//! `longtx ignore add | check | lint`: for people who edit the ignore list
//! by hand. `add` writes exactly what the wontfix label writes (appended,
//! quoted, comments kept); `check` answers as intake would.

use anyhow::{bail, Context};
use longtx_core::ignore_list::{add_entry, Added};
use longtx_core::{IgnoreEntry, IgnoreList, QuerySource};
use std::path::Path;

pub struct AddArgs<'a> {
    pub source: &'a str,
    pub reason: &'a str,
    pub pr: Option<&'a str>,
    pub by: Option<&'a str>,
}

pub fn add(file: &Path, args: AddArgs<'_>) -> anyhow::Result<()> {
    let source =
        QuerySource::parse(args.source).map_err(|e| anyhow::anyhow!("the query_source: {e}"))?;
    if args.reason.trim().is_empty() {
        bail!("--reason must say why the source is not fixed");
    }
    if let Some(pr) = args.pr {
        // The entry links the decision: a URL a person can open.
        let is_url = url::Url::parse(pr)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
        if !is_url {
            bail!("--pr {pr:?} is not a URL: give the PR's address, e.g. https://github.com/acme/app/pull/42");
        }
    }
    let text = read_or_empty(file)?;
    let mut entry = IgnoreEntry::exact(&source);
    entry.reason = Some(args.reason.trim().to_owned());
    entry.pr = args.pr.map(str::to_owned);
    entry.added_by = args
        .by
        .map(str::to_owned)
        .or_else(|| std::env::var("USER").ok());
    entry.added_at = Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    match add_entry(&text, &entry).with_context(|| file.display().to_string())? {
        Added::AlreadyListed => println!("{}: {} is already listed", file.display(), source),
        Added::Changed(new_text) => {
            std::fs::write(file, new_text)
                .with_context(|| format!("writing {}", file.display()))?;
            println!("{}: added {}", file.display(), source);
        }
    }
    Ok(())
}

/// Exit status 0 when the source is ignored, an error (status 1) when not.
pub fn check(file: &Path, raw: &str) -> anyhow::Result<()> {
    let source = QuerySource::parse(raw).map_err(|e| anyhow::anyhow!("the query_source: {e}"))?;
    if !file.exists() {
        bail!(
            "{} does not exist: there is no ignore list to check (set --file or LONGTX_IGNORE_LIST)",
            file.display()
        );
    }
    let list =
        IgnoreList::parse(&read_or_empty(file)?).with_context(|| file.display().to_string())?;
    match list.matching(&source) {
        Some(entry) => {
            let how = if entry.query_source == source.as_str() {
                "exactly"
            } else {
                "by the glob"
            };
            println!("{source}: ignored, {how} `{}`", entry.query_source);
            if let Some(reason) = &entry.reason {
                println!("  reason: {reason}");
            }
            if let Some(pr) = &entry.pr {
                println!("  pr: {pr}");
            }
            Ok(())
        }
        None => bail!("{source}: not in {}", file.display()),
    }
}

pub fn lint(file: &Path) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let list = IgnoreList::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let mut problems = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (index, entry) in list.entries().iter().enumerate() {
        let n = index + 1;
        if !seen.insert(entry.query_source.trim()) {
            problems.push(format!(
                "entry {n}: `{}` is listed twice",
                entry.query_source
            ));
        }
        if entry.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
            problems.push(format!("entry {n}: `{}` has no reason", entry.query_source));
        }
    }
    for problem in &problems {
        println!("{}: {problem}", file.display());
    }
    if problems.is_empty() {
        let n = list.entries().len();
        println!(
            "{}: {n} {}, no problems",
            file.display(),
            if n == 1 { "entry" } else { "entries" }
        );
        Ok(())
    } else {
        bail!("{} problem(s) in {}", problems.len(), file.display())
    }
}

fn read_or_empty(file: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", file.display())),
    }
}
