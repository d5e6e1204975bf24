//! Where a `query_source` most likely lives in a Rails checkout.
//!
//! - `admin/users#update` → `app/controllers/admin/users_controller.rb`, `def update`
//! - `Billing::SyncWorker` → `app/{workers,sidekiq,jobs}/billing/sync_worker.rb`, `def perform`
//! - `rake:ns:task` → the `task` inside `namespace :ns` in `lib/tasks/**/*.rake`
//!
//! File names follow Zeitwerk (`underscore` per constant segment, acronyms
//! included); when the conventional path does not exist, the class
//! declaration is searched for instead. Every candidate says why it was chosen.

mod context;
mod controllers;
mod flattened;
mod memo;
mod modular;
mod per_commit;
mod roots;
mod ruby_facts;

use longtx_core::query_logs::{controller_path, underscore};
use serde::Serialize;
use std::path::{Path, PathBuf};

pub use context::{
    camelize, code_context, explicit_table_names, has_slow_work, has_slow_work_in_code,
    lead_context, singularize, Alternative, CallRef, CallbackRef, CodeContext, ModelRef, Site,
    SiteLine, SlowCall, Through, CASCADE_WORK, MAX_SITES,
};

/// One place in the code the transaction may come from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Candidate {
    /// Relative to the checkout's root.
    pub path: String,
    /// 1-based line of the method or task, when found.
    pub line: Option<usize>,
    pub reason: String,
    /// The method or task block, when found.
    pub excerpt: Option<String>,
    /// The whole file, for ranking; not shown in the prompt.
    #[serde(skip)]
    pub file_text: String,
}

const WORKER_DIRS: [&str; 3] = ["app/workers", "app/sidekiq", "app/jobs"];
const MAX_EXCERPT_LINES: usize = 120;
/// Files bigger than this are not read (generated code, fixtures).
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// What kind of code path a `query_source` names.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceKind {
    Controller { path: String, action: String },
    Worker { class: String },
    Rake { task: Vec<String> },
    Unknown,
}

pub fn classify(query_source: &str) -> SourceKind {
    let s = query_source.trim();
    if s.is_empty() || s == "unknown" {
        return SourceKind::Unknown;
    }
    if let Some(task) = s.strip_prefix("rake:") {
        return SourceKind::Rake {
            task: task.split(':').map(str::to_owned).collect(),
        };
    }
    if let Some((controller, action)) = s.split_once('#') {
        return SourceKind::Controller {
            path: controller_path(controller),
            action: action.to_owned(),
        };
    }
    SourceKind::Worker {
        class: s.to_owned(),
    }
}

/// Candidates for `query_source` in the checkout at `repo`, best first.
/// An empty list means nothing was found; [`explain_none`] says why.
pub fn locate(repo: &Path, query_source: &str) -> Vec<Candidate> {
    if names_a_path_outside(query_source) {
        return Vec::new();
    }
    // The application's conventional layout first; then every code root
    // (engines, packs, path gems, overlays) with Ruby's method lookup.
    let found = match classify(query_source) {
        SourceKind::Controller { path, action } => {
            prefer(controllers::locate_controller(repo, &path, &action), || {
                modular::locate_controller(repo, &path, &action)
            })
        }
        SourceKind::Worker { class } => prefer(locate_worker(repo, &class), || {
            modular::locate_worker(repo, &class)
        }),
        SourceKind::Rake { task } => prefer(locate_rake(repo, &task), || {
            modular::locate_rake(repo, &task)
        }),
        SourceKind::Unknown => Vec::new(),
    };
    if found.is_empty() && flattened::looks_flattened(query_source) {
        return flattened::locate_flattened(repo, query_source);
    }
    found
}

/// The conventional answer when it names a line; else the modular one
/// when it does, else whichever found anything.
fn prefer(
    conventional: Vec<Candidate>,
    modular: impl FnOnce() -> Vec<Candidate>,
) -> Vec<Candidate> {
    let has_line = |found: &[Candidate]| found.iter().any(|c| c.line.is_some());
    // A prepended module (an enterprise overlay's) runs before the class's
    // own method: only the full lookup can tell.
    let prepends = conventional.iter().any(|c| {
        c.file_text
            .lines()
            .any(|l| l.trim_start().starts_with("prepend "))
    });
    if has_line(&conventional) && !prepends {
        return conventional;
    }
    let modular = modular();
    if has_line(&modular) || conventional.is_empty() {
        modular
    } else {
        conventional
    }
}

