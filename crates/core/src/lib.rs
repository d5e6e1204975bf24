//! The pure core of longtx.
//!
//! Nothing in this crate knows about HTTP, SQL or GitHub: it turns webhook
//! bodies into typed alerts, normalises `query_source` values, and decides
//! what an alert should do. The adapters (`longtx-http`, `longtx-store`) call
//! into it, which keeps every policy testable without a server or database.

pub mod agent_run;
pub mod alert;
pub mod alertmanager;
pub mod backlog;
pub mod codeowners;
pub mod datadog;
pub mod db_errors;
pub mod duration;
pub mod fix_pr;
pub mod github_events;
pub mod glob;
pub mod ignore_list;
pub mod impact;
pub mod installation;
pub mod job;
pub mod json_text;
pub mod observation;
pub mod patch_check;
pub mod patch_policy;
pub mod policy;
pub mod pr_check;
pub mod pre_review;
pub mod query_logs;
pub mod query_source;
pub mod reviewers;
pub mod revision;
pub mod run_report;
pub mod text;
pub mod waiters;
pub mod what_if;
pub mod wontfix;
pub mod workflow;

pub use alert::{Alert, AlertOrigin, AlertStatus};
pub use ignore_list::{IgnoreEntry, IgnoreList};
pub use job::{JobState, Outcome};
pub use policy::{Decision, IntakePolicy};
pub use query_source::QuerySource;
