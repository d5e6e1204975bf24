//! Controllers as Rails apps really have them: the action may live in a
//! parent controller or an included concern, and Rails' default Query Logs
//! tags carry `controller` without its namespace.

use super::{find_def, read_small, relative_to, ruby_files, Candidate};
use longtx_core::query_logs::underscore;
use std::path::Path;

/// How far up the parent chain (and into concerns) the action is followed.
const MAX_PARENTS: usize = 4;

/// Rails' own base controllers: an action no class below them defines
/// does not exist (a gem parent such as Devise's may define it).
const RAILS_BASES: [&str; 3] = [
    "ActionController::Base",
    "ActionController::API",
    "ActionController::Metal",
];

pub(super) fn locate_controller(repo: &Path, path: &str, action: &str) -> Vec<Candidate> {
    let relative = format!("app/controllers/{path}_controller.rb");
    // (candidate, defined in the controller's own file)
    let mut found: Vec<(Candidate, bool)> = Vec::new();
    if let Some(text) = read_small(repo, &repo.join(&relative)) {
        found.extend(candidate(
            repo,
            relative.clone(),
            text,
            action,
            format!("controller for {path} (Rails naming)"),
        ));
    }
    // `controller='rubygems'` (Rails' default tags) names no namespace:
    // every controller of that name that defines the action is a candidate.
    if !path.contains('/') && !found.iter().any(|(c, _)| c.line.is_some()) {
        let name = format!("{path}_controller.rb");
        let others: Vec<(Candidate, bool)> = ruby_files(&repo.join("app/controllers"), "rb")
            .into_iter()
            .filter(|file| file.file_name().is_some_and(|n| n == name.as_str()))
            .map(|file| relative_to(repo, &file))
            .filter(|other| *other != relative)
            .filter_map(|other| {
                let text = read_small(repo, &repo.join(&other))?;
                let namespace = other
                    .trim_start_matches("app/controllers/")
                    .trim_end_matches(&format!("/{name}"))
                    .to_owned();
                candidate(
                    repo,
                    other,
                    text,
                    action,
                    format!("a `{path}` controller in namespace `{namespace}` (the tag named no namespace; enable `:namespaced_controller` in `query_log_tags`)"),
                )
            })
            .collect();
        found.extend(others);
    }
    // Those that define the action first, in their own file before those
    // that inherit it (the sort keeps the order else).
    found.sort_by_key(|(c, own)| (c.line.is_none(), !own));
    found.into_iter().map(|(c, _)| c).collect()
}

/// The controller file as a candidate, and whether the action is in the
/// file itself: the action in it, else where it really comes from (a
/// concern it includes, a parent class in the repo), else which parent
/// outside the repository (a gem) can provide it. `None` when nothing can:
/// the chain ends at Rails' own base class, or at no parent at all.
fn candidate(
    repo: &Path,
    path: String,
    text: String,
    action: &str,
    why: String,
) -> Option<(Candidate, bool)> {
    if let Some((line, excerpt)) = find_def(&text, action) {
        let found = Candidate {
            path,
            line: Some(line),
            reason: format!("{why}, action method `{action}`"),
            excerpt: Some(excerpt),
            file_text: text,
        };
        return Some((found, true));
    }
    match defined_elsewhere(repo, &text, action, 0)? {
        Elsewhere::InRepo { path: there, line, excerpt, how } => Some((
            Candidate {
                path: there,
                line: Some(line),
                reason: format!("{why}: `def {action}` is not in {path} but {how}"),
                excerpt: Some(excerpt),
                file_text: text,
            },
            false,
        )),
        Elsewhere::Outside(parent) if RAILS_BASES.contains(&parent.trim_start_matches("::")) => None,
        Elsewhere::Outside(parent) => Some((
            Candidate {
                reason: format!(
                    "{why}; `def {action}` is not in this file or its parents in the repository: it can only come from {parent}, which is not in this repository (a gem), and the app overrides nothing"
                ),
                path,
                line: None,
                excerpt: None,
                file_text: text,
            },
            false,
        )),
    }
}

enum Elsewhere {
    InRepo {
        path: String,
        line: usize,
        excerpt: String,
        how: String,
    },
    /// The nearest parent class with no file in the repository.
    Outside(String),
}

