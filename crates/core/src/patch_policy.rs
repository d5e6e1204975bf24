//! What an agent's patch may touch, checked before anything reaches
//! GitHub. longtx commits every round itself, so this is the one gate
//! between what a (possibly prompt-injected) agent wrote and the
//! repository: workflows, agent settings and instructions, other CI
//! systems' and editors' configs, ownership rules, the ignore list and
//! vendored code are never written; symlinks and submodules never enter;
//! modes git does not know never reach git; the patch and what it writes
//! are bounded. The patch is checked three times: its text before git
//! reads it ([`preflight`]), the files its headers name ([`check`]), and
//! the tree change it makes on the base ([`check_applied`]), which is what
//! is committed.

pub mod paths;
pub mod preflight;

/// Paths no agent patch may add, change, rename or delete. Matched after
/// [`paths::fold`] (case, Unicode look-alikes, trailing dots); `**/` at the
/// front matches at any depth, where the tools read the file.
pub const ALWAYS_PROTECTED: [&str; 45] = [
    // GitHub: workflows, ownership, submodules.
    ".github/**",
    "**/CODEOWNERS",
    ".gitmodules",
    // git attributes can mark a file `linguist-generated` or `-diff`, which
    // hides it from the PR's diff view.
    "**/.gitattributes",
    // Agents' settings, instructions and tool configs, read from the
    // checkout by the next round's agent and by the pre-review
    // (claude-code-action's restore-config.ts lists the first eight).
    "**/.claude/**",
    "**/.claude.json",
    "**/.mcp.json",
    "**/.ripgreprc",
    "**/CLAUDE.md",
    "**/CLAUDE.local.md",
    "**/.husky/**",
    "**/.codex/**",
    "**/AGENTS.md",
    "**/AGENTS.override.md",
    "**/.agents/**",
    "**/.cursor/**",
    "**/.cursorrules",
    "**/.windsurf/**",
    "**/.windsurfrules",
    "**/.clinerules",
    "**/.clinerules/**",
    "**/.gemini/**",
    "**/GEMINI.md",
    "**/.aider*",
    "**/.continue/**",
    "**/.devin/**",
    "**/copilot-instructions.md",
    // Other CI systems and hooks, which run what they are given.
    ".circleci/**",
    ".gitlab-ci.yml",
    ".gitlab/**",
    ".buildkite/**",
    "**/Jenkinsfile",
    ".travis.yml",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    ".pre-commit-config.yaml",
    "lefthook.yml",
    ".lefthook.yml",
    // Editors and dev containers, which run tasks when a person opens the
    // checkout.
    "**/.vscode/**",
    "**/.idea/**",
    "**/.devcontainer/**",
    "**/.devcontainer.json",
    // Code that is not the application's own.
    "vendor/**",
    "node_modules/**",
];

pub const DEFAULT_MAX_PATCH_BYTES: usize = 1024 * 1024;
pub const DEFAULT_MAX_PATCH_FILES: usize = 50;
/// What one file of the applied change may hold, and all of them together,
/// as multiples of the patch cap: a one-line edit of a large model file is
/// the whole file in the commit, but a patch that writes eight times its own
/// cap is not a fix of a transaction.
pub const FILE_BYTES_PER_PATCH_BYTE: usize = 4;
pub const WRITTEN_BYTES_PER_PATCH_BYTE: usize = 8;

/// Git's file modes.
pub const MODE_FILE: u32 = 0o100644;
pub const MODE_EXECUTABLE: u32 = 0o100755;
pub const MODE_SYMLINK: u32 = 0o120000;
pub const MODE_SUBMODULE: u32 = 0o160000;

