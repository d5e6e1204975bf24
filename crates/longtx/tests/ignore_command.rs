//! `longtx ignore add | check | lint` on files made in the test.

use std::path::{Path, PathBuf};
use std::process::Command;

fn longtx(args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .args(args)
        .env_remove("LONGTX_IGNORE_LIST")
        .env("LONGTX_LOG", "off")
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

/// A file `name.yaml` holding `text`, in a folder removed when dropped.
struct ListFile {
    _dir: longtx_testkit::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for ListFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for ListFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

fn file(name: &str, text: &str) -> ListFile {
    let dir = longtx_testkit::TempDir::new("ignore");
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    ListFile { _dir: dir, path }
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn add_appends_quoted_and_check_answers_like_intake() {
    let list = file(
        "add",
        "# kept\n- query_source: 'Legacy::*'\n  reason: old\n",
    );
    let source = "admin/users#update\" $(id) #x";
    let (ok, out) = longtx(&[
        "ignore",
        "add",
        source,
        "--reason",
        "needs: the lock",
        "--by",
        "alice",
        "--file",
        s(&list),
    ]);
    assert!(ok, "{out}");
    let text = std::fs::read_to_string(&list).unwrap();
    assert!(
        text.starts_with("# kept\n- query_source: 'Legacy::*'\n"),
        "{text}"
    );
    let (ok, out) = longtx(&["ignore", "check", source, "--file", s(&list)]);
    assert!(ok && out.contains("ignored, exactly"), "{out}");
    let (ok, out) = longtx(&[
        "ignore",
        "check",
        "Legacy::ImportWorker",
        "--file",
        s(&list),
    ]);
    assert!(ok && out.contains("by the glob `Legacy::*`"), "{out}");
    let (ok, out) = longtx(&["ignore", "check", "admin/users#index", "--file", s(&list)]);
    assert!(!ok && out.contains("not in"), "{out}");
    let (ok, out) = longtx(&[
        "ignore",
        "add",
        source,
        "--reason",
        "again",
        "--file",
        s(&list),
    ]);
    assert!(ok && out.contains("already listed"), "{out}");
    assert_eq!(std::fs::read_to_string(&list).unwrap(), text, "unchanged");
}

#[test]
fn lint_flags_broken_files_duplicates_and_missing_reasons() {
    let (ok, out) = longtx(&[
        "ignore",
        "lint",
        s(&file("broken", "- query_source: [unclosed\n")),
    ]);
    assert!(!ok && out.contains("not a valid ignore list"), "{out}");
    let dupes = file(
        "dupes",
        "- query_source: a#b\n  reason: r\n- query_source: a#b\n",
    );
    let (ok, out) = longtx(&["ignore", "lint", s(&dupes)]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("entry 2: `a#b` is listed twice")
            && out.contains("entry 2: `a#b` has no reason"),
        "{out}"
    );
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ignore-list.yaml");
    let (ok, out) = longtx(&["ignore", "lint", s(&shipped)]);
    assert!(ok, "{out}");
}
