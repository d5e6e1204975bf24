//! The agent answers its reviews: AI pre-review rounds and people's change
//! requests start revision rounds on the fix branch, against the fake
//! GitHub, a real bare remote and real PostgreSQL.

mod tracking;

use longtx_core::pre_review::PreReviewMode;
use longtx_testkit::github_events::{
    pr_comment, pre_review_run_completed, review_submitted, round_run_completed, PrEventBuilder,
};
use longtx_testkit::GitRepo;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tracking::Tracking;

const PR: u64 = 41;
const SOURCE: &str = "admin/orders#update";

/// A fix PR whose first head waits for (or has passed) its review.
struct FixPr {
    t: Tracking,
    repo: GitRepo,
    job: i64,
    head: String,
}

async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The agent's first run pushed the job's branch and the PR is open.
async fn fix_pr(name: &str, mode: Option<PreReviewMode>) -> FixPr {
    let mut repo = tracking::repository_owned_by_alice(name);
    let t = match mode {
        Some(mode) => Tracking::start_pre_review(&repo.bare(), mode).await,
        None => Tracking::start(&repo.bare(), |_| {}).await,
    };
    t.github.set_pull_files(PR, &[("app/models/order.rb", 2)]);
    let job = t.job_with_agent_running(SOURCE).await;
    let head = tracking::push_fix_branch(&t.app, &mut repo, job, None);
    let opened = PrEventBuilder::opened(job, PR).head_sha(&head).to_json();
    let (_, answer) = t
        .deliver("pull_request", &format!("open-{job}"), &opened)
        .await;
    assert_eq!(answer["outcome"], "moved", "{answer}");
    FixPr { t, repo, job, head }
}

impl FixPr {
    /// The inputs of the reviewing run dispatched for `head`.
    async fn review_run(&self, head: &str) -> Value {
        wait_until("the reviewing run", || self.review_inputs(head).is_some()).await;
        self.review_inputs(head).unwrap()
    }

    fn review_inputs(&self, head: &str) -> Option<Value> {
        self.t
            .github
            .runs()
            .into_iter()
            .find(|r| {
                r["workflow"] == "long-transaction-pre-review.yml"
                    && r["inputs"]["head_sha"] == head
            })
            .map(|r| r["inputs"].clone())
    }

    /// The fix runs dispatched for round `round` (0: the first run).
    fn fix_runs(&self, round: u32) -> Vec<Value> {
        self.t
            .github
            .runs()
            .into_iter()
            .filter(|r| {
                r["workflow"] == "long-transaction-fix.yml"
                    && r["inputs"]["job_id"].as_str().and_then(|s| s.parse().ok()) == Some(self.job)
                    && r["inputs"]["round"].as_str().unwrap_or("0").parse() == Ok(round)
            })
            .collect()
    }

    async fn round_run(&self, round: u32) -> Value {
        wait_until(&format!("round {round}'s run"), || {
            !self.fix_runs(round).is_empty()
        })
        .await;
        self.fix_runs(round).remove(0)
    }

    /// A request to the URL input `url_input` of a dispatched run, with
    /// the run's token, as the workflow makes it.
    fn as_the_run(
        &self,
        method: reqwest::Method,
        inputs: &Value,
        url_input: &str,
    ) -> reqwest::RequestBuilder {
        let url = inputs[url_input]
            .as_str()
            .unwrap()
            .replace("http://127.0.0.1:8080", &self.t.app.base_url);
        self.t
            .app
            .client
            .request(method, url)
            .bearer_auth(inputs["prompt_token"].as_str().unwrap())
    }

