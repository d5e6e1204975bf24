//! `longtx reviewers`, offline, on a repository built in the test.

use longtx_testkit::GitRepo;
use std::process::{Command, Output};

const FILE: &str = "app/models/order.rb";

fn reviewers(repo: &GitRepo, extra: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let output: Output = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .arg("reviewers")
        .arg("--repo")
        .arg(&repo.path)
        .args(["--file", FILE, "--as-of", "2026-11-30"])
        .args(extra)
        .env_remove("LONGTX_FALLBACK_TEAM")
        .env_remove("LONGTX_AUTHOR_LOGINS")
        .env_remove("LONGTX_HISTORY_DAYS")
        .envs(env.iter().copied())
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

fn repository() -> GitRepo {
    let repo = GitRepo::new("cli");
    repo.commit(
        &[
            (".github/CODEOWNERS", "app/models/ @alice\n[Section]\n"),
            (FILE, "v1\n"),
        ],
        "Alice",
        "alice@example.com",
        300,
    );
    repo.commit(
        &[(FILE, "v2\n")],
        "Bob",
        "1234+bob@users.noreply.github.com",
        20,
    );
    repo.commit(&[(FILE, "v3\n")], "Carol", "carol@example.com", 10);
    repo.commit(&[(FILE, "v4\n")], "Carol", "carol@example.com", 5);
    repo
}

#[test]
fn codeowners_first_with_the_line_that_decided() {
    let repo = repository();
    let (ok, out) = reviewers(&repo, &[], &[]);
    assert!(ok, "{out}");
    assert!(
        out.contains("source: CODEOWNERS (.github/CODEOWNERS)"),
        "{out}"
    );
    assert!(
        out.contains("@alice: owns `app/models/order.rb` (.github/CODEOWNERS line 1"),
        "{out}"
    );
    assert!(
        out.contains("warning: .github/CODEOWNERS:2"),
        "a skipped line is reported: {out}"
    );
}

#[test]
fn the_author_is_excluded_and_history_decides_reproducibly() {
    let repo = repository();
    let logins = [("LONGTX_AUTHOR_LOGINS", "carol@example.com=carol-gh")];
    let (ok, out) = reviewers(&repo, &["--author", "alice"], &logins);
    assert!(ok, "{out}");
    assert!(
        out.contains("source: commit history, 365 days up to 2026-12-01 00:00 UTC"),
        "{out}"
    );
    let carol = out.find("@carol-gh: 2 commits").expect(&out);
    let bob = out.find("@bob: 1 commit to").expect(&out);
    assert!(carol < bob, "more and later commits rank first: {out}");
    assert!(out.contains("@alice: the PR's author"), "{out}");
    assert_eq!(
        out,
        reviewers(&repo, &["--author", "alice"], &logins).1,
        "same input, same answer"
    );
}

#[test]
fn an_unknown_login_is_shown_by_email_and_the_fallback_team_comes_last() {
    let repo = repository();
    let (_, out) = reviewers(&repo, &["--author", "alice"], &[]);
    assert!(
        out.contains("<carol@example.com> (GitHub login unknown offline"),
        "{out}"
    );

    // A year later nobody has touched the file.
    let env = [
        ("LONGTX_FALLBACK_TEAM", "@acme/dba"),
        ("LONGTX_HISTORY_DAYS", "3"),
    ];
    let (ok, out) = reviewers(&repo, &["--author", "alice"], &env);
    assert!(ok, "{out}");
    assert!(out.contains("source: the fallback team"), "{out}");
    assert!(out.contains("@acme/dba"), "{out}");
}

#[test]
fn a_bad_date_or_a_missing_repository_is_a_clear_error() {
    let repo = repository();
    let output = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .arg("reviewers")
        .arg("--repo")
        .arg(&repo.path)
        .args(["--file", FILE, "--as-of", "yesterday"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && err.contains("--as-of `yesterday`"),
        "{err}"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .args(["reviewers", "--repo", "/nonexistent/repo", "--file", FILE])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/repo"));
}

#[test]
fn one_person_under_two_emails_is_merged_as_in_the_service_and_copilot_is_left_out() {
    let repo = GitRepo::new("cli-identity");
    repo.commit(&[(FILE, "v1\n")], "Zed", "zed@example.com", 300);
    for (i, email) in [
        "erin@work.example",
        "erin@work.example",
        "77+erin@users.noreply.github.com",
    ]
    .iter()
    .enumerate()
    {
        repo.commit(&[(FILE, &format!("erin {i}\n"))], "Erin", email, 10);
    }
    for i in 0..2 {
        repo.commit(
            &[(FILE, &format!("frank {i}\n"))],
            "Frank",
            "frank@work.example",
            10,
        );
    }
    for i in 0..4 {
        repo.commit(
            &[(FILE, &format!("c {i}\n"))],
            "Copilot",
            "198982749+Copilot@users.noreply.github.com",
            5,
        );
    }
    let (ok, out) = reviewers(
        &repo,
        &["--author", "zed"],
        &[(
            "LONGTX_AUTHOR_LOGINS",
            "erin@work.example=erin,frank@work.example=frank",
        )],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("@erin: 3 commits to app/models/order.rb"),
        "{out}"
    );
    assert_eq!(out.matches("@erin").count(), 1, "listed once: {out}");
    assert!(!out.to_lowercase().contains("copilot"), "{out}");
}
