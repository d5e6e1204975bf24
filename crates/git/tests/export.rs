//! A revision written out for the scan, from a real repository made by
//! `git` in the test: the code the analysis reads and the files that name
//! code roots, never tests or anything else, and nothing left behind.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Repo(PathBuf);

impl Drop for Repo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
fn the_export_holds_the_code_and_the_root_files_but_no_tests_and_goes_when_dropped() {
    let repo = Repo(std::env::temp_dir().join(format!("longtx-export-{}", std::process::id())));
    let files = [
        (
            "app/models/order.rb",
            "class Order < ApplicationRecord\nend\n",
        ),
        ("lib/tasks/sync.rake", "task :sync do\nend\n"),
        ("Gemfile", "gem \"billing\", path: \"engines/billing\"\n"),
        ("packs/payments/package.yml", "enforce_dependencies: true\n"),
        (
            "packs/payments/spec/models/payment_spec.rb",
            "describe Payment do\nend\n",
        ),
        ("spec/models/order_spec.rb", "describe Order do\nend\n"),
        ("test/models/order_test.rb", "class OrderTest\nend\n"),
        ("README.md", "# shop\n"),
    ];
    std::fs::create_dir_all(&repo.0).unwrap();
    git(&repo.0, &["init", "--quiet"]);
    for (path, text) in files {
        let full = repo.0.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }
    git(&repo.0, &["add", "-A"]);
    git(&repo.0, &["commit", "--quiet", "-m", "shop"]);

    let opened = longtx_git::open(&repo.0).unwrap();
    let exported = longtx_git::export::ExportedTree::of(&opened, "HEAD").unwrap();
    let dir = exported.path().to_owned();
    let mut found: Vec<String> = walk(&dir)
        .into_iter()
        .map(|p| p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned())
        .filter(|p| !p.starts_with(".git"))
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            "Gemfile",
            "app/models/order.rb",
            "lib/tasks/sync.rake",
            "packs/payments/package.yml",
        ]
    );
    drop(exported);
    assert!(!dir.exists(), "the export is removed with its value");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
