//! `POST /webhooks/github`: PR and workflow-run events for fix PRs.
//!
//! The signature is checked over the raw bytes before anything is parsed.
//! The delivery id is stored in the same short transaction as the job's
//! transition, so a redelivery is acknowledged without acting twice. No
//! GitHub call happens here: reviewer requests go to the reviewer worker.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use hmac::{Hmac, Mac};
use longtx_core::agent_run::{self, Dispatched};
use longtx_core::github_events::ReviewGate;
use longtx_core::github_events::{
    correlate, job_and_round_of_run, Correlation, IssueCommentEvent, PrEvent, PullRequestEvent,
    PullRequestReviewEvent, WorkflowRunEvent,
};
use longtx_core::pre_review::PreReviewMode;
use longtx_core::revision::{parse_command, Command};
use longtx_store::{Applied, Delivery, PrFacts};
use serde::Serialize;
use sha2::Sha256;
use tracing::Instrument;

/// GitHub sends up to 25 MB; PR and run events are far smaller.
pub const MAX_GITHUB_BODY_BYTES: usize = 5 * 1024 * 1024;

/// What the GitHub webhook needs to know.
#[derive(Clone)]
pub struct GitHubWebhook {
    secret: Vec<u8>,
    /// `owner/name` of the target repository.
    pub repo: String,
    /// The label that declines a fix.
    pub wontfix_label: String,
    /// Whether a new fix PR waits for the AI pre-review.
    pub pre_review: PreReviewMode,
    /// The workflow files longtx dispatches: a run of any other is not one
    /// of longtx's, whatever its title says.
    pub fix_workflow: String,
    pub pre_review_workflow: String,
    /// longtx's own GitHub login, read once at start: a webhook may make a
    /// PR a job's PR only when longtx authored it (the opener records the
    /// PRs it opens itself either way). Empty when GitHub did not say:
    /// then no webhook does. `None` only where no GitHub client exists to
    /// ask (tests that stand in for the opener by delivering its events).
    pub own_login: Option<String>,
}

impl GitHubWebhook {
    pub fn new(secret: &str, repo: &str) -> Self {
        GitHubWebhook {
            secret: secret.as_bytes().to_vec(),
            repo: repo.to_owned(),
            wontfix_label: longtx_core::github_events::WONTFIX_LABEL.to_owned(),
            pre_review: PreReviewMode::Off,
            fix_workflow: "long-transaction-fix.yml".to_owned(),
            pre_review_workflow: "long-transaction-pre-review.yml".to_owned(),
            own_login: None,
        }
    }

    /// longtx's own login (empty: unknown, so no webhook makes a job's PR).
    pub fn with_own_login(mut self, login: &str) -> Self {
        self.own_login = Some(login.to_owned());
        self
    }

    /// Whether `author` is longtx's own login.
    fn authored_by_longtx(&self, author: &str) -> bool {
        self.own_login
            .as_deref()
            .is_none_or(|own| !own.is_empty() && own.eq_ignore_ascii_case(author))
    }

    /// The configured workflow files (`LONGTX_WORKFLOW`, the pre-review's).
    pub fn with_workflows(mut self, fix: &str, pre_review: &str) -> Self {
        self.fix_workflow = fix.to_owned();
        self.pre_review_workflow = pre_review.to_owned();
        self
    }

    pub fn with_pre_review(mut self, mode: PreReviewMode) -> Self {
        self.pre_review = mode;
        self
    }

    fn gate(&self) -> ReviewGate {
        if self.pre_review.is_enabled() {
            ReviewGate::PreReviewFirst
        } else {
            ReviewGate::PeopleAtOnce
        }
    }

    pub fn with_wontfix_label(mut self, label: &str) -> Self {
        self.wontfix_label = label.to_owned();
        self
    }

    /// `X-Hub-Signature-256: sha256=<hex>`, read from the headers alone,
    /// before any byte of the body.
    fn signature(headers: &HeaderMap) -> Result<Vec<u8>, ApiError> {
        let header = headers
            .get("x-hub-signature-256")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| ApiError::unauthorized("X-Hub-Signature-256 is missing"))?;
        header
            .strip_prefix("sha256=")
            .and_then(decode_hex)
            .ok_or_else(|| ApiError::unauthorized("X-Hub-Signature-256 is not sha256=<hex>"))
    }

    /// The signature over the body, compared in constant time.
    /// The HMAC a delivery's body streams through as it is read.
    fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes any key")
    }

    fn verify(mac: Hmac<Sha256>, signature: &[u8]) -> Result<(), ApiError> {
        mac.verify_slice(signature)
            .map_err(|_| ApiError::unauthorized("the signature does not match the body"))
    }
}

