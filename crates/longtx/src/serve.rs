//! `longtx serve`: the webhook receiver and API, with graceful shutdown.

use crate::config::Config;
use crate::database::Database;
use crate::worker_settings;
use anyhow::{bail, Context};
use longtx_core::IgnoreList;
use longtx_http::{AppState, WebhookAuth};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub async fn serve(config: Config) -> anyhow::Result<()> {
    // The same checks as `longtx config check`, so one never passes what
    // the other refuses.
    if let Some(problem) = crate::config::check::problems(&config).into_iter().next() {
        bail!("refusing to start: {problem} (`longtx config check` lists every problem)");
    }
    for warning in crate::config::check::warnings(&config) {
        tracing::warn!(key = warning.key, "{}", warning.message);
    }
    let ignore_list = load_ignore_list(&config.ignore_list)?;
    // Bind before starting the database so a taken port fails fast.
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;

    let db = Database::open(&config).await?;
    if let Some(owner) = db.embedded_owner() {
        db.shutdown().await;
        bail!(
            "refusing to start: {owner} already serves from LONGTX_DATA_DIR {} and owns its embedded database; stop it first, or give this one its own LONGTX_DATA_DIR",
            config.data_dir.display()
        );
    }
    if let Err(err) = db.store.migrate().await {
        db.shutdown().await;
        return Err(err).context("applying migrations");
    }
    let policy = config.policy();
    let prompts = longtx_pipeline::spawn_prompt_worker(
        db.store.clone(),
        config.prompt_sources(),
        Arc::new(policy.clone()),
    );
    let state = AppState::new(
        db.store.clone(),
        policy,
        WebhookAuth::new(config.webhook_token.clone()),
        ignore_list,
    )
    .with_prompts(prompts)
    .with_dashboard_token(config.dashboard_token.clone())
    .with_public_url(&config.github.public_url)
    .with_patterns_dir(config.patterns_dir.clone());
    let state = match &config.collect_dsn {
        Some(dsn) => {
            let collector = longtx_collector::Collector::spawn(longtx_collector::Settings {
                dsn: dsn.clone(),
                interval: config.collect_interval,
                timeout: Duration::from_secs(5),
                caps: longtx_collector::Caps {
                    max_sources: 100,
                    max_tables: 500,
                },
            });
            let (store, kept, every) = (
                db.store.clone(),
                collector.clone(),
                config
                    .collect_interval
                    .clamp(Duration::from_secs(1), Duration::from_secs(60)),
            );
            longtx_pipeline::spawn_supervised("observations", move || {
                keep_observations(store.clone(), kept.clone(), every)
            });
            state.with_extra_gauges(Arc::new(move || collector.gauges()))
        }
        None => state,
    };
    let state = match start_dispatcher(&config, &db.store, state).await {
        Ok(state) => state,
        Err(err) => {
            db.shutdown().await;
            return Err(err);
        }
    };
    // Supervised like the pipeline's workers, and stopped with them.
    let (store, retention) = (db.store.clone(), config.alert_retention);
    longtx_pipeline::spawn_supervised("alert_retention", move || {
        purge_old_alert_events(store.clone(), retention)
    });
    let store = db.store.clone();
    longtx_pipeline::spawn_supervised("alert_roll_up", move || roll_up_alerts(store.clone()));
    let (store, grace, window) = (db.store.clone(), config.deploy_grace, config.verify_window);
    longtx_pipeline::spawn_supervised("verify_merged", move || {
        verify_merged_fixes(store.clone(), grace, window)
    });

    let mut limits = longtx_http::ServerLimits::default();
    let open_files = crate::process_tuning::open_files_limit();
    limits.max_connections = crate::process_tuning::connection_slots(
        open_files,
        config.db_max_connections,
        limits.max_connections,
    );
    tracing::info!(listen = %config.listen, auth = config.webhook_token.is_some(),
        open_files = ?open_files, connections = limits.max_connections, "longtx is serving");
    let served = longtx_http::serve(
        listener,
        longtx_http::router(state),
        limits,
        crate::signals::shutdown_signal(),
    )
    .await;
    // The workers stop before the pool closes, so none of them fails
    // against a closed pool (their open transactions roll back).
    longtx_pipeline::stop_workers().await;
    tracing::info!("in-flight requests finished and workers stopped; shutting down");
    db.shutdown().await;
    served.context("serving HTTP")
}

