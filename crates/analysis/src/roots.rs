//! Every code root Rails would load in a checkout, found without running
//! Ruby: the application, path gems in the Gemfile, engines (an
//! `engine.rb` or a `< Rails::Engine` class under a `lib/`), packwerk
//! packs (`package.yml`), conventional `engines/*`, `components/*`,
//! `gems/*` and `packs/*` folders, and `ee/` or `enterprise/` overlays.
//! Each root's Ruby lives in its `app/` and `lib/` (extension controllers
//! such as `lib/controllers/backend` included), plus any folder its engine
//! adds to `paths["app/controllers"]` or the autoload paths.

use std::collections::BTreeSet;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    App,
    Engine,
    PathGem,
    Pack,
    Overlay,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CodeRoot {
    /// Relative to the checkout, without a trailing `/`; `""` for the app.
    pub dir: String,
    pub kind: RootKind,
    /// Folders whose Ruby files declare this root's classes.
    pub code_dirs: Vec<String>,
}

impl CodeRoot {
    /// How the prompt names it: "the engine `backend`", "the pack
    /// `packs/billing`"; `None` for the application itself.
    pub fn describe(&self) -> Option<String> {
        let what = match self.kind {
            RootKind::App => return None,
            RootKind::Engine => "engine",
            RootKind::PathGem => "path gem",
            RootKind::Pack => "pack",
            RootKind::Overlay => "overlay",
        };
        Some(format!("the {what} `{}`", self.dir))
    }

    pub fn tasks_dir(&self) -> String {
        join(&self.dir, "lib/tasks")
    }
}

/// Folders never searched for roots: dependencies, build output, and the
/// dummy apps engines test themselves with.
const SKIPPED: [&str; 9] = [
    "vendor",
    "node_modules",
    "tmp",
    "log",
    "public",
    "coverage",
    "dummy",
    "sandbox",
    "templates",
];
/// How deep engines and packs are looked for.
const MAX_DEPTH: usize = 6;

pub fn discover(repo: &Path) -> Vec<CodeRoot> {
    let mut found: Vec<(String, RootKind)> = vec![(String::new(), RootKind::App)];
    for gemfile in ["Gemfile", "gems.rb"] {
        if let Some(text) = super::read_small(repo, &repo.join(gemfile)) {
            for dir in path_gems(&text) {
                found.push((dir, RootKind::PathGem));
            }
        }
    }
    walk(repo, "", 0, &mut found);
    for convention in ["engines", "components", "gems", "packs"] {
        let Ok(entries) = std::fs::read_dir(repo.join(convention)) else {
            continue;
        };
        for entry in entries.flatten() {
            let dir = format!("{convention}/{}", entry.file_name().to_string_lossy());
            if repo.join(&dir).join("app").is_dir() || repo.join(&dir).join("lib").is_dir() {
                let kind = if convention == "packs" {
                    RootKind::Pack
                } else {
                    RootKind::Engine
                };
                found.push((dir, kind));
            }
        }
    }
    for overlay in ["ee", "enterprise", "jh"] {
        if repo.join(overlay).join("app").is_dir() {
            found.push((overlay.to_owned(), RootKind::Overlay));
        }
    }
    let mut seen = BTreeSet::new();
    let mut roots = Vec::new();
    for (dir, kind) in found {
        // Only folders inside the checkout: never an absolute path or `..`.
        if dir.starts_with('/') || dir.contains('\\') {
            continue;
        }
        let dir = dir.trim_matches('/').trim_start_matches("./").to_owned();
        if dir.split('/').any(|part| part == "..") || !seen.insert(dir.clone()) {
            continue;
        }
        let mut code_dirs = vec![join(&dir, "app"), join(&dir, "lib")];
        if kind == RootKind::App {
            // Classes declared in initializers are loaded too.
            code_dirs.push("config/initializers".to_owned());
        }
        code_dirs.extend(added_paths(repo, &dir));
        code_dirs.retain(|d| super::read_small_dir(repo, d));
        code_dirs.dedup();
        roots.push(CodeRoot {
            dir,
            kind,
            code_dirs,
        });
    }
    roots
}

fn join(dir: &str, rest: &str) -> String {
    if dir.is_empty() {
        rest.to_owned()
    } else {
        format!("{dir}/{rest}")
    }
}

