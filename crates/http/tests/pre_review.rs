//! The AI pre-review against the fake GitHub: a new fix PR waits in
//! `pre_review`, one reviewing run is dispatched per head commit, and the
//! verdict that run uploads (read by longtx from the run it dispatched)
//! decides whether people are asked or the PR is closed.

mod tracking;

use longtx_core::pre_review::PreReviewMode;
use longtx_testkit::github_events::{pre_review_run_completed, PrEventBuilder};
use longtx_testkit::GitRepo;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tracking::Tracking;

const PR: u64 = 41;

fn target_repository() -> GitRepo {
    tracking::repository_owned_by_alice("pre-review-target")
}

async fn started(repo: &mut GitRepo, mode: PreReviewMode) -> Tracking {
    let t = Tracking::start_pre_review(&repo.bare(), mode).await;
    t.github.set_pull_files(PR, &[("app/models/order.rb", 12)]);
    t
}

/// The pre-review runs dispatched for a job, as (head, inputs).
fn review_runs(t: &Tracking, job: i64) -> Vec<(String, Value)> {
    t.github
        .runs()
        .into_iter()
        .filter(|r| {
            r["workflow"] == "long-transaction-pre-review.yml"
                && r["inputs"]["job_id"]
                    .as_str()
                    .and_then(|s| s.parse::<i64>().ok())
                    == Some(job)
        })
        .map(|r| {
            (
                r["inputs"]["head_sha"].as_str().unwrap().to_owned(),
                r["inputs"].clone(),
            )
        })
        .collect()
}

async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An agent run opens PR 41 at `head`; returns the job and the inputs of
/// the one reviewing run dispatched for it.
async fn pr_awaiting_verdict(t: &Tracking, source: &str, head: &str) -> (i64, Value) {
    let job = t.job_with_agent_running(source).await;
    let opened = PrEventBuilder::opened(job, PR).head_sha(head).to_json();
    let (status, answer) = t
        .deliver("pull_request", &format!("open-{job}"), &opened)
        .await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("moved")),
        "{answer}"
    );
    assert_eq!(t.job(job).await.state, "pre_review");
    wait_until("the reviewing run", || !review_runs(t, job).is_empty()).await;
    let runs = review_runs(t, job);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].0, head);
    (job, runs[0].1.clone())
}

fn verdict(head: &str, pass: bool) -> Value {
    json!({
        "head_sha": head,
        "addresses_bottleneck": true,
        "minimal_change": pass,
        "preserves_behaviour": true,
        "verdict": if pass { "pass" } else { "fail" },
        "reasons": if pass { vec!["moves the HTTP call after the commit"] }
                   else { vec!["rewrites the whole checkout flow instead of moving the HTTP call out of the transaction"] },
    })
}

/// The reviewing run dispatched for `head` uploads `body` as its verdict
/// and ends; GitHub tells longtx (a signed `workflow_run` event). The
/// answer to that delivery.
async fn review_ends(t: &Tracking, job: i64, head: &str, body: &Value, delivery: &str) -> Value {
    let run = review_run_id(t, job, head);
    t.wait_for_pre_review_run(job, head, run).await;
    longtx_testkit::agent_result::upload_verdict(&t.github, run, body);
    t.github.complete_run(run, "success");
    let (_, answer) = t
        .deliver(
            "workflow_run",
            delivery,
            &pre_review_run_completed(job, head, run, "success"),
        )
        .await;
    answer
}

fn review_run_id(t: &Tracking, job: i64, head: &str) -> u64 {
    t.github
        .runs()
        .into_iter()
        .find(|r| {
            r["workflow"] == "long-transaction-pre-review.yml"
                && r["inputs"]["job_id"]
                    .as_str()
                    .and_then(|s| s.parse::<i64>().ok())
                    == Some(job)
                && r["inputs"]["head_sha"] == head
        })
        .and_then(|r| r["id"].as_u64())
        .expect("a reviewing run for the head")
}