/// A source is joined into file paths: `..`, an absolute path or a
/// backslash could name a file outside the checkout, so such a source is
/// never looked up (and symlinks leading out are refused when reading).
fn names_a_path_outside(query_source: &str) -> bool {
    let s = query_source.trim();
    s.starts_with('/')
        || s.contains('\\')
        || s.contains('\0')
        || s.split(['/', ':', '#']).any(|segment| segment == "..")
}

/// A plain sentence for the prompt when [`locate`] found nothing.
pub fn explain_none(query_source: &str) -> String {
    if names_a_path_outside(query_source) {
        return format!(
            "The query_source {query_source:?} names a path outside the repository (`..`, an absolute path or a backslash), so no file was read for it."
        );
    }
    match classify(query_source) {
        SourceKind::Controller { path, action } => format!(
            "No controller was found for {query_source} in the application or its engines, packs and overlays: expected a class whose controller path is `{path}` (conventionally app/controllers/{path}_controller.rb) with `def {action}`. Search the code for the action."
        ),
        SourceKind::Worker { class } => format!(
            "No worker or job was found for {class} in the application or its engines, packs and overlays. Search the code for `class {}`.",
            class.rsplit("::").next().unwrap_or(&class)
        ),
        SourceKind::Rake { task } => format!(
            "No rake task {} was found in lib/tasks/**/*.rake of the application or its engines.",
            task.join(":")
        ),
        SourceKind::Unknown => "The query_source is unknown: the statement carried no Query Logs comment, so the code path must be found from the tables and traces.".into(),
    }
}

/// The path Zeitwerk loads a constant from, without `.rb`:
/// `Billing::SyncWorker` -> `billing/sync_worker`.
fn zeitwerk_stem(class: &str) -> String {
    class
        .split("::")
        .map(underscore)
        .collect::<Vec<_>>()
        .join("/")
}

fn locate_worker(repo: &Path, class: &str) -> Vec<Candidate> {
    let file_stem = zeitwerk_stem(class);
    let mut found = Vec::new();
    for dir in WORKER_DIRS {
        let relative = format!("{dir}/{file_stem}.rb");
        if let Some(text) = read_small(repo, &repo.join(&relative)) {
            found.push(worker_candidate(
                relative,
                text,
                format!("{class} by Zeitwerk naming"),
            ));
        }
    }
    if found.is_empty() {
        // Custom inflections (`OAuth2` → `oauth2`) break the conventional
        // path, and jobs live outside the usual folders too: the class
        // declaration itself, with its namespace (nested `module` blocks or
        // the compact `class A::B`), so `Billing::SyncWorker` is not taken
        // for `Crm::SyncWorker`. Read from the index of code roots, built
        // once per commit rather than scanned on every call.
        for (relative, root) in modular::files_declaring_class(repo, class) {
            if let Some(text) = read_small(repo, &repo.join(&relative)) {
                found.push(worker_candidate(
                    relative,
                    text,
                    format!("declares `class {class}`{root}"),
                ));
            }
        }
    }
    found
}

/// Every class a file declares, with its full name: `module Billing` then
/// `class SyncWorker` is `Billing::SyncWorker`; `class OAuth::TokenJob` is
/// itself. Nesting is followed by indentation, as Ruby files are written.
fn declared_classes(text: &str) -> std::rc::Rc<Vec<(usize, String)>> {
    thread_local! {
        static CLASSES: memo::Memo<Vec<(usize, String)>> = Default::default();
    }
    memo::by_text(&CLASSES, text, read_declared_classes)
}

fn read_declared_classes(text: &str) -> Vec<(usize, String)> {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let code = line.trim();
        if code == "end" {
            if stack.last().is_some_and(|(at, _)| *at == indent) {
                stack.pop();
            }
            continue;
        }
        let opened = code
            .strip_prefix("module ")
            .map(|rest| (false, rest))
            .or_else(|| code.strip_prefix("class ").map(|rest| (true, rest)));
        let Some((is_class, rest)) = opened else {
            continue;
        };
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        if name.is_empty() || name.starts_with("<<") {
            continue;
        }
        // The stack holds full names: the innermost is the prefix.
        let full = match stack.last() {
            Some((_, outer)) if !name.starts_with("::") => format!("{outer}::{name}"),
            _ => name.trim_start_matches("::").to_owned(),
        };
        if is_class {
            found.push((i + 1, full.clone()));
        }
        // A one-line `class X < Y; end` opens and closes at once.
        if !code.ends_with("end") {
            stack.push((indent, full));
        }
    }
    found
}