impl std::fmt::Debug for GitHubWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GitHubWebhook {{ repo: {:?}, secret: <redacted> }}",
            self.repo
        )
    }
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[derive(Debug, Serialize)]
struct Answer {
    event: String,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    job_id: Option<i64>,
    detail: String,
}

fn answer(
    status: StatusCode,
    event: &str,
    outcome: &'static str,
    job_id: Option<i64>,
    detail: String,
) -> Response {
    (
        status,
        Json(Answer {
            event: event.to_owned(),
            outcome,
            job_id,
            detail,
        }),
    )
        .into_response()
}

/// The events longtx acts on; any other is answered without reading it.
const HANDLED_EVENTS: [&str; 5] = [
    "ping",
    "pull_request",
    "workflow_run",
    "pull_request_review",
    "issue_comment",
];

pub async fn receive(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let Some(webhook) = state.github_webhook.clone() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_configured",
            "LONGTX_GITHUB_WEBHOOK_SECRET is not set, so GitHub deliveries cannot be verified",
        ));
    };
    // Everything the headers can settle is settled before the body is
    // read: an unsigned or unwanted delivery costs longtx no buffer.
    let signature = GitHubWebhook::signature(headers)?;
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let event = header("x-github-event")
        .ok_or_else(|| ApiError::bad_request("missing_header", "X-GitHub-Event is missing"))?;
    let delivery_id = header("x-github-delivery")
        .filter(|id| !id.is_empty() && id.len() <= 100)
        .ok_or_else(|| {
            ApiError::bad_request("missing_header", "X-GitHub-Delivery is missing or too long")
        })?;
    if !HANDLED_EVENTS.contains(&event.as_str()) {
        tracing::info!(event = %longtx_core::text::one_line(&event), "event not used by longtx; ignored unread");
        return Ok(answer(
            StatusCode::ACCEPTED,
            &event,
            "ignored",
            None,
            "longtx does not use this event".into(),
        ));
    }
    let mut mac = webhook.mac();
    let body = crate::body::read_to_verify(&parts, body, MAX_GITHUB_BODY_BYTES, |chunk| {
        mac.update(chunk)
    })
    .await?;
    GitHubWebhook::verify(mac, &signature)?;
    let span = tracing::info_span!("github", %event, delivery = %delivery_id, job_id = tracing::field::Empty);
    async move {
        match event.as_str() {
            "ping" => Ok(answer(
                StatusCode::OK,
                &event,
                "pong",
                None,
                "webhook reached longtx".into(),
            )),
            "pull_request" => pull_request(&state, &webhook, &delivery_id, parse(&body)?).await,
            "workflow_run" => workflow_run(&state, &webhook, &delivery_id, parse(&body)?).await,
            "pull_request_review" => review(&state, &webhook, &delivery_id, parse(&body)?).await,
            "issue_comment" => comment(&state, &webhook, &delivery_id, parse(&body)?).await,
            _ => Ok(answer(
                StatusCode::ACCEPTED,
                &event,
                "ignored",
                None,
                "longtx does not use this event".into(),
            )),
        }
    }
    .instrument(span)
    .await
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    longtx_core::alert::require_object(body)
        .map_err(|e| ApiError::bad_request("invalid_body", e))?;
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request("invalid_body", e.to_string()))
}

