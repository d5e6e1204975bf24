//! The agent proposes, longtx commits: once the run longtx dispatched has
//! ended, longtx downloads its `longtx-result`, checks the patch, commits
//! it on the job's branch through `createCommitOnBranch` and opens the fix
//! PR, against the fake GitHub backed by a real bare repository.

mod tracking;

use longtx_testkit::agent_result::{patch_over, upload_fix_result};
use longtx_testkit::github_events::{run_completed, PrEventBuilder};
use longtx_testkit::{GitRepo, OWN_LOGIN};
use serde_json::json;
use tracking::{push_fix_branch, repository_owned_by_alice, Tracking};

async fn started(repo: &mut GitRepo) -> Tracking {
    let tracking = Tracking::start(&repo.bare(), |_| {}).await;
    tracking
        .github
        .set_pull_files(101, &[("app/models/order.rb", 2)]);
    tracking
}

#[tokio::test]
async fn a_proposed_patch_becomes_one_longtx_commit_and_one_labelled_pr_and_reviewers_are_asked() {
    let mut repo = repository_owned_by_alice("opened");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    let run = t.propose_fix(&mut repo, job, Some("http-call-inside-transaction"));
    assert!(
        !t.github.repository_labels().contains(&"longtx".to_string()),
        "a new repository has no longtx label"
    );

    let (_, answer) = t
        .deliver("workflow_run", "run-1", &run_completed(job, run, "success"))
        .await;
    assert_eq!(answer["outcome"], "opening_pr", "{answer}");
    let reviewed = t
        .wait_for(job, |j| {
            j.state == "in_review" && j.reviewers_state.as_deref() == Some("requested")
        })
        .await;
    assert_eq!(reviewed.state, "in_review");

    // One commit, made by longtx through the API on the pinned base.
    let commits = t.github.api_commits();
    assert_eq!(commits.len(), 1, "{commits:?}");
    let commit = &commits[0];
    let head = t.branch_head(&mut repo, job).unwrap();
    assert_eq!(commit["oid"], head.as_str());
    assert_eq!(
        commit["verified"], false,
        "a user token's commit is unsigned; an App's is Verified"
    );
    assert_eq!(
        commit["author"], OWN_LOGIN,
        "committed with longtx's credentials"
    );
    let message = commit["message"].as_str().unwrap();
    assert!(
        message.starts_with("Shorten the long transaction in admin/users#update"),
        "{message}"
    );
    assert!(
        message.contains(&format!("Longtx-Job: {job}\nLongtx-Round: 0\n")),
        "{message}"
    );
    assert!(
        message.contains("Co-authored-by: longtx claude agent <"),
        "{message}"
    );
    let dispatched = &t.github.runs()[0]["inputs"];
    assert_eq!(
        commit["parent"], dispatched["base_sha"],
        "on the commit longtx pinned"
    );

    let pulls = t.github.opened_pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let pull = &pulls[0];
    assert_eq!(
        pull["user"]["login"], OWN_LOGIN,
        "opened with longtx's credentials"
    );
    assert_eq!(pull["head"]["ref"], t.app.installation.branch_of(job));
    assert_eq!(pull["head"]["sha"], head.as_str());
    assert_eq!(pull["base"]["ref"], "main");
    let body = pull["body"].as_str().unwrap();
    assert!(
        body.contains(&t.app.installation.body_marker(job)),
        "{body}"
    );
    assert!(body.contains("longtx-source: admin/users#update"), "{body}");
    assert!(body.contains("`http-call-inside-transaction`"), "{body}");
    assert!(
        body.contains("> Moved the warehouse call after the commit."),
        "{body}"
    );
    let number = pull["number"].as_u64().unwrap();
    assert_eq!(t.github.labels_on(number), vec!["longtx".to_string()]);
    assert_eq!(reviewed.pr_number, Some(number as i64));
    assert_eq!(t.github.review_requests().len(), 1);
    let cost = t.app.store.job_cost(job).await.unwrap();
    assert_eq!(
        (cost.runs, cost.cost_usd),
        (1, 0.25),
        "the result's cost, for the dispatched run"
    );

    // GitHub's own `opened` delivery, a replayed run event and the
    // dispatcher's poll all arrive later: nothing is committed or opened twice.
    let opened = PrEventBuilder::opened(job, number)
        .head_sha(&head)
        .author(OWN_LOGIN);
    let (_, answer) = t.deliver("pull_request", "pr-1", &opened.to_json()).await;
    assert_eq!(answer["outcome"], "unchanged", "{answer}");
    for delivery in ["run-1-again", "run-1-replayed"] {
        let (_, answer) = t
            .deliver(
                "workflow_run",
                delivery,
                &run_completed(job, run, "success"),
            )
            .await;
        assert_eq!(answer["outcome"], "unchanged", "{answer}");
    }
    t.github.complete_run(run, "success");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(t.github.api_commits().len(), 1);
    assert_eq!(t.github.opened_pulls().len(), 1);
    assert_eq!(t.github.review_requests().len(), 1);
}

