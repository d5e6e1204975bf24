//! longtx's GitHub client against the fake: token auth, and GitHub App auth
//! (a JWT exchanged for an installation token).

use longtx_github::{Credentials, GitHub, OctocrabGitHub};
use longtx_testkit::{fixture, FakeGitHub};
use std::time::Duration;

#[tokio::test]
async fn a_github_app_gets_an_installation_token_and_uses_it() {
    let github = FakeGitHub::start().await;
    let credentials = Credentials::App {
        app_id: 4242,
        private_key_pem: std::fs::read_to_string(fixture("test-github-app-key.pem")).unwrap(),
        installation_id: 77,
    };
    let client = OctocrabGitHub::new(&github.url, &credentials, Duration::from_secs(5)).unwrap();
    let branch = client
        .default_branch(&"acme/monolith".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(branch, "main");
    assert!(
        github
            .requests()
            .iter()
            .any(|r| r == "POST /app/installations/77/access_tokens"),
        "{:?}",
        github.requests()
    );
    let auth = github.last_auth().unwrap();
    assert!(
        auth.ends_with("ghs_installation_77"),
        "the installation token is used: {auth}"
    );
    assert!(
        !format!("{credentials:?}").contains("PRIVATE KEY"),
        "the key never reaches Debug output"
    );
}

#[tokio::test]
async fn a_token_is_sent_as_is_and_a_bad_key_is_a_clear_error() {
    let github = FakeGitHub::start().await;
    let client = github.client(Duration::from_secs(5));
    client
        .default_branch(&"acme/monolith".parse().unwrap())
        .await
        .unwrap();
    assert!(github.last_auth().unwrap().contains("ghp_test_token"));
    let bad = Credentials::App {
        app_id: 1,
        private_key_pem: "not a key".into(),
        installation_id: 2,
    };
    let err = OctocrabGitHub::new(&github.url, &bad, Duration::from_secs(5))
        .err()
        .unwrap();
    assert!(err.to_string().contains("not an RSA PEM key"), "{err}");
}

/// As an App, longtx's commits are the App's and GitHub signs them; a
/// commit onto a branch that moved is refused (409) and moves nothing.
#[tokio::test]
async fn an_app_commits_through_create_commit_on_branch_signed_and_never_over_a_moved_branch() {
    let mut repo = longtx_testkit::GitRepo::new("app-commit");
    repo.commit(
        &[("app/models/order.rb", "class Order; end\n")],
        "Alice",
        "alice@example.com",
        1,
    );
    let github = FakeGitHub::start().await.with_remote(&repo.bare());
    let credentials = Credentials::App {
        app_id: 4242,
        private_key_pem: std::fs::read_to_string(fixture("test-github-app-key.pem")).unwrap(),
        installation_id: 77,
    };
    let client = OctocrabGitHub::new(&github.url, &credentials, Duration::from_secs(5)).unwrap();
    let target = "acme/monolith".parse().unwrap();
    let base = client.branch_head(&target, "main").await.unwrap().unwrap();
    assert!(client
        .create_branch(&target, "longtx/7", &base)
        .await
        .unwrap());
    assert!(
        !client
            .create_branch(&target, "longtx/7", &base)
            .await
            .unwrap(),
        "exists already"
    );
    let commit = longtx_github::NewCommit {
        branch: "longtx/7".into(),
        expected_head: base.clone(),
        headline: "Shorten the long transaction in a#b".into(),
        body: "Longtx-Job: 7\nLongtx-Round: 0\n".into(),
        additions: vec![longtx_github::FileAddition {
            path: "app/models/order.rb".into(),
            contents: b"class Order\n  after_commit :notify\nend\n".to_vec(),
        }],
        deletions: vec![],
    };
    let sha = client
        .create_commit_on_branch(&target, &commit)
        .await
        .unwrap();
    let made = &github.api_commits()[0];
    assert_eq!(
        (made["oid"].as_str(), made["verified"].as_bool()),
        (Some(sha.as_str()), Some(true))
    );
    assert_eq!(made["author"], "longtx-app[bot]");
    let read = client.commit(&target, &sha).await.unwrap().unwrap();
    assert_eq!(read.parents, vec![base.clone()]);
    assert!(read.message.contains("Longtx-Round: 0"));
    // The same commit again: the branch is no longer at `base`.
    let again = client.create_commit_on_branch(&target, &commit).await;
    assert!(
        matches!(
            again,
            Err(longtx_github::GitHubError::Refused { status: 409, .. })
        ),
        "{again:?}"
    );
    assert_eq!(
        client.branch_head(&target, "longtx/7").await.unwrap(),
        Some(sha)
    );
    assert_eq!(github.api_commits().len(), 1);
}
