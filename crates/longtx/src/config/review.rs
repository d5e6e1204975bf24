//! The keys of PR tracking and reviewer selection.

use super::{invalid, ConfigError};
use std::collections::BTreeMap;
use std::fmt;

/// GitHub webhooks and who is asked to review a fix.
#[derive(Clone)]
pub struct ReviewConfig {
    /// Verifies `X-Hub-Signature-256`; `/webhooks/github` answers 503
    /// until it is set.
    pub webhook_secret: Option<String>,
    /// `org/team`, asked when neither CODEOWNERS nor history names anyone.
    pub fallback_team: Option<String>,
    pub max_reviewers: usize,
    /// `LONGTX_REVIEWER_CAPACITY` and `LONGTX_TEAM_CAPACITY`: open longtx
    /// reviews one person (or one team) is asked to hold at once.
    pub capacity: longtx_core::reviewers::Capacity,
    pub history_days: u32,
    /// Where the mirror fetches from; `https://github.com/{repo}.git`.
    pub git_url: Option<String>,
    /// Lowercased commit email to GitHub login.
    pub author_logins: BTreeMap<String, String>,
    /// The label that declines a fix.
    pub wontfix_label: String,
    /// `LONGTX_PRE_REVIEW`: on, off or advisory.
    pub pre_review: longtx_core::pre_review::PreReviewMode,
    /// The reviewing workflow longtx dispatches per head commit.
    pub pre_review_workflow: String,
    /// `LONGTX_PRE_REVIEW_TIMEOUT`: a head with no verdict this long after
    /// it was handed to the review goes to people as "no verdict".
    pub pre_review_timeout: std::time::Duration,
    /// `LONGTX_MAX_REVISIONS`: revision rounds on one PR, counted apart for
    /// the pre-review's and for people's (default 2; 0 turns rounds off).
    pub max_revisions: u32,
    /// `LONGTX_PR_CHECK`: the "long transactions" check on every PR
    /// (neutral, failure or off; it needs a GitHub App).
    pub pr_check: longtx_core::pr_check::PrCheckMode,
}

impl fmt::Debug for ReviewConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReviewConfig")
            .field(
                "webhook_secret",
                &self.webhook_secret.as_ref().map(|_| "<set>"),
            )
            .field("fallback_team", &self.fallback_team)
            .field("max_reviewers", &self.max_reviewers)
            .field("capacity", &self.capacity)
            .field("history_days", &self.history_days)
            .field("git_url", &self.git_url.as_deref().map(redact_url))
            .field("author_logins", &self.author_logins.len())
            .field("wontfix_label", &self.wontfix_label)
            .field("pre_review", &self.pre_review)
            .field("pre_review_workflow", &self.pre_review_workflow)
            .field("pre_review_timeout", &self.pre_review_timeout)
            .field("max_revisions", &self.max_revisions)
            .field("pr_check", &self.pr_check)
            .finish()
    }
}

/// A clone URL may carry `user:token@` (or a token as the user); parsed
/// as a URL, any credentials are replaced. A local path is shown as is.
pub(super) fn redact_url(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(url) if !url.username().is_empty() || url.password().is_some() => {
            let mut bare = url.clone();
            let _ = bare.set_username("");
            let _ = bare.set_password(None);
            bare.to_string().replacen("://", "://<credentials>@", 1)
        }
        Ok(_) => text.to_owned(),
        Err(_) if text.contains("://") => "<a URL that does not parse; hidden>".to_owned(),
        Err(_) => text.to_owned(),
    }
}

pub(super) struct FileReview {
    pub webhook_secret: Option<String>,
    pub fallback_team: Option<String>,
    pub max_reviewers: Option<usize>,
    pub reviewer_capacity: Option<i64>,
    pub team_capacity: Option<i64>,
    pub history_days: Option<u32>,
    pub git_url: Option<String>,
    pub author_logins: Option<BTreeMap<String, String>>,
    pub wontfix_label: Option<String>,
    pub pre_review: Option<String>,
    pub pre_review_workflow: Option<String>,
    pub pr_check: Option<String>,
}

