//! PR comments that must appear once even when a worker retries a job.

use longtx_github::{GitHub, GitHubError, RepoName};

/// Posts `body` (which carries `marker`) unless a retry finds a comment
/// of longtx's own with `marker` already there (a marker anyone else
/// wrote proves nothing). The first attempt skips the lookup: no earlier
/// attempt can have commented.
pub(crate) async fn comment_once<G: GitHub>(
    github: &G,
    repo: &RepoName,
    pr: u64,
    attempts: i32,
    marker: &str,
    body: &str,
) -> Result<(), GitHubError> {
    if attempts > 1 {
        let me = github.own_login().await?.unwrap_or_default();
        let existing = github.comments(repo, pr).await?;
        if existing.iter().any(|c| {
            c.body.contains(marker) && !me.is_empty() && c.author().eq_ignore_ascii_case(&me)
        }) {
            return Ok(());
        }
    }
    github.create_comment(repo, pr, body).await
}