#[tokio::test]
async fn an_empty_patch_ends_no_pr_with_what_the_agent_said() {
    let mut repo = repository_owned_by_alice("not-ahead");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    let run = t.run_of(job);
    let base = t.github.runs()[0]["inputs"]["base_sha"]
        .as_str()
        .unwrap()
        .to_owned();
    upload_fix_result(&t.github, run, &base, b"", None);

    t.deliver("workflow_run", "run-1", &run_completed(job, run, "success"))
        .await;
    let ended = t.wait_for(job, |j| j.state == "no_pr").await;
    assert_eq!(ended.state, "no_pr");
    let reason = ended.state_reason.unwrap_or_default();
    assert!(
        reason.contains("the agent changed nothing; it said: Moved"),
        "{reason}"
    );
    assert!(t.github.opened_pulls().is_empty());
    assert!(t.github.api_commits().is_empty());
}

#[tokio::test]
async fn a_failed_run_ends_no_pr_without_reading_a_result() {
    let mut repo = repository_owned_by_alice("failed-run");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    let run = t.propose_fix(&mut repo, job, None);
    let (_, answer) = t
        .deliver("workflow_run", "run-1", &run_completed(job, run, "failure"))
        .await;
    assert_eq!(answer["outcome"], "moved", "{answer}");
    assert_eq!(t.job(job).await.state, "no_pr");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(t.github.opened_pulls().is_empty());
    assert!(t.github.api_commits().is_empty());
}

#[tokio::test]
async fn a_lost_webhook_changes_nothing_the_run_poll_commits_and_opens_the_pr() {
    let mut repo = repository_owned_by_alice("lost-webhook");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    let run = t.propose_fix(&mut repo, job, None);
    t.github.complete_run(run, "success");

    let reviewed = t.wait_for(job, |j| j.state == "in_review").await;
    assert_eq!(reviewed.state, "in_review");
    let pulls = t.github.opened_pulls();
    assert_eq!(pulls.len(), 1);
    assert!(pulls[0]["body"]
        .as_str()
        .unwrap()
        .contains("not stated by the agent"));
    assert_eq!(t.github.api_commits().len(), 1);
}

