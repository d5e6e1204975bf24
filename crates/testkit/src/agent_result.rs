//! What an agent's run leaves for longtx, made the way the shipped
//! templates make it: the agent's files written over the commit the run
//! checked out, `git add -A`, `git diff --cached --binary <base>`, a
//! result.json, zipped as upload-artifact zips a folder (its files at the
//! zip's root) and stored on the run in the fake GitHub.

use crate::FakeGitHub;
use std::path::Path;
use std::process::Command;

/// `git -C dir args` with no user or system config: its trimmed output;
/// panics with git's words when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The patch an agent makes by writing `files` (path, text) over
/// `base_ref` of the bare `remote`: (base commit, patch).
pub fn patch_over(remote: &Path, base_ref: &str, files: &[(&str, &str)]) -> (String, Vec<u8>) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "longtx-tmp-agent-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    git(
        Path::new("/"),
        &[
            "clone",
            "--quiet",
            remote.to_str().unwrap(),
            dir.to_str().unwrap(),
        ],
    );
    git(&dir, &["checkout", "--quiet", base_ref]);
    let base = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    git(&dir, &["add", "-A"]);
    let out = Command::new("git")
        .arg("-C")
        .arg(&dir)
        .args(["diff", "--cached", "--binary", &base])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (base, out.stdout)
}

/// Stores a fix run's result: `patch` against `base`, with the summary,
/// pattern and cost the templates write. Returns the artifact's id.
pub fn upload_fix_result(
    github: &FakeGitHub,
    run_id: u64,
    base: &str,
    patch: &[u8],
    pattern: Option<&str>,
) -> u64 {
    let result = serde_json::json!({
        "base": base,
        "summary": "Moved the warehouse call after the commit.",
        "agent": "claude",
        "pattern": pattern,
        "cost_usd": 0.25,
        "turns": 5,
    });
    let zip = longtx_github::zip::write(&[
        ("result.json", result.to_string().as_bytes()),
        ("patch.diff", patch),
    ]);
    github
        .store_artifact(run_id, "longtx-result", zip, true)
        .unwrap()
}

/// Stores a pre-review run's result: `verdict` and its cost.
pub fn upload_verdict(github: &FakeGitHub, run_id: u64, verdict: &serde_json::Value) -> u64 {
    let result =
        serde_json::json!({"verdict": verdict, "agent": "claude", "cost_usd": 0.05, "turns": 2});
    let zip = longtx_github::zip::write(&[("result.json", result.to_string().as_bytes())]);
    github
        .store_artifact(run_id, "longtx-result", zip, true)
        .unwrap()
}
