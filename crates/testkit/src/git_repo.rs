//! Real git repositories made in a test with the `git` CLI: a work tree to
//! commit into at chosen dates by chosen people, and a bare copy that
//! stands in for the GitHub remote (`LONGTX_GIT_URL` can point at it).

use chrono::{DateTime, Duration, TimeZone, Utc};
use std::path::PathBuf;
use std::process::Command;

/// The fixed "now" of history tests, so ages do not drift with the clock.
pub fn history_now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()
}

/// A work tree on branch `main`, deleted when dropped.
pub struct GitRepo {
    pub path: PathBuf,
    bare: Option<PathBuf>,
}

impl GitRepo {
    pub fn new(name: &str) -> GitRepo {
        let path = unique_dir(name);
        let repo = GitRepo { path, bare: None };
        repo.git(&["init", "--quiet", "--initial-branch=main"]);
        repo
    }

    /// Writes `files` and commits them as `who <email>`, `days_ago` days
    /// before [`history_now`]. Returns the commit id.
    pub fn commit(&self, files: &[(&str, &str)], who: &str, email: &str, days_ago: i64) -> String {
        for (path, text) in files {
            let full = self.path.join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
            self.git(&["add", "--", path]);
        }
        let date = (history_now() - Duration::days(days_ago)).to_rfc3339();
        let message = format!("change by {who}");
        self.run(
            &["commit", "--quiet", "-m", &message],
            &[
                ("GIT_AUTHOR_NAME", who),
                ("GIT_AUTHOR_EMAIL", email),
                ("GIT_COMMITTER_NAME", who),
                ("GIT_COMMITTER_EMAIL", email),
                ("GIT_AUTHOR_DATE", &date),
                ("GIT_COMMITTER_DATE", &date),
            ],
        );
        self.git(&["rev-parse", "HEAD"])
    }

    /// `git <args>` in the work tree; panics with git's message on failure.
    pub fn git(&self, args: &[&str]) -> String {
        self.run(args, &[])
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let output = Command::new("git")
            .arg("-C")
            .arg(&self.path)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            // After the defaults, so a commit's own identity wins.
            .envs(env.iter().copied())
            .output()
            .expect("running git");
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// The bare copy's path, as last refreshed by [`GitRepo::bare`].
    pub fn bare_path(&self) -> PathBuf {
        self.bare.clone().expect("call bare() first")
    }

    /// A bare repository holding this one's branches, made on first call
    /// and refreshed by later calls: the remote a mirror fetches from.
    pub fn bare(&mut self) -> PathBuf {
        let bare = match &self.bare {
            Some(bare) => bare.clone(),
            None => {
                let bare = unique_dir("bare");
                let status = Command::new("git")
                    .args(["init", "--quiet", "--bare", "--initial-branch=main"])
                    .arg(&bare)
                    .status()
                    .unwrap();
                assert!(status.success());
                self.bare = Some(bare.clone());
                bare
            }
        };
        let target = bare.to_str().unwrap().to_owned();
        self.git(&[
            "push",
            "--quiet",
            "--force",
            &target,
            "refs/heads/*:refs/heads/*",
        ]);
        bare
    }
}

impl Drop for GitRepo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        if let Some(bare) = &self.bare {
            let _ = std::fs::remove_dir_all(bare);
        }
    }
}

fn unique_dir(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "longtx-tmp-git-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
