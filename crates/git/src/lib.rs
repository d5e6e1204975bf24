//! The target repository as longtx reads it, through git2.
//!
//! - [`Mirror`]: a bare local copy that longtx keeps fetched. Fetching runs
//!   the `git` program, because git2's HTTPS transport needs OpenSSL and
//!   this build uses rustls everywhere; all reading is git2.
//! - [`codeowners_at`]: CODEOWNERS as of a ref (the PR's base branch).
//! - [`history::file_history`]: who committed to a file lately.
//! - [`gather`]: both, for a PR's changed files, as reviewer candidates.
//! - [`wontfix`]: the commit that replaces a declined fix.
//!
//! Nothing here touches the database; callers run it with no connection held.

pub mod export;
pub mod gather;
pub mod history;
mod mirror;
pub mod patch;
pub mod wontfix;

pub use gather::{merge_people, ChangedFile, Gathered, HistoryPerson};
pub use history::{file_history, FileHistory, HistoryOptions};
pub use mirror::{Mirror, Pushed};

use longtx_core::codeowners::{Codeowners, LOCATIONS};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// libgit2's message alone: its `class=Os (2); code=NotFound (-3)`
    /// suffix says nothing to a person. Not a `source` either, or an error
    /// chain would print the message a second time with the suffix.
    #[error("git: {}", .0.message())]
    Git(git2::Error),
    #[error("a git command on the mirror failed: {0}")]
    Fetch(String),
    #[error("{0}")]
    Invalid(String),
}

impl From<git2::Error> for GitError {
    fn from(e: git2::Error) -> Self {
        GitError::Git(e)
    }
}

/// Opens a repository, bare or with a work tree.
pub fn open(path: &Path) -> Result<git2::Repository, GitError> {
    skip_rehashing_objects();
    Ok(git2::Repository::open(path)?)
}

/// libgit2 re-hashes every object it reads (with collision detection) by
/// default, which costs a quarter of a history walk. The objects longtx
/// reads were checked when `git fetch` indexed the pack, or come from a
/// repository the user points `longtx reviewers` at; a corrupt object would
/// still fail to inflate or parse.
fn skip_rehashing_objects() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| git2::opts::strict_hash_verification(false));
}

/// The commit a revision (`HEAD`, `refs/heads/main`, a sha) names.
pub fn commit_at<'r>(repo: &'r git2::Repository, rev: &str) -> Result<git2::Commit<'r>, GitError> {
    Ok(repo.revparse_single(rev)?.peel_to_commit()?)
}

/// What a pull request's change is measured from: the merge base of its
/// `head` and `base` commits, so what the base branch gained meanwhile is
/// not counted as the PR's. `None` when `head` is not in the repository
/// (the PR moved on and the commit was never fetched).
pub fn merge_base(
    repo: &git2::Repository,
    head: &str,
    base: &str,
) -> Result<Option<String>, GitError> {
    let Ok(head) = git2::Oid::from_str(head) else {
        return Ok(None);
    };
    if repo.find_commit(head).is_err() {
        return Ok(None);
    }
    let base = commit_at(repo, base)?.id();
    Ok(Some(repo.merge_base(head, base)?.to_string()))
}

/// A file's text as of a commit; `None` when the file is not there.
pub fn read_at(
    repo: &git2::Repository,
    commit: &git2::Commit<'_>,
    path: &str,
) -> Result<Option<String>, GitError> {
    let tree = commit.tree()?;
    let entry = match tree.get_path(Path::new(path)) {
        Ok(entry) => entry,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    match repo.find_blob(entry.id()) {
        Ok(blob) => Ok(Some(String::from_utf8_lossy(blob.content()).into_owned())),
        // A directory or submodule by that name is not the file.
        Err(_) => Ok(None),
    }
}

/// The first CODEOWNERS file GitHub would use, as of `rev`, with its path.
pub fn codeowners_at(
    repo: &git2::Repository,
    rev: &str,
) -> Result<Option<(String, Codeowners)>, GitError> {
    let commit = commit_at(repo, rev)?;
    for location in LOCATIONS {
        if let Some(text) = read_at(repo, &commit, location)? {
            return Ok(Some((location.to_owned(), Codeowners::parse(&text))));
        }
    }
    Ok(None)
}
