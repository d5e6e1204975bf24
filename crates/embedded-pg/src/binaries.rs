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
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(debian_bin_dirs(Path::new("/usr/lib/postgresql")));
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
