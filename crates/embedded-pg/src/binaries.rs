use crate::EmbeddedPgError;
use std::path::{Path, PathBuf};

/// Where the PostgreSQL server programs live.
#[derive(Debug, Clone)]
pub struct PgBinaries {
    pub initdb: PathBuf,
    pub pg_ctl: PathBuf,
}

/// Finds `initdb` and `pg_ctl`: on PATH first, then in Debian's versioned
/// directories, newest version first (Debian keeps them off PATH).
pub fn locate_binaries() -> Result<PgBinaries, EmbeddedPgError> {
    let path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    locate_in(path, Path::new("/usr/lib/postgresql"))
}

fn locate_in(path: Vec<PathBuf>, debian_root: &Path) -> Result<PgBinaries, EmbeddedPgError> {
    let mut dirs = path;
    dirs.extend(debian_bin_dirs(debian_root));
    dirs.into_iter()
        .find(|dir| is_executable(&dir.join("initdb")) && is_executable(&dir.join("pg_ctl")))
        .map(|dir| PgBinaries {
            initdb: dir.join("initdb"),
            pg_ctl: dir.join("pg_ctl"),
        })
        .ok_or(EmbeddedPgError::BinariesNotFound)
}

fn debian_bin_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut versions: Vec<(u32, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, e.path().join("bin")))
        })
        .collect();
    versions.sort_by_key(|(version, _)| std::cmp::Reverse(*version));
    versions.into_iter().map(|(_, dir)| dir).collect()
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn fake_install(root: &Path, version: &str) -> PathBuf {
        let bin = root.join(version).join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for name in ["initdb", "pg_ctl"] {
            let file = bin.join(name);
            std::fs::write(&file, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        bin
    }

    #[test]
    fn debian_directories_are_searched_newest_first() {
        let root = std::env::temp_dir().join(format!("longtx-pgbin-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        fake_install(&root, "14");
        let newest = fake_install(&root, "16");
        let found = locate_in(vec![], &root).unwrap();
        assert_eq!(found.initdb, newest.join("initdb"));
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn nothing_found_says_what_to_install() {
        let err = locate_in(
            vec![PathBuf::from("/nonexistent")],
            Path::new("/nonexistent"),
        )
        .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("apt-get install postgresql") && message.contains("DATABASE_URL"),
            "{message}"
        );
    }
}