fn worker_candidate(path: String, text: String, why: String) -> Candidate {
    // The instance method Sidekiq and ActiveJob call, before a class
    // method of the same name (`def self.perform(model)` enqueuing it).
    let method = find_instance_def(&text, "perform").or_else(|| find_def(&text, "perform"));
    Candidate {
        path,
        line: method.as_ref().map(|(line, _)| *line),
        reason: match method {
            Some(_) => format!("{why}, method `perform`"),
            None => format!("{why}; no `def perform` in this file"),
        },
        excerpt: method.map(|(_, excerpt)| excerpt),
        file_text: text,
    }
}

fn locate_rake(repo: &Path, task: &[String]) -> Vec<Candidate> {
    let mut found = Vec::new();
    for file in ruby_files(&repo.join("lib/tasks"), "rake") {
        let Some(text) = read_small(repo, &file) else {
            continue;
        };
        if let Some(line) = find_rake_task(&text, task) {
            found.push(Candidate {
                path: relative_to(repo, &file),
                line: Some(line),
                reason: format!("defines rake task {}", task.join(":")),
                excerpt: Some(rake_excerpt(&text, line)),
                file_text: text,
            });
        }
    }
    found
}

/// A task with a block is excerpted to its `end`; a block-less one
/// (`task :x => [:a, :b]`, only prerequisites) is its line alone.
fn rake_excerpt(text: &str, line: usize) -> String {
    let first = text.lines().nth(line - 1).unwrap_or("");
    if first.contains(" do") || first.contains('{') {
        block_from(text, line)
    } else {
        first.to_owned()
    }
}

/// The 1-based line of `task` inside its nested `namespace` blocks.
fn find_rake_task(text: &str, task: &[String]) -> Option<usize> {
    let (name, namespaces) = task.split_last()?;
    let mut stack: Vec<(usize, String)> = Vec::new();
    for (i, indent, code) in code_lines(text) {
        if code == "end" || code.starts_with("end ") {
            if stack
                .last()
                .is_some_and(|(ns_indent, _)| *ns_indent == indent)
            {
                stack.pop();
            }
            continue;
        }
        if let Some(ns) = code
            .strip_prefix("namespace ")
            .or_else(|| code.strip_prefix("namespace("))
            .and_then(symbol_name)
        {
            stack.push((indent, ns));
            continue;
        }
        if let Some(defined) = code
            .strip_prefix("task ")
            .or_else(|| code.strip_prefix("task("))
            .and_then(task_name)
        {
            // `task 'test:core'` inside `namespace :workarea` is
            // `workarea:test:core`.
            let mut path: Vec<&str> = stack.iter().map(|(_, n)| n.as_str()).collect();
            path.extend(defined.split(':'));
            let wanted: Vec<&str> = namespaces
                .iter()
                .map(String::as_str)
                .chain([name.as_str()])
                .collect();
            if path == wanted {
                return Some(i + 1);
            }
        }
    }
    None
}

/// The lines Ruby reads as code, as (0-based index, indentation, trimmed
/// text): inside a heredoc, an `end` line is text, not the end of a block,
/// so heredoc bodies are skipped.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, usize, &str)> {
    let mut heredoc: Option<String> = None;
    text.lines().enumerate().filter_map(move |(i, line)| {
        let code = line.trim();
        if let Some(terminator) = &heredoc {
            if code == terminator {
                heredoc = None;
            }
            return None;
        }
        heredoc = heredoc_terminator(code);
        Some((i, line.len() - line.trim_start().len(), code))
    })
}

/// The terminator of a heredoc a line opens (`<<~SQL`, `<<-EOS`, `<<TEXT`).
fn heredoc_terminator(code: &str) -> Option<String> {
    let at = code.find("<<")?;
    let rest = code[at + 2..].trim_start_matches(['~', '-']);
    let rest = rest.trim_start_matches(['\'', '"']);
    let id: String = rest
        .chars()
        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
        .collect();
    (!id.is_empty()).then_some(id)
}

