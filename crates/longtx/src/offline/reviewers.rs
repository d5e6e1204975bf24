//! `longtx reviewers`: the reviewer choice for a set of files, from a local
//! checkout alone. It runs the same gathering and the same pure choice as
//! the service, minus what only GitHub knows (collaborators, the commit
//! API, open review counts), so a person can see why someone would be asked.

use crate::config::Config;
use anyhow::{bail, Context};
use chrono::{DateTime, NaiveDate, Utc};
use longtx_core::codeowners::Owner;
use longtx_core::reviewers::{choose, Candidate, Facts, Reviewer, Source};
use longtx_git::{gather, ChangedFile, HistoryOptions};
use longtx_pipeline::{configured_login, history_reason};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// As many history files as the service looks at.
const MAX_HISTORY_FILES: usize = 10;

/// Shown instead of a login that only GitHub's commit API could tell.
const UNKNOWN_LOGIN: &str = "GitHub login unknown offline; map it with LONGTX_AUTHOR_LOGINS";

pub struct ReviewersArgs<'a> {
    pub repo: &'a Path,
    pub files: &'a [String],
    pub rev: &'a str,
    pub as_of: Option<&'a str>,
    pub author: Option<&'a str>,
}

pub fn print_reviewers(config: &Config, args: ReviewersArgs<'_>) -> anyhow::Result<()> {
    if args.files.is_empty() {
        bail!("give at least one --file");
    }
    let as_of = match args.as_of {
        Some(text) => parse_as_of(text)?,
        None => Utc::now(),
    };
    let reviews = &config.reviews;
    let logins: HashMap<String, String> = reviews.author_logins.clone().into_iter().collect();
    let repo =
        longtx_git::open(args.repo).with_context(|| format!("opening {}", args.repo.display()))?;
    let files: Vec<ChangedFile> = args
        .files
        .iter()
        .map(|path| ChangedFile {
            path: path.trim_start_matches('/').to_owned(),
            changes: 0,
        })
        .collect();

    // A file that is not at the revision has no owner and no history: say
    // so rather than answer for a typo.
    let tip = longtx_git::commit_at(&repo, args.rev)
        .with_context(|| format!("finding revision {}", args.rev))?;
    let tree = tip.tree().context("reading the revision's tree")?;
    let missing: Vec<&str> = files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|path| tree.get_path(std::path::Path::new(path)).is_err())
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "longtx: not in {} at {}: {} (answering for a file that will be added)",
            args.repo.display(),
            args.rev,
            missing.join(", ")
        );
    }
    let owned = gather::owners(&repo, args.rev, &files).context("reading CODEOWNERS")?;
    for warning in &owned.warnings {
        eprintln!("warning: {warning}");
    }
    let excluded: HashSet<String> = args
        .author
        .map(|a| a.to_ascii_lowercase())
        .into_iter()
        .collect();
    let codeowners: Vec<Candidate> = owned
        .owners
        .into_iter()
        .map(|(owner, reason)| owner_candidate(owner, reason, &logins))
        .collect();
    let mut facts = Facts {
        fallback_team: reviews.fallback_team.clone(),
        max_reviewers: reviews.max_reviewers,
        excluded,
        codeowners,
        ..Facts::default()
    };
    // As in the service: history is read only when no owner is left.
    if choose(&facts).source != Source::Codeowners {
        let options = HistoryOptions::new(as_of, reviews.history_days);
        let people = gather::history(&repo, args.rev, &files, &options, MAX_HISTORY_FILES)
            .context("reading history")?;
        // As in the service, one person under several emails is scored once
        // (offline, only noreply addresses and LONGTX_AUTHOR_LOGINS name them).
        facts.history = longtx_git::merge_people(people, |p| configured_login(&p.email, &logins))
            .into_iter()
            .map(|(login, person)| Candidate {
                reason: history_reason(&person, reviews.history_days),
                reviewer: Reviewer::User(login.unwrap_or_else(|| person.email.clone())),
                score: person.score,
            })
            .collect();
    }
    let found = Found {
        codeowners_file: owned.codeowners_file.as_deref(),
        unowned: &owned.unowned,
        as_of,
        days: reviews.history_days,
    };
    print!("{}", render(&facts, found));
    Ok(())
}

fn owner_candidate(owner: Owner, reason: String, logins: &HashMap<String, String>) -> Candidate {
    let reviewer = match owner {
        Owner::User(login) => Reviewer::User(login),
        Owner::Team(team) => Reviewer::Team(team),
        Owner::Email(email) => Reviewer::User(configured_login(&email, logins).unwrap_or(email)),
    };
    Candidate {
        reviewer,
        reason,
        score: 0.0,
    }
}

struct Found<'a> {
    codeowners_file: Option<&'a str>,
    unowned: &'a [String],
    as_of: DateTime<Utc>,
    days: u32,
}

fn render(facts: &Facts, found: Found<'_>) -> String {
    let Found {
        codeowners_file,
        unowned,
        as_of,
        days,
    } = found;
    let choice = choose(facts);
    let mut out = String::new();
    let source = match choice.source {
        Source::Codeowners => format!("CODEOWNERS ({})", codeowners_file.unwrap_or("?")),
        Source::History => format!(
            "commit history, {days} days up to {}",
            as_of.format("%Y-%m-%d %H:%M UTC")
        ),
        Source::Fallback => "the fallback team (LONGTX_FALLBACK_TEAM)".to_owned(),
        Source::Nobody => {
            "nobody: no owner, no recent committer and no LONGTX_FALLBACK_TEAM".to_owned()
        }
    };
    out.push_str(&format!("source: {source}\n"));
    if codeowners_file.is_none() {
        out.push_str("codeowners: none of .github/CODEOWNERS, CODEOWNERS, docs/CODEOWNERS at this revision\n");
    } else if !unowned.is_empty() {
        out.push_str(&format!("unowned: {}\n", unowned.join(", ")));
    }
    out.push_str("reviewers:\n");
    for candidate in &choice.reviewers {
        out.push_str(&format!(
            "  {}: {}",
            display(&candidate.reviewer),
            candidate.reason
        ));
        if candidate.score > 0.0 {
            out.push_str(&format!(" (weight {:.2})", candidate.score));
        }
        out.push('\n');
    }
    if !choice.skipped.is_empty() {
        out.push_str("skipped:\n");
        for (who, why) in &choice.skipped {
            out.push_str(&format!("  {who}: {why}\n"));
        }
    }
    out
}

/// An email stands in for a login the commit API would have to supply.
fn display(reviewer: &Reviewer) -> String {
    match reviewer {
        Reviewer::User(name) if name.contains('@') => format!("<{name}> ({UNKNOWN_LOGIN})"),
        other => other.to_string(),
    }
}

/// `YYYY-MM-DD` means the end of that day in UTC, so its commits count;
/// RFC 3339 is taken as given.
pub fn parse_as_of(text: &str) -> anyhow::Result<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    let day = NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .with_context(|| format!("--as-of `{text}`: expected YYYY-MM-DD or an RFC 3339 time"))?;
    let next = day.succ_opt().context("--as-of is out of range")?;
    Ok(next
        .and_hms_opt(0, 0, 0)
        .expect("midnight exists")
        .and_utc())
}
