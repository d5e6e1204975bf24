//! An agent's patch, read and applied by libgit2 in the mirror: the files
//! it names (for the patch policy) and, applied onto the round's base, the
//! whole files a commit must add and the paths it must delete. Nothing is
//! checked out and nothing is pushed: longtx commits through GitHub's API.

use crate::GitError;
use git2::{Delta, DiffFindOptions, FileMode, Repository};
use longtx_core::patch_policy::PatchFile;

/// A patch applied onto a base: what the commit writes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Changes {
    /// Whole files, added or replaced, by path.
    pub additions: Vec<(String, Vec<u8>)>,
    pub deletions: Vec<String>,
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
/// files to write and delete. A patch that does not apply is an error that
/// says so.
pub fn apply(repo: &Repository, base: &str, patch: &[u8]) -> Result<Changes, GitError> {
    let base = repo
        .find_commit(git2::Oid::from_str(base)?)
        .map_err(|_| GitError::Invalid(format!("the base commit {base} is not in the mirror")))?;
    let base_tree = base.tree()?;
    if patch.iter().all(u8::is_ascii_whitespace) {
        return Ok(Changes::default());
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
    let mut out = Changes::default();
    for delta in changes.deltas() {
        match delta.status() {
            Delta::Deleted => out.deletions.extend(path_of(&delta.old_file())),
            _ => {
                let path = path_of(&delta.new_file())
                    .ok_or_else(|| GitError::Invalid("a changed file has no path".into()))?;
                let blob = repo.find_blob(delta.new_file().id())?;
                out.additions.push((path, blob.content().to_vec()));
            }
        }
    }
    Ok(out)
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
        let files = files_of(patch.as_bytes()).unwrap();
        assert_eq!(files.len(), 3, "{files:?}");
        assert!(files
            .iter()
            .any(|f| f.path == "old.txt" && f.new_mode.is_none()));
        let changes = apply(&repo, &base, patch.as_bytes()).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(changes.deletions, vec!["old.txt".to_owned()]);
        assert!(changes
            .additions
            .contains(&("logo.png".to_owned(), vec![0u8, 159, 146, 150, 255])));
        assert!(changes.additions.contains(&(
            "app/order.rb".to_owned(),
            b"class Order\n  after_commit :x\nend\n".to_vec()
        )));
        assert!(apply(&repo_missing(), &base, patch.as_bytes()).is_err());
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
}
