//! Who is asked to review a fix PR, end to end: a real repository as the
//! remote, the reviewer worker's mirror of it, and the fake GitHub.

mod tracking;

use longtx_testkit::github_events::PrEventBuilder;
use longtx_testkit::GitRepo;
use std::collections::BTreeSet;
use tracking::Tracking;

const PR: u64 = 41;
const FILE: &str = "app/models/order.rb";

/// Opens the fix PR for a new job and waits for the reviewer worker.
async fn open_pr(t: &Tracking, source: &str, pr: u64, author: &str) -> longtx_store::JobRow {
    let job = t.job_with_agent_running(source).await;
    let event = PrEventBuilder::opened(job, pr).author(author).to_json();
    let (status, answer) = t
        .deliver("pull_request", &format!("open-{job}"), &event)
        .await;
    assert_eq!(status, 200, "{answer}");
    t.wait_for(job, |j| {
        matches!(j.reviewers_state.as_deref(), Some("requested" | "none"))
    })
    .await
}

fn requested_users(t: &Tracking) -> Vec<BTreeSet<String>> {
    t.github
        .review_requests()
        .iter()
        .map(|r| r.users.iter().cloned().collect())
        .collect()
}

#[tokio::test]
async fn codeowners_come_from_the_base_branch_and_the_comment_says_why() {
    let mut repo = GitRepo::new("owned");
    repo.commit(
        &[
            (
                ".github/CODEOWNERS",
                "# Models\napp/models/ @alice @acme/payments\n",
            ),
            (FILE, "class Order; end\n"),
        ],
        "Alice",
        "alice@example.com",
        10,
    );
    // The agent's branch claims everything for someone else; it must not count.
    repo.git(&["checkout", "--quiet", "-b", "longtx/agent"]);
    repo.commit(
        &[(".github/CODEOWNERS", "* @mallory\n")],
        "Agent",
        "agent@example.com",
        1,
    );
    repo.git(&["checkout", "--quiet", "main"]);
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    t.github.set_pull_files(PR, &[(FILE, 8)]);

    let job = open_pr(&t, "admin/users#update", PR, "github-actions[bot]").await;
    assert_eq!(job.reviewers_state.as_deref(), Some("requested"));
    let requests = t.github.review_requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].users, vec!["alice".to_owned()]);
    assert_eq!(
        requests[0].teams,
        vec!["payments".to_owned()],
        "a team goes by its slug"
    );

    let comments = t.github.comments_on(PR);
    assert_eq!(comments.len(), 1, "{comments:?}");
    let comment = &comments[0];
    assert!(
        comment.contains("CODEOWNERS on the base branch"),
        "{comment}"
    );
    assert!(
        comment.contains("@alice") && comment.contains("@acme/payments"),
        "{comment}"
    );
    assert!(comment.contains(".github/CODEOWNERS line 2"), "{comment}");
    assert!(!comment.contains("mallory"), "{comment}");
    let recorded = job.reviewers.unwrap();
    assert_eq!(recorded["source"], "codeowners", "{recorded}");
}

#[tokio::test]
async fn one_person_under_two_emails_is_one_reviewer_and_copilot_is_no_one() {
    const OTHER: &str = "app/models/order_line.rb";
    let mut repo = GitRepo::new("identity");
    repo.commit(
        &[(FILE, "v1\n"), (OTHER, "v1\n")],
        "Zed",
        "zed@example.com",
        300,
    );
    // Erin: 2 commits from work and 3 from her GitHub noreply address, the
    // last touching both files: 5 distinct commits, 6 file-commits. Apart,
    // each address scores below Frank; together she is first.
    let erin = [
        ("erin@work.example", false),
        ("erin@work.example", false),
        ("77+erin@users.noreply.github.com", false),
        ("77+erin@users.noreply.github.com", false),
        ("77+erin@users.noreply.github.com", true),
    ];
    for (i, (email, both)) in erin.iter().enumerate() {
        let text = format!("erin {i}\n");
        let mut files = vec![(FILE, text.as_str())];
        if *both {
            files.push((OTHER, text.as_str()));
        }
        repo.commit(&files, "Erin", email, 10);
    }
    // Frank: 5 commits from one address.
    for i in 0..5 {
        repo.commit(
            &[(FILE, &format!("frank {i}\n"))],
            "Frank",
            "frank@work.example",
            10,
        );
    }
    // Copilot's coding agent, as an author and as a co-author.
    for i in 0..5 {
        repo.commit(
            &[(FILE, &format!("copilot {i}\n"))],
            "Copilot",
            "198982749+Copilot@users.noreply.github.com",
            1,
        );
    }
    let t = Tracking::start(&repo.bare(), |s| {
        s.author_logins
            .insert("frank@work.example".into(), "frank".into());
        s.max_reviewers = 1;
    })
    .await;
    t.github.set_pull_files(PR, &[(FILE, 3), (OTHER, 2)]);
    // Only GitHub's commit API ties the work address to Erin's login.
    for line in repo.git(&["log", "--format=%H %ae"]).lines() {
        let (sha, email) = line.split_once(' ').unwrap();
        if email == "erin@work.example" {
            t.github.set_commit_login(sha, "erin");
        }
    }
    let job = open_pr(&t, "OrderSyncWorker", PR, "zed").await;
    assert_eq!(
        requested_users(&t),
        vec![BTreeSet::from(["erin".to_owned()])],
        "merged, Erin outweighs Frank"
    );
    let recorded = job.reviewers.unwrap().to_string();
    assert!(!recorded.to_lowercase().contains("copilot"), "{recorded}");
    let comment = &t.github.comments_on(PR)[0];
    assert!(
        comment.contains("5 commits to app/models/order.rb, app/models/order_line.rb"),
        "distinct commits, not one per file: {comment}"
    );
}

