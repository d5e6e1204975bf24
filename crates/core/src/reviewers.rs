//! Who reviews a fix PR: CODEOWNERS first, else the people who committed
//! most to the changed files lately, else a fallback team. Pure: the
//! adapters gather the facts (owners, history, who may review) and this
//! module decides.

use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Someone GitHub can be asked for a review.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Reviewer {
    User(String),
    /// `org/team-slug`.
    Team(String),
}

impl Reviewer {
    /// The key used for exclusions and open-review counts.
    pub fn key(&self) -> String {
        match self {
            Reviewer::User(login) => login.to_ascii_lowercase(),
            Reviewer::Team(team) => format!("@{}", team.to_ascii_lowercase()),
        }
    }
}

impl std::fmt::Display for Reviewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reviewer::User(login) => write!(f, "@{login}"),
            Reviewer::Team(team) => write!(f, "@{team}"),
        }
    }
}

/// A possible reviewer with the reason it was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub reviewer: Reviewer,
    pub reason: String,
    /// History weight; 0 for CODEOWNERS, where every owner counts the same.
    pub score: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Codeowners,
    History,
    Fallback,
    Nobody,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    pub source: Source,
    pub reviewers: Vec<Candidate>,
    /// Candidates left out, with why (author, bot, not a collaborator,
    /// at capacity).
    pub skipped: Vec<(String, String)>,
    /// Those left out for being at capacity, as "alice 3/3".
    pub at_capacity: Vec<String>,
}

impl Choice {
    /// Why a job must wait: candidates existed and every one of them was
    /// at capacity. `None` when someone was chosen, or when nobody was a
    /// candidate at all (waiting would not help).
    pub fn capacity_wait(&self) -> Option<String> {
        (self.reviewers.is_empty() && !self.at_capacity.is_empty())
            .then(|| format!("reviewers at capacity: {}", self.at_capacity.join(", ")))
    }
}

/// How many open longtx reviews one reviewer is asked to hold at once
/// (`LONGTX_REVIEWER_CAPACITY`, `LONGTX_TEAM_CAPACITY`): a team counts as
/// one reviewer with its own capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Capacity {
    pub user: i64,
    pub team: i64,
}

impl Capacity {
    pub fn of(&self, reviewer: &Reviewer) -> i64 {
        match reviewer {
            Reviewer::User(_) => self.user,
            Reviewer::Team(_) => self.team,
        }
    }
}

/// Everything the choice depends on.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Owners of the changed files, united, in the order first seen.
    pub codeowners: Vec<Candidate>,
    /// History candidates, in any order; sorted by score here.
    pub history: Vec<Candidate>,
    pub fallback_team: Option<String>,
    /// Lowercased logins never asked: the PR author, longtx itself.
    pub excluded: HashSet<String>,
    /// Lowercased logins known not to be collaborators of the repository.
    pub non_collaborators: HashSet<String>,
    /// Open longtx reviews per [`Reviewer::key`], with the reviews
    /// reserved for fixes under way (predicted at their dispatch).
    pub open_reviews: HashMap<String, i64>,
    /// `None`: no cap (the offline CLI, which asks nobody).
    pub capacity: Option<Capacity>,
    pub max_reviewers: usize,
}

impl Facts {
    fn load(&self, reviewer: &Reviewer) -> i64 {
        self.open_reviews.get(&reviewer.key()).copied().unwrap_or(0)
    }

    /// `(load, capacity)` when the reviewer is at or past capacity.
    fn full(&self, reviewer: &Reviewer) -> Option<(i64, i64)> {
        let cap = self.capacity?.of(reviewer);
        let load = self.load(reviewer);
        (load >= cap).then_some((load, cap))
    }
}

/// GitHub's own automation accounts, which commit without a `[bot]`
/// suffix: Copilot's coding agent (`Copilot <…+Copilot@users.noreply.github.com>`),
/// the web editor's committer, Actions' default identity.
const GITHUB_AUTOMATION: [&str; 6] = [
    "copilot",
    "copilot-swe-agent",
    "github-actions",
    "dependabot",
    "web-flow",
    "github",
];

/// Bots never review, and their commits never make anyone a reviewer. One
/// rule for a login, a name or an email: a handle that ends in `[bot]`,
/// `-bot` or `_bot` (GitHub Apps, Renovate, custom CI users), one of
/// GitHub's own automation accounts, or their addresses (`noreply@github.com`,
/// `action@github.com`, and noreply addresses of the above).
pub fn is_bot(login_name_or_email: &str) -> bool {
    let lower = login_name_or_email.trim().to_ascii_lowercase();
    if matches!(lower.as_str(), "noreply@github.com" | "action@github.com") {
        return true;
    }
    let handle = match lower.split_once('@') {
        Some((local, domain)) if domain.starts_with("users.noreply.github.") => local
            .split_once('+')
            .map_or(local, |(_, login)| login)
            .to_owned(),
        Some((local, _)) => local.to_owned(),
        None => lower,
    };
    handle.ends_with("[bot]")
        || handle.ends_with("-bot")
        || handle.ends_with("_bot")
        || handle.ends_with(" bot")
        || GITHUB_AUTOMATION.contains(&handle.as_str())
}

