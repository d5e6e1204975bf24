//! What an agent's patch may touch, checked before anything reaches
//! GitHub. longtx commits every round itself, so this is the one gate
//! between what a (possibly prompt-injected) agent wrote and the
//! repository: workflows, agent settings, ownership rules, the ignore list
//! and vendored code are never written; symlinks and submodules never
//! enter; the size is bounded.

use crate::glob;

/// Paths no agent patch may add, change, rename or delete.
pub const ALWAYS_PROTECTED: [&str; 8] = [
    ".github/**",
    ".claude/**",
    ".codex/**",
    "CODEOWNERS",
    "docs/CODEOWNERS",
    "vendor/**",
    "node_modules/**",
    ".gitmodules",
];

pub const DEFAULT_MAX_PATCH_BYTES: usize = 1024 * 1024;
pub const DEFAULT_MAX_PATCH_FILES: usize = 50;

/// Git's file modes.
pub const MODE_FILE: u32 = 0o100644;
pub const MODE_EXECUTABLE: u32 = 0o100755;
pub const MODE_SYMLINK: u32 = 0o120000;
pub const MODE_SUBMODULE: u32 = 0o160000;

#[derive(Debug, Clone, PartialEq)]
pub struct PatchPolicy {
    pub max_bytes: usize,
    pub max_files: usize,
    /// Globs (`*` crosses `/`), [`ALWAYS_PROTECTED`] first.
    pub protected: Vec<String>,
}

impl PatchPolicy {
    /// The built-in protected paths, the ignore list's path, and `extra`
    /// (`LONGTX_PROTECTED_PATHS`).
    pub fn new(max_bytes: usize, max_files: usize, ignore_list: &str, extra: &[String]) -> Self {
        let mut protected: Vec<String> = ALWAYS_PROTECTED.iter().map(|p| p.to_string()).collect();
        protected.push(ignore_list.trim_start_matches("./").to_owned());
        protected.extend(
            extra
                .iter()
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty()),
        );
        PatchPolicy {
            max_bytes,
            max_files,
            protected,
        }
    }
}

/// One file of a patch, as parsed from its `diff --git` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchFile {
    /// The path after the change (the old path for a deletion).
    pub path: String,
    /// The path before a rename or copy.
    pub old_path: Option<String>,
    /// `None` for a new file.
    pub old_mode: Option<u32>,
    /// `None` for a deletion.
    pub new_mode: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the patch is {bytes} bytes, over the cap of {max} (LONGTX_MAX_PATCH_BYTES)")]
    TooLarge { bytes: usize, max: usize },
    #[error("the patch touches {files} files, over the cap of {max} (LONGTX_MAX_PATCH_FILES)")]
    TooManyFiles { files: usize, max: usize },
    #[error("the patch writes {path}, a protected path ({pattern})")]
    Protected { path: String, pattern: String },
    #[error("the patch makes {0} a symbolic link; links are never committed")]
    Symlink(String),
    #[error("the patch changes the submodule {0}; submodules are never changed")]
    Submodule(String),
    #[error("the patch changes the file mode of {0}; longtx commits through GitHub's API, which keeps modes")]
    ModeChange(String),
    #[error("the patch names an unsafe path {0:?}")]
    UnsafePath(String),
}

/// Checks a patch of `bytes` bytes touching `files` against `policy`; the
/// first reason to refuse it, if any.
pub fn check(policy: &PatchPolicy, bytes: usize, files: &[PatchFile]) -> Result<(), Refusal> {
    if bytes > policy.max_bytes {
        return Err(Refusal::TooLarge {
            bytes,
            max: policy.max_bytes,
        });
    }
    if files.len() > policy.max_files {
        return Err(Refusal::TooManyFiles {
            files: files.len(),
            max: policy.max_files,
        });
    }
    for file in files {
        for path in std::iter::once(&file.path).chain(file.old_path.iter()) {
            if !is_safe_path(path) {
                return Err(Refusal::UnsafePath(path.clone()));
            }
            if let Some(pattern) = policy.protected.iter().find(|p| protects(p, path)) {
                return Err(Refusal::Protected {
                    path: path.clone(),
                    pattern: pattern.clone(),
                });
            }
        }
        for mode in [file.old_mode, file.new_mode].into_iter().flatten() {
            if mode == MODE_SYMLINK {
                return Err(Refusal::Symlink(file.path.clone()));
            }
            if mode == MODE_SUBMODULE {
                return Err(Refusal::Submodule(file.path.clone()));
            }
        }
        let mode_changes = match (file.old_mode, file.new_mode) {
            (Some(old), Some(new)) => old != new,
            (None, Some(new)) => new != MODE_FILE,
            _ => false,
        };
        if mode_changes {
            return Err(Refusal::ModeChange(file.path.clone()));
        }
    }
    Ok(())
}

