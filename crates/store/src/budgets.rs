//! What each dispatched run counts against the daily caps: the budget
//! longtx configured for it, counted once when the run is sent (a fix run,
//! a revision round, a pre-review of one head). What a run reports is
//! shown, clamped to this budget, and never moves the caps: a result that
//! claims $10,000 cannot stop the day, nor one that claims $0 spend
//! without counting.

use crate::StoreError;

/// Which run a budget belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetedRun<'a> {
    Fix,
    Round(u32),
    PreReview { head: &'a str },
}

/// Counts `budget_usd` for `run` of `job_id`, once: a second dispatch
/// record of the same run (a found run, a retried write) adds nothing.
pub(crate) async fn count(
    conn: &mut sqlx::PgConnection,
    job_id: i64,
    run: BudgetedRun<'_>,
    budget_usd: f64,
) -> Result<(), StoreError> {
    let (kind, round, head) = match run {
        BudgetedRun::Fix => ("fix", 0, ""),
        BudgetedRun::Round(round) => ("round", round as i32, ""),
        BudgetedRun::PreReview { head } => ("pre_review", 0, head),
    };
    sqlx::query(
        "INSERT INTO run_budgets (job_id, kind, round, head_sha, budget_usd) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT DO NOTHING",
    )
    .bind(job_id)
    .bind(kind)
    .bind(round)
    .bind(head)
    .bind(budget_usd.max(0.0))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// True when a pre-review of `head` was already sent for the job: a head
/// is judged once, however often the branch comes back to it.
pub(crate) async fn head_judged(
    conn: &mut sqlx::PgConnection,
    job_id: i64,
    head: &str,
) -> Result<bool, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM run_budgets WHERE job_id = $1 AND kind = 'pre_review' AND head_sha = $2)",
    )
    .bind(job_id)
    .bind(head)
    .fetch_one(&mut *conn)
    .await?)
}
