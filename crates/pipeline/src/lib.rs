//! Background work that moves jobs along the pipeline, each step between
//! short transactions: read the job, work with no connection held, write.

mod backlog;
mod comments;
mod devin;
mod dispatch;
mod ignore;
mod installation;
mod pr_checks;
mod pr_opener;
mod pre_review;
mod prompts;
mod requests;
mod results;
mod reviewers;
mod round_results;
mod rounds;
mod wontfix;
mod workers;

pub use backlog::{spawn_backlog_worker, BacklogSettings, BacklogSource};
pub use devin::DevinSettings;
pub use dispatch::{fix_inputs, spawn_dispatcher, spawn_dispatcher_with, DispatchSettings};
pub use ignore::LiveIgnoreList;
pub use pr_checks::{spawn_pr_checker, PrCheckQueue, PrCheckSettings};
pub use pr_opener::{spawn_pr_opener, AfterOpen, PrOpenQueue, PrOpenSettings};
pub use pre_review::{pre_review_inputs, spawn_pre_reviewer, PreReviewQueue, PreReviewSettings};
pub use prompts::{facts_of, spawn_prompt_worker, PromptQueue};
pub use requests::{spawn_request_worker, RequestQueue, RequestSettings};
pub use results::ResultSettings;
pub use reviewers::{
    comment_marker, configured_login, history_reason, owner_candidates, spawn_reviewer,
    spawn_reviewer_with, ReviewError, ReviewQueue, ReviewSettings, ReviewerFinder,
};
pub use rounds::round_inputs;
pub use wontfix::{spawn_wontfix_worker, WontfixQueue, WontfixSettings};
pub use workers::{dying_workers, spawn as spawn_supervised, stop_workers, Dying};