async fn pull_request(
    state: &AppState,
    webhook: &GitHubWebhook,
    delivery_id: &str,
    event: PullRequestEvent,
) -> Result<Response, ApiError> {
    let pr = &event.pull_request;
    let change = match event.action.as_str() {
        "opened" => PrEvent::Opened,
        "reopened" => PrEvent::Reopened,
        "synchronize" => PrEvent::Synchronized,
        "closed" => PrEvent::Closed { merged: pr.merged },
        "labeled" => {
            let label = event
                .label
                .as_ref()
                .map(|l| l.name.clone())
                .unwrap_or_default();
            match &event.sender {
                Some(sender) if label == webhook.wontfix_label => PrEvent::WontfixLabeled {
                    by: sender.login.clone(),
                },
                _ => PrEvent::Labeled(label),
            }
        }
        _ => {
            return Ok(answer(
                StatusCode::ACCEPTED,
                "pull_request",
                "ignored",
                None,
                format!("action {:?} is not used", event.action),
            ));
        }
    };
    let delivery = Delivery {
        id: delivery_id,
        event: "pull_request",
        action: Some(&event.action),
    };
    let checked = request_check(state, webhook, &event).await?;
    let installation = state.store.installation().await?;
    let job_id = match correlate(pr, &webhook.repo, &installation) {
        Correlation::NotOurs if checked => {
            return Ok(answer(
                StatusCode::ACCEPTED,
                "pull_request",
                "check_requested",
                None,
                format!(
                    "not a longtx PR; its head {} is checked for long transactions",
                    pr.head.sha
                ),
            ));
        }
        Correlation::NotOurs => {
            return Ok(answer(
                StatusCode::ACCEPTED,
                "pull_request",
                "ignored",
                None,
                "not a longtx PR".into(),
            ));
        }
        Correlation::Suspicious(why) => {
            let why = longtx_core::text::one_line(&why);
            tracing::warn!(pr = pr.number, %why, "PR names a longtx job but cannot be trusted; nothing done");
            state
                .store
                .apply_github_event(&delivery, None, None, None, webhook.gate(), &why)
                .await?;
            return Ok(answer(
                StatusCode::ACCEPTED,
                "pull_request",
                "untrusted",
                None,
                why,
            ));
        }
        Correlation::Job(id) => id,
    };
    let facts = PrFacts {
        number: pr.number,
        url: pr.html_url.clone(),
        head_sha: pr.head.sha.clone(),
        base_ref: pr.base.git_ref.clone(),
        author: pr.user.login.clone(),
        opened_by_longtx: webhook.authored_by_longtx(&pr.user.login),
    };
    tracing::Span::current().record("job_id", job_id);
    let applied = state
        .store
        .apply_github_event(
            &delivery,
            Some(job_id),
            Some(&change),
            Some(&facts),
            webhook.gate(),
            "",
        )
        .await?;
    if let Some(pre_reviews) = &state.pre_reviews {
        pre_reviews.poke();
    }
    match &applied {
        Applied::WontfixRequested => {
            tracing::info!(job_id, "wontfix label taken");
            if let Some(wontfix) = &state.wontfix {
                wontfix.poke();
            }
        }
        Applied::WontfixPrClosed { merged } => {
            tracing::info!(job_id, merged, "the ignore-list PR closed");
            if let Some(wontfix) = &state.wontfix {
                if *merged {
                    wontfix.reload_from(&pr.base.git_ref);
                } else {
                    wontfix.poke();
                }
            }
        }
        _ => {}
    }
    Ok(respond(state, "pull_request", job_id, applied))
}

/// Asks for the "long transactions" check of a PR's new head, any PR of
/// the target repository (longtx's own too). True when this delivery asked
/// for it now; a redelivery, or a head asked for already, asks nothing.
async fn request_check(
    state: &AppState,
    webhook: &GitHubWebhook,
    event: &PullRequestEvent,
) -> Result<bool, ApiError> {
    let Some(checks) = &state.pr_checks else {
        return Ok(false);
    };
    let pr = &event.pull_request;
    let ours = event
        .repository
        .full_name
        .eq_ignore_ascii_case(&webhook.repo);
    if !ours || !longtx_core::pr_check::action_wants_check(&event.action) {
        return Ok(false);
    }
    let is_commit_id = longtx_core::agent_run::is_commit_id;
    if !is_commit_id(&pr.head.sha) || !is_commit_id(&pr.base.sha) {
        tracing::warn!(
            pr = pr.number,
            "a PR event without commit ids; no check asked"
        );
        return Ok(false);
    }
    let asked = state
        .store
        .request_pr_check(pr.number, &pr.head.sha, &pr.base.git_ref, &pr.base.sha)
        .await?;
    if asked {
        tracing::info!(pr = pr.number, head = %pr.head.sha, "PR check requested");
        checks.poke();
    }
    Ok(asked)
}