#[tokio::test]
async fn a_pass_asks_the_reviewers_only_then_and_a_repeat_changes_nothing() {
    let mut repo = target_repository();
    let t = started(&mut repo, PreReviewMode::On).await;
    let head = "b".repeat(40);
    let (job, inputs) = pr_awaiting_verdict(&t, "admin/orders#update", &head).await;
    // Redelivering the opened event does not dispatch a second review.
    let opened = PrEventBuilder::opened(job, PR)
        .head_sha(&head)
        .action("synchronize")
        .to_json();
    t.deliver("pull_request", "sync-same-head", &opened).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(review_runs(&t, job).len(), 1, "one run per head");
    assert!(
        t.github.review_requests().is_empty(),
        "nobody is asked before the verdict"
    );
    assert_eq!(inputs["pr_number"], PR.to_string());
    assert_eq!(inputs["query_source"], "admin/orders#update");

    let answer = review_ends(&t, job, &head, &verdict(&head, true), "review-1").await;
    assert_eq!(answer["outcome"], "pre_review_run_ended", "{answer}");
    let job_row = t
        .wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
        .await;
    assert_eq!(job_row.state, "in_review");
    assert_eq!(
        t.github.review_requests().len(),
        1,
        "{:?}",
        t.github.review_requests()
    );
    assert_eq!(t.github.review_requests()[0].users, ["alice"]);

    // A redelivered completion is no longer a running review: ignored.
    let again = review_ends(&t, job, &head, &verdict(&head, true), "review-1-again").await;
    assert_eq!(again["outcome"], "ignored", "{again}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(t.github.review_requests().len(), 1);
    assert!(t.github.closed_pulls().is_empty());
}

#[tokio::test]
async fn a_fail_closes_the_pr_with_the_reasons_and_the_next_prompt_carries_them() {
    let mut repo = target_repository();
    let t = started(&mut repo, PreReviewMode::On).await;
    let head = "c".repeat(40);
    let (job, _) = pr_awaiting_verdict(&t, "checkouts#create", &head).await;

    review_ends(&t, job, &head, &verdict(&head, false), "review-1").await;
    let row = t.wait_for(job, |j| j.state == "rejected_by_review").await;
    assert_eq!(row.state, "rejected_by_review");
    assert!(row.ended_at.is_some(), "the cooldown counts from now");
    wait_until("the PR to close", || t.github.closed_pulls() == [PR]).await;
    let comments = t.github.comments_on(PR);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(
        comments[0].contains("rewrites the whole checkout flow"),
        "{}",
        comments[0]
    );
    assert!(
        comments[0].contains("| the minimal change that removes the long transaction | **no** |")
    );
    assert!(t.github.review_requests().is_empty(), "nobody is asked");

    // GitHub's `closed` event for our own close changes nothing.
    let closed = PrEventBuilder::opened(job, PR)
        .head_sha(&head)
        .action("closed")
        .to_json();
    let (_, answer) = t.deliver("pull_request", "closed-by-us", &closed).await;
    assert_eq!(answer["outcome"], "unchanged", "{answer}");
    // A repeated verdict neither comments nor closes again.
    let again = review_ends(&t, job, &head, &verdict(&head, false), "review-1-again").await;
    assert_eq!(again["outcome"], "ignored", "{again}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(t.github.closed_pulls(), [PR]);
    assert_eq!(t.github.comments_on(PR).len(), 1);

    let reasons = t
        .app
        .store
        .rejection_reasons("checkouts#create", i64::MAX)
        .await
        .unwrap();
    assert_eq!(
        reasons,
        ["rewrites the whole checkout flow instead of moving the HTTP call out of the transaction"],
        "the next attempt's prompt gets these"
    );
}

#[tokio::test]
async fn advisory_mode_records_a_fail_and_still_asks_people() {
    let mut repo = target_repository();
    let t = started(&mut repo, PreReviewMode::Advisory).await;
    let head = "d".repeat(40);
    let (job, _) = pr_awaiting_verdict(&t, "carts#update", &head).await;
    review_ends(&t, job, &head, &verdict(&head, false), "review-1").await;
    let row = t
        .wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
        .await;
    assert_eq!(row.state, "in_review");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(t.github.closed_pulls().is_empty(), "advisory never closes");
    assert_eq!(t.github.review_requests().len(), 1);
    let page = t.app.store.job_page(job).await.unwrap().unwrap();
    assert_eq!(
        page.job.pre_review_verdict.as_ref().unwrap()["verdict"],
        "reject",
        "the verdict is kept (an old `fail` reads as `reject`)"
    );
}

/// Six pushes alternating two heads once bought seven reviews. A head is
/// judged once, and each review counts its budget against the day.
#[tokio::test]
async fn pushes_alternating_two_heads_buy_one_review_per_head_each_counted() {
    let mut repo = target_repository();
    let t = started(&mut repo, PreReviewMode::On).await;
    let (a, b) = ("a".repeat(40), "b".repeat(40));
    let (job, _) = pr_awaiting_verdict(&t, "flood#push", &a).await;
    for (n, head) in [&b, &a, &b, &a, &b, &a].into_iter().enumerate() {
        let pushed = PrEventBuilder::opened(job, PR)
            .head_sha(head)
            .action("synchronize")
            .to_json();
        t.deliver("pull_request", &format!("flood-{n}"), &pushed)
            .await;
        if n == 0 {
            wait_until("a run for the second head", || {
                review_runs(&t, job).len() == 2
            })
            .await;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    let heads: Vec<String> = review_runs(&t, job).into_iter().map(|(h, _)| h).collect();
    assert_eq!(heads, [a.clone(), b.clone()], "one review per head");
    let (_, status) = t.app.get_json("/api/dispatch").await;
    let fix_runs = t
        .github
        .runs()
        .iter()
        .filter(|r| r["workflow"] == "long-transaction-fix.yml")
        .count() as f64;
    assert_eq!(
        status["status"]["budget_today_usd"].as_f64(),
        Some(fix_runs * 5.0 + 2.0 * 2.0),
        "{status}"
    );
}

#[tokio::test]
async fn a_push_is_judged_again_and_a_verdict_for_the_old_head_is_ignored() {
    let mut repo = target_repository();
    let t = started(&mut repo, PreReviewMode::On).await;
    let old = "e".repeat(40);
    let new = "f".repeat(40);
    let (job, _) = pr_awaiting_verdict(&t, "exports#download", &old).await;
    let pushed = PrEventBuilder::opened(job, PR)
        .head_sha(&new)
        .action("synchronize")
        .to_json();
    t.deliver("pull_request", "push-1", &pushed).await;
    wait_until("a run for the new head", || {
        review_runs(&t, job).iter().any(|(h, _)| *h == new)
    })
    .await;

    let answer = review_ends(&t, job, &old, &verdict(&old, false), "review-old").await;
    assert_eq!(
        answer["outcome"], "ignored",
        "the old head's run no longer counts: {answer}"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        t.job(job).await.state,
        "pre_review",
        "the old head's fail does not count"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(t.github.closed_pulls().is_empty());

    review_ends(&t, job, &new, &verdict(&new, true), "review-new").await;
    assert_eq!(
        t.wait_for(job, |j| j.state == "in_review").await.state,
        "in_review"
    );
    assert_eq!(review_runs(&t, job).len(), 2, "one run per head, no more");
}

#[tokio::test]
async fn a_verdict_not_from_the_dispatched_run_changes_nothing_and_an_unusable_one_asks_people() {
    let mut repo = target_repository();
    let t = started(&mut repo, PreReviewMode::On).await;
    let head = "1".repeat(40);
    let (job, inputs) = pr_awaiting_verdict(&t, "search#index", &head).await;

    // A leaked job token posts a reject: the endpoint is gone.
    let url = format!("{}/api/jobs/{job}/pre-review", t.app.base_url);
    let response = t
        .app
        .client
        .post(url)
        .bearer_auth(inputs["prompt_token"].as_str().unwrap())
        .json(&verdict(&head, false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 410);
    let answer: Value = response.json().await.unwrap();
    assert!(
        answer["detail"]
            .as_str()
            .unwrap()
            .contains("long-transaction-pre-review.yml"),
        "{answer}"
    );

    // A fork's run carrying the review run's id is not the review run.
    let run = review_run_id(&t, job, &head);
    t.wait_for_pre_review_run(job, &head, run).await;
    let mut forged = pre_review_run_completed(job, &head, run, "success");
    forged["workflow_run"]["head_repository"] = json!({"full_name": "mallory/monolith"});
    let (_, answer) = t.deliver("workflow_run", "forged", &forged).await;
    assert_eq!(answer["outcome"], "ignored", "{answer}");
    assert_eq!(t.job(job).await.state, "pre_review");

    // The real run ends with a pass that fails its own checks: no verdict,
    // so people are asked and nothing is closed.
    let mut inconsistent = verdict(&head, true);
    inconsistent["minimal_change"] = json!(false);
    review_ends(&t, job, &head, &inconsistent, "review-1").await;
    let row = t.wait_for(job, |j| j.state == "in_review").await;
    assert_eq!(row.state, "in_review");
    assert_eq!(
        row.pre_review_verdict.as_ref().unwrap()["verdict"],
        "no_verdict"
    );
    assert!(
        row.pre_review_verdict.as_ref().unwrap()["reasons"][0]
            .as_str()
            .unwrap()
            .contains("not usable"),
        "{row:?}"
    );
    assert!(t.github.closed_pulls().is_empty());
}

#[tokio::test]
async fn reopening_a_rejected_pr_overrides_the_verdict_and_asks_the_reviewers() {
    let mut repo = target_repository();
    let t = started(&mut repo, PreReviewMode::On).await;
    let head = "3".repeat(40);
    let (job, _) = pr_awaiting_verdict(&t, "inventory#sync", &head).await;
    review_ends(&t, job, &head, &verdict(&head, false), "review-1").await;
    wait_until("the PR to close", || t.github.closed_pulls() == [PR]).await;
    // Let the closer record the close before the person reopens.
    let closed = t.wait_for(job, |j| j.state == "rejected_by_review").await;
    assert_eq!(closed.state, "rejected_by_review");

    let reopened = PrEventBuilder::opened(job, PR)
        .head_sha(&head)
        .action("reopened")
        .to_json();
    let (status, answer) = t.deliver("pull_request", "reopen-1", &reopened).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("moved")),
        "{answer}"
    );
    let row = t
        .wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
        .await;
    assert_eq!(row.state, "in_review");
    assert!(row.ended_at.is_none());
    assert_eq!(t.github.review_requests().len(), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(t.github.closed_pulls(), [PR], "not closed again");
    assert_eq!(
        review_runs(&t, job).len(),
        1,
        "a reopen is a person's call: no new review"
    );
}

#[tokio::test]
async fn a_review_that_never_answers_goes_to_people_as_no_verdict_after_the_timeout() {
    let mut repo = target_repository();
    let t = started(&mut repo, PreReviewMode::On).await;
    let head = "c".repeat(40);
    let (job, _) = pr_awaiting_verdict(&t, "admin/users#update", &head).await;
    assert_eq!(t.job(job).await.state, "pre_review");
    // The review run died: 31 minutes pass with no verdict (timeout 30m).
    let pool = longtx_testkit::sqlx::PgPool::connect(&t.app.db.url())
        .await
        .unwrap();
    longtx_testkit::sqlx::query(
        "UPDATE jobs SET pre_review_since = now() - interval '31 minutes' WHERE id = $1",
    )
    .bind(job)
    .execute(&pool)
    .await
    .unwrap();
    let asked = t
        .wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
        .await;
    assert_eq!(asked.state, "in_review", "never stuck in pre_review");
    let verdict: Value = longtx_testkit::sqlx::query_scalar(
        "SELECT verdict FROM pre_review_verdicts WHERE job_id = $1 ORDER BY id DESC LIMIT 1",
    )
    .bind(job)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(verdict["verdict"], "no_verdict");
    assert!(verdict["reasons"][0]
        .as_str()
        .unwrap()
        .contains("no verdict within 30 minutes"));
    assert!(
        t.github.closed_pulls().is_empty(),
        "a missing verdict closes nothing"
    );
}

/// A copy of an older pre-review template (it still requires the input
/// `verdict_url`, which longtx no longer sends) never takes the dispatch:
/// GitHub answers 422, the PR goes to people at once, and the reason
/// names the file to copy again.
#[tokio::test]
async fn an_old_pre_review_template_is_named_and_people_are_asked() {
    let mut repo = target_repository();
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../.github/workflows/long-transaction-pre-review.yml"
    ))
    .unwrap();
    let old = shipped.replacen(
        "    inputs:\n",
        "    inputs:\n      verdict_url:\n        description: where the verdict was posted\n        required: true\n        type: string\n",
        1,
    );
    assert_ne!(old, shipped);
    repo.commit(
        &[(".github/workflows/long-transaction-pre-review.yml", &old)],
        "Alice",
        "alice@example.com",
        1,
    );
    let t = started(&mut repo, PreReviewMode::On).await;
    let head = "d".repeat(40);
    let job = t.job_with_agent_running("admin/orders#update").await;
    let opened = PrEventBuilder::opened(job, PR).head_sha(&head).to_json();
    let (status, answer) = t.deliver("pull_request", "open-old", &opened).await;
    assert_eq!(status, 200, "{answer}");
    let row = t
        .wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
        .await;
    assert_eq!(row.state, "in_review");
    assert!(
        review_runs(&t, job).is_empty(),
        "GitHub refused the dispatch"
    );
    let why = row.pre_review_verdict.unwrap()["reasons"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        why.contains("Required input 'verdict_url' not provided")
            && why.contains(
                "copy the shipped .github/workflows/long-transaction-pre-review.yml again"
            )
            && why.ends_with("people are asked instead"),
        "{why}"
    );
}