pub(super) fn load(
    var: &dyn Fn(&str) -> Option<String>,
    file: FileReview,
    repo: Option<&str>,
) -> Result<ReviewConfig, ConfigError> {
    let fallback_team = var("LONGTX_FALLBACK_TEAM").or(file.fallback_team);
    let fallback_team = match fallback_team {
        Some(team) => Some(parse_team(&team)?),
        None => None,
    };
    let max_reviewers = super::parse_number(
        "LONGTX_MAX_REVIEWERS",
        var("LONGTX_MAX_REVIEWERS"),
        file.max_reviewers,
        2,
    )?;
    if !(1..=15).contains(&max_reviewers) {
        // GitHub accepts at most 15 requested reviewers per PR.
        return Err(invalid("LONGTX_MAX_REVIEWERS", "must be between 1 and 15"));
    }
    let capacity = longtx_core::reviewers::Capacity {
        user: super::parse_number(
            "LONGTX_REVIEWER_CAPACITY",
            var("LONGTX_REVIEWER_CAPACITY"),
            file.reviewer_capacity,
            3,
        )?,
        team: super::parse_number(
            "LONGTX_TEAM_CAPACITY",
            var("LONGTX_TEAM_CAPACITY"),
            file.team_capacity,
            10,
        )?,
    };
    if capacity.user < 1 || capacity.team < 1 {
        let key = if capacity.user < 1 {
            "LONGTX_REVIEWER_CAPACITY"
        } else {
            "LONGTX_TEAM_CAPACITY"
        };
        return Err(invalid(key, "must be at least 1"));
    }
    let history_days = super::parse_number(
        "LONGTX_HISTORY_DAYS",
        var("LONGTX_HISTORY_DAYS"),
        file.history_days,
        365,
    )?;
    if history_days == 0 {
        return Err(invalid("LONGTX_HISTORY_DAYS", "must be at least 1"));
    }
    let author_logins = match var("LONGTX_AUTHOR_LOGINS") {
        Some(text) => parse_author_logins(&text)?,
        None => file.author_logins.unwrap_or_default(),
    }
    .into_iter()
    .map(|(email, login)| (email.trim().to_ascii_lowercase(), login.trim().to_owned()))
    .collect();
    let git_url = var("LONGTX_GIT_URL")
        .or(file.git_url)
        .or_else(|| repo.map(|r| format!("https://github.com/{r}.git")));
    let wontfix_label = var("LONGTX_WONTFIX_LABEL")
        .or(file.wontfix_label)
        .unwrap_or_else(|| longtx_core::github_events::WONTFIX_LABEL.to_owned());
    // GitHub label names are at most 50 characters.
    if wontfix_label.trim().is_empty() || wontfix_label.chars().count() > 50 {
        return Err(invalid(
            "LONGTX_WONTFIX_LABEL",
            "must be 1 to 50 characters",
        ));
    }
    let pre_review = var("LONGTX_PRE_REVIEW")
        .or(file.pre_review)
        .map(|v| {
            v.parse()
                .map_err(|e: String| invalid("LONGTX_PRE_REVIEW", e))
        })
        .transpose()?
        .unwrap_or_default();
    let pre_review_timeout = longtx_core::duration::parse_duration(
        &var("LONGTX_PRE_REVIEW_TIMEOUT").unwrap_or_else(|| "30m".to_owned()),
    )
    .map_err(|e| invalid("LONGTX_PRE_REVIEW_TIMEOUT", e))?;
    let max_revisions = match var("LONGTX_MAX_REVISIONS") {
        None => longtx_core::revision::DEFAULT_MAX_REVISIONS,
        Some(v) => v
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| *n <= 10)
            .ok_or_else(|| invalid("LONGTX_MAX_REVISIONS", "a whole number from 0 to 10"))?,
    };
    let pr_check = var("LONGTX_PR_CHECK")
        .or(file.pr_check)
        .map(|v| v.parse().map_err(|e: String| invalid("LONGTX_PR_CHECK", e)))
        .transpose()?
        .unwrap_or_default();
    Ok(ReviewConfig {
        pr_check,
        pre_review_timeout,
        max_revisions,
        wontfix_label,
        pre_review,
        pre_review_workflow: var("LONGTX_PRE_REVIEW_WORKFLOW")
            .or(file.pre_review_workflow)
            .unwrap_or_else(|| "long-transaction-pre-review.yml".to_owned()),
        webhook_secret: var("LONGTX_GITHUB_WEBHOOK_SECRET").or(file.webhook_secret),
        fallback_team,
        max_reviewers,
        capacity,
        history_days,
        git_url,
        author_logins,
    })
}

