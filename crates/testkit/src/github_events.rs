//! Builders for the GitHub webhook deliveries longtx uses, shaped like
//! GitHub's own (only the fields longtx reads, plus a few for realism),
//! and signing as GitHub signs them.

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

pub const TARGET_REPO: &str = "acme/monolith";

/// Stands for the installation id of the app a delivery is sent to:
/// `TestApp::post_github` puts the app's id in its place, so builders can
/// name a job's branch and marker (`longtx/<installation>/<job>`) before
/// they know which database will read them.
pub const THIS_INSTALLATION: &str = "installation-of-the-receiving-app";

/// A `pull_request` delivery for a longtx fix PR.
#[derive(Debug, Clone)]
pub struct PrEventBuilder {
    action: String,
    number: u64,
    branch: String,
    body: String,
    head_repo: Option<String>,
    base_repo: String,
    base_ref: String,
    head_sha: String,
    base_sha: String,
    author: String,
    merged: bool,
    label: Option<String>,
    sender: String,
}

impl PrEventBuilder {
    /// `opened` for the PR longtx opens for `job_id`: its branch and
    /// marker both name the job of the receiving app's installation, in the
    /// target repository.
    pub fn opened(job_id: i64, number: u64) -> Self {
        PrEventBuilder {
            action: "opened".into(),
            number,
            branch: format!("longtx/{THIS_INSTALLATION}/{job_id}"),
            body: format!(
                "Shortens the transaction.\n\n<!-- longtx-job: {THIS_INSTALLATION}/{job_id} -->\n"
            ),
            head_repo: Some(TARGET_REPO.into()),
            base_repo: TARGET_REPO.into(),
            base_ref: "main".into(),
            head_sha: "a".repeat(40),
            base_sha: "b".repeat(40),
            author: "github-actions[bot]".into(),
            merged: false,
            label: None,
            sender: "github-actions[bot]".into(),
        }
    }

    /// `opened` for a PR a person opened from `branch` of the target
    /// repository: no longtx branch, no marker.
    pub fn a_persons_pr(number: u64, branch: &str, author: &str) -> Self {
        let mut event = PrEventBuilder::opened(0, number)
            .branch(branch)
            .body("Adds the order confirmation.")
            .author(author);
        event.sender = author.into();
        event
    }

    pub fn base_sha(mut self, sha: &str) -> Self {
        self.base_sha = sha.into();
        self
    }

    pub fn action(mut self, action: &str) -> Self {
        self.action = action.into();
        self
    }

    pub fn closed(self, merged: bool) -> Self {
        let mut event = self.action("closed");
        event.merged = merged;
        event
    }

    pub fn labeled(mut self, label: &str, by: &str) -> Self {
        self.action = "labeled".into();
        self.label = Some(label.into());
        self.sender = by.into();
        self
    }

    pub fn branch(mut self, branch: &str) -> Self {
        self.branch = branch.into();
        self
    }

    pub fn body(mut self, body: &str) -> Self {
        self.body = body.into();
        self
    }

    /// The head branch lives in someone else's fork.
    pub fn from_fork(mut self, fork: &str) -> Self {
        self.head_repo = Some(fork.into());
        self
    }

    pub fn author(mut self, login: &str) -> Self {
        self.author = login.into();
        self
    }

    pub fn base_ref(mut self, base: &str) -> Self {
        self.base_ref = base.into();
        self
    }

    pub fn head_sha(mut self, sha: &str) -> Self {
        self.head_sha = sha.into();
        self
    }

    pub fn to_json(&self) -> Value {
        let number = self.number;
        let mut event = json!({
            "action": self.action,
            "number": number,
            "pull_request": {
                "number": number,
                "html_url": format!("https://github.com/{}/pull/{number}", self.base_repo),
                "state": if self.action == "closed" { "closed" } else { "open" },
                "title": "Shorten the transaction",
                "body": self.body,
                "merged": self.merged,
                "user": {"login": self.author, "type": if self.author.ends_with("[bot]") { "Bot" } else { "User" }},
                "head": {
                    "ref": self.branch,
                    "sha": self.head_sha,
                    "repo": self.head_repo.as_ref().map(|r| json!({"full_name": r})),
                },
                "base": {
                    "ref": self.base_ref,
                    "sha": self.base_sha,
                    "repo": {"full_name": self.base_repo},
                },
            },
            "repository": {"full_name": self.base_repo, "private": true},
            "sender": {"login": self.sender},
        });
        if let Some(label) = &self.label {
            event["label"] = json!({"name": label, "color": "ededed"});
        }
        event
    }
}

