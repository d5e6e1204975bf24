//! The backlog worker: scans the default branch for the dashboard, so a
//! team starting out sees its transactions holding slow work before the
//! first alert. Hourly it looks at the branch; it scans (on a blocking
//! thread, no connection held) only when the branch moved or the last
//! scan is a day old, then records the scan in one statement.
//!
//! With GitHub, the branch is fetched into the worker's own mirror; with
//! no GitHub (dry-run), `LONGTX_REPO_PATH`'s checkout is scanned as it is.

use crate::ignore::LiveIgnoreList;
use longtx_core::IgnoreList;
use longtx_git::Mirror;
use longtx_github::{GitHub, RepoName};
use longtx_store::Store;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A branch that has not moved is scanned again after this many hours.
const RESCAN_HOURS: f64 = 24.0;

/// Where the branch comes from.
#[derive(Debug, Clone)]
pub enum BacklogSource {
    /// The target repository's branch (the default branch when `None`).
    Mirror {
        repo: RepoName,
        mirror: Mirror,
        branch: Option<String>,
        fetch_timeout: Duration,
    },
    /// A checkout on this machine, scanned as it is.
    Checkout(PathBuf),
}

#[derive(Debug, Clone)]
pub struct BacklogSettings {
    pub source: BacklogSource,
    pub patterns_dir: PathBuf,
    pub every: Duration,
}

pub fn spawn_backlog_worker<G: GitHub>(
    store: Store,
    settings: BacklogSettings,
    github: Option<Arc<G>>,
    ignore_list: LiveIgnoreList,
) {
    let worker = Arc::new(Backlog {
        store,
        settings,
        github,
        ignore_list,
    });
    crate::workers::spawn("backlog", move || {
        let worker = worker.clone();
        async move {
            let mut every = tokio::time::interval(worker.settings.every);
            loop {
                every.tick().await;
                if let Err(why) = worker.look().await {
                    tracing::warn!(%why, "the backlog scan did not run; tried again next time");
                }
            }
        }
    });
}

struct Backlog<G> {
    store: Store,
    settings: BacklogSettings,
    github: Option<Arc<G>>,
    ignore_list: LiveIgnoreList,
}

/// What is scanned: a branch at a commit, and where its code is read.
struct Target {
    branch: String,
    commit: String,
    read: Read,
}

enum Read {
    /// Export `commit` from this mirror.
    Mirror(PathBuf),
    /// The checkout itself, as it is.
    Checkout(PathBuf),
}

impl<G: GitHub> Backlog<G> {
    async fn look(&self) -> Result<(), String> {
        let target = self.target().await?;
        let newest = self
            .store
            .newest_branch_scan()
            .await
            .map_err(|e| e.to_string())?;
        if let Some((commit, hours)) = newest {
            if commit == target.commit && hours < RESCAN_HOURS {
                return Ok(());
            }
        }
        let patterns = self.settings.patterns_dir.clone();
        let ignore: Arc<IgnoreList> = self.ignore_list.snapshot();
        let Target {
            branch,
            commit,
            read,
        } = target;
        let exported = commit.clone();
        let scanned = tokio::task::spawn_blocking(move || -> Result<_, String> {
            let catalogue = longtx_catalog::Catalogue::load(&patterns).ok();
            let scan = |dir: &std::path::Path| longtx_scan::scan(dir, catalogue.as_ref(), &ignore);
            match read {
                Read::Mirror(mirror) => {
                    let repo = longtx_git::open(&mirror).map_err(|e| e.to_string())?;
                    let tree = longtx_git::export::ExportedTree::of(&repo, &exported)
                        .map_err(|e| e.to_string())?;
                    Ok(scan(tree.path()))
                }
                Read::Checkout(checkout) => Ok(scan(&checkout)),
            }
        })
        .await
        .map_err(|e| format!("the scan panicked: {e}"))??;
        let findings = longtx_scan::backlog_findings(&scanned);
        self.store
            .record_branch_scan(&branch, &commit, scanned.entry_points, &findings)
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(
            %branch,
            %commit,
            findings = findings.len(),
            "backlog scanned"
        );
        Ok(())
    }

    async fn target(&self) -> Result<Target, String> {
        match &self.settings.source {
            BacklogSource::Checkout(path) => {
                let repo = longtx_git::open(path).map_err(|e| e.to_string())?;
                let head = repo.head().map_err(|e| e.to_string())?;
                let branch = head.shorthand().unwrap_or("HEAD").to_owned();
                let commit = head
                    .peel_to_commit()
                    .map_err(|e| e.to_string())?
                    .id()
                    .to_string();
                Ok(Target {
                    branch,
                    commit,
                    read: Read::Checkout(path.clone()),
                })
            }
            BacklogSource::Mirror {
                repo,
                mirror,
                branch,
                fetch_timeout,
            } => {
                let github = self.github.as_ref().ok_or("no GitHub client")?;
                let branch = match branch {
                    Some(b) => b.clone(),
                    None => github
                        .default_branch(repo)
                        .await
                        .map_err(|e| e.to_string())?,
                };
                let token = github.git_token().await.map_err(|e| e.to_string())?;
                mirror
                    .fetch(&branch, token.as_deref(), *fetch_timeout)
                    .await
                    .map_err(|e| e.to_string())?;
                let git = longtx_git::open(&mirror.path).map_err(|e| e.to_string())?;
                let commit = longtx_git::commit_at(&git, &format!("refs/heads/{branch}"))
                    .map_err(|e| e.to_string())?
                    .id()
                    .to_string();
                Ok(Target {
                    branch,
                    commit,
                    read: Read::Mirror(mirror.path.clone()),
                })
            }
        }
    }
}
