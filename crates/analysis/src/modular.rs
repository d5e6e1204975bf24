//! Location across every code root (engines, packs, path gems, overlays):
//! one class index over all roots, Ruby's method lookup through it, and
//! rake tasks in every root's `lib/tasks`. Used when the conventional
//! layout of the application itself does not hold the code.

use super::per_commit::{shared, Cache};
use super::roots::{discover, CodeRoot};
use super::ruby_facts::{self, MixinKind, RubyFacts};
use super::{block_from, find_rake_task, rake_excerpt, read_small, ruby_files, Candidate};
use longtx_core::query_logs::underscore;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// How many ancestors (parents and their mixins) lookup follows.
const MAX_DEPTH: usize = 12;

/// Rails' own base controllers: an action no class below them defines
/// does not exist.
const RAILS_BASES: [&str; 3] = [
    "ActionController::Base",
    "ActionController::API",
    "ActionController::Metal",
];

struct File {
    path: String,
    root: usize,
    facts: RubyFacts,
    /// The file's text: the one read of it for this commit, which the
    /// prompt's class index reads too.
    text: String,
}

/// Every class and module of every root, with where each is declared.
pub struct Index {
    /// The checkout.
    root: PathBuf,
    roots: Vec<CodeRoot>,
    files: Vec<File>,
    /// Full constant name to the files declaring it (reopenings too).
    constants: HashMap<String, Vec<usize>>,
    /// `controller_path` to controller class names.
    controllers: HashMap<String, Vec<String>>,
    /// Class-level methods (`def self.x`, or in a `ClassMethods` module)
    /// by name: the class macros a class body may call.
    macros: HashMap<String, Vec<(usize, usize)>>,
}

impl Index {
    pub fn build(repo: &Path) -> Index {
        let roots = discover(repo);
        let mut files = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (r, root) in roots.iter().enumerate() {
            for dir in &root.code_dirs {
                for file in ruby_files(&repo.join(dir), "rb") {
                    let path = super::relative_to(repo, &file);
                    // A root nested in another (an engine inside the app's
                    // lib/) keeps its own files.
                    let owner = owning_root(&roots, &path).unwrap_or(r);
                    if owner != r
                        || path.contains("/templates/")
                        || path.contains("/tasks/")
                        || !seen.insert(path.clone())
                    {
                        continue;
                    }
                    let Some(text) = read_small(repo, &file) else {
                        continue;
                    };
                    files.push(File {
                        path,
                        root: r,
                        facts: ruby_facts::read(&text),
                        text,
                    });
                }
            }
        }
        let mut constants: HashMap<String, Vec<usize>> = HashMap::new();
        let mut controllers: HashMap<String, Vec<String>> = HashMap::new();
        let mut macros: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        for (i, file) in files.iter().enumerate() {
            for def in &file.facts.defs {
                if def.singleton || def.owner.ends_with("ClassMethods") {
                    macros
                        .entry(def.name.clone())
                        .or_default()
                        .push((i, def.line));
                }
            }
            for decl in &file.facts.decls {
                let at = constants.entry(decl.full.clone()).or_default();
                if !at.contains(&i) {
                    at.push(i);
                }
                if decl.is_class && decl.full.ends_with("Controller") {
                    let path = longtx_core::query_logs::controller_path(&decl.full);
                    let names = controllers.entry(path).or_default();
                    if !names.contains(&decl.full) {
                        names.push(decl.full.clone());
                    }
                }
            }
        }
        // The file Zeitwerk would load first: its path ends with the name.
        for (name, at) in constants.iter_mut() {
            let stem = name
                .split("::")
                .map(underscore)
                .collect::<Vec<_>>()
                .join("/");
            at.sort_by_key(|i| !files[*i].path.ends_with(&format!("{stem}.rb")));
        }
        Index {
            root: repo.to_owned(),
            roots,
            files,
            constants,
            controllers,
            macros,
        }
    }

    /// The index of `repo` at its current commit, built once per commit
    /// and shared (a checkout without git is indexed afresh each time).
    pub fn of(repo: &Path) -> Arc<Index> {
        static CACHE: Cache<Index> = OnceLock::new();
        shared(&CACHE, repo, || Index::build(repo))
    }

