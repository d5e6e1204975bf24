//! `longtx patterns lint` and `longtx prompt`, as people run them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn longtx(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_longtx"))
        .args(args)
        .current_dir(repo_root())
        .env_remove("LONGTX_PATTERNS_DIR")
        .env_remove("LONGTX_PROMPT_TEMPLATE")
        .env_remove("LONGTX_REPO_PATH")
        .output()
        .unwrap()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_shipped_catalogue_lints_clean() {
    let output = longtx(&["patterns", "lint", "patterns"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("11 patterns, no problems"),
        "{}",
        text(&output)
    );
}

#[test]
fn a_broken_catalogue_fails_with_file_and_line() {
    let dir = longtx_testkit::TempDir::new("broken-catalogue");
    let good =
        std::fs::read_to_string(repo_root().join("patterns/side-effects-after-commit.md")).unwrap();
    // Lose the Effect section and link to a file that is not there.
    let broken = good.replace("## Effect\n", "").replace(
        "## Caveats and trade-offs\n",
        "## Caveats and trade-offs\n\nSee [the guide](missing-guide.md).\n",
    );
    std::fs::write(dir.join("side-effects-after-commit.md"), &broken).unwrap();
    std::fs::write(
        dir.join("copy.md"),
        good.replace("id: side-effects-after-commit", "id: copy\nid2: x"),
    )
    .unwrap();

    let output = longtx(&["patterns", "lint", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let file = dir
        .join("side-effects-after-commit.md")
        .display()
        .to_string();
    // Problems with the body as a whole point at its first line, after the front matter.
    let body_line = broken.lines().skip(1).position(|l| l == "---").unwrap() + 3;
    let link_line = broken
        .lines()
        .position(|l| l.contains("missing-guide.md"))
        .unwrap()
        + 1;
    assert!(
        stdout.contains(&format!(
            "{file}:{body_line}: missing section \"## Effect\""
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "{file}:{link_line}: link target \"missing-guide.md\" does not exist"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "{}:3: front matter: ",
            dir.join("copy.md").display()
        )),
        "{stdout}"
    );
}

#[test]
fn prompt_prints_the_same_prompt_offline() {
    let output = longtx(&[
        "prompt",
        "--query-source",
        "sidekiq_worker:Billing::SyncWorker",
        "--table",
        "invoices",
        "--duration",
        "240",
    ]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("# Shorten a long database transaction: Billing::SyncWorker"),
        "{stdout}"
    );
    assert!(stdout.contains("- tables: `invoices`"));
    assert!(stdout.contains("240 s (threshold 100 s)"));
    assert!(String::from_utf8_lossy(&output.stderr).contains("patterns sha256:"));
}