#[tokio::test]
async fn a_pr_that_already_exists_for_the_branch_is_recorded_not_opened_again() {
    let mut repo = repository_owned_by_alice("exists");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    push_fix_branch(&t.app, &mut repo, job, None);
    // An earlier attempt opened it and died before recording it.
    let client = t.github.client(std::time::Duration::from_secs(5));
    let earlier = longtx_github::GitHub::create_pull(
        &client,
        &"acme/monolith".parse().unwrap(),
        &longtx_github::NewPull {
            title: "t".into(),
            body: t.app.installation.body_marker(job),
            head: t.app.installation.branch_of(job),
            base: "main".into(),
        },
    )
    .await
    .unwrap();

    let run = t.run_of(job);
    t.deliver("workflow_run", "run-1", &run_completed(job, run, "success"))
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

/// Completions that are not the run longtx dispatched: each is ignored and
/// changes nothing, however its title names the job.
#[tokio::test]
async fn only_the_dispatched_run_of_the_fix_workflow_on_the_target_repository_ends_a_job() {
    let mut repo = repository_owned_by_alice("impostors");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    let run = t.propose_fix(&mut repo, job, None);
    let impostors = [
        ("another workflow file", {
            let mut e = run_completed(job, run, "failure");
            e["workflow_run"]["path"] = json!(".github/workflows/ci.yml");
            e
        }),
        ("a pull_request run", {
            let mut e = run_completed(job, run, "failure");
            e["workflow_run"]["event"] = json!("pull_request");
            e
        }),
        ("a fork's run", {
            let mut e = run_completed(job, run, "failure");
            e["workflow_run"]["head_repository"] = json!({"full_name": "mallory/monolith"});
            e
        }),
        ("another run id", run_completed(job, run + 50, "failure")),
    ];
    for (what, event) in impostors {
        let (status, answer) = t.deliver("workflow_run", what, &event).await;
        assert_eq!(
            (status, answer["outcome"].as_str()),
            (202, Some("ignored")),
            "{what}: {answer}"
        );
        assert_eq!(
            t.job(job).await.state,
            "agent_running",
            "{what} changed the job"
        );
    }
    // The real run's success still counts.
    t.deliver("workflow_run", "real", &run_completed(job, run, "success"))
        .await;
    let reviewed = t.wait_for(job, |j| j.state == "in_review").await;
    assert_eq!(reviewed.state, "in_review");
    assert_eq!(t.github.api_commits().len(), 1);
}

/// Patches the policy refuses end the job with the reason on its page;
/// nothing reaches GitHub.
#[tokio::test]
async fn a_patch_to_a_workflow_over_the_cap_or_with_a_symlink_is_refused_and_the_job_page_says_why()
{
    let mut repo = repository_owned_by_alice("refused");
    let t = started(&mut repo).await;
    let bare = repo.bare();
    let symlink = |base: &str| {
        let patch = "diff --git a/config/secrets.yml b/config/secrets.yml\nnew file mode 120000\nindex 0000000..e69de29\n--- /dev/null\n+++ b/config/secrets.yml\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n";
        (base.to_owned(), patch.as_bytes().to_vec())
    };
    let big = "x".repeat(1024 * 1024 + 10);
    type MakePatch<'a> = Box<dyn Fn() -> (String, Vec<u8>) + 'a>;
    let cases: Vec<(&str, MakePatch, &str)> = vec![
        (
            "admin/users#update",
            Box::new(|| patch_over(&bare, "main", &[(".github/workflows/x.yml", "on: push\n")])),
            "protected path",
        ),
        (
            "admin/orders#update",
            Box::new(|| patch_over(&bare, "main", &[("app/models/big.rb", big.as_str())])),
            "over the cap",
        ),
        (
            "admin/carts#update",
            Box::new(|| {
                let (base, _) = patch_over(&bare, "main", &[]);
                symlink(&base)
            }),
            "symbolic link",
        ),
    ];
    for (source, make, why) in cases {
        let job = t.job_with_agent_running(source).await;
        let run = t.run_of(job);
        let (base, patch) = make();
        upload_fix_result(&t.github, run, &base, &patch, None);
        t.deliver(
            "workflow_run",
            &format!("run-{job}"),
            &run_completed(job, run, "success"),
        )
        .await;
        let ended = t.wait_for(job, |j| j.state == "no_pr").await;
        let reason = ended.state_reason.clone().unwrap_or_default();
        assert!(
            reason.contains("the patch was refused") && reason.contains(why),
            "{reason}"
        );
        let page = t.app.get_text(&format!("/jobs/{job}")).await;
        assert!(
            page.contains("the patch was refused"),
            "the job page says why"
        );
    }
    assert!(t.github.api_commits().is_empty());
    assert!(t.github.opened_pulls().is_empty());
    assert!(
        !t.github
            .requests()
            .iter()
            .any(|r| r.starts_with("POST /repos/acme/monolith/git/refs")),
        "no branch was made"
    );
}

/// A Devin run names its session; longtx reads the ACUs from Devin's API
/// with its own service token, never the figures the run wrote, and
/// deletes the scratch branch Devin pushed once the result is read.
#[tokio::test]
async fn a_devin_run_s_acus_are_read_from_devin_not_from_the_run() {
    let devin = longtx_testkit::FakeDevin::start().await;
    devin.add_session("devin-5f0a9c", 3.5);
    let mut repo = repository_owned_by_alice("devin-acus");
    let t = Tracking::start_with_devin(&repo.bare(), devin.settings(Some(2.25))).await;
    t.github.set_pull_files(101, &[("app/models/order.rb", 2)]);
    let job = t.job_with_agent_running("admin/users#update").await;
    let run = t.run_of(job);
    let (base, patch) = patch_over(
        &repo.bare(),
        "main",
        &[(
            "app/models/order.rb",
            "class Order\n  # after commit\nend\n",
        )],
    );
    // Devin pushed its work to the scratch branch the template names.
    let scratch = format!("longtx-devin/{job}-0");
    repo.git(&[
        "push",
        "--quiet",
        repo.bare_path().to_str().unwrap(),
        &format!("main:refs/heads/{scratch}"),
    ]);
    let result = json!({"base": base, "summary": "Devin moved the call.", "agent": "devin",
                        "devin_session_id": "5f0a9c", "acus": 999.0, "cost_usd": 9999.0});
    let zip = longtx_github::zip::write(&[
        ("result.json", result.to_string().as_bytes()),
        ("patch.diff", &patch),
    ]);
    t.github
        .store_artifact(run, "longtx-result", zip, false)
        .unwrap();
    t.deliver(
        "workflow_run",
        "devin-done",
        &run_completed(job, run, "success"),
    )
    .await;
    t.wait_for(job, |j| j.state == "in_review").await;
    let cost = t.app.store.job_cost(job).await.unwrap();
    assert_eq!(
        (cost.runs, cost.acus, cost.cost_usd),
        (1, 3.5, 3.5 * 2.25),
        "{cost:?}"
    );
    assert_eq!(
        devin.requests(),
        ["GET /v3/organizations/org-acme/sessions/devin-5f0a9c"]
    );
    let gone = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(repo.bare_path())
        .args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{scratch}"),
        ])
        .status()
        .unwrap();
    assert!(
        !gone.success(),
        "longtx deleted Devin's scratch branch once read"
    );
}

