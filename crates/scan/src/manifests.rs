//! The gems a checkout declares, read from its manifests: the Gemfile,
//! the Gemfile.lock and the gemspecs at its root and one folder down (an
//! engine's or a monorepo's, such as workarea's `core/workarea-core.gemspec`).
//! The scan asks them two things a line cannot tell:
//! - whether `Model.import(rows)` is activerecord-import's one bulk insert,
//!   or an application's own `import` (manageiq's YAML import saves one
//!   record at a time, with no transaction around it);
//! - whether the checkout keeps its data in MongoDB through Mongoid, which
//!   holds no SQL transaction: its `delete_all` is a `delete_many`, its
//!   callbacks run in no transaction (workarea, errbit).

use std::collections::BTreeSet;
use std::path::Path;

#[derive(Debug, Default)]
pub(crate) struct Gems {
    names: BTreeSet<String>,
    /// Whether any manifest was read: with none, nothing is known.
    read_any: bool,
}

impl Gems {
    pub(crate) fn read(repo: &Path) -> Gems {
        let mut gems = Gems::default();
        let mut folders = vec![repo.to_path_buf()];
        if let Ok(dir) = std::fs::read_dir(repo) {
            let mut subfolders: Vec<_> = dir
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            subfolders.sort();
            folders.extend(subfolders);
        }
        for folder in folders {
            let Ok(dir) = std::fs::read_dir(&folder) else {
                continue;
            };
            for entry in dir.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let kind = match name.as_str() {
                    "Gemfile" => Manifest::Gemfile,
                    "Gemfile.lock" => Manifest::Lock,
                    n if n.ends_with(".gemspec") => Manifest::Gemspec,
                    _ => continue,
                };
                if let Ok(text) = std::fs::read_to_string(entry.path()) {
                    gems.read_any = true;
                    gems.names.extend(kind.gems(&text));
                }
            }
        }
        gems
    }

    /// Whether a manifest names `gem`; `None` when the checkout has none.
    pub(crate) fn declares(&self, gem: &str) -> Option<bool> {
        self.read_any.then(|| self.names.contains(gem))
    }
}

/// The gems a Gemfile names (`gem 'x'`), comments aside.
pub(crate) fn gemfile_gems(gemfile: &str) -> Vec<String> {
    Manifest::Gemfile.gems(gemfile)
}

#[derive(Clone, Copy)]
enum Manifest {
    Gemfile,
    Lock,
    Gemspec,
}

impl Manifest {
    fn gems(self, text: &str) -> Vec<String> {
        text.lines()
            .filter_map(|line| {
                let rest = match self {
                    Manifest::Gemfile => line.trim().strip_prefix("gem ")?,
                    // `    activerecord-import (1.5.0)` under `specs:`.
                    Manifest::Lock => line
                        .strip_prefix("    ")
                        .filter(|r| !r.starts_with(' ') && r.contains(" ("))?,
                    Manifest::Gemspec => {
                        let at = line.find("add_")?;
                        let call = &line[at..];
                        let open = call.find(['(', ' '])?;
                        call[..open]
                            .ends_with("dependency")
                            .then_some(&call[open + 1..])?
                    }
                };
                let name: String = rest
                    .trim_start()
                    .trim_start_matches(['"', '\''])
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                    .collect();
                (!name.is_empty()).then_some(name)
            })
            .collect()
    }
}

/// Whether the checkout keeps its data in MongoDB: it declares Mongoid and
/// has no SQL database of its own (no `config/database.yml`, no schema, no
/// migrations). An application on both keeps its SQL findings.
pub(crate) fn document_database(repo: &Path, gems: &Gems) -> bool {
    let sql = [
        "config/database.yml",
        "db/schema.rb",
        "db/structure.sql",
        "db/migrate",
    ]
    .iter()
    .any(|p| repo.join(p).exists());
    !sql && gems.declares("mongoid") == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gems_are_read_from_each_kind_of_manifest() {
        let gemfile = Manifest::Gemfile
            .gems("source 'x'\ngem 'rails', '~> 7.1'\n  gem \"mongoid\"\n# gem 'sidekiq'");
        assert_eq!(gemfile, ["rails", "mongoid"]);
        let lock = Manifest::Lock
            .gems("GEM\n  specs:\n    activerecord-import (1.5.0)\n      activerecord (>= 4.2)\n");
        assert_eq!(
            lock,
            ["activerecord-import"],
            "a dependency's dependency is not read twice"
        );
        let gemspec = Manifest::Gemspec.gems(
            "  s.add_dependency 'mongoid', '~> 7.4'\n  s.add_runtime_dependency(\"sidekiq\", '>= 6')\n  s.name = 'x'",
        );
        assert_eq!(gemspec, ["mongoid", "sidekiq"]);
    }
}