    /// Every Ruby file of every root, as (path, text), in root order.
    pub(super) fn sources(&self) -> impl Iterator<Item = (&str, &str)> {
        self.files
            .iter()
            .map(|f| (f.path.as_str(), f.text.as_str()))
    }

    fn root_of(&self, file: usize) -> &CodeRoot {
        &self.roots[self.files[file].root]
    }

    /// `constant` as Ruby resolves it from inside `namespace`: the
    /// innermost enclosing module first, then outwards.
    fn resolve(&self, constant: &str, namespace: &[String]) -> Option<String> {
        if let Some(absolute) = constant.strip_prefix("::") {
            return self
                .constants
                .contains_key(absolute)
                .then(|| absolute.to_owned());
        }
        (0..=namespace.len()).rev().find_map(|n| {
            let full = if n == 0 {
                constant.to_owned()
            } else {
                format!("{}::{constant}", namespace[..n].join("::"))
            };
            self.constants.contains_key(&full).then_some(full)
        })
    }
}

/// The files that declare `class` (a class, not a module), in the
/// application or any root, the file Zeitwerk would load first; each with
/// its root when that is not the application (" (in the pack `x`)").
pub(super) fn files_declaring_class(repo: &Path, class: &str) -> Vec<(String, String)> {
    let index = Index::of(repo);
    let Some(files) = index.constants.get(class) else {
        return Vec::new();
    };
    files
        .iter()
        .filter(|&&f| {
            index.files[f]
                .facts
                .decls
                .iter()
                .any(|d| d.full == class && d.is_class)
        })
        .map(|&f| {
            let root = index
                .root_of(f)
                .describe()
                .map(|r| format!(" (in {r})"))
                .unwrap_or_default();
            (index.files[f].path.clone(), root)
        })
        .collect()
}

/// The root a path belongs to: the deepest whose folder holds it.
fn owning_root(roots: &[CodeRoot], path: &str) -> Option<usize> {
    roots
        .iter()
        .enumerate()
        .filter(|(_, r)| r.dir.is_empty() || path.starts_with(&format!("{}/", r.dir)))
        .max_by_key(|(_, r)| r.dir.len())
        .map(|(i, _)| i)
}

/// Where a method Ruby would run comes from.
enum Found {
    InRepo {
        file: usize,
        line: usize,
        /// "inherited from Spree::Admin::ResourceController".
        how: Vec<String>,
    },
    /// The nearest ancestor with no file in the repository (a gem).
    Outside(String),
}

/// Ruby's lookup of instance method `method` on `class`: prepended
/// modules (last prepended first), the class itself (every file that
/// opens it), included modules (last included first), then the parent.
fn lookup(index: &Index, class: &str, method: &str, depth: usize) -> Option<Found> {
    if depth > MAX_DEPTH {
        return None;
    }
    let files = index.constants.get(class)?;
    let mixins = |kind: MixinKind| -> Vec<(String, Vec<String>)> {
        let mut found = Vec::new();
        for &f in files {
            let facts = &index.files[f].facts;
            let namespace = facts
                .decls
                .iter()
                .find(|d| d.full == class)
                .map(|d| d.namespace.clone())
                .unwrap_or_default();
            for m in facts
                .mixins
                .iter()
                .filter(|m| m.owner == class && m.kind == kind)
            {
                found.push((m.module.clone(), namespace.clone()));
            }
        }
        found.reverse();
        found
    };
    let in_module = |module: &str, namespace: &[String], why: &str| -> Option<Found> {
        let full = index.resolve(module, namespace)?;
        own_def(index, &full, method, false).map(|(file, line)| Found::InRepo {
            file,
            line,
            how: vec![format!("{why} {full}")],
        })
    };
    for (module, namespace) in mixins(MixinKind::Prepend) {
        if let Some(found) = in_module(&module, &namespace, "in the module it prepends,") {
            return Some(found);
        }
    }
    if let Some((file, line)) = own_def(index, class, method, false) {
        return Some(Found::InRepo {
            file,
            line,
            how: Vec::new(),
        });
    }
    if let Some(found) = from_macro(index, class, method) {
        return Some(found);
    }
    for (module, namespace) in mixins(MixinKind::Include) {
        if let Some(found) = in_module(&module, &namespace, "in the module it includes,") {
            return Some(found);
        }
    }
    let (parent, namespace) = files.iter().find_map(|&f| {
        index.files[f]
            .facts
            .decls
            .iter()
            .find(|d| d.full == class && d.parent.is_some())
            .map(|d| (d.parent.clone().unwrap_or_default(), d.namespace.clone()))
    })?;
    match index.resolve(&parent, &namespace) {
        Some(full) if full != class => match lookup(index, &full, method, depth + 1)? {
            Found::InRepo {
                file,
                line,
                mut how,
            } => {
                how.push(format!("inherited from {full}"));
                Some(Found::InRepo { file, line, how })
            }
            outside => Some(outside),
        },
        _ if RAILS_BASES.contains(&parent.trim_start_matches("::")) => None,
        _ => Some(Found::Outside(parent)),
    }
}

