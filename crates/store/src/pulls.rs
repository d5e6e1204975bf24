//! GitHub deliveries and the job transitions they cause, and the reviewer
//! worker's claims. Each delivery is one short transaction: the delivery id
//! is recorded in the same transaction as its effect, so a redelivery finds
//! it and a crash before commit leaves nothing half done.

use crate::{Store, StoreError};
use longtx_core::github_events::{next_state, PrEvent, ReviewGate};
use longtx_core::text::one_line;
use longtx_core::JobState;
use sqlx::Row;
use std::time::Duration;

/// One webhook delivery, as GitHub identifies it.
#[derive(Debug, Clone)]
pub struct Delivery<'a> {
    pub id: &'a str,
    pub event: &'a str,
    pub action: Option<&'a str>,
}

/// The PR facts a `pull_request` event carries.
#[derive(Debug, Clone, Default)]
pub struct PrFacts {
    pub number: u64,
    pub url: String,
    pub head_sha: String,
    pub base_ref: String,
    pub author: String,
    /// The PR is one longtx opened: its opener says so, or (a webhook) its
    /// author is longtx's own login. Only such a PR becomes a job's PR;
    /// after that, only that PR's number speaks for the job.
    pub opened_by_longtx: bool,
}

/// What a delivery did.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// Seen before: acknowledged, not processed again.
    Duplicate,
    Moved {
        from: JobState,
        to: JobState,
    },
    /// Recorded; the job's state stays.
    Unchanged {
        state: JobState,
    },
    UnknownJob,
    /// Reviving the job would give its source a second active job.
    Conflict {
        other_job: i64,
    },
    /// Not about a job (ignored event, suspicious PR): audit only.
    Recorded,
    /// The won't-fix label was taken; the worker applies it.
    WontfixRequested,
    /// The ignore-list PR of a declined job closed.
    WontfixPrClosed {
        merged: bool,
    },
    /// The agent's run ended well: longtx now opens (or finds) the PR.
    PrOpenRequested,
    /// A person's revision request or `/longtx stop` was recorded; the
    /// request worker answers it. `new` is false for a second delivery of
    /// the same review or comment.
    RevisionRequested {
        new: bool,
    },
    /// A revision round's run ended: the round is checked or ended.
    RoundRunEnded,
    /// The event is about a PR that does not speak for the job (another PR
    /// than the one longtx opened, or a first PR longtx did not open); why.
    NotTheJobsPr {
        why: String,
    },
}

impl Applied {
    pub fn as_str(&self) -> &'static str {
        match self {
            Applied::Duplicate => "duplicate",
            Applied::Moved { .. } => "moved",
            Applied::Unchanged { .. } => "unchanged",
            Applied::UnknownJob => "unknown_job",
            Applied::Conflict { .. } => "conflict",
            Applied::Recorded => "recorded",
            Applied::WontfixRequested => "wontfix_requested",
            Applied::WontfixPrClosed { .. } => "wontfix_pr_closed",
            Applied::PrOpenRequested => "pr_open_requested",
            Applied::RevisionRequested { new: true } => "revision_requested",
            Applied::RevisionRequested { new: false } => "request_seen_before",
            Applied::RoundRunEnded => "round_run_ended",
            Applied::NotTheJobsPr { .. } => "not_the_jobs_pr",
        }
    }
}

/// A job whose reviewers are to be asked, as claimed by the worker.
#[derive(Debug, Clone)]
pub struct ReviewClaim {
    pub job_id: i64,
    pub query_source: String,
    pub pr_number: u64,
    pub pr_author: String,
    pub base_ref: String,
    pub attempts: i32,
}

impl Store {
    /// Records `delivery` and applies `event` to `job_id` (when the PR or
    /// run was tied to a job), in one transaction. `pr` updates the job's PR
    /// columns; an opened PR marks its reviewers as pending.
    pub async fn apply_github_event(
        &self,
        delivery: &Delivery<'_>,
        job_id: Option<i64>,
        event: Option<&PrEvent>,
        pr: Option<&PrFacts>,
        gate: ReviewGate,
        detail: &str,
    ) -> Result<Applied, StoreError> {
        let mut tx = self.begin().await?;
        if !record_delivery(&mut tx, delivery).await? {
            return Ok(Applied::Duplicate);
        }
        let applied = match (job_id, event) {
            (Some(job_id), Some(event)) => apply(&mut tx, job_id, event, pr, gate).await?,
            _ => Applied::Recorded,
        };
        let outcome = match &applied {
            Applied::Moved { from, to } => format!("moved {from} -> {to}"),
            Applied::Conflict { other_job } => format!("conflict: job {other_job} is active"),
            Applied::NotTheJobsPr { why } => format!("not the job's PR: {why}"),
            other => other.as_str().to_owned(),
        };
        let job_ref = job_id.filter(|_| applied != Applied::UnknownJob);
        finish_delivery(&mut tx, delivery, &outcome, detail, job_ref).await?;
        tx.commit().await?;
        Ok(applied)
    }

