//! The coding agent's prompt for one job.
//!
//! [`locate`] finds where a `query_source` most likely lives in a checkout
//! of the target repository; [`render`] ranks the catalogue's patterns
//! against that code and fills the user-editable tera template. Values from
//! alerts and code are data: they are inserted, never evaluated, and every
//! one is cleaned and capped first.

pub mod locate;
pub mod render;
mod sanitize;

pub use locate::{locate, Candidate};
pub use render::{JobFacts, PromptError, PromptRenderer, RenderedPrompt, DEFAULT_BUDGET_BYTES};