/// A task's name: a symbol, or a string that may hold `:` (`'test:core'`).
fn task_name(rest: &str) -> Option<String> {
    let quoted = rest.trim_start_matches('(').trim();
    for quote in ['"', '\''] {
        if let Some(body) = quoted.strip_prefix(quote) {
            let name: String = body.chars().take_while(|c| *c != quote).collect();
            let valid = !name.is_empty()
                && name
                    .split(':')
                    .all(|s| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_'));
            return valid.then_some(name);
        }
    }
    symbol_name(rest)
}

/// `:name`, `name:`, `"name"`, `'name'` at the start of `rest`.
fn symbol_name(rest: &str) -> Option<String> {
    let rest = rest.trim_start_matches('(').trim();
    let (body, terminators): (&str, &[char]) = if let Some(r) = rest.strip_prefix(':') {
        (r, &[' ', ',', '=', ')'])
    } else if let Some(r) = rest.strip_prefix('"') {
        (r, &['"'])
    } else if let Some(r) = rest.strip_prefix('\'') {
        (r, &['\''])
    } else {
        // `task name: :environment`
        (rest, &[':', ' ', ','])
    };
    let name: String = body
        .chars()
        .take_while(|c| !terminators.contains(c))
        .collect();
    (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')).then_some(name)
}

/// The line of the instance method `name` (neither `def self.name` nor
/// one inside `class << self`) and its body.
fn find_instance_def(text: &str, name: &str) -> Option<(usize, String)> {
    facts_of(text)
        .defs
        .iter()
        .find(|d| d.name == name && !d.singleton)
        .map(|d| (d.line, block_from(text, d.line)))
}

/// The line of the class method `name` (`def self.name`, or one inside
/// `class << self`) and its body.
fn find_singleton_def(text: &str, name: &str) -> Option<(usize, String)> {
    facts_of(text)
        .defs
        .iter()
        .find(|d| d.name == name && d.singleton)
        .map(|d| (d.line, block_from(text, d.line)))
}

/// Whether the `def` at 1-based `line` defines a class method (`def
/// self.x`, or one inside `class << self` or a concern's `class_methods`).
fn singleton_def_at(text: &str, line: usize) -> bool {
    facts_of(text)
        .defs
        .iter()
        .any(|d| d.line == line && d.singleton)
}

/// [`ruby_facts::read`] of a file's text, remembered ([`memo`]).
fn facts_of(text: &str) -> std::rc::Rc<ruby_facts::RubyFacts> {
    thread_local! {
        static FACTS: memo::Memo<ruby_facts::RubyFacts> = Default::default();
    }
    memo::by_text(&FACTS, text, ruby_facts::read)
}

/// The line of `def name` (also `def self.name`) and its body.
fn find_def(text: &str, name: &str) -> Option<(usize, String)> {
    thread_local! {
        static DEFS: memo::Memo<std::collections::HashMap<String, usize>> = Default::default();
    }
    let line = *memo::by_text(&DEFS, text, def_lines).get(name)?;
    Some((line, block_from(text, line)))
}

/// The first line of each `def name` / `def self.name` of a text, by name:
/// the name runs to `(`, a space, `;` or the end of the line.
fn def_lines(text: &str) -> std::collections::HashMap<String, usize> {
    let mut lines = std::collections::HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("def ") else {
            continue;
        };
        let rest = rest.strip_prefix("self.").unwrap_or(rest);
        let name = rest.split(['(', ' ', ';']).next().unwrap_or("");
        if !name.is_empty() {
            lines.entry(name.to_owned()).or_insert(i + 1);
        }
    }
    lines
}

/// From the 1-based `start` line to the `end` at the same indentation.
fn block_from(text: &str, start: usize) -> String {
    let mut lines = text.lines().skip(start - 1).take(MAX_EXCERPT_LINES);
    let Some(first) = lines.next() else {
        return String::new();
    };
    if is_one_line_def(first) {
        return first.to_owned();
    }
    let indent = first.len() - first.trim_start().len();
    let mut block = vec![first];
    for line in lines {
        block.push(line);
        let this_indent = line.len() - line.trim_start().len();
        if this_indent == indent && line.trim() == "end" {
            break;
        }
    }
    block.join("\n")
}

/// A file of the checkout, small enough to read. Its real path must be
/// inside the checkout's real path: a symlink leading out is not followed.
/// `def index; end`, `def x = expr`, `def x(a) = expr`: the whole method
/// on its line, so the excerpt must not run on into the next methods.
fn is_one_line_def(line: &str) -> bool {
    let code = line.trim();
    let Some(rest) = code.strip_prefix("def ") else {
        return false;
    };
    if code.ends_with("; end") || code.ends_with(";end") {
        return true;
    }
    // Endless: `name = ...` or `name(args) = ...`, not `name=(v)` (a setter).
    let signature_end = match rest.find('(') {
        Some(open)
            if rest[..open]
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '?' || c == '!') =>
        {
            rest[open..].find(')').map(|close| open + close + 1)
        }
        _ => rest.find(' '),
    };
    signature_end.is_some_and(|end| rest[end..].trim_start().starts_with("= "))
}

