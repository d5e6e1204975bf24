//! Reviewer candidates for a PR's changed files, from the repository alone:
//! CODEOWNERS as of the base branch, and commit history. Mapping history
//! authors to GitHub logins is left to the caller, which may ask GitHub.

use crate::history::{file_history, HistoryOptions};
use crate::GitError;
use chrono::{DateTime, Utc};
use longtx_core::codeowners::Owner;
use std::collections::HashMap;

#[derive(Debug, Clone)]
pub struct ChangedFile {
    pub path: String,
    /// Lines added plus removed; larger changes are looked at first.
    pub changes: u64,
}

/// One person from history, summed over the files looked at.
#[derive(Debug, Clone)]
pub struct HistoryPerson {
    pub name: String,
    pub email: String,
    pub score: f64,
    /// Distinct commits: one touching three of the files counts once.
    pub commits: u32,
    pub latest: DateTime<Utc>,
    pub sample_commit: String,
    pub files: Vec<String>,
    pub commit_ids: std::collections::BTreeSet<String>,
}

impl HistoryPerson {
    /// Adds `other` (the same person under another email) to this one.
    pub fn absorb(&mut self, other: HistoryPerson) {
        self.score += other.score;
        if other.latest > self.latest {
            self.latest = other.latest;
            self.sample_commit = other.sample_commit;
        }
        for file in other.files {
            if !self.files.contains(&file) {
                self.files.push(file);
            }
        }
        self.commit_ids.extend(other.commit_ids);
        self.commits = self.commit_ids.len() as u32;
    }
}

/// People found under several emails, merged by the key `identity` gives
/// them (their GitHub login); the highest score first. People `identity`
/// has no key for stay apart, by email.
pub fn merge_people(
    people: Vec<HistoryPerson>,
    identity: impl Fn(&HistoryPerson) -> Option<String>,
) -> Vec<(Option<String>, HistoryPerson)> {
    let mut merged: Vec<(Option<String>, HistoryPerson)> = Vec::new();
    for person in people {
        let key = identity(&person);
        match merged.iter_mut().find(|(k, p)| match (&key, k) {
            (Some(key), Some(k)) => k.eq_ignore_ascii_case(key),
            _ => p.email == person.email,
        }) {
            Some((_, existing)) => existing.absorb(person),
            None => merged.push((key, person)),
        }
    }
    merged.sort_by(|a, b| {
        b.1.score
            .total_cmp(&a.1.score)
            .then_with(|| a.1.email.cmp(&b.1.email))
    });
    merged
}

#[derive(Debug, Clone, Default)]
pub struct Gathered {
    /// Which CODEOWNERS file was read, if any.
    pub codeowners_file: Option<String>,
    /// Skipped CODEOWNERS lines, as `path:line: message`.
    pub warnings: Vec<String>,
    /// Owners of the changed files, united, each with why.
    pub owners: Vec<(Owner, String)>,
    /// Files whose deciding line names nobody, or that no line matches.
    pub unowned: Vec<String>,
}

/// CODEOWNERS for `files` as of `rev`. Owners are united across files, in
/// the order files are given.
pub fn owners(
    repo: &git2::Repository,
    rev: &str,
    files: &[ChangedFile],
) -> Result<Gathered, GitError> {
    let mut gathered = Gathered::default();
    let Some((location, codeowners)) = crate::codeowners_at(repo, rev)? else {
        gathered.unowned = files.iter().map(|f| f.path.clone()).collect();
        return Ok(gathered);
    };
    gathered.warnings = codeowners
        .warnings
        .iter()
        .map(|w| format!("{location}:{}: {}", w.line, w.message))
        .collect();
    for file in files {
        match codeowners.rule_for(&file.path) {
            Some(rule) if !rule.owners.is_empty() => {
                for owner in &rule.owners {
                    if !gathered.owners.iter().any(|(o, _)| o == owner) {
                        let reason = format!(
                            "owns `{}` ({location} line {}: `{}`)",
                            file.path, rule.line, rule.pattern
                        );
                        gathered.owners.push((owner.clone(), reason));
                    }
                }
            }
            _ => gathered.unowned.push(file.path.clone()),
        }
    }
    gathered.codeowners_file = Some(location);
    Ok(gathered)
}

/// History for the largest `max_files` changes among `files`, summed per
/// author email, highest score first.
pub fn history(
    repo: &git2::Repository,
    rev: &str,
    files: &[ChangedFile],
    options: &HistoryOptions,
    max_files: usize,
) -> Result<Vec<HistoryPerson>, GitError> {
    let mut largest: Vec<&ChangedFile> = files.iter().collect();
    largest.sort_by(|a, b| b.changes.cmp(&a.changes).then_with(|| a.path.cmp(&b.path)));
    largest.truncate(max_files);
    let mut people: HashMap<String, HistoryPerson> = HashMap::new();
    for file in largest {
        for author in file_history(repo, rev, &file.path, options)?.authors {
            let person = people
                .entry(author.email.clone())
                .or_insert_with(|| HistoryPerson {
                    name: author.name.clone(),
                    email: author.email.clone(),
                    score: 0.0,
                    commits: 0,
                    latest: author.latest,
                    sample_commit: author.sample_commit.clone(),
                    files: Vec::new(),
                    commit_ids: Default::default(),
                });
            person.score += author.score;
            person.commit_ids.extend(author.commit_ids.iter().cloned());
            person.commits = person.commit_ids.len() as u32;
            if author.latest > person.latest {
                person.latest = author.latest;
                person.sample_commit = author.sample_commit;
            }
            person.files.push(file.path.clone());
        }
    }
    let mut people: Vec<HistoryPerson> = people.into_values().collect();
    people.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.email.cmp(&b.email))
    });
    Ok(people)
}