    /// The reviewing run for `head` ends with `verdict`, uploaded as its
    /// result; what longtx recorded of it once it read it (`moved`,
    /// `revising`, ...).
    async fn verdict(&self, head: &str, verdict: &str, reason: &str) -> Value {
        self.review_run(head).await;
        let run_id = self
            .t
            .github
            .runs()
            .into_iter()
            .find(|r| {
                r["workflow"] == "long-transaction-pre-review.yml"
                    && r["inputs"]["head_sha"] == head
            })
            .and_then(|r| r["id"].as_u64())
            .unwrap();
        self.t.wait_for_pre_review_run(self.job, head, run_id).await;
        let body = json!({
            "head_sha": head,
            "addresses_bottleneck": verdict != "reject",
            "minimal_change": verdict == "pass",
            "preserves_behaviour": true,
            "verdict": verdict,
            "reasons": [reason],
            "findings": [{"file": "app/models/order.rb", "line": 2, "text": format!("{reason} (finding)")}],
        });
        longtx_testkit::agent_result::upload_verdict(&self.t.github, run_id, &body);
        self.t.github.complete_run(run_id, "success");
        let done = pre_review_run_completed(self.job, head, run_id, "success");
        let (_, answer) = self
            .t
            .deliver("workflow_run", &format!("review-{head}"), &done)
            .await;
        assert_eq!(answer["outcome"], "pre_review_run_ended", "{answer}");
        let pool = longtx_testkit::sqlx::PgPool::connect(&self.t.app.db.url())
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let outcome: String = loop {
            let found: Option<String> = longtx_testkit::sqlx::query_scalar(
                "SELECT outcome FROM pre_review_verdicts WHERE job_id = $1 AND head_sha = $2 ORDER BY id DESC LIMIT 1",
            )
            .bind(self.job)
            .bind(head)
            .fetch_optional(&pool)
            .await
            .unwrap();
            if let Some(found) = found {
                break found;
            }
            assert!(
                Instant::now() < deadline,
                "longtx never read the verdict for {head}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let outcome = if outcome.starts_with("moved") {
            "moved"
        } else if outcome.starts_with("revision round") || outcome.starts_with("revise") {
            "revising"
        } else {
            outcome.as_str()
        };
        json!({"outcome": outcome})
    }

    /// The round's run proposes one more file on top of the branch, and
    /// ends; longtx commits it. The branch's new head.
    async fn round_pushes(&mut self, round: u32) -> String {
        let run = self.round_run(round).await;
        let run_id = run["id"].as_u64().unwrap();
        // GitHub reports the end long after longtx recorded the dispatch.
        self.wait_round_state(round, "running").await;
        let branch = self.t.app.installation.branch_of(self.job);
        let (base, patch) = longtx_testkit::agent_result::patch_over(
            &self.repo.bare_path(),
            &branch,
            &[(
                &format!("spec/round_{round}_spec.rb"),
                "# the warehouse is told after commit\n",
            )],
        );
        assert_eq!(
            run["inputs"]["base_sha"],
            base.as_str(),
            "the round starts from the branch head"
        );
        longtx_testkit::agent_result::upload_fix_result(
            &self.t.github,
            run_id,
            &base,
            &patch,
            None,
        );
        self.round_ends(round, run_id, "success").await;
        let bare = self.repo.bare_path();
        let head = || {
            let out = std::process::Command::new("git")
                .arg("--git-dir")
                .arg(&bare)
                .args(["rev-parse", &branch])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        wait_until("longtx's commit of the round", || head() != base).await;
        head()
    }

    async fn round_ends(&self, round: u32, run_id: u64, conclusion: &str) {
        let done = round_run_completed(self.job, round, run_id, conclusion);
        let (_, answer) = self
            .t
            .deliver("workflow_run", &format!("round-{round}-done"), &done)
            .await;
        assert_eq!(answer["outcome"], "round_run_ended", "{answer}");
    }

    async fn round_prompt(&self, round: u32) -> String {
        let inputs = self.round_run(round).await["inputs"].clone();
        let response = self
            .as_the_run(reqwest::Method::GET, &inputs, "prompt_url")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let text = response.text().await.unwrap();
        assert_eq!(
            longtx_prompt::hex_sha256(text.as_bytes()),
            inputs["prompt_sha256"].as_str().unwrap(),
            "the workflow checks the hash it was given"
        );
        text
    }

    /// longtx's answers to people's requests on the PR, oldest first.
    fn answers(&self) -> Vec<String> {
        self.t
            .github
            .comments_on(PR)
            .into_iter()
            .filter(|c| c.contains("<!-- longtx-request:"))
            .collect()
    }

    async fn round_state(&self, round: u32) -> String {
        let rounds = self.t.app.store.rounds_of(self.job).await.unwrap();
        rounds
            .iter()
            .find(|r| r.round == round as i32)
            .map(|r| r.state.clone())
            .unwrap_or_default()
    }

    async fn wait_round_state(&self, round: u32, state: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.round_state(round).await != state {
            assert!(
                Instant::now() < deadline,
                "round {round} never became {state}: {:?}",
                self.t.app.store.rounds_of(self.job).await.unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[tokio::test]
async fn a_revise_runs_the_agent_again_on_the_branch_and_people_are_asked_after_the_pass() {
    let mut pr = fix_pr("revise-pass", Some(PreReviewMode::On)).await;
    let first = pr.head.clone();
    let answer = pr
        .verdict(
            &first,
            "revise",
            "the order's retry is new behaviour; keep it as it was",
        )
        .await;
    assert_eq!(answer["outcome"], "revising", "{answer}");
    let run = pr.round_run(1).await;
    assert_eq!(run["inputs"]["round"], "1");
    assert!(
        run["inputs"]["findings"]
            .as_str()
            .unwrap()
            .contains("retry is new behaviour"),
        "{run}"
    );
    assert!(
        run["display_title"]
            .as_str()
            .unwrap()
            .starts_with(&format!("longtx job {} round 1", pr.job)),
        "{run}"
    );
    let prompt = pr.round_prompt(1).await;
    assert!(prompt.starts_with("# Revision round 1"), "{prompt}");
    assert!(prompt.contains("`app/models/order.rb:2`: the order's retry is new behaviour"));
    assert!(
        prompt.contains("| `app/models/order.rb` | 2 |"),
        "the diff summary"
    );
    assert!(
        prompt.contains("## The original task"),
        "the original context"
    );
    assert_eq!(pr.t.job(pr.job).await.state, "pre_review");
    assert!(
        pr.t.github.review_requests().is_empty(),
        "nobody is asked yet"
    );

    let second = pr.round_pushes(1).await;
    pr.wait_round_state(1, "pushed").await;
    let answer = pr
        .verdict(&second, "pass", "moves the HTTP call after the commit")
        .await;
    assert_eq!(answer["outcome"], "moved", "{answer}");
    let job =
        pr.t.wait_for(pr.job, |j| {
            j.reviewers_state.as_deref() == Some("requested")
        })
        .await;
    assert_eq!(job.state, "in_review");
    assert_eq!(job.pr_head_sha.as_deref(), Some(second.as_str()));
    assert_eq!(pr.t.github.review_requests().len(), 1);
    assert!(pr.t.github.closed_pulls().is_empty());
    assert_eq!(pr.fix_runs(1).len(), 1, "one run per round");
}

#[tokio::test]
async fn revise_until_the_cap_closes_the_pr_with_every_rounds_reasons() {
    let mut pr = fix_pr("revise-cap", Some(PreReviewMode::On)).await;
    let mut head = pr.head.clone();
    for round in 1..=2u32 {
        let answer = pr
            .verdict(&head, "revise", &format!("reason of round {}", round - 1))
            .await;
        assert_eq!(answer["outcome"], "revising", "{answer}");
        head = pr.round_pushes(round).await;
        pr.wait_round_state(round, "pushed").await;
    }
    let answer = pr.verdict(&head, "revise", "reason of round 2").await;
    assert_eq!(answer["outcome"], "moved", "{answer}");
    let job = pr.t.job(pr.job).await;
    assert_eq!(job.state, "rejected_by_review");
    assert!(job.state_reason.unwrap().contains("2 revision rounds"));
    wait_until("the PR to close", || pr.t.github.closed_pulls() == [PR]).await;
    let comments = pr.t.github.comments_on(PR);
    assert_eq!(comments.len(), 1, "{comments:?}");
    for round in 0..=2 {
        assert!(
            comments[0].contains(&format!("reason of round {round}")),
            "{}",
            comments[0]
        );
    }
    assert!(pr.fix_runs(3).is_empty(), "no third round");
    let reasons =
        pr.t.app
            .store
            .rejection_reasons(SOURCE, i64::MAX)
            .await
            .unwrap();
    assert!(
        reasons.contains(&"(round 2) reason of round 2".to_owned()),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&"reason of round 0".to_owned()),
        "{reasons:?}"
    );

    // The job page lists the rounds, the dashboard counts PRs by rounds
    // needed, /metrics counts rounds by how they ended.
    let page = pr.t.app.get_text(&format!("/jobs/{}", pr.job)).await;
    assert_eq!(page.matches("<tr class=\"round\">").count(), 2, "{page}");
    assert_eq!(page.matches("<tr class=\"verdict\">").count(), 3);
    assert!(page.contains("reason of round 1 (finding)"));
    let dashboard = pr.t.app.get_text("/").await;
    let section = &dashboard[dashboard.find("<section id=\"rounds\">").unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(
        section.contains("<tr class=\"rounds\"><td>2</td><td class=\"num\">1</td>"),
        "{section}"
    );
    let metrics = pr.t.app.get_text("/metrics").await;
    assert!(
        metrics.contains("longtx_revision_rounds{trigger=\"pre_review\",state=\"pushed\"} 2"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_reject_closes_at_once_without_a_round() {
    let pr = fix_pr("reject", Some(PreReviewMode::On)).await;
    let answer = pr
        .verdict(&pr.head, "reject", "it touches the wrong table")
        .await;
    assert_eq!(answer["outcome"], "moved", "{answer}");
    wait_until("the PR to close", || pr.t.github.closed_pulls() == [PR]).await;
    assert_eq!(pr.t.job(pr.job).await.state, "rejected_by_review");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(pr.fix_runs(1).is_empty());
}

#[tokio::test]
async fn a_round_that_pushes_nothing_closes_the_pr_in_on_mode() {
    let pr = fix_pr("no-change", Some(PreReviewMode::On)).await;
    pr.verdict(&pr.head, "revise", "add a spec").await;
    let run = pr.round_run(1).await;
    pr.wait_round_state(1, "running").await;
    // The agent changed nothing: its patch is empty.
    let run_id = run["id"].as_u64().unwrap();
    let base = run["inputs"]["base_sha"].as_str().unwrap();
    longtx_testkit::agent_result::upload_fix_result(&pr.t.github, run_id, base, b"", None);
    pr.round_ends(1, run_id, "success").await;
    pr.wait_round_state(1, "no_change").await;
    wait_until("the PR to close", || pr.t.github.closed_pulls() == [PR]).await;
    let comment = pr.t.github.comments_on(PR).remove(0);
    assert!(comment.contains("pushed nothing"), "{comment}");
}

#[tokio::test]
async fn a_round_whose_patch_touches_a_workflow_is_refused_said_on_the_pr_and_people_are_asked() {
    let pr = fix_pr("refused-round", Some(PreReviewMode::On)).await;
    pr.verdict(&pr.head, "revise", "add a spec").await;
    let run = pr.round_run(1).await;
    pr.wait_round_state(1, "running").await;
    let run_id = run["id"].as_u64().unwrap();
    let (base, patch) = longtx_testkit::agent_result::patch_over(
        &pr.repo.bare_path(),
        &pr.t.app.installation.branch_of(pr.job),
        &[(".github/workflows/deploy.yml", "on: push\n")],
    );
    longtx_testkit::agent_result::upload_fix_result(&pr.t.github, run_id, &base, &patch, None);
    pr.round_ends(1, run_id, "success").await;
    pr.wait_round_state(1, "refused").await;
    let rounds = pr.t.app.store.rounds_of(pr.job).await.unwrap();
    let reason = rounds[0].state_reason.clone().unwrap_or_default();
    assert!(reason.contains("protected path (.github/**)"), "{reason}");
    let comment = pr.t.github.comments_on(PR).remove(0);
    assert!(
        comment.contains("proposed a change longtx did not commit")
            && comment.contains(".github/workflows/deploy.yml"),
        "{comment}"
    );
    let page = pr.t.app.get_text(&format!("/jobs/{}", pr.job)).await;
    assert!(page.contains("protected path"), "the job page says why");
    let job = pr.t.wait_for(pr.job, |j| j.state == "in_review").await;
    assert_eq!(
        job.state, "in_review",
        "a refused round hands the PR to people"
    );
    assert_eq!(
        job.pr_head_sha.as_deref(),
        Some(pr.head.as_str()),
        "the PR stays as it was"
    );
    assert!(pr.t.github.api_commits().is_empty());
}

#[tokio::test]
async fn a_changes_requested_review_starts_a_round_with_its_inline_comments_once() {
    let pr = fix_pr("human-review", None).await;
    pr.t.wait_for(pr.job, |j| j.state == "in_review").await;
    pr.t.github.set_review_comments(
        77,
        &[(
            "app/models/order.rb",
            3,
            "Keep the retry: the warehouse API drops requests.",
        )],
    );
    let review = review_submitted(
        pr.job,
        PR,
        77,
        "alice",
        "changes_requested",
        "Close, but keep the retry.",
    );
    let (_, answer) =
        pr.t.deliver("pull_request_review", "review-77", &review)
            .await;
    assert_eq!(answer["outcome"], "revision_requested", "{answer}");
    // The same delivery again, and GitHub's second delivery of the review.
    let (_, again) =
        pr.t.deliver("pull_request_review", "review-77", &review)
            .await;
    assert_eq!(again["outcome"], "duplicate");
    let (_, other) =
        pr.t.deliver("pull_request_review", "review-77-bis", &review)
            .await;
    assert_eq!(other["outcome"], "duplicate", "{other}");

    let prompt = pr.round_prompt(1).await;
    assert!(prompt.contains("@alice reviewed your fix"), "{prompt}");
    assert!(
        prompt.contains("`app/models/order.rb:3`: Keep the retry"),
        "{prompt}"
    );
    assert!(prompt.contains("> Close, but keep the retry."), "{prompt}");
    wait_until("the answer", || pr.answers().len() == 1).await;
    assert!(pr.answers()[0].contains("Revision round 1 started"));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(pr.fix_runs(1).len(), 1, "one round for one review");
    assert_eq!(pr.answers().len(), 1, "one answer");
    let rounds = pr.t.app.store.rounds_of(pr.job).await.unwrap();
    assert_eq!(rounds.len(), 1);
    assert_eq!(rounds[0].trigger, "changes_requested");

    // An approval or a plain comment review starts nothing.
    let approval = review_submitted(pr.job, PR, 78, "alice", "approved", "LGTM");
    let (_, answer) =
        pr.t.deliver("pull_request_review", "review-78", &approval)
            .await;
    assert_eq!(answer["outcome"], "ignored");
}

#[tokio::test]
async fn a_revise_comment_from_someone_without_write_access_starts_nothing() {
    let pr = fix_pr("non-writer", None).await;
    pr.t.wait_for(pr.job, |j| j.state == "in_review").await;
    pr.t.github.set_permission("mallory", "read");
    let comment = pr_comment(
        PR,
        501,
        "mallory",
        "User",
        "/longtx revise rewrite it all in Go",
    );
    let (_, answer) = pr.t.deliver("issue_comment", "comment-501", &comment).await;
    assert_eq!(answer["outcome"], "revision_requested", "{answer}");
    wait_until("the answer", || pr.answers().len() == 1).await;
    let reply = pr.answers().remove(0);
    assert!(
        reply.contains("No round was started: @mallory has `read` access"),
        "{reply}"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(pr.fix_runs(1).is_empty());
    assert!(pr.t.app.store.rounds_of(pr.job).await.unwrap().is_empty());

    // A bot's command and a comment that is no command are not even recorded.
    let bot = pr_comment(PR, 502, "ci[bot]", "Bot", "/longtx revise");
    assert_eq!(
        pr.t.deliver("issue_comment", "comment-502", &bot).await.1["outcome"],
        "ignored"
    );
    let chat = pr_comment(
        PR,
        503,
        "alice",
        "User",
        "Looks good, /longtx revise later maybe",
    );
    assert_eq!(
        pr.t.deliver("issue_comment", "comment-503", &chat).await.1["outcome"],
        "ignored"
    );

    // A writer's command works, and a writer's stop ends further rounds.
    let revise = pr_comment(
        PR,
        504,
        "alice",
        "User",
        "/longtx revise\nAdd a spec for the retry.",
    );
    pr.t.deliver("issue_comment", "comment-504", &revise).await;
    let run = pr.round_run(1).await;
    assert!(pr
        .round_prompt(1)
        .await
        .contains("> Add a spec for the retry."));
    let stop = pr_comment(PR, 505, "alice", "User", "/longtx stop");
    pr.t.deliver("issue_comment", "comment-505", &stop).await;
    wait_until("three answers", || pr.answers().len() == 3).await;
    assert!(pr.answers()[2].contains("Stopped by @alice"));
    pr.round_ends(1, run["id"].as_u64().unwrap(), "failure")
        .await;
    pr.wait_round_state(1, "failed").await;
    let again = pr_comment(PR, 506, "alice", "User", "/longtx revise");
    pr.t.deliver("issue_comment", "comment-506", &again).await;
    wait_until("four answers", || pr.answers().len() == 4).await;
    assert!(
        pr.answers()[3].contains("stopped on this PR"),
        "{:?}",
        pr.answers()
    );
    // The same reader again, twice (in another case too), after the others: told once,
    // so no more permission lookups and no more replies.
    let lookups = |github: &longtx_testkit::FakeGitHub| {
        github
            .requests()
            .iter()
            .filter(|r| r.contains("/collaborators/mallory/permission"))
            .count()
    };
    let looked_up = lookups(&pr.t.github);
    for id in 510..512 {
        let again = pr_comment(PR, id, "Mallory", "User", "/longtx revise please");
        pr.t.deliver("issue_comment", &format!("comment-{id}"), &again)
            .await;
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        pr.answers().len(),
        4,
        "no second reply to the reader: {:?}",
        pr.answers()
    );
    assert_eq!(lookups(&pr.t.github), looked_up, "no lookup for a repeat");
}

#[tokio::test]
async fn a_paused_dispatch_holds_a_requested_round_and_the_answer_says_so() {
    let pr = fix_pr("paused-round", None).await;
    pr.t.wait_for(pr.job, |j| j.state == "in_review").await;
    pr.t.app.store.set_paused(true).await.unwrap();
    let revise = pr_comment(PR, 601, "alice", "User", "/longtx revise");
    pr.t.deliver("issue_comment", "comment-601", &revise).await;
    wait_until("the answer", || pr.answers().len() == 1).await;
    let reply = pr.answers().remove(0);
    assert!(
        reply.contains("queued") && reply.contains("paused"),
        "{reply}"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(pr.fix_runs(1).is_empty(), "the pause holds rounds too");
    pr.t.app.store.set_paused(false).await.unwrap();
    pr.round_run(1).await;
}

#[tokio::test]
async fn a_dispatcher_killed_during_a_round_dispatch_causes_no_second_run() {
    use longtx_pipeline::spawn_dispatcher;
    use longtx_testkit::{
        dispatch_settings, request_settings, shipped_prompt_sources, FakeGitHub, Fault, TestApp,
    };
    use std::sync::Arc;
    let mut repo = tracking::repository_owned_by_alice("killed-round");
    let github = FakeGitHub::start().await.with_remote(&repo.bare());
    let app = TestApp::builder()
        .prompts(shipped_prompt_sources())
        .github_webhook(tracking::SECRET)
        .requests(
            request_settings(PreReviewMode::Off),
            github.client(Duration::from_secs(5)),
        )
        .spawn()
        .await;
    let client = || Some(Arc::new(github.client(Duration::from_secs(10))));
    let first = spawn_dispatcher(app.store.clone(), dispatch_settings(), client());
    let hook = longtx_testkit::payloads::AmWebhook::with(
        longtx_testkit::payloads::AmAlert::firing(SOURCE)
            .table("orders")
            .value(150.0),
    );
    let fired: Value = app
        .post_json("/webhooks/alertmanager", &hook.to_json())
        .await
        .json()
        .await
        .unwrap();
    let job = fired["results"][0]["job_id"].as_i64().unwrap();
    wait_until("the first run", || github.runs().len() == 1).await;
    first.abort();
    let head = tracking::push_fix_branch(&app, &mut repo, job, None);
    github.set_pull_files(PR, &[("app/models/order.rb", 2)]);
    let opened = PrEventBuilder::opened(job, PR).head_sha(&head).to_json();
    let moved = app
        .post_github("pull_request", "open", &opened, tracking::SECRET)
        .await;
    assert_eq!(moved.status(), 200);

    // The round's dispatch creates its run, then GitHub answers only after
    // 3 s; the dispatcher dies meanwhile.
    github.fail_next([Fault::AcceptThenHang(Duration::from_secs(3))]);
    let mut settings = dispatch_settings();
    settings.lease = Duration::from_millis(800);
    let doomed = spawn_dispatcher(app.store.clone(), settings.clone(), client());
    let revise = pr_comment(PR, 701, "alice", "User", "/longtx revise");
    app.post_github("issue_comment", "comment-701", &revise, tracking::SECRET)
        .await;
    wait_until("the round's run", || github.runs().len() == 2).await;
    doomed.abort();

    spawn_dispatcher(app.store.clone(), settings, client());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let rounds = app.store.rounds_of(job).await.unwrap();
        if rounds.first().is_some_and(|r| r.state == "running") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the round was never recorded: {rounds:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        github.runs().len(),
        2,
        "the round's run was found by name, not dispatched again"
    );
    assert_eq!(github.dispatch_requests().len(), 2);
    let round_run = &github.runs()[1];
    assert_eq!(round_run["inputs"]["round"], "1");
    let page = app.store.job_page(job).await.unwrap().unwrap();
    assert_eq!(
        page.rounds[0].run_url,
        round_run["html_url"].as_str().map(str::to_owned)
    );
}

#[tokio::test]
async fn in_advisory_mode_a_revise_asks_people_at_once_and_the_round_still_runs() {
    let pr = fix_pr("advisory-round", Some(PreReviewMode::Advisory)).await;
    let answer = pr
        .verdict(&pr.head, "revise", "add a spec for the retry")
        .await;
    assert_eq!(answer["outcome"], "revising", "{answer}");
    let job =
        pr.t.wait_for(pr.job, |j| {
            j.reviewers_state.as_deref() == Some("requested")
        })
        .await;
    assert_eq!(job.state, "in_review");
    pr.round_run(1).await;
    // Past the cap a revise is only recorded: advisory never closes.
    assert!(pr.t.github.closed_pulls().is_empty());
}

#[tokio::test]
async fn a_flood_of_commands_is_answered_once_past_the_hourly_limit() {
    let pr = fix_pr("flood", None).await;
    pr.t.wait_for(pr.job, |j| j.state == "in_review").await;
    pr.t.github.set_permission("alice", "write");
    for i in 0..9 {
        let stop = pr_comment(PR, 1000 + i, "alice", "User", "/longtx stop");
        let (_, answer) =
            pr.t.deliver("issue_comment", &format!("flood-{i}"), &stop)
                .await;
        assert_eq!(answer["outcome"], "revision_requested", "{answer}");
    }
    // Six are acted on, the seventh is told about the limit, the rest get nothing.
    wait_until("seven answers", || pr.answers().len() >= 7).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let answers = pr.answers();
    assert_eq!(answers.len(), 7, "{answers:#?}");
    let limited: Vec<&String> = answers
        .iter()
        .filter(|a| a.contains("acts on at most 6 requests"))
        .collect();
    assert_eq!(limited.len(), 1, "{answers:#?}");
    assert!(limited[0].contains("@alice"));
}
