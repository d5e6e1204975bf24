//! Revision rounds, dispatched by the dispatcher like a job's first run:
//! the same claim (lock, caps, pause), the same crash-safe run lookup (a
//! round's run name carries job and round), the same retries.
//!
//! 1. The first claim renders the round's prompt (the PR's files are a
//!    GitHub call, made with no connection held) and stores it.
//! 2. The branch head is pinned as the round's base, and the fix workflow
//!    is dispatched with `round`, the findings and `base_sha`; it checks
//!    that commit out and uploads its patch (it cannot push).
//! 3. When the run has ended well, the round waits in `checking` until the
//!    PR opener applies its result (`round_results.rs`).

use crate::dispatch::{count_dispatch, Dispatcher, Target};
use longtx_github::{Dispatch, GitHub, GitHubError};
use longtx_store::{RoundClaim, RoundEnded};
use std::collections::BTreeMap;

/// The findings, on one line, as the `findings` input carries them (the
/// prompt has them in full).
const FINDINGS_INPUT_CHARS: usize = 1000;

impl<G: GitHub> Dispatcher<G> {
    pub(crate) async fn dispatch_round(&self, round: RoundClaim) {
        let Some(github) = &self.github else {
            // Without credentials there is no PR to revise.
            let _ = self
                .store
                .record_round_dispatch_failed(
                    round.job_id,
                    round.round,
                    "dry run: no GitHub credentials",
                    &serde_json::json!({}),
                )
                .await;
            return;
        };
        let result = async {
            let git_ref = self.git_ref(github).await?;
            let sha = match &round.prompt_sha256 {
                Some(sha) => sha.clone(),
                None => match self.render_prompt(github, &round).await? {
                    Some(sha) => sha,
                    // The lease was lost meanwhile: another dispatcher has it.
                    None => return Ok(None),
                },
            };
            let branch = crate::installation::branch_of(&self.store, round.job_id).await?;
            let base = match &round.base_sha {
                Some(base) => Some(base.clone()),
                None => match github.branch_head(&self.settings.repo, &branch).await? {
                    Some(head) => self
                        .store
                        .pin_round_base(round.job_id, round.round, &head)
                        .await
                        .map_err(|e| GitHubError::Unavailable(format!("pinning the base: {e}")))?,
                    None => {
                        return Err(GitHubError::Refused {
                            status: 404,
                            message: format!("{branch} no longer exists"),
                        })
                    }
                },
            };
            let Some(base) = base else { return Ok(None) };
            let inputs = round_inputs(&round, &self.settings.public_url, &sha, &base);
            let dispatch = Dispatch {
                workflow: self.settings.workflow.clone(),
                git_ref,
                inputs,
            };
            let sent = self
                .send(
                    github,
                    &dispatch,
                    Target::Round(round.job_id, round.round),
                    round.attempts,
                    round.started_at,
                )
                .await?;
            Ok::<_, GitHubError>(Some((sent, dispatch)))
        }
        .await;
        match result {
            Ok(None) => {}
            Ok(Some(((run, outcome), dispatch))) => {
                let record = shown(&dispatch, &self.settings.repo.to_string());
                let run_id = run.as_ref().map(|r| r.id as i64);
                let url = run.as_ref().and_then(|r| r.html_url.clone());
                match self
                    .store
                    .record_round_dispatched(
                        round.job_id,
                        round.round,
                        run_id,
                        url.as_deref(),
                        &record,
                        outcome,
                        self.settings.caps.run_budget_usd,
                    )
                    .await
                {
                    Ok(true) => {
                        tracing::info!(run_id, outcome, "revision round started");
                        count_dispatch("round");
                    }
                    Ok(false) => tracing::warn!("the round moved on while dispatching"),
                    Err(e) => {
                        tracing::error!(error = %e, "recording the round's run failed; after the lease it is found by name")
                    }
                }
            }
            Err(err)
                if err.is_rate_limit()
                    || (err.is_retryable()
                        && round.attempts < longtx_github::retry::MAX_ATTEMPTS as i32) =>
            {
                tracing::warn!(error = %err, "GitHub did not answer usefully; the round is tried again after the lease");
            }
            Err(err) => {
                tracing::error!(error = %err, "the round's dispatch failed for good");
                let ended = self
                    .store
                    .record_round_dispatch_failed(
                        round.job_id,
                        round.round,
                        &crate::dispatch::explain(&err),
                        &serde_json::json!({"round": round.round}),
                    )
                    .await;
                log_end(round.job_id, round.round, ended);
            }
        }
    }