/// A run's end counts only when the run is the one longtx dispatched: its
/// id, the configured workflow file, a `workflow_dispatch` trigger on the
/// target repository, created after the dispatch began. A title names a
/// candidate and nothing more: anyone who opens a PR chooses the title of
/// its CI runs.
async fn workflow_run(
    state: &AppState,
    webhook: &GitHubWebhook,
    delivery_id: &str,
    event: WorkflowRunEvent,
) -> Result<Response, ApiError> {
    let ignored = |detail: String| {
        Ok(answer(
            StatusCode::ACCEPTED,
            "workflow_run",
            "ignored",
            None,
            detail,
        ))
    };
    let ours = event
        .repository
        .full_name
        .eq_ignore_ascii_case(&webhook.repo);
    if !ours || event.action != "completed" {
        return ignored("not a completed run of the target repository".into());
    }
    let run = &event.workflow_run;
    if let Some((job_id, started_at)) = state.store.pre_review_of_run(run.id as i64).await? {
        let dispatched = Dispatched {
            run_id: Some(run.id),
            workflow_file: &webhook.pre_review_workflow,
            repo: &webhook.repo,
            started_at: started_at.unwrap_or_default(),
        };
        if let Err(why) = agent_run::check(&dispatched, &run.observed(), false) {
            tracing::warn!(%why, run = run.id, "a run claims a pre-review it is not; nothing done");
            return ignored(why.to_string());
        }
        tracing::Span::current().record("job_id", job_id);
        if let Some(pre_reviews) = &state.pre_reviews {
            pre_reviews.poke();
        }
        return Ok(answer(
            StatusCode::OK,
            "workflow_run",
            "pre_review_run_ended",
            Some(job_id),
            "longtx reads the verdict from the run's result".into(),
        ));
    }
    let Some((job_id, round)) = job_and_round_of_run(run) else {
        return ignored("not a run longtx dispatched".into());
    };
    let Some(recorded) = state.store.dispatched_run(job_id, round).await? else {
        return ignored(format!(
            "longtx dispatched no run for job {job_id} round {round}"
        ));
    };
    let dispatched = Dispatched {
        run_id: recorded.run_id.map(|id| id as u64),
        workflow_file: &webhook.fix_workflow,
        repo: &webhook.repo,
        started_at: recorded.started_at.unwrap_or_default(),
    };
    if let Err(why) = agent_run::check(&dispatched, &run.observed(), false) {
        tracing::warn!(%why, run = run.id, job_id, round, "a run names a longtx job but is not the run longtx dispatched; nothing done");
        return ignored(why.to_string());
    }
    tracing::Span::current().record("job_id", job_id);
    let delivery = Delivery {
        id: delivery_id,
        event: "workflow_run",
        action: Some(&event.action),
    };
    let conclusion = event
        .workflow_run
        .conclusion
        .as_deref()
        .unwrap_or("unknown");
    let success = conclusion == "success";
    let detail = format!("run {} concluded {conclusion}", event.workflow_run.id);
    let change = match round {
        0 => PrEvent::RunCompleted { success },
        round => PrEvent::RoundRunCompleted { round, success },
    };
    let applied = state
        .store
        .apply_github_event(
            &delivery,
            Some(job_id),
            Some(&change),
            None,
            webhook.gate(),
            &detail,
        )
        .await?;
    Ok(respond(state, "workflow_run", job_id, applied))
}

/// A review: only a submitted "changes requested" review on a fix PR, by a
/// person, is recorded; the request worker checks their permission.
async fn review(
    state: &AppState,
    webhook: &GitHubWebhook,
    delivery_id: &str,
    event: PullRequestReviewEvent,
) -> Result<Response, ApiError> {
    let ignored = |why: &str| {
        Ok(answer(
            StatusCode::ACCEPTED,
            "pull_request_review",
            "ignored",
            None,
            why.to_owned(),
        ))
    };
    if !event.requests_changes() {
        return ignored("only submitted reviews that request changes start a round");
    }
    if event.review.user.is_bot() {
        return ignored("reviews by bots start no round");
    }
    let installation = state.store.installation().await?;
    let job_id = match correlate(&event.pull_request, &webhook.repo, &installation) {
        Correlation::Job(id) => id,
        Correlation::NotOurs => return ignored("not a longtx PR"),
        Correlation::Suspicious(why) => {
            tracing::warn!(why = %longtx_core::text::one_line(&why), "a review on a PR that names a job but cannot be trusted; ignored");
            return ignored("not a trusted longtx PR");
        }
    };
    let body = event.review.body.clone().unwrap_or_default();
    let request = longtx_store::NewRequest {
        source: "review",
        github_id: event.review.id,
        kind: "revise",
        login: &event.review.user.login,
        body: &body,
    };
    record_request(
        state,
        delivery_id,
        "pull_request_review",
        &event.action,
        job_id,
        &request,
    )
    .await
}