/// longtx's own GitHub login, for tying webhook PRs to what longtx
/// opened; empty (no webhook makes a job's PR, the opener still records
/// its own) when GitHub does not say within 10 s.
async fn own_login(github: Option<&longtx_github::OctocrabGitHub>) -> String {
    use longtx_github::GitHub;
    let Some(github) = github else {
        return String::new();
    };
    match tokio::time::timeout(Duration::from_secs(10), github.own_login()).await {
        Ok(Ok(Some(login))) => login,
        other => {
            tracing::warn!(answer = ?other.map(|r| r.map(|_| ())), "GitHub did not say longtx's own login: webhooks will not tie PRs to jobs, the PR opener records the PRs it opens");
            String::new()
        }
    }
}

/// Starts the dispatcher: live with GitHub credentials, else dry-run.
async fn start_dispatcher(
    config: &Config,
    store: &longtx_store::Store,
    state: AppState,
) -> anyhow::Result<AppState> {
    let gh = &config.github;
    if let Some(paused) = gh.paused {
        store
            .set_paused(paused)
            .await
            .context("applying LONGTX_PAUSED")?;
    }
    let repo = gh
        .repo
        .as_deref()
        .unwrap_or("<LONGTX_GITHUB_REPO/unset>")
        .parse()
        .map_err(anyhow::Error::msg)?;
    let settings = longtx_pipeline::DispatchSettings {
        repo,
        workflow: gh.workflow.clone(),
        git_ref: gh.workflow_ref.clone(),
        caps: longtx_store::Caps {
            max_per_day: gh.max_dispatches_per_day,
            max_running: gh.max_running,
            max_cost_per_day: gh.max_cost_per_day,
            run_budget_usd: gh.run_budget_usd,
            pre_review_budget_usd: gh.pre_review_budget_usd,
        },
        lease: gh.dispatch_lease,
        agent_timeout: gh.agent_timeout,
        public_url: gh.public_url.clone(),
        idle_poll: Duration::from_secs(1),
        run_poll: Duration::from_secs(60),
        secondary_floor: longtx_github::retry::SECONDARY_FLOOR,
        policy: state.policy.as_ref().clone(),
    };
    let github = match &gh.credentials {
        Some(credentials) => Some(Arc::new(
            longtx_github::OctocrabGitHub::new(&gh.api_url, credentials, Duration::from_secs(30))
                .context("GitHub client")?,
        )),
        None => {
            tracing::warn!("no GitHub credentials (LONGTX_GITHUB_TOKEN, GITHUB_TOKEN or a GitHub App): dry-run mode, dispatches are recorded, not sent");
            None
        }
    };
    let info = longtx_http::DispatchInfo {
        max_per_day: gh.max_dispatches_per_day,
        max_running: gh.max_running,
        dry_run: github.is_none(),
        reviewer_capacity: github.is_some().then_some(config.reviews.capacity),
    };
    let mut state = state.with_dispatch(info);
    if let (Some(secret), Some(repo)) = (&config.reviews.webhook_secret, &gh.repo) {
        let own_login = own_login(github.as_deref()).await;
        let webhook = longtx_http::GitHubWebhook::new(secret, repo)
            .with_wontfix_label(&config.reviews.wontfix_label)
            .with_pre_review(config.reviews.pre_review)
            .with_workflows(&gh.workflow, &config.reviews.pre_review_workflow)
            .with_own_login(&own_login);
        state = state.with_github_webhook(webhook);
    } else {
        tracing::info!("LONGTX_GITHUB_WEBHOOK_SECRET or LONGTX_GITHUB_REPO unset: /webhooks/github answers 503");
    }
    let mut finder = None;
    if let Some(github) = &github {
        let reviewers = longtx_pipeline::ReviewerFinder::new(
            store.clone(),
            worker_settings::reviews(config, &settings.repo)?,
            github.clone(),
        );
        finder = Some(reviewers.clone());
        state = state.with_reviews(longtx_pipeline::spawn_reviewer_with(reviewers));
        let wontfix = longtx_pipeline::spawn_wontfix_worker(
            store.clone(),
            worker_settings::wontfix(config, &settings.repo)?,
            github.clone(),
            state.live_ignore_list(),
        );
        state = state.with_wontfix(wontfix);
        if config.reviews.pre_review.is_enabled() {
            let pre_reviews = longtx_pipeline::spawn_pre_reviewer(
                store.clone(),
                longtx_pipeline::PreReviewSettings {
                    repo: settings.repo.clone(),
                    workflow: config.reviews.pre_review_workflow.clone(),
                    git_ref: gh.workflow_ref.clone(),
                    public_url: gh.public_url.clone(),
                    lease: Duration::from_secs(300),
                    idle_poll: Duration::from_secs(5),
                    timeout: config.reviews.pre_review_timeout,
                    mode: config.reviews.pre_review,
                    max_revisions: config.reviews.max_revisions,
                    run_poll: Duration::from_secs(60),
                    max_artifact_bytes: worker_settings::results(config, &settings.repo)?
                        .max_artifact_bytes(),
                    caps: settings.caps,
                },
                github.clone(),
            );
            state = state.with_pre_reviews(config.reviews.pre_review, pre_reviews);
        }
        let gate = if config.reviews.pre_review.is_enabled() {
            longtx_core::github_events::ReviewGate::PreReviewFirst
        } else {
            longtx_core::github_events::ReviewGate::PeopleAtOnce
        };
        let opener = longtx_pipeline::spawn_pr_opener(
            store.clone(),
            longtx_pipeline::PrOpenSettings {
                repo: settings.repo.clone(),
                git_ref: gh.workflow_ref.clone(),
                gate,
                lease: Duration::from_secs(120),
                idle_poll: Duration::from_secs(5),
                results: worker_settings::results(config, &settings.repo)?,
            },
            github.clone(),
            longtx_pipeline::AfterOpen {
                reviews: state.reviews.clone(),
                pre_reviews: state.pre_reviews.clone(),
            },
        );
        state = state.with_pr_opener(opener);
        let requests = longtx_pipeline::spawn_request_worker(
            store.clone(),
            longtx_pipeline::RequestSettings {
                repo: settings.repo.clone(),
                lease: Duration::from_secs(120),
                idle_poll: Duration::from_secs(5),
                mode: config.reviews.pre_review,
                max_revisions: config.reviews.max_revisions,
                caps: settings.caps,
            },
            github.clone(),
        );
        state = state
            .with_requests(requests)
            .with_max_revisions(config.reviews.max_revisions);
        state = start_pr_checks(config, &settings.repo, store, state, github)?;
    }
    start_backlog(config, &settings.repo, store, &state, github.as_ref())?;
    longtx_pipeline::spawn_dispatcher_with(store.clone(), settings, github, finder);
    Ok(state)
}

