//! People's revision requests: recorded by the webhook in the delivery's
//! transaction, judged by the request worker after it asked GitHub for the
//! person's permission (and a review's inline comments), answered once.

use crate::pre_review::mode_name;
use crate::pulls::{finish_delivery, record_delivery, Applied, Delivery};
use crate::rounds::{budget, start_round, NewRound};
use crate::{Caps, Store, StoreError};
use longtx_core::pre_review::PreReviewMode;
use longtx_core::revision::{
    judge_revise, judge_stop, Finding, RequestOutcome, Trigger, MAX_REQUEST_CHARS,
};
use longtx_core::JobState;
use sqlx::Row;
use std::time::Duration;

/// A review or comment asking for a round (or to stop them).
#[derive(Debug, Clone)]
pub struct NewRequest<'a> {
    /// `review` or `comment`.
    pub source: &'a str,
    /// The review's or comment's id: one request per id.
    pub github_id: i64,
    /// `revise` or `stop`.
    pub kind: &'a str,
    pub login: &'a str,
    pub body: &'a str,
}

/// A request the worker now owns until its lease runs out.
#[derive(Debug, Clone)]
pub struct RequestClaim {
    pub id: i64,
    pub job_id: i64,
    pub pr_number: u64,
    pub source: String,
    pub github_id: i64,
    pub kind: String,
    pub login: String,
    /// `Some` once judged: the answer still to be posted.
    pub answer: Option<String>,
    pub attempts: i32,
}

