//! Errors an operator meets from the command line: each printed once, each
//! saying what is wrong and what to do.

use std::process::{Command, Output};

fn longtx(args: &[&str], dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_longtx"))
        .args(args)
        .current_dir(dir)
        .env_remove("LONGTX_CONFIG")
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_missing_file_is_named_once() {
    let dir = longtx_testkit::TempDir::new("errors-missing");
    for (args, names) in [
        (
            &["--config", "missing.toml", "config", "check"][..],
            "missing.toml",
        ),
        (&["patterns", "lint", "nosuchdir"][..], "nosuchdir"),
    ] {
        let out = longtx(args, &dir);
        // `config check` reports on stdout, as it does every problem.
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains(names), "{said}");
        assert_eq!(
            said.matches("No such file or directory").count(),
            1,
            "said twice: {said}"
        );
    }
}

#[test]
fn ignore_check_says_the_file_is_missing_and_add_wants_a_pr_url() {
    let dir = longtx_testkit::TempDir::new("errors-ignore");
    let out = longtx(
        &["ignore", "check", "--file", "nosuch.yaml", "admin/x#y"],
        &dir,
    );
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(said.contains("nosuch.yaml does not exist"), "{said}");
    assert!(!said.contains("not in"), "{said}");

    let list = dir.join("ignore-list.yaml");
    let out = longtx(
        &[
            "ignore",
            "add",
            "--file",
            list.to_str().unwrap(),
            "admin/x#y",
            "--reason",
            "kept",
            "--pr",
            "not-a-url",
        ],
        &dir,
    );
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("--pr \"not-a-url\" is not a URL"), "{said}");
    assert!(!list.exists(), "nothing was written");
}

#[test]
fn a_database_that_cannot_be_reached_is_said_at_once_and_why() {
    let dir = longtx_testkit::TempDir::new("errors-db");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (url, why) in [
        (
            format!("postgres://longtx:hunter2@127.0.0.1:{closed}/longtx"),
            "connection refused at 127.0.0.1",
        ),
        (
            "postgres://longtx:hunter2@no-such-host.invalid/longtx".to_owned(),
            "cannot resolve the host \"no-such-host.invalid\"",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_longtx"))
            .arg("migrate")
            .current_dir(&*dir)
            .env("DATABASE_URL", &url)
            .output()
            .unwrap();
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains(why), "{said}");
        assert!(
            !said.contains("hunter2") && !said.contains("pool timed out"),
            "{said}"
        );
    }
}

#[test]
fn a_folder_that_is_not_a_repository_is_said_without_libgit2_codes() {
    let dir = longtx_testkit::TempDir::new("errors-git");
    let out = longtx(
        &[
            "reviewers",
            "--repo",
            dir.to_str().unwrap(),
            "--file",
            "app/models/order.rb",
        ],
        &dir,
    );
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("could not find repository"), "{said}");
    assert!(
        !said.contains("class=") && !said.contains("code="),
        "{said}"
    );
    assert_eq!(
        said.matches("could not find repository").count(),
        1,
        "{said}"
    );
}
