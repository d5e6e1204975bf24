//! longtx opens the fix PR itself once the agent's run has pushed
//! `longtx/<job>`, against the fake GitHub backed by a real bare repository.

mod tracking;

use longtx_testkit::github_events::{run_completed, PrEventBuilder};
use longtx_testkit::{GitRepo, OWN_LOGIN};
use tracking::{push_fix_branch, repository_owned_by_alice, Tracking};

async fn started(repo: &mut GitRepo) -> Tracking {
    let tracking = Tracking::start(&repo.bare(), |_| {}).await;
    tracking
        .github
        .set_pull_files(101, &[("app/models/order.rb", 2)]);
    tracking
}

#[tokio::test]
async fn a_pushed_branch_becomes_one_labelled_pr_opened_by_longtx_and_reviewers_are_asked() {
    let mut repo = repository_owned_by_alice("opened");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    let head = push_fix_branch(&mut repo, job, Some("http-call-inside-transaction"));
    assert!(
        !t.github.repository_labels().contains(&"longtx".to_string()),
        "a new repository has no longtx label"
    );

    let (_, answer) = t
        .deliver(
            "workflow_run",
            "run-1",
            &run_completed(job, 9001, "success"),
        )
        .await;
    assert_eq!(answer["outcome"], "opening_pr", "{answer}");
    let reviewed = t
        .wait_for(job, |j| {
            j.state == "in_review" && j.reviewers_state.as_deref() == Some("requested")
        })
        .await;
    assert_eq!(reviewed.state, "in_review");

    let pulls = t.github.opened_pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let pull = &pulls[0];
    assert_eq!(
        pull["user"]["login"], OWN_LOGIN,
        "opened with longtx's credentials"
    );
    assert_eq!(pull["head"]["ref"], format!("longtx/{job}"));
    assert_eq!(pull["head"]["sha"], head.as_str());
    assert_eq!(pull["base"]["ref"], "main");
    let body = pull["body"].as_str().unwrap();
    assert!(
        body.contains(&format!("<!-- longtx-job: {job} -->")),
        "{body}"
    );
    assert!(body.contains("longtx-source: admin/users#update"), "{body}");
    assert!(body.contains("`http-call-inside-transaction`"), "{body}");
    let number = pull["number"].as_u64().unwrap();
    assert_eq!(t.github.labels_on(number), vec!["longtx".to_string()]);
    assert!(t.github.repository_labels().contains(&"longtx".to_string()));
    assert_eq!(reviewed.pr_number, Some(number as i64));
    assert_eq!(t.github.review_requests().len(), 1);

    // GitHub's own `opened` delivery, a redelivered run event and the
    // dispatcher's poll all arrive later: nothing is opened twice.
    let opened = PrEventBuilder::opened(job, number)
        .head_sha(&head)
        .author(OWN_LOGIN);
    let (_, answer) = t.deliver("pull_request", "pr-1", &opened.to_json()).await;
    assert_eq!(answer["outcome"], "unchanged", "{answer}");
    let (_, answer) = t
        .deliver(
            "workflow_run",
            "run-1-again",
            &run_completed(job, 9001, "success"),
        )
        .await;
    assert_eq!(answer["outcome"], "unchanged", "{answer}");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(t.github.opened_pulls().len(), 1);
    assert_eq!(t.github.review_requests().len(), 1);
}

#[tokio::test]
async fn a_branch_with_nothing_ahead_ends_no_pr_with_the_runs_link() {
    let mut repo = repository_owned_by_alice("not-ahead");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    repo.git(&["branch", &format!("longtx/{job}"), "main"]);
    repo.bare();

    t.deliver(
        "workflow_run",
        "run-1",
        &run_completed(job, 9001, "success"),
    )
    .await;
    let ended = t.wait_for(job, |j| j.state == "no_pr").await;
    assert_eq!(ended.state, "no_pr");
    let reason = ended.state_reason.unwrap_or_default();
    assert!(reason.contains("no commit ahead of main"), "{reason}");
    assert!(t.github.opened_pulls().is_empty());
}

#[tokio::test]
async fn a_failed_run_ends_no_pr_without_looking_for_a_branch() {
    let mut repo = repository_owned_by_alice("failed-run");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    push_fix_branch(&mut repo, job, None);
    let (_, answer) = t
        .deliver(
            "workflow_run",
            "run-1",
            &run_completed(job, 9001, "failure"),
        )
        .await;
    assert_eq!(answer["outcome"], "moved", "{answer}");
    assert_eq!(t.job(job).await.state, "no_pr");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(t.github.opened_pulls().is_empty());
}

#[tokio::test]
async fn a_lost_webhook_changes_nothing_the_run_poll_opens_the_pr() {
    let mut repo = repository_owned_by_alice("lost-webhook");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    push_fix_branch(&mut repo, job, None);
    let run_id = t.github.runs()[0]["id"].as_u64().unwrap();
    t.github.complete_run(run_id, "success");

    let reviewed = t.wait_for(job, |j| j.state == "in_review").await;
    assert_eq!(reviewed.state, "in_review");
    let pulls = t.github.opened_pulls();
    assert_eq!(pulls.len(), 1);
    assert!(pulls[0]["body"]
        .as_str()
        .unwrap()
        .contains("not stated by the agent"));
}

#[tokio::test]
async fn a_pr_that_already_exists_for_the_branch_is_recorded_not_opened_again() {
    let mut repo = repository_owned_by_alice("exists");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    push_fix_branch(&mut repo, job, None);
    // An earlier attempt opened it and died before recording it.
    let client = t.github.client(std::time::Duration::from_secs(5));
    let earlier = longtx_github::GitHub::create_pull(
        &client,
        &"acme/monolith".parse().unwrap(),
        &longtx_github::NewPull {
            title: "t".into(),
            body: format!("<!-- longtx-job: {job} -->"),
            head: format!("longtx/{job}"),
            base: "main".into(),
        },
    )
    .await
    .unwrap();

    t.deliver(
        "workflow_run",
        "run-1",
        &run_completed(job, 9001, "success"),
    )
    .await;
    let reviewed = t.wait_for(job, |j| j.state == "in_review").await;
    assert_eq!(reviewed.pr_number, Some(earlier.number as i64));
    assert_eq!(t.github.opened_pulls().len(), 1);
    let creates = t
        .github
        .requests()
        .iter()
        .filter(|r| *r == "POST /repos/acme/monolith/pulls")
        .count();
    assert_eq!(creates, 1, "only the earlier attempt's create");
}
