//! Revision rounds' results: a round whose run ended well is applied like
//! round 0's, onto the branch head pinned when it was dispatched. The new
//! commit ends the round `pushed` (the job's head moves and the pre-review
//! is scheduled for it); no change ends it `no_change`; a refused or
//! missing result ends it `refused`, said on the PR and the job page.

use crate::comments::comment_once;
use crate::pr_opener::Opener;
use crate::results::{self, ApplyError, ResultOutcome};
use longtx_github::GitHub;
use longtx_store::RoundToApply;
use tracing::Instrument;

/// Tries at applying one round's result before it ends with the reason
/// (with the backoff, about an hour of trying).
const MAX_ROUND_ATTEMPTS: i32 = 10;

/// What applying a round's result came to.
enum Outcome {
    Committed(String),
    Unchanged,
    Refused(String),
}

impl<G: GitHub> Opener<G> {
    /// Applies every round whose run ended well; a failure is retried on
    /// the next pass.
    pub(crate) async fn apply_rounds(&self) {
        let rounds = match self.store.rounds_to_apply().await {
            Ok(rounds) => rounds,
            Err(e) => return tracing::warn!(error = %e, "listing rounds to apply failed"),
        };
        for round in rounds {
            let span = tracing::info_span!("apply_round", job_id = round.job_id, round = round.round, query_source = %round.query_source);
            self.apply_round(round).instrument(span).await;
        }
    }

    async fn apply_round(&self, round: RoundToApply) {
        let outcome = match &round.commit_sha {
            Some(sha) => Ok(Outcome::Committed(sha.clone())),
            None => self.round_outcome(&round).await,
        };
        // A failure that may pass is retried with a backoff, a bounded number
        // of times; then the round ends with the last reason.
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(e) => match self.store.round_apply_failed(round.job_id, round.round).await {
                Ok(attempts) if attempts >= MAX_ROUND_ATTEMPTS => Outcome::Refused(format!(
                    "longtx gave up applying the round's result after {attempts} attempts; the last failed: {e}"
                )),
                Ok(attempts) => {
                    return tracing::warn!(error = %e, attempts, "applying the round's result failed; retried after a backoff")
                }
                Err(db) => {
                    return tracing::warn!(error = %e, db_error = %db, "applying the round's result failed; retried")
                }
            },
        };
        let ended = match outcome {
            Outcome::Committed(sha) => {
                if let Err(e) = self
                    .store
                    .record_round_commit(round.job_id, round.round, &sha)
                    .await
                {
                    return tracing::warn!(error = %e, "recording the round's commit failed; retried");
                }
                self.store
                    .record_round_head(round.job_id, round.round, Some(&sha))
                    .await
            }
            Outcome::Unchanged => {
                self.store
                    .record_round_head(round.job_id, round.round, Some(&round.base_sha))
                    .await
            }
            Outcome::Refused(why) => {
                // Said on the PR first (found again by its marker), then ended.
                let marker = format!(
                    "<!-- longtx-round-refused: {} {} -->",
                    round.job_id, round.round
                );
                let body = format!(
                    "Revision round {} proposed a change longtx did not commit: {why}.\n\nThe PR stays as it was.\n\n{marker}",
                    round.round
                );
                let said = comment_once(
                    self.github.as_ref(),
                    &self.settings.repo,
                    round.pr_number,
                    2,
                    &marker,
                    &body,
                )
                .await;
                if let Err(e) = said {
                    return tracing::warn!(error = %e, "saying why the round was refused failed; retried");
                }
                self.store
                    .refuse_round(round.job_id, round.round, &why)
                    .await
            }
        };
        match ended {
            Ok(Some(ended)) => {
                tracing::info!(end = ended.end.as_str(), job_moved_to = ?ended.job_moved_to, "revision round ended");
                longtx_metrics::inc(
                    "longtx_revision_round_ends_total",
                    "Revision rounds ended, by how.",
                    &[("end", ended.end.as_str())],
                );
                if ended.pre_review_scheduled || ended.job_moved_to.is_some() {
                    if let Some(q) = &self.after.pre_reviews {
                        q.poke();
                    }
                    if let Some(q) = &self.after.reviews {
                        q.poke();
                    }
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "recording the round's end failed; retried"),
        }
    }

    async fn round_outcome(&self, round: &RoundToApply) -> Result<Outcome, ApplyError> {
        let Some(run_id) = round.run_id else {
            return Ok(Outcome::Refused(
                "longtx recorded no run id for the round".into(),
            ));
        };
        let branch = crate::installation::branch_of(&self.store, round.job_id).await?;
        let target = results::Round {
            job_id: round.job_id,
            round: round.round,
            query_source: &round.query_source,
            run_id: run_id as u64,
            base: &round.base_sha,
            fetch: &branch,
            branch: &branch,
            create_branch: false,
        };
        let applied = results::apply_result(
            self.github.as_ref(),
            &self.store,
            &self.settings.results,
            &self.settings.repo,
            &target,
        )
        .await?;
        Ok(match applied {
            ResultOutcome::Committed { sha, check, .. } => {
                if let Some(check) = &check {
                    if let Err(e) = self.store.record_patch_check(target.job_id, check).await {
                        tracing::warn!(error = %e, "recording the patch's scan failed");
                    }
                }
                Outcome::Committed(sha)
            }
            ResultOutcome::Unchanged(_) => Outcome::Unchanged,
            ResultOutcome::PatchRefused(why) | ResultOutcome::Unusable(why) => {
                Outcome::Refused(why)
            }
        })
    }
}
