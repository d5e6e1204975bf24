//! History reviewers on real repositories built by `git` in each test.

use chrono::{DateTime, TimeZone, Utc};
use longtx_git::{file_history, gather, ChangedFile, HistoryOptions};
use std::path::PathBuf;
use std::process::Command;

/// A throwaway repository with commits at chosen dates by chosen people.
struct Repo {
    _dir: tempdir::Dir,
    path: PathBuf,
}

mod tempdir {
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn as_of() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()
}

impl Repo {
    fn new() -> Repo {
        let path = std::env::temp_dir().join(format!(
            "longtx-tmp-history-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&path).unwrap();
        let repo = Repo {
            _dir: tempdir::Dir(path.clone()),
            path,
        };
        repo.git(&["init", "--quiet", "--initial-branch=main"], "", "", 0);
        repo
    }

    fn git(&self, args: &[&str], who: &str, email: &str, days_ago: i64) -> String {
        let date = (as_of() - chrono::Duration::days(days_ago)).to_rfc3339();
        let output = Command::new("git")
            .arg("-C")
            .arg(&self.path)
            .args(args)
            .env("GIT_AUTHOR_NAME", who)
            .env("GIT_AUTHOR_EMAIL", email)
            .env("GIT_COMMITTER_NAME", who)
            .env("GIT_COMMITTER_EMAIL", email)
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &self.path)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// Writes `content` to `file` and commits it as `who` `days_ago`.
    fn commit(&self, file: &str, content: &str, who: &str, days_ago: i64) -> String {
        let full = self.path.join(file);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
        let email = format!("{}@example.com", who.to_lowercase());
        self.git(&["add", "-A"], who, &email, days_ago);
        self.git(
            &["commit", "--quiet", "-m", &format!("{who} edits {file}")],
            who,
            &email,
            days_ago,
        );
        self.git(&["rev-parse", "HEAD"], who, &email, days_ago)
    }

    fn open(&self) -> git2::Repository {
        git2::Repository::open(&self.path).unwrap()
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed) * 1000
        + u64::from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
                % 1000,
        )
}

fn emails(history: &longtx_git::FileHistory) -> Vec<&str> {
    history.authors.iter().map(|a| a.email.as_str()).collect()
}

fn options() -> HistoryOptions {
    HistoryOptions::new(as_of(), 365)
}

#[test]
fn recent_and_frequent_committers_rank_first_and_old_ones_drop_out() {
    let repo = Repo::new();
    repo.commit("app/models/order.rb", "v1", "Old", 800);
    repo.commit("app/models/order.rb", "v2", "Alice", 300);
    repo.commit("app/models/order.rb", "v3", "Alice", 290);
    repo.commit("app/models/order.rb", "v4", "Bob", 10);
    repo.commit("README.md", "other file", "Carol", 5);
    let history = file_history(&repo.open(), "HEAD", "app/models/order.rb", &options()).unwrap();
    // Bob's one commit last week outweighs Alice's two from ten months ago.
    assert_eq!(emails(&history), ["bob@example.com", "alice@example.com"]);
    assert_eq!(history.authors[1].commits, 2);
}

#[test]
fn as_of_makes_the_window_reproducible() {
    let repo = Repo::new();
    repo.commit("a.rb", "1", "Alice", 400);
    repo.commit("a.rb", "2", "Bob", 3);
    let earlier = HistoryOptions::new(as_of() - chrono::Duration::days(100), 365);
    let history = file_history(&repo.open(), "HEAD", "a.rb", &earlier).unwrap();
    // A year before the as-of date: Alice in, Bob (in its future) out.
    assert_eq!(emails(&history), ["alice@example.com"]);
}

#[test]
fn renames_are_followed_to_the_old_name() {
    let repo = Repo::new();
    let body = "class Order\n  def total\n    42\n  end\nend\n".repeat(5);
    repo.commit("app/models/purchase.rb", &body, "Alice", 100);
    repo.git(
        &["mv", "app/models/purchase.rb", "app/models/order.rb"],
        "Bob",
        "bob@example.com",
        50,
    );
    repo.git(
        &["commit", "--quiet", "-m", "rename"],
        "Bob",
        "bob@example.com",
        50,
    );
    repo.commit(
        "app/models/order.rb",
        &format!("{body}# more\n"),
        "Carol",
        10,
    );
    let history = file_history(&repo.open(), "HEAD", "app/models/order.rb", &options()).unwrap();
    assert_eq!(history.renamed_from, ["app/models/purchase.rb"]);
    let mut found = emails(&history);
    found.sort();
    assert_eq!(
        found,
        ["alice@example.com", "bob@example.com", "carol@example.com"]
    );
}

#[test]
fn bots_merges_and_ignored_revisions_do_not_count() {
    let repo = Repo::new();
    repo.commit("a.rb", "1", "Alice", 60);
    let reformat = repo.commit("a.rb", "2 reformatted", "Formatter", 50);
    let bot_email = "49699333+dependabot[bot]@users.noreply.github.com";
    std::fs::write(repo.path.join("a.rb"), "3 bumped").unwrap();
    repo.git(
        &["commit", "--quiet", "-am", "bump"],
        "dependabot[bot]",
        bot_email,
        40,
    );
    // A side branch merged back: the merge commit itself is not authorship.
    repo.git(
        &["switch", "--quiet", "-c", "side"],
        "Bob",
        "bob@example.com",
        30,
    );
    repo.commit("a.rb", "4 side", "Bob", 30);
    repo.git(&["switch", "--quiet", "main"], "Bob", "bob@example.com", 29);
    repo.commit("b.rb", "unrelated", "Carol", 29);
    repo.git(
        &["merge", "--quiet", "--no-ff", "-m", "merge side", "side"],
        "Merger",
        "merger@example.com",
        20,
    );
    repo.commit(
        ".git-blame-ignore-revs",
        &format!("# mass reformat\n{reformat}\n"),
        "Alice",
        10,
    );
    let history = file_history(&repo.open(), "HEAD", "a.rb", &options()).unwrap();
    let mut found = emails(&history);
    found.sort();
    assert_eq!(found, ["alice@example.com", "bob@example.com"]);
    assert_eq!(history.skipped_bots, 1);
    assert_eq!(history.skipped_ignored_revs, 1);
    assert!(history.skipped_merges >= 1);
}

#[test]
fn mailmap_joins_one_person_s_addresses() {
    let repo = Repo::new();
    repo.commit("a.rb", "1", "Alice", 30);
    std::fs::write(repo.path.join("a.rb"), "2").unwrap();
    repo.git(
        &["commit", "--quiet", "-am", "laptop"],
        "alice",
        "alice@laptop.local",
        20,
    );
    repo.commit(
        ".mailmap",
        "Alice <alice@example.com> <alice@laptop.local>\n",
        "Alice",
        10,
    );
    let history = file_history(&repo.open(), "HEAD", "a.rb", &options()).unwrap();
    assert_eq!(emails(&history), ["alice@example.com"]);
    assert_eq!(history.authors[0].commits, 2);
}

#[test]
fn codeowners_come_from_the_given_ref_only() {
    let repo = Repo::new();
    repo.commit(".github/CODEOWNERS", "/app/ @acme/app-team\n", "Alice", 20);
    repo.commit("app/a.rb", "1", "Alice", 19);
    repo.git(
        &["switch", "--quiet", "-c", "longtx/1"],
        "Agent",
        "agent@example.com",
        5,
    );
    // The agent's branch tries to make itself the owner; the base must win.
    repo.commit(".github/CODEOWNERS", "* @agent\n", "Agent", 5);
    let files = [ChangedFile {
        path: "app/a.rb".into(),
        changes: 3,
    }];
    let base = gather::owners(&repo.open(), "refs/heads/main", &files).unwrap();
    assert_eq!(base.owners[0].0.to_string(), "@acme/app-team");
    assert!(base.owners[0].1.contains(".github/CODEOWNERS line 1"));
    let head = gather::owners(&repo.open(), "refs/heads/longtx/1", &files).unwrap();
    assert_eq!(head.owners[0].0.to_string(), "@agent");
}

#[test]
fn history_over_several_files_sums_per_person_largest_changes_first() {
    let repo = Repo::new();
    repo.commit("big.rb", "1", "Alice", 20);
    repo.commit("small.rb", "1", "Bob", 20);
    repo.commit("small.rb", "2", "Bob", 19);
    let files = [
        ChangedFile {
            path: "small.rb".into(),
            changes: 1,
        },
        ChangedFile {
            path: "big.rb".into(),
            changes: 100,
        },
    ];
    let only_largest = gather::history(&repo.open(), "HEAD", &files, &options(), 1).unwrap();
    assert_eq!(only_largest.len(), 1);
    assert_eq!(only_largest[0].email, "alice@example.com");
    let both = gather::history(&repo.open(), "HEAD", &files, &options(), 10).unwrap();
    assert_eq!(both[0].email, "bob@example.com");
}