fn defined_elsewhere(repo: &Path, text: &str, action: &str, depth: usize) -> Option<Elsewhere> {
    if depth >= MAX_PARENTS {
        return None;
    }
    let namespace = enclosing_modules(text);
    for concern in included(text).iter() {
        for relative in constant_files(
            concern,
            &namespace,
            &[
                "app/controllers/concerns",
                "app/models/concerns",
                "app/controllers",
            ],
        ) {
            let Some(concern_text) = read_small(repo, &repo.join(&relative)) else {
                continue;
            };
            if let Some((line, excerpt)) = find_def(&concern_text, action) {
                return Some(Elsewhere::InRepo {
                    path: relative,
                    line,
                    excerpt,
                    how: format!("in the concern {concern} it includes"),
                });
            }
        }
    }
    let parent = parent_class(text)?;
    for relative in constant_files(&parent, &namespace, &["app/controllers"]) {
        let Some(parent_text) = read_small(repo, &repo.join(&relative)) else {
            continue;
        };
        if let Some((line, excerpt)) = find_def(&parent_text, action) {
            return Some(Elsewhere::InRepo {
                path: relative,
                line,
                excerpt,
                how: format!("inherited from its parent {parent}"),
            });
        }
        return defined_elsewhere(repo, &parent_text, action, depth + 1).map(|found| match found {
            Elsewhere::InRepo {
                path,
                line,
                excerpt,
                how,
            } => Elsewhere::InRepo {
                path,
                line,
                excerpt,
                how: format!("{how} (through {parent})"),
            },
            outside => outside,
        });
    }
    Some(Elsewhere::Outside(parent))
}

/// Files a constant may live in, innermost namespace first (Ruby looks the
/// constant up in the enclosing modules before the top level).
pub(super) fn constant_files(constant: &str, namespace: &[String], roots: &[&str]) -> Vec<String> {
    let own: Vec<String> = constant
        .trim_start_matches("::")
        .split("::")
        .map(underscore)
        .collect();
    let mut prefixes: Vec<Vec<String>> = (0..=namespace.len())
        .rev()
        .map(|n| namespace[..n].iter().map(|m| underscore(m)).collect())
        .collect();
    if constant.starts_with("::") {
        prefixes = vec![Vec::new()];
    }
    let mut files = Vec::new();
    for root in roots {
        for prefix in &prefixes {
            let mut parts = prefix.clone();
            parts.extend(own.iter().cloned());
            files.push(format!("{root}/{}.rb", parts.join("/")));
        }
    }
    files
}

/// `class X < Parent` → `Parent`.
fn parent_class(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix("class ")?;
        let (_, parent) = rest.split_once('<')?;
        let parent: String = parent
            .trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        (!parent.is_empty()).then_some(parent)
    })
}

/// `include Foo, Bar::Baz` lines.
pub(super) fn included(text: &str) -> std::rc::Rc<Vec<String>> {
    thread_local! {
        static INCLUDED: super::memo::Memo<Vec<String>> = Default::default();
    }
    super::memo::by_text(&INCLUDED, text, read_included)
}

fn read_included(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("include "))
        .flat_map(|rest| rest.split(','))
        .map(|name| {
            name.trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect::<String>()
        })
        .filter(|name| name.starts_with(|c: char| c.is_ascii_uppercase()))
        .collect()
}

/// The modules a file's class sits in (`module Admin` blocks and the
/// compact `class Admin::UsersController` prefix).
pub(super) fn enclosing_modules(text: &str) -> Vec<String> {
    let mut modules = Vec::new();
    for line in text.lines() {
        let code = line.trim_start();
        if let Some(name) = code.strip_prefix("module ") {
            modules.extend(
                name.split_whitespace()
                    .next()
                    .unwrap_or("")
                    .split("::")
                    .map(str::to_owned),
            );
        } else if let Some(rest) = code.strip_prefix("class ") {
            let name = rest.split(['<', ' ', ';']).next().unwrap_or("");
            let mut parts: Vec<&str> = name.split("::").collect();
            parts.pop();
            modules.extend(parts.into_iter().map(str::to_owned));
            break;
        }
    }
    modules.retain(|m| !m.is_empty());
    modules
}
