//! The coding agent's prompt for one job.
//!
//! [`locate`] finds where a `query_source` most likely lives in a checkout
//! of the target repository; [`render`] ranks the catalogue's patterns
//! against that code and fills the user-editable tera template. Values from
//! alerts and code are data: they are inserted, never evaluated, and every
//! one is cleaned and capped first.

pub mod corpus;
/// The code analysis the prompt reads (its own crate, shared with the
/// scanner).
pub use longtx_analysis as locate;
pub mod render;
pub mod round;
mod sanitize;

pub use locate::{explain_none, locate, Candidate};
pub use render::{
    hex_sha256, rank_patterns, JobFacts, PreviousFix, PromptError, PromptRenderer, RenderedPrompt,
    DEFAULT_BUDGET_BYTES,
};
pub use round::{round_prompt, RoundFacts};

use std::path::PathBuf;

const NO_CHECKOUT: &str = "No checkout of the target repository is configured (LONGTX_REPO_PATH), \
    so no file was looked up: find the code path for the query_source from its name.";

/// Where a prompt's inputs live on disk.
#[derive(Debug, Clone)]
pub struct PromptSources {
    /// The catalogue, `patterns/`.
    pub patterns_dir: PathBuf,
    /// The template, `patterns/_prompt.md.tera` unless overridden.
    pub template: PathBuf,
    /// A checkout of the target repository, to find the code in.
    pub repo: Option<PathBuf>,
    pub budget_bytes: usize,
}

impl PromptSources {
    /// Reads the catalogue and the template afresh (so edits apply to the
    /// next job without a restart), finds the code, and renders. Blocking
    /// file I/O: run it outside any database transaction, off the async
    /// workers. Every failure comes back as one sentence for the job.
    pub fn build(&self, job: &JobFacts) -> Result<RenderedPrompt, String> {
        let catalogue =
            longtx_catalog::Catalogue::load(&self.patterns_dir).map_err(|e| e.to_string())?;
        let template = std::fs::read_to_string(&self.template).map_err(|e| {
            format!(
                "cannot read the prompt template {}: {e}",
                self.template.display()
            )
        })?;
        let renderer =
            PromptRenderer::new(&template, self.budget_bytes).map_err(|e| e.to_string())?;
        let (candidates, none_reason, code) = match &self.repo {
            Some(repo) => {
                let candidates = locate(repo, &job.query_source);
                let code = locate::lead_context(repo, &job.query_source, &job.tables, &candidates);
                (candidates, None, code)
            }
            None => (Vec::new(), Some(NO_CHECKOUT), Default::default()),
        };
        let mut rendered = renderer
            .render_with(job, &candidates, none_reason, &code, &catalogue)
            .map_err(|e| e.to_string())?;
        // The fix lands where the transaction is held: its files first.
        rendered.located = code
            .sites
            .iter()
            .take(locate::MAX_SITES)
            .map(|s| s.path.clone())
            .chain(candidates.iter().map(|c| c.path.clone()))
            .collect();
        let mut seen = std::collections::HashSet::new();
        rendered.located.retain(|p| seen.insert(p.clone()));
        Ok(rendered)
    }
}