/// `@acme/dba` or `acme/dba` → `acme/dba`.
fn parse_team(text: &str) -> Result<String, ConfigError> {
    let team = text.trim().trim_start_matches('@');
    let valid_part = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    };
    match team.split_once('/') {
        Some((org, slug)) if valid_part(org) && valid_part(slug) => Ok(team.to_owned()),
        _ => Err(invalid(
            "LONGTX_FALLBACK_TEAM",
            format!("{text:?}: use org/team, e.g. acme/backend"),
        )),
    }
}

/// `alice@corp.example=alice,bob@corp.example=bob-gh`.
fn parse_author_logins(text: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((email, login)) if email.contains('@') && !login.trim().is_empty() => {
                Ok((email.to_owned(), login.to_owned()))
            }
            _ => Err(invalid(
                "LONGTX_AUTHOR_LOGINS",
                format!("{pair:?}: use email=login"),
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load_with(vars: &[(&str, &str)]) -> Result<ReviewConfig, ConfigError> {
        let map: HashMap<&str, &str> = vars.iter().copied().collect();
        let file = FileReview {
            webhook_secret: None,
            fallback_team: None,
            max_reviewers: None,
            reviewer_capacity: None,
            team_capacity: None,
            history_days: None,
            git_url: None,
            author_logins: None,
            wontfix_label: None,
            pre_review: None,
            pre_review_workflow: None,
            pr_check: None,
        };
        load(
            &|k| map.get(k).map(|v| v.to_string()),
            file,
            Some("acme/app"),
        )
    }

    #[test]
    fn defaults() {
        let c = load_with(&[]).unwrap();
        assert_eq!((c.max_reviewers, c.history_days), (2, 365));
        assert_eq!(
            c.git_url.as_deref(),
            Some("https://github.com/acme/app.git")
        );
        assert!(c.webhook_secret.is_none() && c.fallback_team.is_none());
    }

    #[test]
    fn values_are_checked_and_normalised() {
        let c = load_with(&[
            ("LONGTX_FALLBACK_TEAM", "@acme/dba"),
            (
                "LONGTX_AUTHOR_LOGINS",
                "Alice@Corp.example=alice, bob@corp.example=bob-gh",
            ),
            ("LONGTX_MAX_REVIEWERS", "3"),
        ])
        .unwrap();
        assert_eq!(c.fallback_team.as_deref(), Some("acme/dba"));
        assert_eq!(
            c.author_logins
                .get("alice@corp.example")
                .map(String::as_str),
            Some("alice")
        );
        assert_eq!(c.max_reviewers, 3);
        for (key, value) in [
            ("LONGTX_FALLBACK_TEAM", "dba"),
            ("LONGTX_FALLBACK_TEAM", "acme/d b"),
            ("LONGTX_AUTHOR_LOGINS", "alice"),
            ("LONGTX_MAX_REVIEWERS", "0"),
            ("LONGTX_MAX_REVIEWERS", "16"),
            ("LONGTX_HISTORY_DAYS", "0"),
        ] {
            let err = load_with(&[(key, value)]).unwrap_err().to_string();
            assert!(err.contains(key), "{key}={value}: {err}");
        }
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let c = load_with(&[
            ("LONGTX_GITHUB_WEBHOOK_SECRET", "s3cret-value"),
            (
                "LONGTX_GIT_URL",
                "https://x-access-token:ghs_abc@github.com/acme/app.git",
            ),
        ])
        .unwrap();
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("s3cret-value") && !shown.contains("ghs_abc"),
            "{shown}"
        );
        assert!(shown.contains("github.com/acme/app.git"), "{shown}");
    }

    #[test]
    fn clone_urls_lose_their_credentials_whole() {
        assert_eq!(
            redact_url("https://x-access-token:gh@s_to@ken@github.com/acme/app.git"),
            "https://<credentials>@github.com/acme/app.git"
        );
        assert_eq!(
            redact_url("https://ghp_abc@github.com/a/b.git"),
            "https://<credentials>@github.com/a/b.git"
        );
        assert_eq!(
            redact_url("https://github.com/a/b.git"),
            "https://github.com/a/b.git"
        );
        assert_eq!(redact_url("/srv/git/app.git"), "/srv/git/app.git");
    }
}