/// Engines (`lib/**/engine.rb`, or a file under `lib/` declaring
/// `< Rails::Engine`) and packs (`package.yml`), below `rel`.
fn walk(repo: &Path, rel: &str, depth: usize, found: &mut Vec<(String, RootKind)>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(repo.join(rel)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = join(rel, &name);
        if kind.is_dir() {
            if name.starts_with('.') || SKIPPED.contains(&name.as_str()) {
                continue;
            }
            walk(repo, &path, depth + 1, found);
        } else if kind.is_file() {
            if name == "package.yml" && !rel.is_empty() {
                found.push((rel.to_owned(), RootKind::Pack));
            } else if name.ends_with(".rb") {
                if let Some((root, _)) = format!("/{path}").split_once("/lib/") {
                    let declares_engine = name == "engine.rb"
                        || super::read_small(repo, &entry.path()).is_some_and(|t| {
                            t.contains("< Rails::Engine") || t.contains("< ::Rails::Engine")
                        });
                    if declares_engine && name.ends_with(".rb") && !root.is_empty() {
                        found.push((root.trim_start_matches('/').to_owned(), RootKind::Engine));
                    }
                }
            }
        }
    }
}

/// `gem "x", path: "engines/x"` (and `:path =>`), `gemspec path: "x"`.
fn path_gems(gemfile: &str) -> Vec<String> {
    gemfile
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("gem ") || l.starts_with("gem(") || l.starts_with("gemspec"))
        .filter_map(|l| {
            let at = l.find("path:").map(|i| i + 5).or_else(|| {
                l.find(":path")
                    .and_then(|i| l[i..].find("=>").map(|j| i + j + 2))
            })?;
            quoted(&l[at..])
        })
        .filter(|dir| !dir.starts_with('/') && !dir.contains("#{"))
        .collect()
}

/// The first quoted string of `text`.
fn quoted(text: &str) -> Option<String> {
    let text = text.trim_start();
    let quote = text.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = &text[1..];
    body.find(quote).map(|end| body[..end].to_owned())
}

/// Folders an engine or the application adds to what Rails loads:
/// `paths["app/controllers"] << "lib/controllers/backend"`,
/// `config.autoload_paths += %W(#{config.root}/extras)`,
/// `config.eager_load_paths << root.join("lib", "x")`. Only literal,
/// root-relative paths are read.
fn added_paths(repo: &Path, dir: &str) -> Vec<String> {
    let mut files = vec![join(dir, "config/application.rb")];
    if let Ok(entries) = std::fs::read_dir(repo.join(join(dir, "lib"))) {
        // lib/<gem>/engine.rb, one or two levels down.
        for entry in entries.flatten() {
            let sub = entry.path();
            for candidate in [sub.join("engine.rb"), sub.join("engine").join("engine.rb")] {
                if candidate.is_file() {
                    files.push(
                        candidate
                            .strip_prefix(repo)
                            .unwrap_or(&candidate)
                            .display()
                            .to_string(),
                    );
                }
            }
            if let Ok(inner) = std::fs::read_dir(&sub) {
                for deeper in inner.flatten() {
                    let engine = deeper.path().join("engine.rb");
                    if engine.is_file() {
                        files.push(
                            engine
                                .strip_prefix(repo)
                                .unwrap_or(&engine)
                                .display()
                                .to_string(),
                        );
                    }
                }
            }
        }
    }
    let mut dirs = Vec::new();
    for file in files {
        let Some(text) = super::read_small(repo, &repo.join(&file)) else {
            continue;
        };
        for line in text.lines() {
            let code = line.trim();
            let adds = code.contains("paths[\"app/controllers\"]")
                || code.contains("paths['app/controllers']")
                || code.contains("autoload_paths")
                || code.contains("eager_load_paths");
            if !adds {
                continue;
            }
            for word in code.split(['"', '\'', ' ', '(', ')', ',']) {
                let word = word
                    .trim_start_matches("#{config.root}/")
                    .trim_start_matches("#{root}/")
                    .trim_start_matches("#{Rails.root}/");
                let looks_like_dir = word.contains('/')
                    && !word.starts_with('/')
                    && !word.split('/').any(|part| part == "..")
                    && !word.contains("#{")
                    && !word.starts_with("app/controllers")
                    && word
                        .chars()
                        .all(|c| c.is_alphanumeric() || matches!(c, '/' | '_' | '-' | '.'));
                if looks_like_dir {
                    dirs.push(join(dir, word.trim_end_matches('/')));
                }
            }
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_gems_are_read_in_both_hash_styles() {
        let gemfile = "source 'https://rubygems.org'\ngem 'rails'\ngem \"billing\", path: \"engines/billing\"\ngem 'admin', :path => 'components/admin'\ngemspec path: 'core'\ngem 'x', path: \"#{__dir__}/y\"\n";
        assert_eq!(
            path_gems(gemfile),
            ["engines/billing", "components/admin", "core"]
        );
    }
}