/// A method a class macro the class body calls defines on the class
/// (`crudify :page` evaluating `def update` through `module_eval`): the
/// first `def method` inside the macro's body, heredocs included.
fn from_macro(index: &Index, class: &str, method: &str) -> Option<Found> {
    let repo_file = |f: usize| index.files[f].path.clone();
    for &f in index.constants.get(class)? {
        for call in &index.files[f].facts.calls {
            for &(file, line) in index.macros.get(call).into_iter().flatten() {
                let Some(macro_text) = read_small(&index.root, &index.root.join(repo_file(file)))
                else {
                    continue;
                };
                if let Some(at) = def_in_body(&macro_text, line, method) {
                    return Some(Found::InRepo {
                        file,
                        line: at,
                        how: vec![format!("defined by the class macro `{call}` it calls")],
                    });
                }
            }
        }
    }
    None
}

/// The line of `def method` between the 1-based `start` (a `def`) and the
/// `end` at its indentation.
fn def_in_body(text: &str, start: usize, method: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.get(start - 1)?;
    let indent = first.len() - first.trim_start().len();
    for (i, line) in lines.iter().enumerate().skip(start) {
        let this_indent = line.len() - line.trim_start().len();
        let code = line.trim();
        if this_indent == indent && code == "end" {
            return None;
        }
        if let Some(rest) = code
            .strip_prefix("def ")
            .and_then(|r| r.strip_prefix(method))
        {
            if rest.is_empty() || rest.starts_with(['(', ' ', ';']) {
                return Some(i + 1);
            }
        }
    }
    None
}

/// `def method` in a file declaring `owner`, as one of `owner`'s own.
fn own_def(index: &Index, owner: &str, method: &str, singleton: bool) -> Option<(usize, usize)> {
    index.constants.get(owner)?.iter().find_map(|&f| {
        index.files[f]
            .facts
            .defs
            .iter()
            .find(|d| d.owner == owner && d.name == method && d.singleton == singleton)
            .map(|d| (f, d.line))
    })
}

fn candidate(
    repo: &Path,
    index: &Index,
    file: usize,
    line: usize,
    why: String,
) -> Option<Candidate> {
    let path = index.files[file].path.clone();
    let text = read_small(repo, &repo.join(&path))?;
    let root = index
        .root_of(file)
        .describe()
        .map(|r| format!(" (in {r})"))
        .unwrap_or_default();
    Some(Candidate {
        excerpt: Some(block_from(&text, line)),
        path,
        line: Some(line),
        reason: format!("{why}{root}"),
        file_text: text,
    })
}

