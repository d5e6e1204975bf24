//! A revision's Ruby code written out to a folder of its own, for the scan
//! (its `.rb` and `.rake` files outside test folders, and the files that
//! name code roots: the analysis reads nothing else). The
//! repository itself is only read, so a checkout or the mirror is never
//! touched; the folder is removed when the value is dropped.

use crate::GitError;
use std::path::{Path, PathBuf};

/// Folders of tests: the analysis reads no file in them (entry points and
/// classes come from the code roots' `app/`, `lib/` and `config/`), and
/// writing them out cost a large application's diff most of its time.
const TESTS: [&str; 3] = ["spec", "test", "features"];
/// Files besides Ruby that the analysis reads to find the code roots:
/// path gems in the Gemfile, packwerk packs.
const ALSO_READ: [&str; 3] = ["Gemfile", "gems.rb", "package.yml"];

/// Files bigger than this are generated code; the analysis skips them.
const MAX_FILE_BYTES: usize = 1024 * 1024;
/// A tree with more Ruby than this is not exported whole.
const MAX_TOTAL_BYTES: usize = 512 * 1024 * 1024;

/// A revision's Ruby files in a temporary folder.
pub struct ExportedTree {
    dir: PathBuf,
}

impl ExportedTree {
    /// Writes the `.rb` and `.rake` files of `rev` (a commit, a tree id,
    /// a branch) into a new folder, in memory (`/dev/shm`) where the
    /// system has it, else under the system's temp dir. Its `.git/HEAD`
    /// names the tree, so the analysis caches its indexes by it.
    pub fn of(repo: &git2::Repository, rev: &str) -> Result<ExportedTree, GitError> {
        let object = repo
            .revparse_single(rev)
            .map_err(|_| GitError::Invalid(format!("{rev}: not a revision of the repository")))?;
        let tree = object
            .peel_to_tree()
            .map_err(|_| GitError::Invalid(format!("{rev}: names no tree")))?;
        // Creating thousands of small files on a disk's file system took a
        // large application's diff seconds (ext4 looking for free inodes
        // among the ones just deleted); in memory it takes a tenth. A full
        // or small `/dev/shm` (64 MiB in a default container) falls back.
        let in_memory = Path::new("/dev/shm");
        if in_memory.is_dir() {
            match Self::write(repo, rev, &tree, in_memory) {
                Ok(done) => return Ok(done),
                Err(e) => {
                    tracing::debug!(error = %e, "exporting into /dev/shm failed; on disk instead")
                }
            }
        }
        Self::write(repo, rev, &tree, &std::env::temp_dir())
    }

    fn write(
        repo: &git2::Repository,
        rev: &str,
        tree: &git2::Tree<'_>,
        place: &Path,
    ) -> Result<ExportedTree, GitError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = place.join(format!(
            "longtx-tree-{}-{n}-{}",
            std::process::id(),
            tree.id()
        ));
        let exported = ExportedTree { dir };
        std::fs::create_dir_all(exported.dir.join(".git")).map_err(io)?;
        std::fs::write(exported.dir.join(".git/HEAD"), format!("{}\n", tree.id())).map_err(io)?;
        let mut total = 0usize;
        let mut failed = None;
        tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
            let name = entry.name().unwrap_or("");
            if entry.kind() == Some(git2::ObjectType::Tree) && TESTS.contains(&name) {
                return git2::TreeWalkResult::Skip;
            }
            let read =
                name.ends_with(".rb") || name.ends_with(".rake") || ALSO_READ.contains(&name);
            if !read || entry.kind() != Some(git2::ObjectType::Blob) {
                return git2::TreeWalkResult::Ok;
            }
            // Only plain files: a symlink's target is text naming a path.
            if entry.filemode() != 0o100644 && entry.filemode() != 0o100755 {
                return git2::TreeWalkResult::Ok;
            }
            let Ok(blob) = repo.find_blob(entry.id()) else {
                return git2::TreeWalkResult::Ok;
            };
            if blob.size() > MAX_FILE_BYTES {
                return git2::TreeWalkResult::Ok;
            }
            total += blob.size();
            if total > MAX_TOTAL_BYTES {
                failed = Some(GitError::Invalid(format!(
                    "{rev}: more than {MAX_TOTAL_BYTES} bytes of Ruby"
                )));
                return git2::TreeWalkResult::Abort;
            }
            match write_inside(&exported.dir, root, name, blob.content()) {
                Ok(()) => git2::TreeWalkResult::Ok,
                Err(e) => {
                    failed = Some(e);
                    git2::TreeWalkResult::Abort
                }
            }
        })?;
        match failed {
            Some(e) => Err(e),
            None => Ok(exported),
        }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for ExportedTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Writes `root/name` under `dir`; a path with `..` or an absolute part
/// (which git does not store, but a crafted tree might) is refused.
fn write_inside(dir: &Path, root: &str, name: &str, bytes: &[u8]) -> Result<(), GitError> {
    let relative = Path::new(root).join(name);
    if relative
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(GitError::Invalid(format!(
            "a tree path leaves the folder: {}",
            relative.display()
        )));
    }
    let path = dir.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(path, bytes).map_err(io)
}

fn io(e: std::io::Error) -> GitError {
    GitError::Invalid(format!("writing the exported tree: {e}"))
}