fn read_small(repo: &Path, path: &Path) -> Option<String> {
    let root = std::fs::canonicalize(repo).ok()?;
    if !std::fs::canonicalize(path).ok()?.starts_with(&root) {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// A folder of the checkout whose real path is inside the checkout's real
/// path (a symlink leading out is not a code folder).
fn read_small_dir(repo: &Path, dir: &str) -> bool {
    let (Ok(root), Ok(real)) = (
        std::fs::canonicalize(repo),
        std::fs::canonicalize(repo.join(dir)),
    ) else {
        return false;
    };
    real.starts_with(root) && real.is_dir()
}

/// Files with extension `ext` below `dir`, sorted, not following links.
fn ruby_files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == ext) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn relative_to(repo: &Path, file: &Path) -> String {
    file.strip_prefix(repo)
        .unwrap_or(file)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_map_to_the_files_zeitwerk_loads_them_from() {
        assert_eq!(zeitwerk_stem("User"), "user");
        assert_eq!(
            zeitwerk_stem("Event::ApplicationJob"),
            "event/application_job"
        );
        assert_eq!(zeitwerk_stem("HTMLParser"), "html_parser");
    }

    #[test]
    fn classification_of_the_four_forms() {
        assert_eq!(
            classify("admin/users#update"),
            SourceKind::Controller {
                path: "admin/users".into(),
                action: "update".into()
            }
        );
        assert_eq!(
            classify("Admin::UsersController#update"),
            SourceKind::Controller {
                path: "admin/users".into(),
                action: "update".into()
            }
        );
        assert_eq!(
            classify("Billing::SyncWorker"),
            SourceKind::Worker {
                class: "Billing::SyncWorker".into()
            }
        );
        assert_eq!(
            classify("rake:db:seed"),
            SourceKind::Rake {
                task: vec!["db".into(), "seed".into()]
            }
        );
        assert_eq!(classify("unknown"), SourceKind::Unknown);
    }

    #[test]
    fn rake_tasks_in_nested_namespaces() {
        let text = "namespace :billing do\n  desc 'x'\n  task sync: :environment do\n    Sync.run\n  end\n\n  namespace :invoices do\n    task :resend => :environment do\n      Invoice.resend\n    end\n  end\nend\ntask \"top\" do\nend\n";
        assert_eq!(
            find_rake_task(text, &["billing".into(), "sync".into()]),
            Some(3)
        );
        assert_eq!(
            find_rake_task(
                text,
                &["billing".into(), "invoices".into(), "resend".into()]
            ),
            Some(8)
        );
        assert_eq!(find_rake_task(text, &["top".into()]), Some(13));
        assert_eq!(
            find_rake_task(text, &["sync".into()]),
            None,
            "namespaces must match"
        );
    }

    #[test]
    fn method_blocks_end_at_their_own_end() {
        let text = "class A\n  def update\n    if x\n      y\n    end\n  end\n\n  def updated\n  end\nend\n";
        let (line, excerpt) = find_def(text, "update").unwrap();
        assert_eq!(line, 2);
        assert_eq!(excerpt, "  def update\n    if x\n      y\n    end\n  end");
        assert_eq!(find_def(text, "updat"), None);
    }
}