/// Anyone with read access may open a PR from longtx's branch, with the
/// job's marker copied into its body. Once longtx has opened the job's PR,
/// that PR alone speaks for the job: the stranger's opening, a
/// maintainer's won't-fix label on it and its closing all change nothing,
/// and the recorded PR, author and base stay as longtx opened them.
#[tokio::test]
async fn a_second_pr_from_the_jobs_branch_by_someone_else_changes_nothing() {
    let mut repo = repository_owned_by_alice("second-pr");
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    let run = t.propose_fix(&mut repo, job, None);
    t.deliver("workflow_run", "run-1", &run_completed(job, run, "success"))
        .await;
    let opened = t.wait_for(job, |j| j.state == "in_review").await;
    let ours = opened.pr_number.expect("longtx opened the job's PR");
    let recorded = || async {
        let mut db = t.app.db.connect().await;
        let row: (Option<i64>, Option<String>, Option<String>) = longtx_testkit::sqlx::query_as(
            "SELECT pr_number, pr_author, pr_base_ref FROM jobs WHERE id = $1",
        )
        .bind(job)
        .fetch_one(&mut db)
        .await
        .unwrap();
        row
    };
    let before = recorded().await;
    assert_eq!(
        before,
        (
            Some(ours),
            Some(OWN_LOGIN.to_owned()),
            Some("main".to_owned())
        )
    );

    let stranger = |action: PrEventBuilder| action.author("mallory").base_ref("release").to_json();
    let impostor = PrEventBuilder::opened(job, 202);
    for (delivery, event) in [
        ("second-opened", stranger(impostor.clone())),
        (
            "second-wontfix",
            stranger(
                impostor
                    .clone()
                    .labeled("long-transaction-wontfix", "alice"),
            ),
        ),
        ("second-closed", stranger(impostor.clone().closed(false))),
    ] {
        let (_, answer) = t.deliver("pull_request", delivery, &event).await;
        assert_eq!(answer["outcome"], "not_the_jobs_pr", "{delivery}: {answer}");
        assert!(
            answer["detail"]
                .as_str()
                .unwrap_or("")
                .contains(&format!("not the PR longtx opened for job {job} (#{ours})")),
            "{delivery}: {answer}"
        );
    }
    assert_eq!(t.job(job).await.state, "in_review");
    assert_eq!(
        recorded().await,
        before,
        "the recorded PR, author and base are longtx's"
    );
    assert!(t.github.closed_pulls().is_empty());
}

