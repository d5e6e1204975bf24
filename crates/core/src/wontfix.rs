//! The won't-fix decision, pure: who may make it, the reason given, and
//! what longtx writes on the PR afterwards. The adapters do the git and
//! GitHub work around these.

use crate::ignore_list::quote;

/// Marks the commit longtx makes on a wontfix PR, so a retry after a crash
/// recognises its own commit instead of making a second.
pub fn commit_trailer(job_id: i64) -> String {
    format!("Longtx-Wontfix-Job: {job_id}")
}

pub fn commit_message(job_id: i64, query_source: &str, ignore_list_path: &str) -> String {
    format!(
        "Add {query_source} to the long-transaction ignore list\n\n\
         The fix was declined, so its commits are dropped and the source is\n\
         listed in {ignore_list_path} instead.\n\n{}\n",
        commit_trailer(job_id)
    )
}

/// GitHub's repository permission names that may decide won't-fix.
pub fn may_decide(permission: &str) -> bool {
    matches!(permission, "admin" | "maintain" | "write")
}

/// A comment that gives the reason: its first line starts with `wontfix:`
/// (any case), or it is the only text after a `/wontfix` command.
pub fn reason_in_comment(body: &str) -> Option<String> {
    let text = body.trim();
    let lower = text.to_ascii_lowercase();
    let rest = if lower.starts_with("wontfix:") {
        &text["wontfix:".len()..]
    } else if lower.starts_with("/wontfix") {
        &text["/wontfix".len()..]
    } else {
        return None;
    };
    let reason = rest.trim();
    (!reason.is_empty()).then(|| reason.chars().take(2000).collect())
}

/// The reason for the entry: the newest comment giving one, else a default
/// naming who decided.
pub fn reason_from_comments<'a>(
    comments: impl DoubleEndedIterator<Item = &'a str>,
    labeler: &str,
) -> String {
    comments
        .rev()
        .find_map(reason_in_comment)
        .unwrap_or_else(|| default_reason(labeler))
}

pub fn default_reason(labeler: &str) -> String {
    format!("Marked won't fix by @{labeler}: shortening this transaction is not worth what it would cost in consistency.")
}

pub fn pr_title(query_source: &str) -> String {
    format!("Add {query_source} to the long-transaction ignore list")
}

/// The PR body after the decision; keeps the job marker so the PR stays
/// tied to its job.
pub fn pr_body(
    job_id: i64,
    query_source: &str,
    reason: &str,
    ignore_list_path: &str,
    labeler: &str,
) -> String {
    format!(
        "@{labeler} decided not to fix the long transaction from `{query_source}`.\n\n\
         **Reason:** {reason}\n\n\
         The agent's commits were discarded. This PR now only adds the source to \
         `{ignore_list_path}`; once merged, longtx stops proposing fixes for it.\n\n\
         To undo the decision later, open a PR that removes the entry \
         (`query_source: {}`) from `{ignore_list_path}`.\n\n{}\n",
        quote(query_source),
        crate::github_events::body_marker(job_id)
    )
}

/// `replaced`: the branch head the push replaced, if any; GitHub keeps it
/// reachable from the PR's timeline, and naming it here means nothing
/// pushed to the branch disappears unmentioned.
pub fn done_comment(
    query_source: &str,
    ignore_list_path: &str,
    commit: &str,
    replaced: Option<&str>,
) -> String {
    let replaced = replaced
        .map(|head| format!(" The branch head it replaced was {head}."))
        .unwrap_or_default();
    format!(
        "longtx dropped the fix commits and added `{query_source}` to `{ignore_list_path}` \
         (commit {commit}).{replaced} Alerts for this source are now answered `ignored`.\n\n\
         Removing the label does not undo this by itself: to propose fixes again, \
         close this PR without merging, or later remove the entry from the list by PR."
    )
}

pub fn refused_comment(labeler: &str, label: &str) -> String {
    format!(
        "@{labeler}, the `{label}` label needs write access to this repository, so longtx \
         changed nothing. Someone with write, maintain or admin permission can add it again."
    )
}

pub fn lost_race_comment(label: &str) -> String {
    format!(
        "longtx could not apply `{label}`: the PR branch kept changing while it pushed \
         (twice). Nothing was overwritten. Remove and add the label again to retry."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_write_maintain_and_admin_may_decide() {
        for p in ["admin", "maintain", "write"] {
            assert!(may_decide(p));
        }
        for p in ["triage", "read", "none", ""] {
            assert!(!may_decide(p));
        }
    }

    #[test]
    fn the_newest_comment_with_a_reason_wins() {
        let comments = [
            "Looks risky.",
            "wontfix: the export needs one snapshot",
            "/wontfix  Nightly only; fine as is ",
        ];
        assert_eq!(
            reason_from_comments(comments.iter().copied(), "alice"),
            "Nightly only; fine as is"
        );
        assert_eq!(
            reason_from_comments(comments[..2].iter().copied(), "alice"),
            "the export needs one snapshot"
        );
        let none = ["wontfix:", "I think we should wontfix: later"];
        assert!(reason_from_comments(none.iter().copied(), "alice").contains("@alice"));
    }

    #[test]
    fn the_body_keeps_the_marker_and_says_how_to_undo() {
        let body = pr_body(
            7,
            "admin/users#update",
            "needs the lock",
            "ignore-list.yaml",
            "alice",
        );
        assert!(body.contains("<!-- longtx-job: 7 -->"));
        assert!(body.contains("removes the entry"));
        assert!(commit_message(7, "a#b", "ignore-list.yaml").ends_with("Longtx-Wontfix-Job: 7\n"));
    }
}