    /// Claims one job whose reviewers are pending, for `lease`.
    pub async fn claim_review(&self, lease: Duration) -> Result<Option<ReviewClaim>, StoreError> {
        let row = sqlx::query(
            "UPDATE jobs SET reviewers_lease_until = now() + make_interval(secs => $1), \
                 reviewers_attempts = reviewers_attempts + 1 \
             WHERE id = (SELECT id FROM jobs \
                         WHERE reviewers_state = 'pending' AND state = 'in_review' \
                           AND pr_number IS NOT NULL \
                           AND (reviewers_lease_until IS NULL OR reviewers_lease_until < now()) \
                         ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING id, query_source, pr_number, pr_author, pr_base_ref, reviewers_attempts",
        )
        .bind(lease.as_secs_f64())
        .fetch_optional(self.pool())
        .await?;
        row.map(|row| {
            Ok(ReviewClaim {
                job_id: row.try_get("id")?,
                query_source: row.try_get("query_source")?,
                pr_number: row.try_get::<i64, _>("pr_number")? as u64,
                pr_author: row
                    .try_get::<Option<String>, _>("pr_author")?
                    .unwrap_or_default(),
                base_ref: row
                    .try_get::<Option<String>, _>("pr_base_ref")?
                    .unwrap_or_default(),
                attempts: row.try_get("reviewers_attempts")?,
            })
        })
        .transpose()
    }

