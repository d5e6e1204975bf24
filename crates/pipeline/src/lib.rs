//! Background work that moves jobs along the pipeline, each step between
//! short transactions: read the job, work with no connection held, write.

mod comments;
mod dispatch;
mod ignore;
mod pre_review;
mod prompts;
mod reviewers;
mod wontfix;

pub use dispatch::{spawn_dispatcher, DispatchSettings};
pub use ignore::LiveIgnoreList;
pub use pre_review::{spawn_pre_reviewer, PreReviewQueue, PreReviewSettings};
pub use prompts::{facts_of, spawn_prompt_worker, PromptQueue};
pub use reviewers::{
    comment_marker, configured_login, history_reason, owner_candidates, spawn_reviewer,
    ReviewQueue, ReviewSettings,
};
pub use wontfix::{spawn_wontfix_worker, WontfixQueue, WontfixSettings};
