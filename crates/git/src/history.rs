//! Who committed to one file lately, read straight from the object store.
//!
//! The walk goes newest first and stops at the first commit older than the
//! window (as `git log --since` does), so its cost follows the last year's
//! commits, not the whole history. For each commit it compares the file's
//! blob id with the parent's; lookups are memoised per commit, so every
//! tree is read once. When the file first appears, git2's rename detection
//! on that one commit finds its earlier name, and the walk follows both.

use crate::GitError;
use chrono::{DateTime, Duration, TimeZone, Utc};
use git2::{Oid, Repository};
use longtx_core::reviewers::{is_bot, recency_weight};
use std::collections::{HashMap, HashSet};
use std::path::Path;

#[derive(Debug, Clone)]
pub struct HistoryOptions {
    /// The end of the window; fixed in tests and `--as-of` for results that
    /// do not drift with the clock.
    pub as_of: DateTime<Utc>,
    pub days: u32,
    pub half_life_days: f64,
}

impl HistoryOptions {
    pub fn new(as_of: DateTime<Utc>, days: u32) -> Self {
        HistoryOptions {
            as_of,
            days,
            half_life_days: 90.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AuthorStat {
    pub name: String,
    /// Lowercased, after `.mailmap`.
    pub email: String,
    pub commits: u32,
    pub score: f64,
    pub latest: DateTime<Utc>,
    /// One of their commits, for looking the author up on GitHub.
    pub sample_commit: String,
    /// Every commit counted, so that a person's commits over several files
    /// are counted once each.
    pub commit_ids: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct FileHistory {
    pub path: String,
    /// Earlier names the file had, newest first.
    pub renamed_from: Vec<String>,
    /// Highest score first.
    pub authors: Vec<AuthorStat>,
    pub commits_walked: u32,
    pub skipped_bots: u32,
    pub skipped_ignored_revs: u32,
    pub skipped_merges: u32,
}

/// The authors of `path` over the window ending at `options.as_of`, as seen
/// from `rev`. `.mailmap` and `.git-blame-ignore-revs` are read from `rev`.
pub fn file_history(
    repo: &Repository,
    rev: &str,
    path: &str,
    options: &HistoryOptions,
) -> Result<FileHistory, GitError> {
    let tip = crate::commit_at(repo, rev)?;
    let mailmap = match crate::read_at(repo, &tip, ".mailmap")? {
        Some(text) => git2::Mailmap::from_buffer(&text)?,
        None => git2::Mailmap::new()?,
    };
    let ignored = ignored_revs(crate::read_at(repo, &tip, ".git-blame-ignore-revs")?);
    let since = options.as_of - Duration::days(i64::from(options.days));
    let (since_ts, as_of_ts) = (since.timestamp(), options.as_of.timestamp());

    let mut walk = repo.revwalk()?;
    walk.push(tip.id())?;
    // The default order is git's: newest commit date first, produced
    // lazily. `Sort::TIME` would walk the whole history before the first
    // commit comes out.

    let mut names = vec![path.trim_start_matches('/').to_owned()];
    let mut blobs = BlobCache::default();
    let mut by_email: HashMap<String, AuthorStat> = HashMap::new();
    let mut history = FileHistory {
        path: names[0].clone(),
        ..FileHistory::default()
    };
    for oid in walk {
        let commit = repo.find_commit(oid?)?;
        if commit.time().seconds() < since_ts {
            break;
        }
        history.commits_walked += 1;
        if commit.parent_count() > 1 {
            history.skipped_merges += 1;
            continue;
        }
        let parent = commit.parents().next();
        let touched: Vec<usize> = (0..names.len())
            .filter(|&i| {
                let here = blobs.get(repo, &commit, i, &names[i]);
                let before = parent
                    .as_ref()
                    .and_then(|p| blobs.get(repo, p, i, &names[i]));
                here != before
            })
            .collect();
        if touched.is_empty() {
            continue;
        }
        // Born here: was it renamed from something the walk should follow?
        let newest = names.len() - 1;
        if let Some(parent) = &parent {
            if touched.contains(&newest)
                && blobs.get(repo, &commit, newest, &names[newest]).is_some()
                && blobs.get(repo, parent, newest, &names[newest]).is_none()
            {
                if let Some(old) = renamed_from(repo, parent, &commit, &names[newest])? {
                    history.renamed_from.push(old.clone());
                    names.push(old);
                }
            }
        }
        let author_ts = commit.author().when().seconds();
        if author_ts > as_of_ts || author_ts < since_ts {
            continue;
        }
        if ignored.contains(&oid_hex(&commit.id())) {
            history.skipped_ignored_revs += 1;
            continue;
        }
        let author = mailmap.resolve_signature(&commit.author())?;
        let name = author.name().unwrap_or("").to_owned();
        let email = author.email().unwrap_or("").to_ascii_lowercase();
        if is_bot(&name) || is_bot(&email) {
            history.skipped_bots += 1;
            continue;
        }
        let when = Utc
            .timestamp_opt(author_ts, 0)
            .single()
            .unwrap_or(options.as_of);
        let age_days = (options.as_of - when).num_seconds() as f64 / 86_400.0;
        let stat = by_email.entry(email.clone()).or_insert_with(|| AuthorStat {
            name,
            email,
            commits: 0,
            score: 0.0,
            latest: when,
            sample_commit: oid_hex(&commit.id()),
            commit_ids: Vec::new(),
        });
        stat.commits += 1;
        stat.commit_ids.push(oid_hex(&commit.id()));
        stat.score += recency_weight(age_days, options.half_life_days);
        stat.latest = stat.latest.max(when);
    }
    history.authors = by_email.into_values().collect();
    history.authors.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.email.cmp(&b.email))
    });
    Ok(history)
}

fn oid_hex(oid: &Oid) -> String {
    oid.to_string()
}

/// `.git-blame-ignore-revs`: one full commit id per line, `#` comments.
fn ignored_revs(text: Option<String>) -> HashSet<String> {
    text.unwrap_or_default()
        .lines()
        .map(|line| {
            line.split('#')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|line| line.len() >= 40 && line.bytes().all(|b| b.is_ascii_hexdigit()))
        .collect()
}

/// The blob id of a path in a commit, memoised twice over: per commit (the
/// walk asks about each commit as itself and as the next one's parent),
/// and per subtree, so a commit that left `app/` alone costs one root tree
/// read, not one read per directory on the path.
#[derive(Default)]
struct BlobCache {
    /// (commit, index of the name in the walk's name list).
    by_commit: HashMap<(Oid, usize), Option<Oid>>,
    /// (tree, name index, depth of that tree on the name's path).
    by_tree: HashMap<(Oid, usize, usize), Option<Oid>>,
}

impl BlobCache {
    fn get(
        &mut self,
        repo: &Repository,
        commit: &git2::Commit<'_>,
        name_index: usize,
        path: &str,
    ) -> Option<Oid> {
        if let Some(id) = self.by_commit.get(&(commit.id(), name_index)) {
            return *id;
        }
        let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        let id = self.lookup(repo, commit.tree_id(), name_index, &components, 0);
        self.by_commit.insert((commit.id(), name_index), id);
        id
    }

    fn lookup(
        &mut self,
        repo: &Repository,
        tree_id: Oid,
        name_index: usize,
        components: &[&str],
        depth: usize,
    ) -> Option<Oid> {
        let key = (tree_id, name_index, depth);
        if let Some(id) = self.by_tree.get(&key) {
            return *id;
        }
        let entry = repo
            .find_tree(tree_id)
            .ok()
            .and_then(|tree| tree.get_name(components[depth]).map(|e| e.id()));
        let id = match entry {
            Some(id) if depth + 1 < components.len() => {
                self.lookup(repo, id, name_index, components, depth + 1)
            }
            other => other,
        };
        self.by_tree.insert(key, id);
        id
    }
}

/// The file's name in `parent` when `commit` renamed it to `path`.
fn renamed_from(
    repo: &Repository,
    parent: &git2::Commit<'_>,
    commit: &git2::Commit<'_>,
    path: &str,
) -> Result<Option<String>, GitError> {
    let mut diff = repo.diff_tree_to_tree(Some(&parent.tree()?), Some(&commit.tree()?), None)?;
    diff.find_similar(Some(git2::DiffFindOptions::new().renames(true)))?;
    let target = Path::new(path);
    Ok(diff.deltas().find_map(|delta| {
        (delta.status() == git2::Delta::Renamed && delta.new_file().path() == Some(target))
            .then(|| delta.old_file().path())
            .flatten()
            .map(|old| old.to_string_lossy().into_owned())
    }))
}