/// A `workflow_run` `completed` delivery for the agent run of `job_id`.
pub fn run_completed(job_id: i64, run_id: u64, conclusion: &str) -> Value {
    json!({
        "action": "completed",
        "workflow_run": {
            "id": run_id,
            "name": "long-transaction-fix",
            "display_title": format!("longtx job {job_id}: admin/users#update"),
            "status": "completed",
            "conclusion": conclusion,
            "event": "workflow_dispatch",
            "path": ".github/workflows/long-transaction-fix.yml",
            "head_repository": {"full_name": TARGET_REPO},
            "created_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "html_url": format!("https://github.com/{TARGET_REPO}/actions/runs/{run_id}"),
        },
        "repository": {"full_name": TARGET_REPO},
        "sender": {"login": "github-actions[bot]"},
    })
}

/// A `workflow_run` `completed` delivery for revision round `round` of
/// `job_id` (the run name the fix template renders for a round).
pub fn round_run_completed(job_id: i64, round: u32, run_id: u64, conclusion: &str) -> Value {
    let mut event = run_completed(job_id, run_id, conclusion);
    event["workflow_run"]["display_title"] = json!(format!(
        "longtx job {job_id} round {round}: admin/users#update"
    ));
    event
}

/// A `workflow_run` `completed` delivery for the pre-review run `run_id`.
pub fn pre_review_run_completed(job_id: i64, head: &str, run_id: u64, conclusion: &str) -> Value {
    let mut event = run_completed(job_id, run_id, conclusion);
    event["workflow_run"]["path"] = json!(".github/workflows/long-transaction-pre-review.yml");
    event["workflow_run"]["display_title"] = json!(format!(
        "longtx pre-review {job_id} {}: admin/users#update",
        &head[..12.min(head.len())]
    ));
    event
}

/// A `pull_request_review` `submitted` delivery: `login` reviewed the fix
/// PR of `job_id` with `state` (`changes_requested`, `approved`,
/// `commented`), as review `review_id` with `body`.
pub fn review_submitted(
    job_id: i64,
    number: u64,
    review_id: i64,
    login: &str,
    state: &str,
    body: &str,
) -> Value {
    let pr = PrEventBuilder::opened(job_id, number).to_json()["pull_request"].clone();
    json!({
        "action": "submitted",
        "review": {
            "id": review_id,
            "body": body,
            "state": state,
            "user": {"login": login, "type": "User"},
            "commit_id": pr["head"]["sha"],
            "html_url": format!("https://github.com/{TARGET_REPO}/pull/{number}#pullrequestreview-{review_id}"),
        },
        "pull_request": pr,
        "repository": {"full_name": TARGET_REPO},
        "sender": {"login": login, "type": "User"},
    })
}

/// An `issue_comment` `created` delivery on PR `number` (GitHub sends PR
/// conversation comments as issue comments, with `issue.pull_request`).
pub fn pr_comment(number: u64, comment_id: i64, login: &str, kind: &str, body: &str) -> Value {
    json!({
        "action": "created",
        "issue": {
            "number": number,
            "title": "Shorten the long transaction",
            "pull_request": {"url": format!("https://api.github.com/repos/{TARGET_REPO}/pulls/{number}")},
        },
        "comment": {"id": comment_id, "body": body, "user": {"login": login, "type": kind}},
        "repository": {"full_name": TARGET_REPO},
        "sender": {"login": login, "type": kind},
    })
}

/// `sha256=<hex>` of the body, as GitHub sends in `X-Hub-Signature-256`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}