/// The backlog scan: the target repository's branch when longtx has
/// GitHub, else `LONGTX_REPO_PATH`'s checkout, else none.
fn start_backlog(
    config: &Config,
    repo: &longtx_github::RepoName,
    store: &longtx_store::Store,
    state: &AppState,
    github: Option<&Arc<longtx_github::OctocrabGitHub>>,
) -> anyhow::Result<()> {
    let source = match (github, &config.repo_path) {
        (Some(_), _) => worker_settings::backlog_mirror(config, repo)?,
        (None, Some(path)) => longtx_pipeline::BacklogSource::Checkout(path.clone()),
        (None, None) => {
            tracing::info!(
                "no GitHub and no LONGTX_REPO_PATH: the dashboard's backlog stays empty"
            );
            return Ok(());
        }
    };
    longtx_pipeline::spawn_backlog_worker(
        store.clone(),
        longtx_pipeline::BacklogSettings {
            source,
            patterns_dir: config.patterns_dir.clone(),
            every: Duration::from_secs(3600),
        },
        github.cloned(),
        state.live_ignore_list(),
    );
    Ok(())
}

/// The "long transactions" check on every PR: only a GitHub App may post
/// check runs (GitHub's "REST API endpoints for check runs"), and only a
/// webhook tells longtx about new heads, so it runs with both or not at all.
fn start_pr_checks(
    config: &Config,
    repo: &longtx_github::RepoName,
    store: &longtx_store::Store,
    state: AppState,
    github: &Arc<longtx_github::OctocrabGitHub>,
) -> anyhow::Result<AppState> {
    let mode = config.reviews.pr_check;
    let is_app = matches!(
        config.github.credentials,
        Some(longtx_github::Credentials::App { .. })
    );
    if !mode.is_on() {
        return Ok(state);
    }
    if !is_app || state.github_webhook.is_none() {
        tracing::info!(
            "PR checks are off: they need a GitHub App (a token cannot post check runs) and LONGTX_GITHUB_WEBHOOK_SECRET; the scan workflow template covers PRs without them"
        );
        return Ok(state);
    }
    let public_url = Some(config.github.public_url.clone());
    let queue = longtx_pipeline::spawn_pr_checker(
        store.clone(),
        worker_settings::pr_checks(config, repo, public_url)?,
        github.clone(),
        state.live_ignore_list(),
    );
    tracing::info!(%mode, "PR checks on: every PR's new head gets a \"long transactions\" check run");
    Ok(state.with_pr_checks(queue))
}

