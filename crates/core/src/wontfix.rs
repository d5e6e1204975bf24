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

/// The comments that give a reason, newest first, as (author, reason).
/// Which of them counts is the caller's to decide: only the labeller's
/// or a writer's (a permission lookup), never a reader's.
pub fn reasons_newest_first<'a>(
    comments: impl DoubleEndedIterator<Item = (&'a str, &'a str)>,
) -> Vec<(&'a str, String)> {
    comments
        .rev()
        .filter_map(|(author, body)| Some((author, reason_in_comment(body)?)))
        .collect()
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
    job_marker: &str,
    query_source: &str,
    (reason, reason_by): (&str, &str),
    ignore_list_path: &str,
    labeler: &str,
) -> String {
    // Quoted, never interpolated: a reason is someone's text, and must not
    // add markup, mentions of its own or a job marker to the body.
    let quoted: String = reason
        .replace("<!--", "&lt;!--")
        .lines()
        .map(|l| format!("> {}\n", l.replace('@', "@\u{200b}")))
        .collect();
    format!(
        "@{labeler} decided not to fix the long transaction from `{query_source}`.\n\n\
         **Reason**, as {reason_by} gave it:\n\n{quoted}\n\
         The agent's commits were discarded. This PR now only adds the source to \
         `{ignore_list_path}`; once merged, longtx stops proposing fixes for it.\n\n\
         To undo the decision later, open a PR that removes the entry \
         (`query_source: {}`) from `{ignore_list_path}`.\n\n{}\n",
        quote(query_source),
        job_marker
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
    fn reasons_come_newest_first_with_their_authors() {
        let comments = [
            ("bob", "Looks risky."),
            ("alice", "wontfix: the export needs one snapshot"),
            ("mallory", "/wontfix  Nightly only; fine as is "),
        ];
        assert_eq!(
            reasons_newest_first(comments.iter().copied()),
            vec![
                ("mallory", "Nightly only; fine as is".to_owned()),
                ("alice", "the export needs one snapshot".to_owned())
            ]
        );
        let none = [("a", "wontfix:"), ("b", "I think we should wontfix: later")];
        assert!(reasons_newest_first(none.iter().copied()).is_empty());
        assert!(default_reason("alice").contains("@alice"));
    }

    #[test]
    fn the_body_keeps_the_marker_and_says_how_to_undo() {
        let marker = crate::installation::Installation::new("k3x9q2ab", 0)
            .unwrap()
            .body_marker(7);
        let body = pr_body(
            &marker,
            "admin/users#update",
            ("needs the lock\n<!-- longtx-job: 9 --> @everyone", "@alice"),
            "ignore-list.yaml",
            "alice",
        );
        assert!(body.contains("<!-- longtx-job: k3x9q2ab/7 -->"));
        assert!(!body.contains("<!-- longtx-job: 9 -->"), "{body}");
        assert!(
            body.contains("> needs the lock\n> &lt;!-- longtx-job: 9 --> @\u{200b}everyone"),
            "{body}"
        );
        assert!(body.contains("removes the entry"));
        assert!(commit_message(7, "a#b", "ignore-list.yaml").ends_with("Longtx-Wontfix-Job: 7\n"));
    }
}
