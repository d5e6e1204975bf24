//! The reviewer worker: for each PR that just entered review, find the
//! people who know the code and ask them.
//!
//! 1. Claim a pending job (short transaction, a lease).
//! 2. With no connection held: list the PR's files, fetch the mirror's base
//!    branch, read CODEOWNERS and history from it (on a blocking thread),
//!    map authors to logins, check who may review.
//! 3. Read open review counts (one short query), choose (pure core), ask
//!    GitHub, leave one comment.
//! 4. Record who was asked (short transaction).
//!
//! Asking again is harmless (GitHub keeps one request per person), and the
//! comment carries a marker that a retried claim looks for first, so a
//! crash between 3 and 4 neither loses nor doubles anything.

use chrono::{DateTime, Utc};
use longtx_core::codeowners::Owner;
use longtx_core::reviewers::{
    choose, noreply_login, Candidate, Capacity, Choice, Facts, Reviewer, Source,
};
use longtx_git::{gather, ChangedFile, HistoryOptions, Mirror};
use longtx_github::{GitHub, GitHubError, RepoName};
use longtx_store::{ReviewClaim, Store};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tracing::Instrument;

/// Give up on a job's reviewers after this many claims.
const MAX_ATTEMPTS: i32 = 5;
/// History is read for at most this many files, the largest changes first.
const MAX_HISTORY_FILES: usize = 10;
/// Collaborator checks per choice, to bound GitHub calls on big PRs.
const MAX_COLLABORATOR_CHECKS: usize = 10;
/// Teams looked through for a history reviewer's current team: one
/// membership call per team and person, so this stays small.
const MAX_TEAMS_LOOKED_AT: usize = 20;

#[derive(Debug, Clone)]
pub struct ReviewSettings {
    pub repo: RepoName,
    pub mirror: Mirror,
    pub history_days: u32,
    /// The end of the history window; now when `None`.
    pub as_of: Option<DateTime<Utc>>,
    pub max_reviewers: usize,
    /// `org/team`.
    pub fallback_team: Option<String>,
    /// Lowercased commit email to GitHub login, from the configuration.
    pub author_logins: HashMap<String, String>,
    pub lease: Duration,
    pub idle_poll: Duration,
    pub fetch_timeout: Duration,
    /// `LONGTX_REVIEWER_CAPACITY` and `LONGTX_TEAM_CAPACITY`; `None`: no cap.
    pub capacity: Option<Capacity>,
}

/// Wakes the worker when a PR enters review.
#[derive(Clone, Default)]
pub struct ReviewQueue {
    wake: Arc<Notify>,
}

impl ReviewQueue {
    pub fn poke(&self) {
        self.wake.notify_one();
    }
}

pub fn spawn_reviewer<G: GitHub>(
    store: Store,
    settings: ReviewSettings,
    github: Arc<G>,
) -> ReviewQueue {
    spawn_reviewer_with(ReviewerFinder::new(store, settings, github))
}

/// The reviewer worker on a finder it shares (with the dispatcher, which
/// predicts reviewers before it pays for a run).
pub fn spawn_reviewer_with<G: GitHub>(finder: Arc<ReviewerFinder<G>>) -> ReviewQueue {
    let queue = ReviewQueue::default();
    let worker = Worker {
        finder,
        wake: queue.wake.clone(),
    };
    let worker = Arc::new(worker);
    crate::workers::spawn("reviewers", move || {
        let worker = worker.clone();
        async move { worker.run().await }
    });
    queue
}

/// The marker of longtx's reviewer comment on a job's PR.
pub fn comment_marker(job_id: i64) -> String {
    format!("<!-- longtx-reviewers: {job_id} -->")
}

struct Worker<G> {
    finder: Arc<ReviewerFinder<G>>,
    wake: Arc<Notify>,
}

