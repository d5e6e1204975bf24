//! The fix-pattern catalogue (`patterns/`): one markdown file per pattern
//! with YAML front matter. This crate parses, lints and ranks patterns; it
//! reads files only in [`Catalogue::load`], everything else works on text.

mod lint;
mod pattern;
mod rank;

pub use lint::{lint_dir, lint_files, Problem};
pub use pattern::{
    parse_pattern, FrontMatter, Pattern, PatternError, KNOWN_SHAPES, REQUIRED_SECTIONS,
};
pub use rank::{rank, Evidence, Ranked, UNIQUE_SIGNAL, WEAK_SIGNAL};

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Every pattern of a directory, with the revision they make together.
#[derive(Debug, Clone)]
pub struct Catalogue {
    pub patterns: Vec<Pattern>,
    /// `sha256:` and 16 hex digits over every file's name and content, so a
    /// stored prompt says exactly which catalogue it came from.
    pub revision: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    #[error("cannot read the pattern catalogue {path}: {cause}")]
    Read { path: String, cause: std::io::Error },
    #[error("{path}: {cause}")]
    Pattern { path: String, cause: PatternError },
}

/// Pattern files of a directory: `*.md` not starting with `_`, sorted.
pub fn pattern_files(dir: &Path) -> Result<Vec<PathBuf>, CatalogueError> {
    let read = std::fs::read_dir(dir).map_err(|cause| CatalogueError::Read {
        path: dir.display().to_string(),
        cause,
    })?;
    let mut files: Vec<PathBuf> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".md") && !name.starts_with('_') && p.is_file()
        })
        .collect();
    files.sort();
    Ok(files)
}

impl Catalogue {
    /// Loads every pattern of `dir`. Any unparsable pattern fails the load:
    /// `longtx patterns lint` says exactly what to fix.
    pub fn load(dir: &Path) -> Result<Catalogue, CatalogueError> {
        let mut hasher = Sha256::new();
        let mut patterns = Vec::new();
        for path in pattern_files(dir)? {
            let text = std::fs::read_to_string(&path).map_err(|cause| CatalogueError::Read {
                path: path.display().to_string(),
                cause,
            })?;
            hasher.update(path.file_name().unwrap().as_encoded_bytes());
            hasher.update([0]);
            hasher.update(text.as_bytes());
            hasher.update([0]);
            let pattern = parse_pattern(&path, &text).map_err(|cause| CatalogueError::Pattern {
                path: path.display().to_string(),
                cause,
            })?;
            patterns.push(pattern);
        }
        Ok(Catalogue {
            patterns,
            revision: revision_of(hasher),
        })
    }
}

fn revision_of(hasher: Sha256) -> String {
    let digest = hasher.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}