pub(crate) fn load_ignore_list(path: &Path) -> anyhow::Result<IgnoreList> {
    match read_ignore_list(path)? {
        Some(list) => {
            tracing::info!(path = %path.display(), entries = list.entries().len(), "ignore list loaded");
            Ok(list)
        }
        None => {
            tracing::info!(path = %path.display(), "no ignore list file; nothing is ignored");
            Ok(IgnoreList::default())
        }
    }
}

/// The ignore list at `path`, `None` when there is no such file.
pub(crate) fn read_ignore_list(path: &Path) -> anyhow::Result<Option<IgnoreList>> {
    match std::fs::read_to_string(path) {
        Ok(text) => IgnoreList::parse(&text)
            .map(Some)
            .with_context(|| format!("ignore list {}", path.display())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("reading the ignore list {}", path.display())),
    }
}

/// Deletes alert events past their retention once an hour.
/// Merged fixes that stayed quiet through the verification window become
/// `verified`, once a minute (regressions are found at intake).
async fn verify_merged_fixes(store: longtx_store::Store, grace: Duration, window: Duration) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    loop {
        tick.tick().await;
        match store.verify_quiet_fixes(grace, window).await {
            Ok(ids) if ids.is_empty() => {}
            Ok(ids) => tracing::info!(jobs = ?ids, "merged fixes verified: no alert in the window"),
            Err(err) => tracing::warn!(error = %err, "verifying merged fixes failed; retried"),
        }
    }
}

async fn purge_old_alert_events(store: longtx_store::Store, retention: Duration) {
    let mut tick = tokio::time::interval(Duration::from_secs(3600));
    loop {
        tick.tick().await;
        match store.purge_alert_events(retention).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, "old alert events purged"),
            Err(err) => tracing::warn!(error = %err, "purging old alert events failed"),
        }
    }
}

/// Keeps the in-process collector's peaks as daily maxima every poll
/// interval (at most a minute; one statement, nothing held while polling),
/// and drops maxima older than 400 days now and then.
async fn keep_observations(
    store: longtx_store::Store,
    collector: longtx_collector::Collector,
    every: Duration,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let purge_every = (3600 / every.as_secs().max(1)).max(1);
    for round in 0u64.. {
        tick.tick().await;
        let peaks = collector.take_peaks();
        if !peaks.is_empty() {
            if let Err(err) = store.record_observations(&peaks).await {
                tracing::warn!(error = %err, "keeping the collector's daily maxima failed; retrying at the next tick");
                collector.return_peaks(peaks);
            }
        }
        if round % purge_every == 0 {
            if let Err(err) = store.purge_observations(400).await {
                tracing::warn!(error = %err, "purging old daily maxima failed");
            }
        }
    }
}

/// Adds new alert events to the dashboard's daily figures every few
/// seconds, in batches of short transactions.
async fn roll_up_alerts(store: longtx_store::Store) {
    const BATCH: i64 = 5_000;
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    loop {
        tick.tick().await;
        loop {
            match store.roll_up_alerts(BATCH).await {
                Ok(n) if n as i64 == BATCH => continue,
                Ok(_) => break,
                Err(err) => {
                    tracing::warn!(error = %err, "rolling up alert events failed");
                    break;
                }
            }
        }
    }
}
