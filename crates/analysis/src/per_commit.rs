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
    let mut cache = cache.lock().unwrap();
    // Folders that are gone (the scan's exported trees, removed after each
    // check of a patch) would otherwise keep their indexes for the life of
    // the service.
    cache.retain(|path, _| path.exists());
    cache.insert(repo.to_owned(), (revision, index.clone()));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn checkout(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("longtx-per-commit-{}-{name}", std::process::id()));
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join(".git/HEAD"), format!("{name}\n")).unwrap();
        dir
    }

    #[test]
    fn a_removed_checkout_leaves_the_cache_at_the_next_build() {
        static CACHE: Cache<usize> = OnceLock::new();
        let (gone, kept, next) = (checkout("gone"), checkout("kept"), checkout("next"));
        shared(&CACHE, &gone, || 1);
        shared(&CACHE, &kept, || 2);
        std::fs::remove_dir_all(&gone).unwrap();
        shared(&CACHE, &next, || 3);
        let cached: Vec<PathBuf> = CACHE
            .get()
            .unwrap()
            .lock()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert!(!cached.contains(&gone), "{cached:?}");
        assert!(cached.contains(&kept) && cached.contains(&next));
        assert_eq!(
            *shared(&CACHE, &kept, || 99),
            2,
            "still built once per commit"
        );
        for dir in [kept, next] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
