//! The commit that replaces a declined fix: the PR branch becomes the base
//! branch's head plus one commit that adds the source to the ignore list.
//! Built in the mirror with git2 (no work tree); pushed by
//! [`Mirror::push_with_lease`](crate::Mirror::push_with_lease).

use crate::{commit_at, read_at, GitError};
use git2::{Oid, Repository};
use longtx_core::ignore_list::{add_entry, Added};
use longtx_core::wontfix::{commit_message, commit_trailer};
use longtx_core::IgnoreEntry;

pub struct WontfixCommit<'a> {
    pub job_id: i64,
    pub base_branch: &'a str,
    pub pr_branch: &'a str,
    /// The ignore list's path in the repository.
    pub path: &'a str,
    pub entry: &'a IgnoreEntry,
    pub author_name: &'a str,
    pub author_email: &'a str,
    /// Seconds since the epoch, for the commit's dates.
    pub time: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Prepared {
    /// The branch already holds longtx's commit for this job (a retry
    /// after a crash, or a redelivered label): nothing to push.
    AlreadyDone { commit: String },
    /// Push `commit` to the PR branch if it still points at `expected_head`
    /// (`None`: the branch is gone).
    Push {
        commit: String,
        expected_head: Option<String>,
    },
}

pub fn prepare(repo: &Repository, plan: &WontfixCommit<'_>) -> Result<Prepared, GitError> {
    let base = commit_at(repo, &format!("refs/heads/{}", plan.base_branch))?;
    let head = match repo.find_reference(&format!("refs/heads/{}", plan.pr_branch)) {
        Ok(reference) => Some(reference.peel_to_commit()?),
        Err(e) if e.code() == git2::ErrorCode::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(head) = &head {
        if is_our_commit(repo, head, &base, plan)? {
            return Ok(Prepared::AlreadyDone {
                commit: head.id().to_string(),
            });
        }
    }
    let text = read_at(repo, &base, plan.path)?.unwrap_or_default();
    let commit = match add_entry(&text, plan.entry)
        .map_err(|e| GitError::Invalid(format!("{}: {e}", plan.path)))?
    {
        // Listed on the base already: dropping the fix commits is all.
        Added::AlreadyListed => base.id(),
        Added::Changed(new_text) => commit_on(repo, &base, plan, new_text.as_bytes())?,
    };
    let expected_head = head.map(|h| h.id().to_string());
    if expected_head.as_deref() == Some(commit.to_string().as_str()) {
        return Ok(Prepared::AlreadyDone {
            commit: commit.to_string(),
        });
    }
    Ok(Prepared::Push {
        commit: commit.to_string(),
        expected_head,
    })
}

/// Exactly what an earlier attempt made: one parent, and that parent the
/// base branch's head (no other commit under it); longtx's trailer for
/// this job; a diff that touches only the ignore list; and the list equal
/// to the base's plus one entry for this source, nothing else (its reason
/// and date may differ between attempts). Anything else on the branch is
/// replaced, never taken as done.
fn is_our_commit(
    repo: &Repository,
    head: &git2::Commit<'_>,
    base: &git2::Commit<'_>,
    plan: &WontfixCommit<'_>,
) -> Result<bool, GitError> {
    let ours = head.parent_count() == 1
        && head.parent_id(0)? == base.id()
        && head
            .message()
            .is_some_and(|m| m.lines().any(|l| l.trim() == commit_trailer(plan.job_id)));
    if !ours {
        return Ok(false);
    }
    let diff = repo.diff_tree_to_tree(Some(&base.tree()?), Some(&head.tree()?), None)?;
    let only_the_list = diff.deltas().all(|d| {
        d.new_file().path().and_then(|p| p.to_str()) == Some(plan.path)
            && d.old_file().path().and_then(|p| p.to_str()) == Some(plan.path)
    });
    if !only_the_list || diff.deltas().len() != 1 {
        return Ok(false);
    }
    let entries = |commit: &git2::Commit<'_>| -> Result<Option<Vec<IgnoreEntry>>, GitError> {
        let text = read_at(repo, commit, plan.path)?.unwrap_or_default();
        Ok(longtx_core::IgnoreList::parse(&text)
            .ok()
            .map(|l| l.entries().to_vec()))
    };
    let (Some(before), Some(after)) = (entries(base)?, entries(head)?) else {
        return Ok(false);
    };
    let mut added: Vec<&IgnoreEntry> = after.iter().filter(|e| !before.contains(e)).collect();
    let kept = before.iter().all(|e| after.contains(e));
    Ok(kept
        && after.len() == before.len() + 1
        && added.len() == 1
        && added.pop().is_some_and(|e| {
            e.query_source == plan.entry.query_source && e.exact == plan.entry.exact
        }))
}

fn commit_on(
    repo: &Repository,
    base: &git2::Commit<'_>,
    plan: &WontfixCommit<'_>,
    text: &[u8],
) -> Result<Oid, GitError> {
    let blob = repo.blob(text)?;
    let mut update = git2::build::TreeUpdateBuilder::new();
    update.upsert(plan.path, blob, git2::FileMode::Blob);
    let tree_id = update.create_updated(repo, &base.tree()?)?;
    let tree = repo.find_tree(tree_id)?;
    let when = git2::Time::new(plan.time, 0);
    let signature = git2::Signature::new(plan.author_name, plan.author_email, &when)?;
    let message = commit_message(plan.job_id, &plan.entry.query_source, plan.path);
    Ok(repo.commit(None, &signature, &signature, &message, &tree, &[base])?)
}