/// Finds the people who know some files: CODEOWNERS and history read from
/// the mirror, logins and collaborators from GitHub, loads from the store,
/// then core's `choose`. The same for the PR's changed files (whom to ask)
/// and for the files a prompt located (whom a fix would ask: the
/// dispatcher's capacity check).
pub struct ReviewerFinder<G> {
    store: Store,
    settings: Arc<ReviewSettings>,
    github: Arc<G>,
    /// Commit email to login (or `None`: GitHub knows no login), cached for
    /// the life of the process.
    logins: Mutex<HashMap<String, Option<String>>>,
    /// One fetch and read of the mirror at a time: the reviewer worker and
    /// the dispatcher share it.
    git: tokio::sync::Mutex<()>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error(transparent)]
    Git(#[from] longtx_git::GitError),
    #[error(transparent)]
    Store(#[from] longtx_store::StoreError),
}

impl<G: GitHub> Worker<G> {
    async fn run(&self) {
        loop {
            match self
                .finder
                .store
                .claim_review(self.finder.settings.lease)
                .await
            {
                Ok(Some(claim)) => {
                    let span = tracing::info_span!("reviewers", job_id = claim.job_id, query_source = %claim.query_source);
                    self.handle(claim).instrument(span).await;
                    continue;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "could not claim a job for reviewers"),
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(self.finder.settings.idle_poll) => {}
            }
        }
    }

    async fn handle(&self, claim: ReviewClaim) {
        match self.review(&claim).await {
            Ok(choice) => {
                tracing::info!(source = ?choice.source, reviewers = choice.reviewers.len(), "reviewers chosen")
            }
            Err(e) if claim.attempts >= MAX_ATTEMPTS => {
                tracing::error!(error = %e, attempts = claim.attempts, "giving up on reviewers");
                let detail = serde_json::json!({"error": e.to_string()});
                if let Err(e) = self
                    .finder
                    .store
                    .record_reviewers(claim.job_id, &[], &detail)
                    .await
                {
                    tracing::warn!(error = %e, "could not record the give-up");
                }
            }
            // The lease runs out and another claim retries.
            Err(e) => {
                tracing::warn!(error = %e, attempts = claim.attempts, "reviewer selection failed; will retry")
            }
        }
    }

    async fn review(&self, claim: &ReviewClaim) -> Result<Choice, ReviewError> {
        let finder = &self.finder;
        let mut files: Vec<ChangedFile> = finder
            .github
            .pull_files(&finder.settings.repo, claim.pr_number)
            .await?
            .into_iter()
            .map(|f| ChangedFile {
                path: f.filename,
                changes: f.changes,
            })
            .collect();
        files.sort_by_key(|f| std::cmp::Reverse(f.changes));
        // Kept with the choice: a regression's next prompt names what this fix changed.
        let changed: Vec<(String, u64)> = files
            .iter()
            .take(50)
            .map(|f| (f.path.clone(), f.changes))
            .collect();
        let author = claim.pr_author.to_ascii_lowercase();
        let facts = finder
            .facts(&claim.base_ref, files, Some(&author), Some(claim.job_id))
            .await?;
        let mut choice = choose(&facts);
        if choice.source == Source::History {
            finder.add_current_teams(&mut choice).await;
        }
        let asked = finder.ask(claim, &choice).await?;
        let keys: Vec<String> = asked.iter().map(|c| c.reviewer.key()).collect();
        let record = serde_json::json!({
            "files": changed,
            "source": choice.source,
            "requested": asked,
            "skipped": choice.skipped,
        });
        finder
            .store
            .record_reviewers(claim.job_id, &keys, &record)
            .await?;
        Ok(choice)
    }
}

impl<G: GitHub> ReviewerFinder<G> {
    pub fn new(store: Store, settings: ReviewSettings, github: Arc<G>) -> Arc<Self> {
        Arc::new(ReviewerFinder {
            store,
            settings: Arc::new(settings),
            github,
            logins: Mutex::new(HashMap::new()),
            git: tokio::sync::Mutex::new(()),
        })
    }

    pub fn capacity(&self) -> Option<Capacity> {
        self.settings.capacity
    }

    /// Whom a fix of `paths` would ask, as of `base_ref`: the dispatcher
    /// asks before paying for a run. `job_id`'s own reservation, if any,
    /// does not count against it.
    pub async fn predict(
        &self,
        base_ref: &str,
        paths: &[String],
        job_id: i64,
    ) -> Result<Choice, ReviewError> {
        let files = paths
            .iter()
            .map(|path| ChangedFile {
                path: path.clone(),
                changes: 1,
            })
            .collect();
        let facts = self.facts(base_ref, files, None, Some(job_id)).await?;
        Ok(choose(&facts))
    }

    /// Everything `choose` needs about `files` on `base_ref`. No connection
    /// is held across the fetch or the GitHub calls; the loads are one
    /// short query at the end.
    async fn facts(
        &self,
        base_ref: &str,
        files: Vec<ChangedFile>,
        author: Option<&str>,
        job_id: Option<i64>,
    ) -> Result<Facts, ReviewError> {
        let settings = &self.settings;
        let mut excluded: HashSet<String> = author.map(str::to_owned).into_iter().collect();
        if let Some(me) = self.github.own_login().await? {
            excluded.insert(me.to_ascii_lowercase());
        }
        let loads = self.store.reviewer_loads(job_id).await?;
        let (owners, people) = {
            let _git = self.git.lock().await;
            let token = self.github.git_token().await?;
            settings
                .mirror
                .fetch(base_ref, token.as_deref(), settings.fetch_timeout)
                .await?;
            self.read_repository(base_ref, files, &excluded, &loads)
                .await?
        };
        let mut facts = Facts {
            fallback_team: settings.fallback_team.clone(),
            max_reviewers: settings.max_reviewers,
            excluded,
            capacity: settings.capacity,
            open_reviews: loads,
            ..Facts::default()
        };
        facts.codeowners = self.owner_candidates(owners);
        facts.history = self.history_candidates(people).await?;
        self.check_collaborators(&mut facts).await?;
        Ok(facts)
    }

    /// CODEOWNERS from the base branch, and history when no owner is left
    /// after the exclusions known without GitHub.
    async fn read_repository(
        &self,
        base_ref: &str,
        files: Vec<ChangedFile>,
        excluded: &HashSet<String>,
        loads: &HashMap<String, i64>,
    ) -> Result<(Vec<(Owner, String)>, Vec<longtx_git::HistoryPerson>), ReviewError> {
        let path = self.settings.mirror.path.clone();
        let rev = format!("refs/heads/{base_ref}");
        let options = HistoryOptions::new(
            self.settings.as_of.unwrap_or_else(Utc::now),
            self.settings.history_days,
        );
        let excluded = excluded.clone();
        // An owner at capacity is no owner to ask: history is read then.
        let capacity = self.settings.capacity;
        let loads = loads.clone();
        let full = move |key: String, team: bool| {
            capacity.is_some_and(|c| {
                loads.get(&key).copied().unwrap_or(0) >= if team { c.team } else { c.user }
            })
        };
        let result = tokio::task::spawn_blocking(move || {
            let repo = longtx_git::open(&path)?;
            let owned = gather::owners(&repo, &rev, &files)?;
            for warning in &owned.warnings {
                tracing::warn!(%warning, "CODEOWNERS line skipped");
            }
            let usable_owner = owned.owners.iter().any(|(owner, _)| match owner {
                Owner::User(login) => {
                    let key = login.to_ascii_lowercase();
                    !excluded.contains(&key) && !full(key, false)
                }
                Owner::Team(team) => !full(format!("@{}", team.to_ascii_lowercase()), true),
                Owner::Email(_) => true,
            });
            let people = if usable_owner {
                Vec::new()
            } else {
                gather::history(&repo, &rev, &files, &options, MAX_HISTORY_FILES)?
            };
            Ok::<_, longtx_git::GitError>((owned.owners, people))
        })
        .await
        .map_err(|e| longtx_git::GitError::Invalid(format!("the git task failed: {e}")))??;
        Ok(result)
    }

    fn owner_candidates(&self, owners: Vec<(Owner, String)>) -> Vec<Candidate> {
        owner_candidates(owners, &self.settings.author_logins)
    }

    fn configured_login(&self, email: &str) -> Option<String> {
        configured_login(email, &self.settings.author_logins)
    }

    async fn history_candidates(
        &self,
        people: Vec<longtx_git::HistoryPerson>,
    ) -> Result<Vec<Candidate>, ReviewError> {
        // Every email's login first (noreply, the configured map, then the
        // commit API), so one person under two emails is scored once.
        let mut logins = HashMap::new();
        for person in &people {
            let login = self.login_of(&person.email, &person.sample_commit).await?;
            if login.is_none() {
                tracing::info!(email = %person.email, "no GitHub login known for a committer");
            }
            logins.insert(person.email.clone(), login);
        }
        let merged = longtx_git::merge_people(people, |p| logins.get(&p.email).cloned().flatten());
        Ok(merged
            .into_iter()
            .filter_map(|(login, person)| {
                Some(Candidate {
                    reviewer: Reviewer::User(login?),
                    reason: history_reason(&person, self.settings.history_days),
                    score: person.score,
                })
            })
            .collect())
    }

    /// `.mailmap` already applied; then noreply, the configured map, the
    /// cache, and last the commit API.
    async fn login_of(
        &self,
        email: &str,
        sample_commit: &str,
    ) -> Result<Option<String>, ReviewError> {
        if let Some(login) = self.configured_login(email) {
            return Ok(Some(login));
        }
        if let Some(cached) = self.logins.lock().unwrap().get(email) {
            return Ok(cached.clone());
        }
        let login = self
            .github
            .commit_author_login(&self.settings.repo, sample_commit)
            .await?;
        self.logins
            .lock()
            .unwrap()
            .insert(email.to_owned(), login.clone());
        Ok(login)
    }

    /// Someone found by history may have moved on: the reason names the
    /// team they are in now, so the reviewer (and whoever reads the
    /// comment) can judge. Skipped quietly when longtx cannot see teams;
    /// a failure here never blocks the request.
    async fn add_current_teams(&self, choice: &mut Choice) {
        let org = &self.settings.repo.owner;
        let teams = match self.github.org_teams(org).await {
            Ok(Some(teams)) => teams,
            Ok(None) => return,
            Err(err) => {
                tracing::info!(error = %err, "team lookup skipped");
                return;
            }
        };
        for candidate in &mut choice.reviewers {
            let Reviewer::User(login) = &candidate.reviewer else {
                continue;
            };
            let mut current = Vec::new();
            for slug in teams.iter().take(MAX_TEAMS_LOOKED_AT) {
                match self.github.is_team_member(org, slug, login).await {
                    Ok(true) => current.push(format!("@{org}/{slug}")),
                    Ok(false) => {}
                    Err(err) => {
                        tracing::info!(error = %err, "team lookup stopped");
                        return;
                    }
                }
            }
            if !current.is_empty() {
                candidate
                    .reason
                    .push_str(&format!("; now in {}", current.join(", ")));
            }
        }
    }

    async fn check_collaborators(&self, facts: &mut Facts) -> Result<(), ReviewError> {
        let users: Vec<String> = facts
            .codeowners
            .iter()
            .chain(&facts.history)
            .filter_map(|c| match &c.reviewer {
                Reviewer::User(login) => Some(login.clone()),
                Reviewer::Team(_) => None,
            })
            .filter(|login| !facts.excluded.contains(&login.to_ascii_lowercase()))
            .take(MAX_COLLABORATOR_CHECKS)
            .collect();
        for login in users {
            if !self
                .github
                .is_collaborator(&self.settings.repo, &login)
                .await?
            {
                facts.non_collaborators.insert(login.to_ascii_lowercase());
            }
        }
        Ok(())
    }

    /// Requests the chosen reviewers; a 422 for the group retries each one
    /// alone and drops those GitHub refuses. Returns who was asked.
    async fn ask(
        &self,
        claim: &ReviewClaim,
        choice: &Choice,
    ) -> Result<Vec<Candidate>, ReviewError> {
        let org = &self.settings.repo.owner;
        let requestable: Vec<&Candidate> = choice
            .reviewers
            .iter()
            .filter(|c| match &c.reviewer {
                Reviewer::Team(team) => team
                    .split_once('/')
                    .is_some_and(|(o, _)| o.eq_ignore_ascii_case(org)),
                Reviewer::User(_) => true,
            })
            .collect();
        let mut asked: Vec<Candidate> = Vec::new();
        if !requestable.is_empty() {
            match self.request(claim.pr_number, &requestable).await {
                Ok(()) => asked = requestable.into_iter().cloned().collect(),
                Err(GitHubError::Refused {
                    status: 422,
                    message,
                }) => {
                    tracing::warn!(%message, "GitHub refused the group of reviewers; asking one by one");
                    for candidate in requestable {
                        match self.request(claim.pr_number, &[candidate]).await {
                            Ok(()) => asked.push(candidate.clone()),
                            Err(GitHubError::Refused {
                                status: 422,
                                message,
                            }) => {
                                tracing::warn!(reviewer = %candidate.reviewer, %message, "reviewer dropped")
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        self.comment(claim, choice.source, &asked).await?;
        Ok(asked)
    }

    async fn request(&self, number: u64, who: &[&Candidate]) -> Result<(), GitHubError> {
        let (mut users, mut teams) = (Vec::new(), Vec::new());
        for candidate in who {
            match &candidate.reviewer {
                Reviewer::User(login) => users.push(login.clone()),
                Reviewer::Team(team) => teams.push(
                    team.split_once('/')
                        .map_or(team.clone(), |(_, s)| s.to_owned()),
                ),
            }
        }
        let result = self
            .github
            .request_reviewers(&self.settings.repo, number, &users, &teams)
            .await;
        if result.is_ok() {
            let help = "Reviewers requested on fix PRs, by kind.";
            longtx_metrics::add(
                "longtx_reviewer_requests_total",
                help,
                &[("kind", "user")],
                users.len() as f64,
            );
            longtx_metrics::add(
                "longtx_reviewer_requests_total",
                help,
                &[("kind", "team")],
                teams.len() as f64,
            );
        }
        result
    }

    async fn comment(
        &self,
        claim: &ReviewClaim,
        source: Source,
        asked: &[Candidate],
    ) -> Result<(), ReviewError> {
        let marker = comment_marker(claim.job_id);
        let body = comment_body(source, asked, &marker);
        let github = self.github.as_ref();
        crate::comments::comment_once(
            github,
            &self.settings.repo,
            claim.pr_number,
            claim.attempts,
            &marker,
            &body,
        )
        .await?;
        Ok(())
    }
}

/// CODEOWNERS entries as candidates; an email owner counts only when a
/// login is known for it without asking GitHub.
pub fn owner_candidates(
    owners: Vec<(Owner, String)>,
    logins: &HashMap<String, String>,
) -> Vec<Candidate> {
    owners
        .into_iter()
        .filter_map(|(owner, reason)| {
            let reviewer = match owner {
                Owner::User(login) => Reviewer::User(login),
                Owner::Team(team) => Reviewer::Team(team),
                Owner::Email(email) => Reviewer::User(configured_login(&email, logins)?),
            };
            Some(Candidate {
                reviewer,
                reason,
                score: 0.0,
            })
        })
        .collect()
}

/// A noreply address names its login; else the configured map decides.
pub fn configured_login(email: &str, logins: &HashMap<String, String>) -> Option<String> {
    let email = email.to_ascii_lowercase();
    noreply_login(&email)
        .map(str::to_owned)
        .or_else(|| logins.get(&email).cloned())
}

/// Why a committer was found, for the comment and the CLI.
pub fn history_reason(person: &longtx_git::HistoryPerson, days: u32) -> String {
    format!(
        "{} commit{} to {} in the last {days} days, latest {}",
        person.commits,
        if person.commits == 1 { "" } else { "s" },
        person.files.join(", "),
        person.latest.format("%Y-%m-%d")
    )
}

fn comment_body(source: Source, asked: &[Candidate], marker: &str) -> String {
    let mut body = String::new();
    if asked.is_empty() {
        body.push_str("longtx found nobody to ask for a review of this fix (no code owner, recent committer or fallback team could be requested).\n");
    } else {
        let from = match source {
            Source::Codeowners => "CODEOWNERS on the base branch",
            Source::History => "who committed most to the changed files lately",
            Source::Fallback => "the fallback team",
            Source::Nobody => "nobody",
        };
        body.push_str(&format!("longtx asked for review, chosen by {from}:\n"));
        for candidate in asked {
            body.push_str(&format!("- {}: {}\n", candidate.reviewer, candidate.reason));
        }
    }
    body.push('\n');
    body.push_str(marker);
    body
}
