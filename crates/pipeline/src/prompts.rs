//! Rendering each new job's prompt.
//!
//! Intake hands new job ids to the worker through a bounded queue and
//! answers at once; the worker reads the job (one short query), renders on
//! a blocking thread with no connection held (catalogue, template and code
//! are files), then stores the result (one short update). A sweep picks up
//! jobs whose id was never queued (a full queue, a crash before rendering).

use longtx_core::IntakePolicy;
use longtx_prompt::{JobFacts, PromptSources};
use longtx_store::{JobRow, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::Instrument;

/// Where intake sends the ids of jobs it created.
#[derive(Debug, Clone)]
pub struct PromptQueue {
    sender: mpsc::Sender<i64>,
}

impl PromptQueue {
    /// Never waits: when the queue is full, the sweep renders the job later.
    pub fn job_created(&self, id: i64) {
        if self.sender.try_send(id).is_err() {
            tracing::debug!(job_id = id, "prompt queue full; the sweep will render it");
        }
    }
}

const QUEUE_DEPTH: usize = 1024;
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// Starts the worker on the current runtime and returns its queue.
pub fn spawn_prompt_worker(
    store: Store,
    sources: PromptSources,
    policy: Arc<IntakePolicy>,
) -> PromptQueue {
    let (sender, receiver) = mpsc::channel::<i64>(QUEUE_DEPTH);
    // Shared with the worker's next life: a restart keeps the queue.
    let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
    let sources = Arc::new(sources);
    crate::workers::spawn("prompts", move || {
        let (store, sources, policy, receiver) = (
            store.clone(),
            sources.clone(),
            policy.clone(),
            receiver.clone(),
        );
        async move {
            let mut receiver = receiver.lock().await;
            let mut sweep = tokio::time::interval(SWEEP_EVERY);
            loop {
                tokio::select! {
                    received = receiver.recv() => match received {
                        Some(id) => render_job(&store, &sources, &policy, id).await,
                        None => return,
                    },
                    _ = sweep.tick() => {
                        match store.jobs_awaiting_prompt(100).await {
                            Ok(ids) => for id in ids { render_job(&store, &sources, &policy, id).await },
                            Err(err) => tracing::warn!(error = %err, "listing jobs awaiting a prompt failed"),
                        }
                    }
                }
            }
        }
    });
    PromptQueue { sender }
}

async fn render_job(store: &Store, sources: &Arc<PromptSources>, policy: &IntakePolicy, id: i64) {
    let job = match store.job(id).await {
        Ok(Some(job)) if job.prompt_revision.is_none() && job.prompt_error.is_none() => job,
        Ok(_) => return,
        Err(err) => {
            tracing::warn!(job_id = id, error = %err, "reading the job for its prompt failed");
            return;
        }
    };
    let span = tracing::info_span!("prompt", job_id = id, query_source = %job.query_source);
    render_and_save(store, sources, policy, job)
        .instrument(span)
        .await;
}

async fn render_and_save(
    store: &Store,
    sources: &Arc<PromptSources>,
    policy: &IntakePolicy,
    job: JobRow,
) {
    let id = job.id;
    let mut facts = facts_of(&job, policy);
    // A source whose last fix the pre-review rejected: say why, once more.
    match store.rejection_reasons(&job.query_source, job.id).await {
        Ok(reasons) => facts.previous_rejection = reasons,
        Err(err) => {
            tracing::warn!(error = %err, "reading the previous rejection failed; the prompt goes without it")
        }
    }
    // A regression: the merged fix that did not hold, and what came since.
    match store.regression_facts(job.id).await {
        Ok(Some(fix)) => {
            facts.previous_fix = Some(longtx_prompt::PreviousFix {
                job_id: fix.job_id,
                pr: match (fix.pr_number, fix.pr_url) {
                    (Some(n), Some(url)) => format!("PR #{n}, {url}"),
                    (Some(n), None) => format!("PR #{n}"),
                    _ => "its PR".to_owned(),
                },
                files: fix.files,
                alerts_since: fix.recurrences,
                longest_since_seconds: fix.longest_since,
            })
        }
        Ok(None) => {}
        Err(err) => {
            tracing::warn!(error = %err, "reading the regressed fix failed; the prompt goes without it")
        }
    }
    let sources = sources.clone();
    let rendered = tokio::task::spawn_blocking(move || sources.build(&facts)).await;
    let saved = match rendered {
        Ok(Ok(prompt)) => {
            tracing::info!(bytes = prompt.text.len(), revision = %prompt.revision, "prompt rendered");
            store
                .save_prompt(
                    id,
                    &prompt.text,
                    &prompt.revision,
                    &prompt.sha256,
                    prompt.truncation.as_deref(),
                    &prompt.located,
                )
                .await
                .map(|_| ())
        }
        Ok(Err(message)) => {
            tracing::error!(error = %message, "the prompt could not be rendered; the job records why");
            store.save_prompt_error(id, &message).await
        }
        Err(panic) => {
            store
                .save_prompt_error(id, &format!("the renderer panicked: {panic}"))
                .await
        }
    };
    if let Err(err) = saved {
        tracing::warn!(error = %err, "storing the prompt failed; the sweep will retry");
    }
}

/// The prompt's view of a job; the threshold is the one its first table has.
pub fn facts_of(job: &JobRow, policy: &IntakePolicy) -> JobFacts {
    JobFacts {
        id: Some(job.id),
        query_source: job.query_source.clone(),
        tables: job.tables.clone(),
        max_duration_seconds: job.max_duration_seconds,
        alert_count: job.alert_count.into(),
        first_seen_at: Some(job.first_seen_at.to_rfc3339()),
        last_seen_at: Some(job.last_seen_at.to_rfc3339()),
        threshold_seconds: policy.threshold_for(job.tables.first().map(String::as_str)),
        alert_links: job.alert_links.clone(),
        previous_rejection: Vec::new(),
        previous_fix: None,
    }
}
