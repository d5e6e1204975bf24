//! The job's fix branch in this database's installation
//! (`longtx_core::installation`), for the workers that talk to GitHub.

use longtx_github::GitHubError;
use longtx_store::Store;

/// The branch of `job_id`; the installation is read once per process, so
/// this costs a query only the first time. A database error is reported
/// as GitHub being unavailable, which every caller retries.
pub(crate) async fn branch_of(store: &Store, job_id: i64) -> Result<String, GitHubError> {
    Ok(installation(store).await?.branch_of(job_id))
}

pub(crate) async fn installation(
    store: &Store,
) -> Result<longtx_core::installation::Installation, GitHubError> {
    store
        .installation()
        .await
        .map_err(|e| GitHubError::Unavailable(format!("reading the installation id: {e}")))
}
