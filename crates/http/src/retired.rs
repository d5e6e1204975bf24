//! Endpoints older workflow templates post to, retired: a run's verdict and
//! cost now come from its `longtx-result` artifact, which longtx downloads
//! from the run it dispatched. A POST here could be made by anyone holding
//! a job token read from a log, so nothing is read: the answer says which
//! template replaces the caller. The body is never read.

use crate::error::ApiError;
use axum::http::StatusCode;

fn gone(what: &str, template: &str) -> ApiError {
    tracing::warn!(
        what,
        "an older workflow template posted to a retired endpoint"
    );
    ApiError::new(
        StatusCode::GONE,
        "retired_endpoint",
        format!(
            "longtx no longer takes {what} by POST: it reads them from the run's `longtx-result` \
             artifact. Replace the workflow with the shipped .github/workflows/{template} \
             (docs/book/src/upgrading.md)"
        ),
    )
}

pub async fn verdict() -> ApiError {
    gone("pre-review verdicts", "long-transaction-pre-review.yml")
}

pub async fn run_report() -> ApiError {
    gone(
        "run reports",
        "long-transaction-fix.yml (or its Codex or Devin edition)",
    )
}