#[tokio::test]
async fn history_decides_when_the_only_owner_is_the_author_and_outsiders_and_bots_are_skipped() {
    let mut repo = GitRepo::new("history");
    repo.commit(
        &[
            (".github/CODEOWNERS", "app/models/ @alice\n"),
            (FILE, "v1\n"),
        ],
        "Alice",
        "alice@example.com",
        200,
    );
    // Bob's address names his login; Dave's comes from the configuration;
    // Carol's only GitHub's commit API knows, and she is not a collaborator.
    for (i, days) in [5, 20, 40].iter().enumerate() {
        repo.commit(
            &[(FILE, &format!("bob {i}\n"))],
            "Bob",
            "1234+bob@users.noreply.github.com",
            *days,
        );
    }
    let mut carol_commits = Vec::new();
    for (i, days) in [3, 8, 9, 10].iter().enumerate() {
        carol_commits.push(repo.commit(
            &[(FILE, &format!("carol {i}\n"))],
            "Carol",
            "carol@example.com",
            *days,
        ));
    }
    repo.commit(&[(FILE, "dave\n")], "Dave", "Dave@Example.com", 60);
    for i in 0..6 {
        repo.commit(
            &[(FILE, &format!("bump {i}\n"))],
            "renovate[bot]",
            "bot@renovateapp.com",
            2,
        );
    }
    let t = Tracking::start(&repo.bare(), |s| {
        s.author_logins
            .insert("dave@example.com".into(), "dave".into());
    })
    .await;
    t.github.set_pull_files(PR, &[(FILE, 3)]);
    for sha in &carol_commits {
        t.github.set_commit_login(sha, "carol");
    }
    t.github.set_non_collaborators(&["carol"]);
    t.github
        .set_teams(&[("payments", &["bob"]), ("platform", &["erin"])]);

    let job = open_pr(&t, "OrderSyncWorker", PR, "alice").await;
    assert_eq!(
        requested_users(&t),
        vec![BTreeSet::from(["bob".to_owned(), "dave".to_owned()])]
    );
    let recorded = job.reviewers.unwrap();
    assert_eq!(recorded["source"], "history", "{recorded}");
    let skipped = recorded["skipped"].to_string();
    assert!(
        skipped.contains("@alice") && skipped.contains("author"),
        "{skipped}"
    );
    assert!(
        skipped.contains("@carol") && skipped.contains("not a collaborator"),
        "{skipped}"
    );
    assert!(
        !recorded.to_string().contains("renovate"),
        "bots never count: {recorded}"
    );
    let comment = &t.github.comments_on(PR)[0];
    assert!(
        comment.contains("3 commits to app/models/order.rb in the last 365 days"),
        "{comment}"
    );
    assert!(
        comment.contains("now in @acme/payments"),
        "the team Bob is in now: {comment}"
    );
}

#[tokio::test]
async fn a_reviewer_github_refuses_is_dropped_and_the_rest_are_still_asked() {
    let mut repo = GitRepo::new("refused");
    repo.commit(
        &[(".github/CODEOWNERS", "*.rb @alice @bob\n"), (FILE, "v1\n")],
        "Alice",
        "alice@example.com",
        10,
    );
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    t.github.set_pull_files(PR, &[(FILE, 3)]);
    t.github.set_unrequestable(&["bob"]);

    let job = open_pr(&t, "admin/users#update", PR, "github-actions[bot]").await;
    assert_eq!(
        requested_users(&t),
        vec![BTreeSet::from(["alice".to_owned()])]
    );
    assert_eq!(
        t.github.refused_review_requests(),
        2,
        "the pair, then bob alone"
    );
    let comment = &t.github.comments_on(PR)[0];
    assert!(
        comment.contains("@alice") && !comment.contains("@bob"),
        "{comment}"
    );
    assert_eq!(
        job.reviewers.unwrap()["requested"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn the_fallback_team_when_nobody_owns_the_file_or_committed_this_year() {
    let mut repo = GitRepo::new("fallback");
    repo.commit(
        &[(".github/CODEOWNERS", "docs/ @writers\n"), (FILE, "v1\n")],
        "Old Timer",
        "old@example.com",
        400,
    );
    let t = Tracking::start(&repo.bare(), |s| s.fallback_team = Some("acme/dba".into())).await;
    t.github.set_pull_files(PR, &[(FILE, 3)]);

    let job = open_pr(&t, "rake:orders:sync", PR, "github-actions[bot]").await;
    let requests = t.github.review_requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert!(requests[0].users.is_empty());
    assert_eq!(requests[0].teams, vec!["dba".to_owned()]);
    assert_eq!(job.reviewers.unwrap()["source"], "fallback");
}

#[tokio::test]
async fn among_equal_owners_the_one_with_fewer_open_reviews_is_asked() {
    let mut repo = GitRepo::new("ties");
    repo.commit(
        &[
            (".github/CODEOWNERS", "app/ @alice @bob @carol\n"),
            (FILE, "v1\n"),
        ],
        "Alice",
        "alice@example.com",
        10,
    );
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    t.github.set_pull_files(41, &[(FILE, 3)]);
    t.github.set_pull_files(42, &[(FILE, 3)]);

    open_pr(&t, "admin/users#update", 41, "github-actions[bot]").await;
    open_pr(&t, "OrderSyncWorker", 42, "github-actions[bot]").await;
    let users = requested_users(&t);
    assert_eq!(
        users[0],
        BTreeSet::from(["alice".to_owned(), "bob".to_owned()])
    );
    // Alice and Bob now review one longtx PR each; Carol none.
    assert!(users[1].contains("carol"), "{users:?}");
    assert_eq!(users[1].len(), 2);
}