const USERS_CONTROLLER: &str = "class Admin::UsersController < ApplicationController
  def update
    @user = User.find(params[:id])
    User.transaction do
      @user.update!(params[:user])
      Net::HTTP.post(URI('https://crm.example/sync'), @user.to_json)
    end
  end
end
";

#[tokio::test]
async fn longtx_scans_the_patch_before_the_pr_and_says_what_it_left_and_added() {
    let mut repo = repository_owned_by_alice("patch-scan");
    repo.commit(
        &[(
            "app/controllers/admin/users_controller.rb",
            USERS_CONTROLLER,
        )],
        "Alice",
        "alice@example.com",
        20,
    );
    let t = started(&mut repo).await;
    let job = t.job_with_agent_running("admin/users#update").await;
    // The agent says it fixed it, but only added a comment, and sent a
    // mail inside the transaction besides.
    let patched = USERS_CONTROLLER.replace(
        "      Net::HTTP.post",
        "      UserMailer.updated(@user).deliver_now\n      # after commit now\n      Net::HTTP.post",
    );
    let (base, patch) = patch_over(
        &repo.bare(),
        "main",
        &[("app/controllers/admin/users_controller.rb", &patched)],
    );
    let run = t.run_of(job);
    upload_fix_result(
        &t.github,
        run,
        &base,
        &patch,
        Some("http-call-inside-transaction"),
    );
    t.deliver("workflow_run", "run-1", &run_completed(job, run, "success"))
        .await;
    let opened = t.wait_for(job, |j| j.pr_number.is_some()).await;

    let body = t.github.opened_pulls()[0]["body"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        body.contains("- longtx's scan of the patched code:"),
        "{body}"
    );
    assert!(body.contains("**Still inside a transaction**"), "{body}");
    assert!(
        body.contains("`app/controllers/admin/users_controller.rb:8`: `Net::HTTP.post("),
        "the HTTP call, at its line in the patched code: {body}"
    );
    assert!(body.contains("**Added by the patch**"), "{body}");
    assert!(
        body.contains("`UserMailer.updated(@user).deliver_now`"),
        "{body}"
    );

    let check = opened.patch_check.expect("the job keeps the check");
    assert_eq!(check["held_before"], 1);
    let still: Vec<&str> = check["still_held"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert!(still.contains(&"an HTTP call"), "{still:?}");
    assert_eq!(check["added"][0]["kind"], "a mail delivery");
    let page = t.app.get_text(&format!("/jobs/{job}")).await;
    assert!(
        page.contains("the patch leaves slow work inside a transaction the alerted source reaches"),
        "{page}"
    );
    assert!(
        page.contains(
            "added: a mail delivery at app&#x2F;controllers&#x2F;admin&#x2F;users_controller.rb:6"
        ),
        "{}",
        page.split("patch-check").nth(1).unwrap_or("")
    );
}