#[derive(Debug, Clone, PartialEq)]
pub struct PatchPolicy {
    /// The patch's own length (`LONGTX_MAX_PATCH_BYTES`).
    pub max_bytes: usize,
    /// Files it may touch (`LONGTX_MAX_PATCH_FILES`).
    pub max_files: usize,
    /// Bytes one file of the applied change may hold.
    pub max_file_bytes: usize,
    /// Bytes the applied change may write in all.
    pub max_written_bytes: usize,
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
            max_file_bytes: max_bytes.saturating_mul(FILE_BYTES_PER_PATCH_BYTE),
            max_written_bytes: max_bytes.saturating_mul(WRITTEN_BYTES_PER_PATCH_BYTE),
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

/// One path of the change a patch makes on its base, read from the two
/// trees: what is committed, whatever the patch's headers said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedFile {
    pub path: String,
    /// The base tree's entry; `None` when the patch adds the path.
    pub base_mode: Option<u32>,
    /// The new tree's entry; `None` when the patch deletes the path.
    pub new_mode: Option<u32>,
    /// The new content's length (0 for a deletion).
    pub bytes: usize,
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
    #[error("the patch changes the file mode of {0}; longtx commits every file as 100644 (createCommitOnBranch keeps no mode)")]
    ModeChange(String),
    #[error("the patch names an unsafe path {0:?}")]
    UnsafePath(String),
    #[error("the patch names {0:?}, whose invisible or look-alike characters hide what it is")]
    DeceptivePath(String),
    #[error("the patch gives {path} the mode {mode}, which is not a mode git has for a file; refused before git reads it")]
    UnknownMode { path: String, mode: String },
    #[error("the patch's binary hunk for {path} is not well formed: {why}")]
    BadBinary { path: String, why: String },
    #[error("the patch makes {path} {bytes} bytes, over the {max} one file may hold (4 x LONGTX_MAX_PATCH_BYTES)")]
    FileTooLarge {
        path: String,
        bytes: usize,
        max: usize,
    },
    #[error("the patch writes {bytes} bytes in all, over the {max} a patch may write (8 x LONGTX_MAX_PATCH_BYTES)")]
    WritesTooMuch { bytes: usize, max: usize },
    #[error("{0} is a symbolic link in the base; the patch writes through it, and links are never changed")]
    BaseSymlink(String),
    #[error("{0} is executable (100755) in the base; createCommitOnBranch would commit it as 100644 and drop the bit, so longtx does not change it")]
    Executable(String),
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
            check_path(policy, path)?;
        }
        for mode in [file.old_mode, file.new_mode].into_iter().flatten() {
            special_mode(&file.path, mode)?;
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

/// Checks the change a patch makes on its base, tree against tree: every
/// path again, the base's modes (a symlink, a submodule or an executable
/// file is never rewritten, since the commit API would turn it into a
/// plain file), the new modes, and the bytes written.
pub fn check_applied(policy: &PatchPolicy, files: &[AppliedFile]) -> Result<(), Refusal> {
    if files.len() > policy.max_files {
        return Err(Refusal::TooManyFiles {
            files: files.len(),
            max: policy.max_files,
        });
    }
    let mut written = 0usize;
    for file in files {
        check_path(policy, &file.path)?;
        match file.base_mode {
            Some(MODE_SYMLINK) => return Err(Refusal::BaseSymlink(file.path.clone())),
            Some(MODE_SUBMODULE) => return Err(Refusal::Submodule(file.path.clone())),
            Some(MODE_EXECUTABLE) if file.new_mode.is_some() => {
                return Err(Refusal::Executable(file.path.clone()))
            }
            _ => {}
        }
        if let Some(mode) = file.new_mode {
            special_mode(&file.path, mode)?;
            if mode != MODE_FILE {
                return Err(Refusal::ModeChange(file.path.clone()));
            }
        }
        if file.bytes > policy.max_file_bytes {
            return Err(Refusal::FileTooLarge {
                path: file.path.clone(),
                bytes: file.bytes,
                max: policy.max_file_bytes,
            });
        }
        written = written.saturating_add(file.bytes);
        if written > policy.max_written_bytes {
            return Err(Refusal::WritesTooMuch {
                bytes: written,
                max: policy.max_written_bytes,
            });
        }
    }
    Ok(())
}

fn check_path(policy: &PatchPolicy, path: &str) -> Result<(), Refusal> {
    if !is_safe_path(path) {
        return Err(Refusal::UnsafePath(path.to_owned()));
    }
    if paths::is_deceptive(path) {
        return Err(Refusal::DeceptivePath(path.to_owned()));
    }
    if let Some(pattern) = policy.protected.iter().find(|p| paths::protects(p, path)) {
        return Err(Refusal::Protected {
            path: path.to_owned(),
            pattern: pattern.clone(),
        });
    }
    Ok(())
}

fn special_mode(path: &str, mode: u32) -> Result<(), Refusal> {
    match mode {
        MODE_SYMLINK => Err(Refusal::Symlink(path.to_owned())),
        MODE_SUBMODULE => Err(Refusal::Submodule(path.to_owned())),
        _ => Ok(()),
    }
}

/// Relative, without `.`/`..` parts, empty parts or a `.git` folder (however
/// spelled: `.GIT`, `.git.`), and free of control characters.
fn is_safe_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.chars().any(char::is_control)
        && path.split('/').all(|part| {
            let folded = paths::fold(part);
            !matches!(part, "" | "." | "..") && !matches!(folded.as_str(), ".git" | "" | "." | "..")
        })
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
