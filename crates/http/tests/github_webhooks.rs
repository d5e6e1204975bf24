//! `POST /webhooks/github` against the fake GitHub: signatures, redelivery,
//! forks and correlation, and the job transitions PR events cause.

mod tracking;

use longtx_testkit::github_events::{run_completed, PrEventBuilder};
use longtx_testkit::GitRepo;
use serde_json::json;
use tracking::{Tracking, SECRET};

fn target_repository() -> GitRepo {
    tracking::repository_owned_by_alice("target")
}

async fn started(repo: &mut GitRepo) -> Tracking {
    let tracking = Tracking::start(&repo.bare(), |_| {}).await;
    tracking
        .github
        .set_pull_files(41, &[("app/models/order.rb", 12)]);
    tracking
}

#[tokio::test]
async fn a_missing_or_wrong_signature_is_refused_before_anything_is_read() {
    let mut repo = target_repository();
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    let body = PrEventBuilder::opened(job, 41).to_json().to_string();
    let post = |signature: Option<String>| {
        let mut request = t
            .app
            .client
            .post(t.app.url("/webhooks/github"))
            .header("x-github-event", "pull_request")
            .header("x-github-delivery", "d-1")
            .body(body.clone());
        if let Some(signature) = signature {
            request = request.header("x-hub-signature-256", signature);
        }
        request.send()
    };
    let missing = post(None).await.unwrap();
    assert_eq!(missing.status(), 401);
    let wrong_secret = post(Some(longtx_testkit::github_events::sign(
        "not-the-secret",
        body.as_bytes(),
    )))
    .await
    .unwrap();
    assert_eq!(wrong_secret.status(), 401);
    let other_body = post(Some(longtx_testkit::github_events::sign(SECRET, b"{}")))
        .await
        .unwrap();
    assert_eq!(other_body.status(), 401);
    let garbage = post(Some("sha256=zz".into())).await.unwrap();
    assert_eq!(garbage.status(), 401);
    let answer: serde_json::Value = garbage.json().await.unwrap();
    assert!(
        !answer.to_string().contains(SECRET),
        "the secret never appears: {answer}"
    );

    assert_eq!(
        t.job(job).await.state,
        "agent_running",
        "nothing was acted on"
    );
    // The same delivery id, properly signed, is still processed: a refused
    // attempt does not use the id up.
    let (status, answer) = t
        .deliver(
            "pull_request",
            "d-1",
            &PrEventBuilder::opened(job, 41).to_json(),
        )
        .await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("moved")),
        "{answer}"
    );
}

#[tokio::test]
async fn ping_is_answered_and_unused_events_are_accepted_and_ignored() {
    let mut repo = target_repository();
    let t = started(&mut repo).await;
    let (status, answer) = t
        .deliver(
            "ping",
            "p-1",
            &json!({"zen": "Keep it logically awesome.", "hook_id": 1}),
        )
        .await;
    assert_eq!((status, answer["outcome"].as_str()), (200, Some("pong")));
    let (status, answer) = t
        .deliver("issues", "i-1", &json!({"action": "opened"}))
        .await;
    assert_eq!((status, answer["outcome"].as_str()), (202, Some("ignored")));
    let (status, answer) = t
        .deliver(
            "pull_request",
            "a-1",
            &PrEventBuilder::opened(1, 41).action("assigned").to_json(),
        )
        .await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (202, Some("ignored")),
        "{answer}"
    );

    let response = t
        .app
        .post_github("pull_request", "bad-1", &json!("not an object"), SECRET)
        .await;
    assert_eq!(response.status(), 400);
    let response = t
        .app
        .post_github(
            "pull_request",
            "bad-2",
            &json!({"action": "opened"}),
            SECRET,
        )
        .await;
    assert_eq!(
        response.status(),
        400,
        "a pull_request without a pull_request is refused"
    );
}