/// CODEOWNERS, else history, else the fallback team; at each step those
/// who cannot review (bots, the author, non-collaborators, people at
/// capacity) are passed over for the next candidate by the same rule.
pub fn choose(facts: &Facts) -> Choice {
    let mut left_out = LeftOut::default();
    let codeowners = eligible(&facts.codeowners, facts, &mut left_out);
    if !codeowners.is_empty() {
        return pick(Source::Codeowners, codeowners, facts, left_out);
    }
    let history = eligible(&facts.history, facts, &mut left_out);
    if !history.is_empty() {
        return pick(Source::History, history, facts, left_out);
    }
    if let Some(team) = &facts.fallback_team {
        let fallback = Candidate {
            reviewer: Reviewer::Team(team.clone()),
            reason: "the fallback team: no code owner or recent committer could review".into(),
            score: 0.0,
        };
        match facts.full(&fallback.reviewer) {
            None => {
                return Choice {
                    source: Source::Fallback,
                    reviewers: vec![fallback],
                    skipped: left_out.skipped,
                    at_capacity: left_out.at_capacity,
                }
            }
            Some(full) => left_out.capacity(&fallback.reviewer, full),
        }
    }
    Choice {
        source: Source::Nobody,
        reviewers: Vec::new(),
        skipped: left_out.skipped,
        at_capacity: left_out.at_capacity,
    }
}

#[derive(Default)]
struct LeftOut {
    skipped: Vec<(String, String)>,
    at_capacity: Vec<String>,
}

impl LeftOut {
    fn capacity(&mut self, reviewer: &Reviewer, (load, cap): (i64, i64)) {
        self.skipped.push((
            reviewer.to_string(),
            format!("at capacity ({load}/{cap} open longtx reviews)"),
        ));
        let name = match reviewer {
            Reviewer::User(login) => login.clone(),
            Reviewer::Team(team) => format!("@{team}"),
        };
        self.at_capacity.push(format!("{name} {load}/{cap}"));
    }
}

fn eligible(candidates: &[Candidate], facts: &Facts, left_out: &mut LeftOut) -> Vec<Candidate> {
    let mut seen = HashSet::new();
    let mut kept = Vec::new();
    for candidate in candidates {
        let key = candidate.reviewer.key();
        if !seen.insert(key.clone()) {
            continue;
        }
        let why_not = match &candidate.reviewer {
            Reviewer::User(login) if is_bot(login) => Some("a bot"),
            Reviewer::User(_) if facts.excluded.contains(&key) => {
                Some("the PR's author or longtx itself")
            }
            Reviewer::User(_) if facts.non_collaborators.contains(&key) => {
                Some("not a collaborator of the repository")
            }
            _ => None,
        };
        match (why_not, facts.full(&candidate.reviewer)) {
            (Some(reason), _) => left_out
                .skipped
                .push((candidate.reviewer.to_string(), reason.to_owned())),
            (None, Some(full)) => left_out.capacity(&candidate.reviewer, full),
            (None, None) => kept.push(candidate.clone()),
        }
    }
    kept
}

/// Highest score first; among equals, whoever has the fewest open longtx
/// reviews, then by name so the choice is reproducible.
fn pick(
    source: Source,
    mut candidates: Vec<Candidate>,
    facts: &Facts,
    left_out: LeftOut,
) -> Choice {
    let open = |c: &Candidate| facts.load(&c.reviewer);
    candidates.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| open(a).cmp(&open(b)))
            .then_with(|| a.reviewer.cmp(&b.reviewer))
    });
    candidates.truncate(facts.max_reviewers.max(1));
    Choice {
        source,
        reviewers: candidates,
        skipped: left_out.skipped,
        at_capacity: left_out.at_capacity,
    }
}

/// A commit's weight by age: it halves every `half_life_days`, so last
/// month's work outweighs last year's without the old counting for nothing.
pub fn recency_weight(age_days: f64, half_life_days: f64) -> f64 {
    0.5f64.powf(age_days.max(0.0) / half_life_days)
}

/// The GitHub login inside a noreply address:
/// `123+login@users.noreply.github.com` or `login@users.noreply.github.com`.
pub fn noreply_login(email: &str) -> Option<&str> {
    let local = email
        .strip_suffix("@users.noreply.github.com")
        .or_else(|| email.strip_suffix("@users.noreply.github.localhost"))?;
    let login = local.split_once('+').map_or(local, |(_, login)| login);
    (!login.is_empty() && !is_bot(email)).then_some(login)
}

#[cfg(test)]
mod tests;