    /// Renders and stores the round's prompt; its SHA-256, or `None` when
    /// the claim was lost meanwhile.
    async fn render_prompt(
        &self,
        github: &G,
        round: &RoundClaim,
    ) -> Result<Option<String>, GitHubError> {
        let files = github
            .pull_files(&self.settings.repo, round.pr_number)
            .await?;
        let diff: Vec<(String, u64)> = files.into_iter().map(|f| (f.filename, f.changes)).collect();
        let branch = crate::installation::branch_of(&self.store, round.job_id).await?;
        let prompt = longtx_prompt::round_prompt(&longtx_prompt::RoundFacts {
            job_id: round.job_id,
            branch: &branch,
            round: round.round,
            query_source: &round.query_source,
            trigger: round.trigger,
            requested_by: round.requested_by.as_deref(),
            findings: &round.findings,
            request: &round.request,
            diff: &diff,
            original: &round.original_prompt,
        });
        let sha = longtx_prompt::hex_sha256(prompt.as_bytes());
        match self
            .store
            .set_round_prompt(round.job_id, round.round, &prompt, &sha)
            .await
        {
            Ok(true) => Ok(Some(sha)),
            Ok(false) => Ok(None),
            Err(e) => Err(GitHubError::Unavailable(format!(
                "storing the round's prompt: {e}"
            ))),
        }
    }

    /// Follows rounds whose run goes (webhooks get lost) and reads the
    /// branch head of rounds whose run ended well.
    pub(crate) async fn check_rounds(&self) {
        let Some(github) = &self.github else { return };
        let running = match self.store.running_rounds(self.settings.agent_timeout).await {
            Ok(running) => running,
            Err(e) => return tracing::warn!(error = %e, "listing running rounds failed"),
        };
        for (job_id, round, run_id, overdue) in running {
            if overdue {
                let ended = self
                    .store
                    .expire_round(job_id, round, "no push within the agent timeout")
                    .await;
                log_end(job_id, round, ended);
                continue;
            }
            let run = match run_id {
                Some(id) => github.run(&self.settings.repo, id as u64).await.ok(),
                None => match self.store.dispatched_run(job_id, round).await {
                    Ok(Some(longtx_store::DispatchedRun {
                        started_at: Some(started_at),
                        ..
                    })) => self
                        .existing(github, Target::Round(job_id, round), started_at)
                        .await
                        .ok()
                        .flatten(),
                    _ => None,
                },
            };
            let Some(run) = run.filter(|r| r.status.as_deref() == Some("completed")) else {
                continue;
            };
            let conclusion = run.conclusion.as_deref().unwrap_or("no conclusion");
            let detail = format!(
                "the run ended ({conclusion}){}",
                run.html_url
                    .as_deref()
                    .map(|u| format!(": {u}"))
                    .unwrap_or_default()
            );
            let ended = self
                .store
                .record_round_run_completed(job_id, round, conclusion == "success", &detail)
                .await;
            log_end(job_id, round, ended);
        }
    }
}

fn log_end(job_id: i64, round: u32, ended: Result<Option<RoundEnded>, longtx_store::StoreError>) {
    match ended {
        Ok(Some(ended)) => {
            tracing::info!(job_id, round, end = ?ended.end, job_moved_to = ?ended.job_moved_to, "revision round ended");
            longtx_metrics::inc(
                "longtx_revision_round_ends_total",
                "Revision rounds ended, by how.",
                &[("end", ended.end.as_str())],
            );
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(job_id, round, error = %e, "recording the round's end failed; retried")
        }
    }
}

/// The record of a dispatch, without the prompt token.
fn shown(dispatch: &Dispatch, repo: &str) -> serde_json::Value {
    let mut inputs = dispatch.inputs.clone();
    inputs.insert("prompt_token".to_owned(), "<redacted>".to_owned());
    serde_json::json!({"repo": repo, "workflow": dispatch.workflow, "ref": dispatch.git_ref, "inputs": inputs})
}

/// The fix workflow's inputs for a round: the job's, with the round, the
/// findings in short, and the round's own prompt.
pub fn round_inputs(
    round: &RoundClaim,
    public_url: &str,
    prompt_sha256: &str,
    base_sha: &str,
) -> BTreeMap<String, String> {
    let base = public_url.trim_end_matches('/');
    let findings: Vec<String> = round.findings.iter().map(|f| f.one_line()).collect();
    let mut findings = findings.join(" | ");
    if findings.chars().count() > FINDINGS_INPUT_CHARS {
        findings = findings
            .chars()
            .take(FINDINGS_INPUT_CHARS)
            .collect::<String>()
            + " ...";
    }
    [
        ("job_id", round.job_id.to_string()),
        ("round", round.round.to_string()),
        ("findings", findings),
        ("query_source", round.query_source.clone()),
        ("table", round.tables.first().cloned().unwrap_or_default()),
        (
            "duration_seconds",
            round
                .max_duration_seconds
                .map(|d| format!("{d:.0}"))
                .unwrap_or_default(),
        ),
        (
            "prompt_url",
            format!(
                "{base}/api/jobs/{}/rounds/{}/prompt",
                round.job_id, round.round
            ),
        ),
        ("prompt_sha256", prompt_sha256.to_owned()),
        ("prompt_token", round.prompt_token.clone()),
        ("base_sha", base_sha.to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}
