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
