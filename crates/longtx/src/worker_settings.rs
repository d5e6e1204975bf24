//! Settings of the workers that need GitHub: where their mirrors live and
//! how often they look for work.

use crate::config::Config;
use anyhow::Context;
use std::time::Duration;

/// The mirror lives under the data directory, one bare repository per
/// target repository.
pub fn reviews(
    config: &Config,
    repo: &longtx_github::RepoName,
) -> anyhow::Result<longtx_pipeline::ReviewSettings> {
    let reviews = &config.reviews;
    Ok(longtx_pipeline::ReviewSettings {
        repo: repo.clone(),
        mirror: mirror(config, repo, "")?,
        history_days: reviews.history_days,
        as_of: None,
        max_reviewers: reviews.max_reviewers,
        capacity: Some(reviews.capacity),
        fallback_team: reviews.fallback_team.clone(),
        author_logins: reviews.author_logins.clone().into_iter().collect(),
        lease: Duration::from_secs(300),
        idle_poll: Duration::from_secs(5),
        fetch_timeout: Duration::from_secs(600),
    })
}

/// The wontfix worker commits in its own mirror, so its fetches and pushes
/// never race the reviewer worker's.
pub fn wontfix(
    config: &Config,
    repo: &longtx_github::RepoName,
) -> anyhow::Result<longtx_pipeline::WontfixSettings> {
    Ok(longtx_pipeline::WontfixSettings {
        repo: repo.clone(),
        mirror: mirror(config, repo, "-wontfix")?,
        ignore_list_path: ignore_list_path_in_repo(&config.ignore_list)?,
        label: config.reviews.wontfix_label.clone(),
        author_name: "longtx".into(),
        author_email: "longtx@users.noreply.github.com".into(),
        default_branch: config.github.workflow_ref.clone(),
        base_reload: Duration::from_secs(600),
        lease: Duration::from_secs(300),
        idle_poll: Duration::from_secs(5),
        git_timeout: Duration::from_secs(600),
    })
}

/// Agent results are applied in a mirror of their own (fetches never race
/// the other workers'), under the patch policy.
pub fn results(
    config: &Config,
    repo: &longtx_github::RepoName,
) -> anyhow::Result<longtx_pipeline::ResultSettings> {
    let gh = &config.github;
    Ok(longtx_pipeline::ResultSettings {
        mirror: mirror(config, repo, "-commits")?,
        policy: longtx_core::patch_policy::PatchPolicy::new(
            gh.max_patch_bytes,
            gh.max_patch_files,
            &ignore_list_path_in_repo(&config.ignore_list)?,
            &gh.protected_paths,
        ),
        fetch_timeout: Duration::from_secs(600),
        devin: gh.devin.clone(),
        run_budget_usd: gh.run_budget_usd,
    })
}

/// The PR checker fetches PR heads into a mirror of its own.
pub fn pr_checks(
    config: &Config,
    repo: &longtx_github::RepoName,
    public_url: Option<String>,
) -> anyhow::Result<longtx_pipeline::PrCheckSettings> {
    Ok(longtx_pipeline::PrCheckSettings {
        repo: repo.clone(),
        mirror: mirror(config, repo, "-checks")?,
        mode: config.reviews.pr_check,
        patterns_dir: config.patterns_dir.clone(),
        public_url,
        lease: Duration::from_secs(300),
        idle_poll: Duration::from_secs(5),
        fetch_timeout: Duration::from_secs(600),
    })
}

/// The backlog fetches the branch into a mirror of its own.
pub fn backlog_mirror(
    config: &Config,
    repo: &longtx_github::RepoName,
) -> anyhow::Result<longtx_pipeline::BacklogSource> {
    Ok(longtx_pipeline::BacklogSource::Mirror {
        repo: repo.clone(),
        mirror: mirror(config, repo, "-backlog")?,
        branch: config.github.workflow_ref.clone(),
        fetch_timeout: Duration::from_secs(600),
    })
}

/// A worker's own bare mirror of the target repository under the data
/// directory (`<owner>__<name><suffix>.git`): each worker fetches and
/// pushes in its own, so they never race.
fn mirror(
    config: &Config,
    repo: &longtx_github::RepoName,
    suffix: &str,
) -> anyhow::Result<longtx_git::Mirror> {
    let url = config
        .reviews
        .git_url
        .clone()
        .context("LONGTX_GIT_URL is unset and there is no LONGTX_GITHUB_REPO")?;
    Ok(longtx_git::Mirror {
        path: config
            .data_dir
            .join("mirror")
            .join(format!("{}__{}{suffix}.git", repo.owner, repo.name)),
        url,
    })
}

/// `LONGTX_IGNORE_LIST` names the file both locally (read at start) and in
/// the target repository, so it must be a relative path there.
fn ignore_list_path_in_repo(path: &std::path::Path) -> anyhow::Result<String> {
    let text = path.to_str().context("LONGTX_IGNORE_LIST is not UTF-8")?;
    let relative = text.trim_start_matches("./");
    if path.is_absolute()
        || relative
            .split('/')
            .any(|part| part == ".." || part.is_empty())
    {
        anyhow::bail!(
            "LONGTX_IGNORE_LIST is {text:?}; with GitHub configured it is also the path in the target repository, \
             so it must be relative, like `ignore-list.yaml` or `config/ignore-list.yaml`"
        );
    }
    Ok(relative.to_owned())
}
