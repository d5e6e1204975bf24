//! PR comments that must appear once even when a worker retries a job.

use longtx_github::{GitHub, GitHubError, RepoName};

/// Posts `body` (which carries `marker`) unless a retry finds a comment
/// with `marker` already there. The first attempt skips the lookup: no
/// earlier attempt can have commented.
pub(crate) async fn comment_once<G: GitHub>(
    github: &G,
    repo: &RepoName,
    pr: u64,
    attempts: i32,
    marker: &str,
    body: &str,
) -> Result<(), GitHubError> {
    if attempts > 1 {
        let existing = github.comments(repo, pr).await?;
        if existing.iter().any(|c| c.body.contains(marker)) {
            return Ok(());
        }
    }
    github.create_comment(repo, pr, body).await
}
