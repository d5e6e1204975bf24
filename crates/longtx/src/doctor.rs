//! `longtx doctor`: whether this deployment will work, checked before the
//! first alert, each finding with the exact fix. Local checks (database,
//! ignore list, catalogue, prompt template) and, with credentials, GitHub's
//! side: the workflow files on the default branch and what they declare,
//! the labels, what longtx's credentials may do, the webhook, the secrets.

mod github;
mod local;

use crate::config::Config;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    /// Works, but something is missing that a later feature or a person
    /// will need; does not fail the command.
    Warn,
    Fail,
    /// Could not be checked (no credentials, a previous check failed).
    Skip,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// A stable id (`github.workflow.fix.inputs`) for machines.
    pub id: String,
    pub status: Status,
    pub detail: String,
    /// What to do about it, when it is not a pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    pub fn pass(id: &str, detail: impl Into<String>) -> Check {
        Check {
            id: id.to_owned(),
            status: Status::Pass,
            detail: detail.into(),
            fix: None,
        }
    }

    pub fn fail(id: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            id: id.to_owned(),
            status: Status::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn warn(id: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            status: Status::Warn,
            ..Check::fail(id, detail, fix)
        }
    }

    pub fn skip(id: &str, detail: impl Into<String>) -> Check {
        Check {
            status: Status::Skip,
            ..Check::pass(id, detail)
        }
    }
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    ok: bool,
    checks: &'a [Check],
}

/// Runs every check, prints them (`json`: one JSON document), and returns
/// whether none failed. `fix` creates what longtx can create (labels).
pub async fn run(
    config: &Config,
    fix: bool,
    json: bool,
    allow_dry_run: bool,
) -> anyhow::Result<bool> {
    // What `serve` would refuse comes first: the rest may make no sense
    // until it is corrected.
    // The ignore list has its own check below (with its entry count), so
    // it is not reported twice.
    let mut checks: Vec<Check> = crate::config::check::problems(config)
        .into_iter()
        .filter(|p| p.key != "LONGTX_IGNORE_LIST")
        .map(|p| {
            Check::fail(
                &format!("config.{}", p.key),
                p.message,
                format!(
                    "correct {} (`longtx config check` shows every setting)",
                    p.key
                ),
            )
        })
        .collect();
    checks.extend(local::checks(config).await);
    checks.extend(github::checks(config, fix).await);
    // A dry run is a failure unless accepted: said as a check, so the
    // JSON's `ok` and the exit status agree and the reason is in both.
    let dry_run = config.github.credentials.is_none() || config.github.repo.is_none();
    if dry_run && !allow_dry_run {
        checks.push(Check::fail(
            "github.configured",
            "GitHub is not configured, so its checks were skipped and longtx would run in \
             dry-run mode (dispatches recorded, never sent)",
            "set LONGTX_GITHUB_REPO and a token or GitHub App, or pass --allow-dry-run to accept \
             a dry run",
        ));
    }
    let ok = !checks.iter().any(|c| c.status == Status::Fail);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&Report {
                ok,
                checks: &checks
            })?
        );
    } else {
        for check in &checks {
            let tag = match check.status {
                Status::Pass => "PASS",
                Status::Warn => "WARN",
                Status::Fail => "FAIL",
                Status::Skip => "SKIP",
            };
            println!("{tag}  {:<34} {}", check.id, check.detail);
            if let Some(fix) = &check.fix {
                println!("      {:<34} fix: {fix}", "");
            }
        }
        let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
        println!(
            "{} checks: {} failed, {} warnings",
            checks.len(),
            failed,
            checks.iter().filter(|c| c.status == Status::Warn).count()
        );
    }
    Ok(ok)
}
