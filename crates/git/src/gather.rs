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
    pub commits: u32,
    pub latest: DateTime<Utc>,
    pub sample_commit: String,
    pub files: Vec<String>,
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
                });
            person.score += author.score;
            person.commits += author.commits;
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