/// A comment: only `/longtx revise` or `/longtx stop` on a fix PR, by a
/// person, is recorded.
async fn comment(
    state: &AppState,
    webhook: &GitHubWebhook,
    delivery_id: &str,
    event: IssueCommentEvent,
) -> Result<Response, ApiError> {
    let ignored = |why: &str| {
        Ok(answer(
            StatusCode::ACCEPTED,
            "issue_comment",
            "ignored",
            None,
            why.to_owned(),
        ))
    };
    let command = parse_command(&event.comment.body);
    let (Some(command), "created", Some(_)) =
        (command, event.action.as_str(), event.issue.pull_request)
    else {
        return ignored("not a /longtx command on a pull request");
    };
    if event.comment.user.is_bot() {
        return ignored("commands from bots are not taken");
    }
    if !event
        .repository
        .full_name
        .eq_ignore_ascii_case(&webhook.repo)
    {
        return ignored("not the target repository");
    }
    let Some(job_id) = state.store.job_of_pr(event.issue.number).await? else {
        return ignored("not a longtx fix PR");
    };
    let (kind, body) = match &command {
        Command::Revise(text) => ("revise", text.as_str()),
        Command::Stop => ("stop", ""),
    };
    let request = longtx_store::NewRequest {
        source: "comment",
        github_id: event.comment.id,
        kind,
        login: &event.comment.user.login,
        body,
    };
    record_request(
        state,
        delivery_id,
        "issue_comment",
        &event.action,
        job_id,
        &request,
    )
    .await
}

async fn record_request(
    state: &AppState,
    delivery_id: &str,
    event: &str,
    action: &str,
    job_id: i64,
    request: &longtx_store::NewRequest<'_>,
) -> Result<Response, ApiError> {
    tracing::Span::current().record("job_id", job_id);
    let delivery = Delivery {
        id: delivery_id,
        event,
        action: Some(action),
    };
    let applied = state
        .store
        .record_revision_request(&delivery, job_id, request)
        .await?;
    if let Applied::RevisionRequested { new } = applied {
        tracing::info!(job_id, login = %request.login, kind = request.kind, new, "revision request recorded");
        if let Some(requests) = &state.requests {
            requests.poke();
        }
    }
    Ok(respond(state, event, job_id, applied))
}

fn respond(state: &AppState, event: &str, job_id: i64, applied: Applied) -> Response {
    let (status, outcome, detail) = match &applied {
        Applied::Duplicate => (
            StatusCode::OK,
            "duplicate",
            "this delivery was already processed".to_owned(),
        ),
        Applied::Moved { from, to } => {
            tracing::info!(job_id, %from, %to, "job moved");
            if *to == longtx_core::JobState::InReview {
                if let Some(reviews) = &state.reviews {
                    reviews.poke();
                }
            }
            (StatusCode::OK, "moved", format!("{from} -> {to}"))
        }
        Applied::Unchanged { state } => (
            StatusCode::OK,
            "unchanged",
            format!("the job stays {state}"),
        ),
        Applied::UnknownJob => {
            tracing::warn!(job_id, "GitHub named a job longtx does not have");
            (
                StatusCode::ACCEPTED,
                "unknown_job",
                format!("no job {job_id}"),
            )
        }
        Applied::Conflict { other_job } => {
            tracing::warn!(
                job_id,
                other_job,
                "not reviving the job: its source has another active job"
            );
            (
                StatusCode::OK,
                "conflict",
                format!("job {other_job} is active for the same source"),
            )
        }
        Applied::Recorded => (StatusCode::ACCEPTED, "recorded", String::new()),
        Applied::NotTheJobsPr { why } => {
            tracing::warn!(job_id, %why, "an event about a PR that does not speak for the job; nothing done");
            (StatusCode::ACCEPTED, "not_the_jobs_pr", why.clone())
        }
        Applied::WontfixRequested => (
            StatusCode::OK,
            "wontfix_requested",
            "longtx applies the label now".to_owned(),
        ),
        Applied::WontfixPrClosed { merged: true } => (
            StatusCode::OK,
            "wontfix_merged",
            "the ignore list is re-read from the base branch".to_owned(),
        ),
        Applied::WontfixPrClosed { merged: false } => (
            StatusCode::OK,
            "wontfix_abandoned",
            "closed unmerged: the source is no longer ignored".to_owned(),
        ),
        Applied::RevisionRequested { new: true } => (
            StatusCode::OK,
            "revision_requested",
            "longtx answers on the PR".to_owned(),
        ),
        Applied::RevisionRequested { new: false } => (
            StatusCode::OK,
            "duplicate",
            "this review or comment was already recorded".to_owned(),
        ),
        Applied::RoundRunEnded => {
            if let Some(opener) = &state.pr_opener {
                opener.poke();
            }
            (
                StatusCode::OK,
                "round_run_ended",
                "longtx applies the round's result".to_owned(),
            )
        }
        Applied::PrOpenRequested => {
            if let Some(opener) = &state.pr_opener {
                opener.poke();
            }
            (
                StatusCode::OK,
                "opening_pr",
                "longtx commits the run's result and opens the fix PR".to_owned(),
            )
        }
    };
    answer(status, event, outcome, Some(job_id), detail)
}
