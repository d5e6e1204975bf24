//! PostgreSQL persistence for longtx.
//!
//! Every public method takes at most one pooled connection and holds it for
//! one short transaction: callers never hold a connection across a network
//! call, and a method never asks the pool for a second connection while it
//! holds one (that self-deadlocks exactly at pool max).

mod agent_runs;
mod branch_scans;
mod budgets;
mod costs;
mod dashboard;
mod dispatch;
mod installation;
mod intake;
mod jobs;
mod observations;
mod pool;
mod pr_checks;
mod pr_open;
mod pre_review;
mod prompts;
mod pulls;
mod queue;
mod requests;
mod rounds;
mod wontfix;

pub use agent_runs::{DispatchedRun, RoundToApply, RunningPreReview};
pub use budgets::BudgetedRun;
pub use costs::{CostFigures, JobCost, ReportRecorded};
pub use dashboard::{
    Dashboard, DashboardQuery, DayFigure, DispatchRecord, JobPage, RequestRecord, ReviewerLoad,
    RunReportRecord, SourceSeries, VerdictRecord, WeekFigure,
};
pub use dispatch::{
    Caps, Claim, ClaimedJob, DispatchStatus, DEFAULT_PRE_REVIEW_BUDGET_USD, DEFAULT_RUN_BUDGET_USD,
};
pub use intake::{IntakeAction, IntakeRecord, RecordedOutcome};
pub use jobs::{AlertEventRow, JobFilter, JobRow, RegressionFacts};
pub use pool::{PoolSettings, PoolStats, Store};
pub use pr_checks::{PrCheckClaim, PrCheckEnd, PrCheckRow};
pub use pr_open::PrOpenClaim;
pub use pre_review::{CloseClaim, PreReviewClaim, VerdictApplied};
pub use prompts::StoredPrompt;
pub use pulls::{Applied, Delivery, PrFacts, ReviewClaim};
pub use queue::{QueuePlace, CAPACITY_RECHECK};
pub use requests::{NewRequest, RequestClaim};
pub use rounds::{RoundClaim, RoundEnd, RoundEnded, RoundRow};
pub use sqlx::postgres::PgConnectOptions;
pub use wontfix::{IgnoredSource, WontfixClaim, WontfixOutcome};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

impl StoreError {
    /// True when the pool had no connection to give within its timeout: the
    /// service is overloaded, not broken, so the HTTP layer answers 503.
    pub fn is_pool_timeout(&self) -> bool {
        matches!(self, StoreError::Database(sqlx::Error::PoolTimedOut))
    }

    /// True when the server is going away or not there: it shut down the
    /// connection (`57P01`-`57P03`, a restart or failover), the connection
    /// broke (`08...`, an I/O error) or the pool is closed. Retrying later
    /// helps; nothing was recorded.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::Database(sqlx::Error::Io(_) | sqlx::Error::PoolClosed) => true,
            StoreError::Database(sqlx::Error::Database(e)) => e
                .code()
                .is_some_and(|code| code.starts_with("57P") || code.starts_with("08")),
            _ => false,
        }
    }
}