#[tokio::test]
async fn a_redelivered_opened_event_asks_reviewers_once() {
    let mut repo = target_repository();
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    let opened = PrEventBuilder::opened(job, 41).to_json();
    let (status, first) = t.deliver("pull_request", "delivery-7", &opened).await;
    assert_eq!(
        (status, first["outcome"].as_str()),
        (200, Some("moved")),
        "{first}"
    );
    let reviewed = t
        .wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
        .await;
    assert_eq!(reviewed.state, "in_review");

    let (status, again) = t.deliver("pull_request", "delivery-7", &opened).await;
    assert_eq!(
        (status, again["outcome"].as_str()),
        (200, Some("duplicate")),
        "{again}"
    );
    // A new delivery of the same fact (GitHub sends `opened` only once, but
    // a synchronize follows every push) changes nothing either.
    let pushed = PrEventBuilder::opened(job, 41)
        .action("synchronize")
        .head_sha(&"c".repeat(40))
        .to_json();
    let (_, sync) = t.deliver("pull_request", "delivery-8", &pushed).await;
    assert_eq!(sync["outcome"], "unchanged", "{sync}");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;

    assert_eq!(
        t.github.review_requests().len(),
        1,
        "{:?}",
        t.github.review_requests()
    );
    assert_eq!(t.github.comments_on(41).len(), 1);
    let after = t.job(job).await;
    assert_eq!(after.pr_head_sha.as_deref(), Some("c".repeat(40).as_str()));
    // The dashboard's "opened per week" counts from the first sighting,
    // which a later push does not move.
    let opened_at = reviewed
        .pr_opened_at
        .expect("the PR's first sighting is kept");
    assert_eq!(after.pr_opened_at, Some(opened_at));
}

#[tokio::test]
async fn a_pr_from_a_fork_or_with_a_mismatched_marker_is_not_acted_on() {
    let mut repo = target_repository();
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;

    let fork = PrEventBuilder::opened(job, 41)
        .from_fork("mallory/monolith")
        .to_json();
    let (status, answer) = t.deliver("pull_request", "f-1", &fork).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (202, Some("untrusted")),
        "{answer}"
    );
    assert!(
        answer["detail"].as_str().unwrap().contains("fork"),
        "{answer}"
    );

    let other_job = job + 1000;
    let mismatched = PrEventBuilder::opened(job, 41)
        .body(&format!(
            "Fixes it.\n{}",
            t.app.installation.body_marker(other_job)
        ))
        .to_json();
    let (_, answer) = t.deliver("pull_request", "f-2", &mismatched).await;
    assert_eq!(answer["outcome"], "untrusted", "{answer}");

    let no_marker = PrEventBuilder::opened(job, 41).body("Trust me.").to_json();
    let (_, answer) = t.deliver("pull_request", "f-3", &no_marker).await;
    assert_eq!(
        answer["outcome"], "untrusted",
        "a branch alone does not claim a job: {answer}"
    );

    let unrelated = PrEventBuilder::opened(job, 41)
        .branch("feature/x")
        .body("Unrelated.")
        .to_json();
    let (status, answer) = t.deliver("pull_request", "f-4", &unrelated).await;
    assert_eq!((status, answer["outcome"].as_str()), (202, Some("ignored")));

    let state = t.job(job).await;
    assert_eq!(state.state, "agent_running");
    assert_eq!(state.pr_number, None, "no PR was tied to the job");
    assert!(t.github.review_requests().is_empty());
    assert!(t.github.comments_on(41).is_empty());
}

#[tokio::test]
async fn closed_reopened_and_merged_move_the_job() {
    let mut repo = target_repository();
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    let pr = PrEventBuilder::opened(job, 41);
    let steps = [
        ("opened", pr.clone().to_json(), "in_review"),
        ("closed", pr.clone().closed(false).to_json(), "closed"),
        (
            "reopened",
            pr.clone().action("reopened").to_json(),
            "in_review",
        ),
        ("merged", pr.clone().closed(true).to_json(), "merged"),
    ];
    for (i, (step, event, expected)) in steps.iter().enumerate() {
        let (status, answer) = t.deliver("pull_request", &format!("s-{i}"), event).await;
        assert_eq!(status, 200, "{step}: {answer}");
        assert_eq!(t.job(job).await.state, *expected, "after {step}: {answer}");
        if *step == "opened" {
            t.wait_for(job, |j| j.reviewers_state.as_deref() == Some("requested"))
                .await;
        }
    }
    let merged = t.job(job).await;
    assert!(merged.ended_at.is_some());
    assert_eq!(
        merged.pr_url.as_deref(),
        Some("https://github.com/acme/monolith/pull/41")
    );
    // The reopened PR already had its reviewers: nobody is asked twice.
    assert_eq!(t.github.review_requests().len(), 1);
}