    /// Records the reviewers asked (`keys`, empty when nobody was found) and
    /// the choice with its reasons. Only a job still pending is changed.
    pub async fn record_reviewers(
        &self,
        job_id: i64,
        keys: &[String],
        choice: &serde_json::Value,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let state = if keys.is_empty() { "none" } else { "requested" };
        let updated = sqlx::query(
            "UPDATE jobs SET reviewers_state = $2, reviewers = $3, reviewers_lease_until = NULL, \
                 updated_at = now() \
             WHERE id = $1 AND reviewers_state = 'pending'",
        )
        .bind(job_id)
        .bind(state)
        .bind(choice)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if updated == 1 {
            sqlx::query(
                "INSERT INTO review_requests (job_id, reviewer) \
                 SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING",
            )
            .bind(job_id)
            .bind(keys)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(updated == 1)
    }
}

/// Records a delivery as being processed; false when it was seen before.
pub(crate) async fn record_delivery(
    tx: &mut sqlx::PgConnection,
    delivery: &Delivery<'_>,
) -> Result<bool, StoreError> {
    // Everything here came from a signed but arbitrary body: PostgreSQL
    // refuses NUL in text, and logs should not carry control bytes.
    Ok(sqlx::query(
        "INSERT INTO github_deliveries (delivery_id, event, action, job_id, outcome) \
         VALUES ($1, $2, $3, NULL, 'processing') ON CONFLICT DO NOTHING",
    )
    .bind(one_line(delivery.id))
    .bind(one_line(delivery.event))
    .bind(delivery.action.map(one_line))
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1)
}

/// Writes what a delivery did, in its transaction.
pub(crate) async fn finish_delivery(
    tx: &mut sqlx::PgConnection,
    delivery: &Delivery<'_>,
    outcome: &str,
    detail: &str,
    job_id: Option<i64>,
) -> Result<(), StoreError> {
    let outcome = if detail.is_empty() {
        outcome.to_owned()
    } else {
        format!("{outcome}: {}", one_line(detail))
    };
    sqlx::query("UPDATE github_deliveries SET outcome = $2, job_id = $3 WHERE delivery_id = $1")
        .bind(one_line(delivery.id))
        .bind(outcome)
        .bind(job_id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

pub(crate) async fn apply(
    tx: &mut sqlx::PgConnection,
    job_id: i64,
    event: &PrEvent,
    pr: Option<&PrFacts>,
    gate: ReviewGate,
) -> Result<Applied, StoreError> {
    let Some(row) = sqlx::query("SELECT state, pr_number FROM jobs WHERE id = $1 FOR UPDATE")
        .bind(job_id)
        .fetch_optional(&mut *tx)
        .await?
    else {
        return Ok(Applied::UnknownJob);
    };
    let current: JobState = row
        .try_get::<String, _>("state")?
        .parse()
        .map_err(|e: longtx_core::job::UnknownState| sqlx::Error::Decode(e.into()))?;
    let recorded: Option<i64> = row.try_get("pr_number")?;
    if let Some(pr) = pr {
        // Anyone with read access can open a PR from longtx's branch with its
        // marker copied: only the PR longtx opened speaks for the job, and
        // its number, author and base never change once recorded.
        match recorded {
            Some(number) if number != pr.number as i64 => {
                return Ok(Applied::NotTheJobsPr {
                    why: format!(
                        "PR #{} is not the PR longtx opened for job {job_id} (#{number})",
                        pr.number
                    ),
                })
            }
            Some(_) => {
                sqlx::query(
                    "UPDATE jobs SET pr_url = $2, pr_head_sha = $3, updated_at = now() WHERE id = $1",
                )
                .bind(job_id)
                .bind(&pr.url)
                .bind(&pr.head_sha)
                .execute(&mut *tx)
                .await?;
            }
            None if !pr.opened_by_longtx => {
                return Ok(Applied::NotTheJobsPr {
                    why: format!(
                        "PR #{} was opened by @{}, not by longtx",
                        pr.number, pr.author
                    ),
                })
            }
            None => {
                sqlx::query(
                    "UPDATE jobs SET pr_number = $2, pr_url = $3, pr_head_sha = $4, pr_base_ref = $5, \
                         pr_author = $6, pr_opened_at = COALESCE(pr_opened_at, now()), updated_at = now() \
                     WHERE id = $1",
                )
                .bind(job_id)
                .bind(pr.number as i64)
                .bind(&pr.url)
                .bind(&pr.head_sha)
                .bind(&pr.base_ref)
                .bind(&pr.author)
                .execute(&mut *tx)
                .await?;
            }
        }
    }
    if let PrEvent::WontfixLabeled { by } = event {
        return Ok(if crate::wontfix::request(tx, job_id, by).await? {
            Applied::WontfixRequested
        } else {
            Applied::Unchanged { state: current }
        });
    }
    if let (JobState::Wontfix, PrEvent::Closed { merged }) = (current, event) {
        crate::wontfix::pr_closed(tx, job_id, *merged).await?;
        return Ok(Applied::WontfixPrClosed { merged: *merged });
    }
    if let PrEvent::RoundRunCompleted { round, success } = event {
        crate::rounds::run_completed(tx, job_id, *round, *success, "").await?;
        return Ok(Applied::RoundRunEnded);
    }
    if let PrEvent::RunCompleted { success: true } = event {
        return Ok(if crate::pr_open::request(tx, job_id).await? {
            Applied::PrOpenRequested
        } else {
            Applied::Unchanged { state: current }
        });
    }
    let to = next_state(current, event, gate);
    // Every new head of an open fix PR is judged (again) by the pre-review.
    let after = to.unwrap_or(current);
    if let (ReviewGate::PreReviewFirst, Some(pr), PrEvent::Opened | PrEvent::Synchronized) =
        (gate, pr, event)
    {
        if matches!(after, JobState::PreReview | JobState::InReview) {
            crate::pre_review::schedule(tx, job_id, &pr.head_sha).await?;
        }
    }
    let Some(to) = to else {
        return Ok(Applied::Unchanged { state: current });
    };
    if to.is_active() && !current.is_active() {
        let other: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM jobs WHERE source_key = (SELECT source_key FROM jobs WHERE id = $1) \
               AND id <> $1 AND state IN ('queued', 'dispatching', 'agent_running', 'pre_review', 'in_review')",
        )
        .bind(job_id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(other_job) = other {
            return Ok(Applied::Conflict { other_job });
        }
    }
    sqlx::query(
        "UPDATE jobs SET state = $2, state_reason = NULL, updated_at = now(), lease_until = NULL, \
             ended_at = CASE WHEN $3 THEN NULL ELSE now() END, \
             reviewers_state = CASE WHEN $2 = 'in_review' AND reviewers_state IS NULL \
                                    THEN 'pending' ELSE reviewers_state END, \
             pre_review_close = CASE WHEN $2 = 'in_review' AND pre_review_close = 'pending' \
                                     THEN 'done' ELSE pre_review_close END \
         WHERE id = $1",
    )
    .bind(job_id)
    .bind(to.as_str())
    .bind(to.is_active())
    .execute(&mut *tx)
    .await?;
    Ok(Applied::Moved { from: current, to })
}
