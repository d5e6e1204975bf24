//! Indexes of a checkout built once per commit and shared: the location
//! index and the class index are each kept here by checkout, with the
//! commit `HEAD` named when they were built.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Built indexes by checkout, with the commit each was built at.
pub(super) type Cache<T> = OnceLock<Mutex<HashMap<PathBuf, (String, Arc<T>)>>>;

/// `cache`'s index of `repo` at its current commit, built by `build` when
/// there is none for that commit (a checkout without git is indexed afresh
/// each time).
pub(super) fn shared<T>(
    cache: &'static Cache<T>,
    repo: &Path,
    build: impl FnOnce() -> T,
) -> Arc<T> {
    let Some(revision) = head_revision(repo) else {
        return Arc::new(build());
    };
    let cache = cache.get_or_init(Default::default);
    if let Some((rev, index)) = cache.lock().unwrap().get(repo) {
        if *rev == revision {
            return index.clone();
        }
    }
    let index = Arc::new(build());
    cache
        .lock()
        .unwrap()
        .insert(repo.to_owned(), (revision, index.clone()));
    index
}

/// The commit `HEAD` names, read from `.git` without running git.
fn head_revision(repo: &Path) -> Option<String> {
    let git = repo.join(".git");
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref: ") else {
        return Some(head.to_owned());
    };
    if let Ok(sha) = std::fs::read_to_string(git.join(reference)) {
        return Some(sha.trim().to_owned());
    }
    let packed = std::fs::read_to_string(git.join("packed-refs")).ok()?;
    packed.lines().find_map(|line| {
        let (sha, name) = line.split_once(' ')?;
        (name == reference).then(|| sha.to_owned())
    })
}