impl Store {
    /// Records a request with its delivery, in one transaction.
    pub async fn record_revision_request(
        &self,
        delivery: &Delivery<'_>,
        job_id: i64,
        request: &NewRequest<'_>,
    ) -> Result<Applied, StoreError> {
        let mut tx = self.begin().await?;
        if !record_delivery(&mut tx, delivery).await? {
            return Ok(Applied::Duplicate);
        }
        let known: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM jobs WHERE id = $1)")
            .bind(job_id)
            .fetch_one(&mut *tx)
            .await?;
        if !known {
            finish_delivery(&mut tx, delivery, "unknown_job", "", None).await?;
            tx.commit().await?;
            return Ok(Applied::UnknownJob);
        }
        let login = longtx_core::text::one_line(request.login);
        // The limits, counted in this transaction: the job's row lock
        // serialises requests on one PR.
        sqlx::query("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE")
            .bind(job_id)
            .execute(&mut *tx)
            .await?;
        let recent = sqlx::query(
            "SELECT count(*) FILTER (WHERE job_id = $1) AS on_pr, count(*) FILTER (WHERE login = $2) AS by_person, \
                    bool_or(rate_limited AND answer IS NOT NULL AND (job_id = $1 OR login = $2)) AS answered \
             FROM revision_requests WHERE created_at > now() - interval '1 hour' AND (job_id = $1 OR login = $2)",
        )
        .bind(job_id)
        .bind(&login)
        .fetch_one(&mut *tx)
        .await?;
        let limited = longtx_core::revision::over_rate_limit(
            recent.try_get::<i64, _>("on_pr")?,
            recent.try_get::<i64, _>("by_person")?,
        );
        let already_answered = recent
            .try_get::<Option<bool>, _>("answered")?
            .unwrap_or(false);
        // Past the limit: decided at once, answered once per burst.
        let (state, answer) = match (limited, already_answered) {
            (false, _) => ("pending", None),
            (true, false) => (
                "decided",
                Some(longtx_core::revision::rate_limit_answer(
                    &longtx_core::revision::request_marker(request.source, request.github_id),
                    &login,
                )),
            ),
            (true, true) => ("answered", None),
        };
        let new = sqlx::query(
            "INSERT INTO revision_requests (job_id, source, github_id, kind, login, body, state, answer, rate_limited) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (source, github_id) DO NOTHING",
        )
        .bind(job_id)
        .bind(request.source)
        .bind(request.github_id)
        .bind(request.kind)
        .bind(&login)
        .bind(longtx_core::revision::clean_text(
            request.body,
            MAX_REQUEST_CHARS,
        ))
        .bind(state)
        .bind(answer)
        .bind(limited)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if limited {
            tracing::warn!(job_id, login = %login, "a request past the hourly limit is recorded, not acted on");
        }
        let applied = Applied::RevisionRequested { new };
        let detail = format!("{} {} by {}", request.kind, request.source, request.login);
        finish_delivery(&mut tx, delivery, applied.as_str(), &detail, Some(job_id)).await?;
        tx.commit().await?;
        Ok(applied)
    }

    /// The job whose fix PR is `number` (the newest, should a PR number
    /// ever be recorded twice).
    pub async fn job_of_pr(&self, number: u64) -> Result<Option<i64>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT id FROM jobs WHERE pr_number = $1 ORDER BY id DESC LIMIT 1")
                .bind(number as i64)
                .fetch_optional(self.pool())
                .await?,
        )
    }

    pub async fn claim_request(&self, lease: Duration) -> Result<Option<RequestClaim>, StoreError> {
        let row = sqlx::query(
            "UPDATE revision_requests r SET lease_until = now() + make_interval(secs => $1), attempts = attempts + 1 \
             FROM jobs j \
             WHERE r.id = (SELECT id FROM revision_requests WHERE state <> 'answered' \
                             AND (lease_until IS NULL OR lease_until < now()) \
                           ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) \
               AND j.id = r.job_id \
             RETURNING r.id, r.job_id, j.pr_number, r.source, r.github_id, r.kind, r.login, r.answer, r.attempts",
        )
        .bind(lease.as_secs_f64())
        .fetch_optional(self.pool())
        .await?;
        row.map(|r| {
            Ok(RequestClaim {
                id: r.try_get("id")?,
                job_id: r.try_get("job_id")?,
                pr_number: r.try_get::<Option<i64>, _>("pr_number")?.unwrap_or(0) as u64,
                source: r.try_get("source")?,
                github_id: r.try_get("github_id")?,
                kind: r.try_get("kind")?,
                login: r.try_get("login")?,
                answer: r.try_get("answer")?,
                attempts: r.try_get("attempts")?,
            })
        })
        .transpose()
        .map_err(StoreError::Database)
    }

    /// Judges a request now that the person's `permission` (and a review's
    /// `inline` comments) are known, in one transaction: a round begins,
    /// the rounds stop, or nothing; the answer is stored to be posted, and
    /// returned with the outcome.
    pub async fn decide_request(
        &self,
        id: i64,
        permission: &str,
        inline: &[Finding],
        mode: PreReviewMode,
        max_revisions: u32,
        caps: Caps,
    ) -> Result<Option<(RequestOutcome, String)>, StoreError> {
        let mut tx = self.begin().await?;
        let Some(r) = sqlx::query(
            "SELECT r.job_id, r.source, r.github_id, r.kind, r.login, r.body, j.state, j.pr_head_sha \
             FROM revision_requests r JOIN jobs j ON j.id = r.job_id \
             WHERE r.id = $1 AND r.state = 'pending' FOR UPDATE OF r, j",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(None);
        };
        let job_id: i64 = r.try_get("job_id")?;
        let login: String = r.try_get("login")?;
        let body: String = r.try_get("body")?;
        let state: JobState = r
            .try_get::<String, _>("state")?
            .parse()
            .map_err(|e: longtx_core::job::UnknownState| sqlx::Error::Decode(e.into()))?;
        let outcome = if r.try_get::<String, _>("kind")? == "stop" {
            match judge_stop(&login, permission) {
                Err(refusal) => RequestOutcome::Refused(refusal),
                Ok(()) => {
                    sqlx::query(
                        "UPDATE jobs SET revisions_stopped_by = COALESCE(revisions_stopped_by, $2), \
                             revisions_stopped_at = COALESCE(revisions_stopped_at, now()) WHERE id = $1",
                    )
                    .bind(job_id)
                    .bind(&login)
                    .execute(&mut *tx)
                    .await?;
                    let cancelled = sqlx::query(
                        "UPDATE revision_rounds SET state = 'cancelled', ended_at = now(), state_reason = $2 \
                         WHERE job_id = $1 AND state = 'queued'",
                    )
                    .bind(job_id)
                    .bind(format!("stopped by @{login}"))
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                    RequestOutcome::Stopped {
                        login: login.clone(),
                        cancelled: cancelled as u32,
                    }
                }
            }
        } else {
            let budget = budget(&mut tx, job_id, max_revisions).await?;
            match judge_revise(state, &login, permission, &budget) {
                Err(refusal) => RequestOutcome::Refused(refusal),
                Ok(()) => {
                    let trigger = if r.try_get::<String, _>("source")? == "review" {
                        Trigger::ChangesRequested
                    } else {
                        Trigger::Comment
                    };
                    let head: String = r
                        .try_get::<Option<String>, _>("pr_head_sha")?
                        .unwrap_or_default();
                    let round = start_round(
                        &mut tx,
                        job_id,
                        &NewRound {
                            trigger,
                            request_id: Some(id),
                            requested_by: Some(&login),
                            mode: mode_name(mode),
                            head_before: &head,
                            findings: inline,
                            request: &body,
                        },
                    )
                    .await?;
                    match round {
                        Some(round) => {
                            let status = crate::dispatch::dispatch_counts(&mut tx).await?;
                            let waits = crate::dispatch::blocked_reason(&status, caps);
                            RequestOutcome::Started { round, waits }
                        }
                        // The index saw an open round the budget did not.
                        None => {
                            RequestOutcome::Refused(longtx_core::revision::Refusal::RoundOpen {
                                round: budget.open_round.unwrap_or(0),
                            })
                        }
                    }
                }
            }
        };
        let round = match &outcome {
            RequestOutcome::Started { round, .. } => Some(*round as i32),
            _ => None,
        };
        let marker = longtx_core::revision::request_marker(
            &r.try_get::<String, _>("source")?,
            r.try_get("github_id")?,
        );
        let answer = longtx_core::revision::answer_comment(&marker, &outcome);
        let no_permission = matches!(
            outcome,
            RequestOutcome::Refused(longtx_core::revision::Refusal::NoPermission { .. })
        );
        sqlx::query(
            "UPDATE revision_requests SET state = 'decided', answer = $2, round = $3, \
                 refused_for_permission = $4 WHERE id = $1",
        )
        .bind(id)
        .bind(&answer)
        .bind(round)
        .bind(no_permission)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some((outcome, answer)))
    }

    /// Drops request `id` unanswered when its author was already told, on
    /// the same PR, that a request needs write access: a reader's flood
    /// costs no permission lookup and no reply. True when dropped.
    pub async fn drop_repeated_reader(&self, id: i64) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE revision_requests me SET state = 'answered', answered_at = now(), lease_until = NULL, \
                 answer = NULL, refused_for_permission = true \
             WHERE me.id = $1 AND me.state = 'pending' AND EXISTS ( \
                 SELECT 1 FROM revision_requests r \
                 WHERE r.job_id = me.job_id AND lower(r.login) = lower(me.login) AND r.id <> me.id \
                   AND r.refused_for_permission)",
        )
        .bind(id)
        .execute(self.pool())
        .await?
        .rows_affected()
            == 1)
    }

    /// The answer is on the PR.
    pub async fn finish_request(&self, id: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE revision_requests SET state = 'answered', answered_at = now(), lease_until = NULL \
             WHERE id = $1 AND state = 'decided'",
        )
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}