#[tokio::test]
async fn a_run_that_uploaded_no_result_makes_the_job_no_pr_and_a_late_pr_revives_it() {
    let mut repo = target_repository();
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    let (status, answer) = t
        .deliver("workflow_run", "r-1", &run_completed(job, 9001, "success"))
        .await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("opening_pr")),
        "{answer}"
    );
    let ended = t.wait_for(job, |j| j.state == "no_pr").await;
    assert_eq!(ended.state, "no_pr");
    assert!(
        ended
            .state_reason
            .as_deref()
            .is_some_and(|r| r.contains("uploaded no `longtx-result` artifact")),
        "{:?}",
        ended.state_reason
    );
    assert!(t.github.opened_pulls().is_empty());

    let (_, other_repo) = t
        .deliver("workflow_run", "r-2", &{
            let mut run = run_completed(job, 9002, "success");
            run["repository"]["full_name"] = json!("someone/else");
            run
        })
        .await;
    assert_eq!(other_repo["outcome"], "ignored");

    // The PR event can arrive after the run's: it still counts.
    let (_, answer) = t
        .deliver(
            "pull_request",
            "r-3",
            &PrEventBuilder::opened(job, 41).to_json(),
        )
        .await;
    assert_eq!(answer["outcome"], "moved", "{answer}");
    assert_eq!(t.job(job).await.state, "in_review");
}

/// Before longtx has recorded a job's PR, a webhook may make a PR the
/// job's only when longtx authored it: a stranger who opens a PR from
/// longtx's branch first, with the marker copied, speaks for nothing.
#[tokio::test]
async fn a_first_pr_that_longtx_did_not_open_is_not_the_jobs() {
    let app = longtx_testkit::TestApp::builder()
        .github_webhook(SECRET)
        .own_login(longtx_testkit::OWN_LOGIN)
        .spawn()
        .await;
    let hook = longtx_testkit::payloads::AmWebhook::with(
        longtx_testkit::payloads::AmAlert::firing("admin/users#update").table("users"),
    );
    let created: serde_json::Value = app
        .post_json("/webhooks/alertmanager", &hook.to_json())
        .await
        .json()
        .await
        .unwrap();
    let job = created["results"][0]["job_id"].as_i64().unwrap();
    let stranger = PrEventBuilder::opened(job, 303).author("mallory").to_json();
    let answer: serde_json::Value = app
        .post_github("pull_request", "stranger-first", &stranger, SECRET)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(answer["outcome"], "not_the_jobs_pr", "{answer}");
    assert!(
        answer["detail"]
            .as_str()
            .unwrap_or("")
            .contains("opened by @mallory, not by longtx"),
        "{answer}"
    );
    let row = app.store.job(job).await.unwrap().unwrap();
    assert_eq!((row.state.as_str(), row.pr_number), ("queued", None));

    // longtx's own PR, by its own login, is the job's.
    let ours = PrEventBuilder::opened(job, 304)
        .author(longtx_testkit::OWN_LOGIN)
        .to_json();
    let answer: serde_json::Value = app
        .post_github("pull_request", "ours-first", &ours, SECRET)
        .await
        .json()
        .await
        .unwrap();
    assert_ne!(answer["outcome"], "not_the_jobs_pr", "{answer}");
    assert_eq!(
        app.store.job(job).await.unwrap().unwrap().pr_number,
        Some(304)
    );
}