/// A controller action, whichever root declares the controller.
pub fn locate_controller(repo: &Path, path: &str, action: &str) -> Vec<Candidate> {
    let index = Index::of(repo);
    let Some(classes) = index.controllers.get(path) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for class in classes {
        match lookup(&index, class, action, 0) {
            Some(Found::InRepo { file, line, how }) => {
                let why = if how.is_empty() {
                    format!("{class}, action method `{action}`")
                } else {
                    format!("{class}: `def {action}` is {}", how.join(", "))
                };
                found.extend(candidate(repo, &index, file, line, why));
            }
            Some(Found::Outside(parent)) => {
                let Some(&file) = index.constants[class].first() else {
                    continue;
                };
                let root = index
                    .root_of(file)
                    .describe()
                    .map(|r| format!(" (in {r})"))
                    .unwrap_or_default();
                found.push(Candidate {
                    path: index.files[file].path.clone(),
                    line: None,
                    reason: format!(
                        "{class}{root}: `def {action}` is not in it or its ancestors in the repository: it can only come from {parent}, which is not in this repository (a gem)"
                    ),
                    excerpt: None,
                    file_text: read_small(repo, &repo.join(&index.files[file].path)).unwrap_or_default(),
                });
            }
            None => {}
        }
    }
    found.sort_by_key(|c| c.line.is_none());
    found
}

/// A job's or worker's `perform`, whichever root declares it and
/// wherever in its ancestry `perform` is defined. When a base class
/// defines it, the subclass's own methods that `perform` calls are named.
pub fn locate_worker(repo: &Path, class: &str) -> Vec<Candidate> {
    let index = Index::of(repo);
    if !index.constants.contains_key(class) {
        return Vec::new();
    }
    match lookup(&index, class, "perform", 0) {
        Some(Found::InRepo { file, line, how }) => {
            let mut why = if how.is_empty() {
                format!("{class}, method `perform`")
            } else {
                format!("{class}: `def perform` is {}", how.join(", "))
            };
            let own_file = index.constants[class][0];
            if file != own_file {
                let hooks = hooks_called(repo, &index, file, line, class);
                if !hooks.is_empty() {
                    why.push_str(&format!("; it calls {class}'s own {}", hooks.join(", ")));
                }
            }
            candidate(repo, &index, file, line, why)
                .into_iter()
                .collect()
        }
        // `delegate :perform, to: :class`: the class method runs.
        _ => own_def(&index, class, "perform", true)
            .and_then(|(file, line)| {
                candidate(
                    repo,
                    &index,
                    file,
                    line,
                    format!("{class}, class method `self.perform`"),
                )
            })
            .into_iter()
            .collect(),
    }
}

/// The subclass's own methods the inherited `perform` (at `file:line`)
/// calls: `deliver` (app/workers/liked.rb:7).
fn hooks_called(repo: &Path, index: &Index, file: usize, line: usize, class: &str) -> Vec<String> {
    let Some(text) = read_small(repo, &repo.join(&index.files[file].path)) else {
        return Vec::new();
    };
    let body = block_from(&text, line);
    let words: std::collections::HashSet<&str> = body
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '?' || c == '!'))
        .collect();
    let mut hooks = Vec::new();
    for &f in &index.constants[class] {
        for def in index.files[f]
            .facts
            .defs
            .iter()
            .filter(|d| d.owner == class && !d.singleton)
        {
            if def.name != "perform" && words.contains(def.name.as_str()) {
                hooks.push(format!(
                    "`{}` ({}:{})",
                    def.name, index.files[f].path, def.line
                ));
            }
        }
    }
    hooks
}

/// A rake task in any root's `lib/tasks/**/*.rake`.
pub fn locate_rake(repo: &Path, task: &[String]) -> Vec<Candidate> {
    let index = Index::of(repo);
    let mut found = Vec::new();
    for root in index.roots.iter().filter(|r| !r.dir.is_empty()) {
        // lib/tasks (what an engine loads), then the rest of lib/ (files a
        // Railtie loads itself).
        let tasks = repo.join(root.tasks_dir());
        let mut files = ruby_files(&tasks, "rake");
        files.extend(
            ruby_files(&repo.join(format!("{}/lib", root.dir)), "rake")
                .into_iter()
                .filter(|f| !f.starts_with(&tasks)),
        );
        for file in files {
            let Some(text) = read_small(repo, &file) else {
                continue;
            };
            if let Some(line) = find_rake_task(&text, task) {
                found.push(Candidate {
                    path: super::relative_to(repo, &file),
                    line: Some(line),
                    reason: format!(
                        "defines rake task {} (in {})",
                        task.join(":"),
                        root.describe().unwrap_or_default()
                    ),
                    excerpt: Some(rake_excerpt(&text, line)),
                    file_text: text,
                });
            }
        }
    }
    found
}