/// `dir/**` covers the folder and everything in it; other patterns are
/// globs over the whole path.
fn protects(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix("/**") {
        Some(dir) => {
            path == dir || path.starts_with(&format!("{dir}/")) || glob::matches(pattern, path)
        }
        None => glob::matches(pattern, path),
    }
}

/// Relative, without `.`/`..` parts, empty parts or a `.git` folder, and
/// free of control characters.
fn is_safe_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.chars().any(char::is_control)
        && path
            .split('/')
            .all(|part| !matches!(part, "" | "." | "..") && !part.eq_ignore_ascii_case(".git"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(path: &str) -> PatchFile {
        PatchFile {
            path: path.into(),
            old_path: None,
            old_mode: Some(MODE_FILE),
            new_mode: Some(MODE_FILE),
        }
    }

    fn policy() -> PatchPolicy {
        PatchPolicy::new(1000, 3, "ignore-list.yaml", &["config/deploy/*".into()])
    }

    #[test]
    fn ordinary_edits_pass() {
        let files = [
            edit("app/models/order.rb"),
            edit("spec/models/order_spec.rb"),
        ];
        assert_eq!(check(&policy(), 500, &files), Ok(()));
    }

    #[test]
    fn protected_paths_are_refused_however_they_are_reached() {
        for path in [
            ".github/workflows/x.yml",
            ".claude/settings.json",
            ".codex/config.toml",
            "CODEOWNERS",
            "ignore-list.yaml",
            "vendor/bundle/ruby/3.3.0/gems/rack/lib/rack.rb",
            "node_modules/x/index.js",
            "config/deploy/production.rb",
        ] {
            assert!(
                matches!(
                    check(&policy(), 10, &[edit(path)]),
                    Err(Refusal::Protected { .. })
                ),
                "{path}"
            );
        }
        let renamed_away = PatchFile {
            old_path: Some(".github/workflows/ci.yml".into()),
            ..edit("ci.yml")
        };
        assert!(matches!(
            check(&policy(), 10, &[renamed_away]),
            Err(Refusal::Protected { .. })
        ));
        let deleted = PatchFile {
            new_mode: None,
            ..edit(".github/CODEOWNERS")
        };
        assert!(check(&policy(), 10, &[deleted]).is_err());
    }

    #[test]
    fn size_links_submodules_modes_and_odd_paths_are_refused() {
        assert_eq!(
            check(&policy(), 1001, &[edit("a.rb")]),
            Err(Refusal::TooLarge {
                bytes: 1001,
                max: 1000
            })
        );
        let four: Vec<PatchFile> = ["a", "b", "c", "d"].iter().map(|p| edit(p)).collect();
        assert!(matches!(
            check(&policy(), 10, &four),
            Err(Refusal::TooManyFiles { .. })
        ));
        let link = PatchFile {
            old_mode: None,
            new_mode: Some(MODE_SYMLINK),
            ..edit("config/secrets.yml")
        };
        assert_eq!(
            check(&policy(), 10, &[link]),
            Err(Refusal::Symlink("config/secrets.yml".into()))
        );
        let module = PatchFile {
            new_mode: Some(MODE_SUBMODULE),
            old_mode: Some(MODE_SUBMODULE),
            ..edit("lib/engine")
        };
        assert!(matches!(
            check(&policy(), 10, &[module]),
            Err(Refusal::Submodule(_))
        ));
        let executable = PatchFile {
            new_mode: Some(MODE_EXECUTABLE),
            ..edit("bin/setup")
        };
        assert!(matches!(
            check(&policy(), 10, &[executable]),
            Err(Refusal::ModeChange(_))
        ));
        for path in ["../etc/passwd", "/etc/passwd", "a/.git/config", "a//b"] {
            assert!(matches!(
                check(&policy(), 10, &[edit(path)]),
                Err(Refusal::UnsafePath(_))
            ));
        }
    }
}
