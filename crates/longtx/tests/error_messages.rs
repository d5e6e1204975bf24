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
        let said = stderr(&out);
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
