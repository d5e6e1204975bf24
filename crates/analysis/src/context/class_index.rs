//! Every class of every code root (the application, its engines, packs and
//! path gems), with its file, its parent and the methods models and
//! services define: what calls are resolved against.

use super::super::modular::Index;
use super::super::per_commit::{shared, Cache};
use super::super::{read_declared_classes, read_small, ruby_files, zeitwerk_stem};
use super::models::explicit_table_name;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// Classes declared under every code root: full name to (path, line),
/// with each file's text.
pub(crate) struct ClassIndex {
    pub classes: HashMap<String, (String, usize)>,
    /// Modules (concerns, helpers) the same way: full name to (path, line).
    pub modules: HashMap<String, (String, usize)>,
    pub texts: HashMap<String, String>,
    /// Explicit `self.table_name`s: table to class.
    pub table_names: HashMap<String, String>,
    /// Instance methods of models and services: name to where defined.
    pub methods: HashMap<String, Vec<(String, usize)>>,
    /// `class Repository::Git < Repository`: class to its parent, resolved
    /// to a full name where the index knows it.
    pub parents: HashMap<String, String>,
    /// Constants an initializer binds to a gem's object
    /// (`ApplicationsTable = Airrecord.table(...)`): name to the gem's constant.
    pub bound: HashMap<String, String>,
    /// Names of polymorphic `belongs_to` associations (`purchaseable`):
    /// their records may be of any class that declares the other side.
    pub polymorphic: HashSet<String>,
    /// Names of the state-machine events models declare (`event :complete`):
    /// a call of one of them may move a record through its machine.
    pub events: HashSet<String>,
    /// Rails observers (`class ProjectObserver < ActiveRecord::Observer`),
    /// by name, in name order: found once per commit, not per save read.
    pub observers: Vec<String>,
}

/// `Name = Gem::Thing.build(...)` -> (`Name`, `Gem::Thing`).
fn binding(line: &str) -> Option<(String, String)> {
    let (name, value) = line.split_once(" = ")?;
    let is_constant = |s: &str| {
        s.split("::")
            .all(|part| part.chars().next().is_some_and(|c| c.is_ascii_uppercase()))
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
    };
    let name = name.trim();
    let value = value.trim();
    let end = value
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .filter(|&at| value[at..].starts_with(['.', '(']))?;
    let target = value[..end].trim_end_matches(':');
    (!line.starts_with(' ') && is_constant(name) && !target.is_empty() && is_constant(target))
        .then(|| (name.to_owned(), target.to_owned()))
}

/// `belongs_to :purchaseable, polymorphic: true` -> `purchaseable`.
fn polymorphic_belongs_to(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix("belongs_to :")?;
    let polymorphic = rest.contains("polymorphic: true") || rest.contains(":polymorphic => true");
    let name = super::word_at(rest);
    (polymorphic && !name.is_empty()).then_some(name)
}

/// `event :complete do` -> `complete`; also a machine-level
/// `transition(from: :cart, to: :address, on: :next)` (`:on => :next`),
/// which state_machines requires to name its event and which defines that
/// event (its test `MachineWithTransitionsTest`: "Must specify :on event").
/// Solidus builds its checkout this way, with no `event :next` line.
/// Only the first of several events (`on: [:a, :b]`) is read.
pub(crate) fn declared_event(line: &str) -> Option<String> {
    let code = line.trim_start();
    if code.starts_with('#') {
        return None;
    }
    if let Some(rest) = code.strip_prefix("event :") {
        let name = super::word_at(rest);
        return (!name.is_empty()).then_some(name);
    }
    // `transition` as a word, also inside a block on the line
    // (Solidus's `next_event_transitions.each { |t| transition(t.merge(:on => :next)) }`).
    let rest = code.match_indices("transition").find_map(|(at, word)| {
        let before = code[..at].chars().next_back();
        let rest = &code[at + word.len()..];
        let own_word = !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
        (own_word && rest.starts_with([' ', '('])).then_some(rest)
    })?;
    let at = [" on: ", "(on: ", ",on: ", ":on => "]
        .iter()
        .find_map(|needle| rest.find(needle).map(|at| at + needle.len()))?;
    let name = super::word_at(
        rest[at..]
            .trim_start_matches(['[', ' '])
            .strip_prefix(':')?,
    );
    (!name.is_empty()).then_some(name)
}

/// A model's file: `app/models/` of the application or of any root.
pub(crate) fn is_model_path(path: &str) -> bool {
    path.starts_with("app/models/") || path.contains("/app/models/")
}

fn holds_methods(path: &str) -> bool {
    is_model_path(path) || path.starts_with("app/services/") || path.contains("/app/services/")
}

impl ClassIndex {
    /// The index of `repo` at its current commit, built once per commit
    /// and shared, as the location index is.
    pub fn of(repo: &Path) -> Arc<ClassIndex> {
        static CACHE: Cache<ClassIndex> = OnceLock::new();
        shared(&CACHE, repo, || ClassIndex::build(repo))
    }

    fn build(repo: &Path) -> ClassIndex {
        let mut index = ClassIndex {
            classes: HashMap::new(),
            modules: HashMap::new(),
            texts: HashMap::new(),
            table_names: HashMap::new(),
            methods: HashMap::new(),
            parents: HashMap::new(),
            bound: HashMap::new(),
            polymorphic: HashSet::new(),
            events: HashSet::new(),
            observers: Vec::new(),
        };
        for file in ruby_files(&repo.join("config/initializers"), "rb") {
            let Some(text) = read_small(repo, &file) else {
                continue;
            };
            for (name, target) in text.lines().filter_map(binding) {
                index.bound.insert(name, target);
            }
        }
        let mut written_parents: Vec<(String, String, Vec<String>)> = Vec::new();
        // The files the location index read for this commit: each file is
        // read from disk once per commit, for both.
        for (path, text) in Index::of(repo).sources() {
            if index.texts.contains_key(path) {
                continue;
            }
            index.add(path.to_owned(), text.to_owned(), &mut written_parents);
        }
        for (class, parent, namespace) in written_parents {
            let resolved = (0..=namespace.len())
                .rev()
                .map(|n| {
                    let mut parts = namespace[..n].to_vec();
                    parts.push(parent.trim_start_matches("::").to_owned());
                    parts.join("::")
                })
                .find(|full| index.classes.contains_key(full))
                .unwrap_or(parent);
            index.parents.insert(class, resolved);
        }
        index.observers = index
            .parents
            .iter()
            .filter(|(_, parent)| parent.trim_start_matches("::") == "ActiveRecord::Observer")
            .map(|(class, _)| class.clone())
            .collect();
        index.observers.sort();
        index
    }

    fn add(
        &mut self,
        path: String,
        text: String,
        parents: &mut Vec<(String, String, Vec<String>)>,
    ) {
        // Read once per file here: nothing to remember.
        let classes = read_declared_classes(&text);
        for (line, name) in &classes {
            // A class reopened elsewhere (`class User; module Connecting`
            // in `app/models/user/connecting.rb`) is defined where
            // Zeitwerk loads it from.
            let conventional = format!("/{}.rb", zeitwerk_stem(name));
            let keep_known = self.classes.get(name).is_some_and(|(known, _)| {
                !path.ends_with(&conventional) || known.ends_with(&conventional)
            });
            if !keep_known {
                self.classes.insert(name.clone(), (path.clone(), *line));
            }
        }
        for decl in super::super::ruby_facts::read(&text).decls {
            if !decl.is_class {
                let conventional = format!("/{}.rb", zeitwerk_stem(&decl.full));
                let keep_known = self.modules.get(&decl.full).is_some_and(|(known, _)| {
                    !path.ends_with(&conventional) || known.ends_with(&conventional)
                });
                if !keep_known {
                    self.modules
                        .insert(decl.full.clone(), (path.clone(), decl.line));
                }
            }
            if let Some(parent) = decl.parent {
                parents.push((decl.full, parent, decl.namespace));
            }
        }
        if let (Some(table), Some((_, class))) = (explicit_table_name(&text), classes.first()) {
            self.table_names.insert(table, class.clone());
        }
        if is_model_path(&path) {
            self.polymorphic
                .extend(text.lines().filter_map(polymorphic_belongs_to));
            self.events.extend(text.lines().filter_map(declared_event));
        }
        if holds_methods(&path) {
            for (i, line) in text.lines().enumerate() {
                if let Some(rest) = line.trim_start().strip_prefix("def ") {
                    let name = super::word_at(rest);
                    if !name.is_empty() && name != "self" {
                        self.methods
                            .entry(name)
                            .or_default()
                            .push((path.clone(), i + 1));
                    }
                }
            }
        }
        self.texts.insert(path, text);
    }

    /// The first ancestor of `class` the index does not declare: a gem's
    /// base (`Airrecord::Table`), not Rails' own (`ActiveRecord::Base`,
    /// `ActionMailer::Base`), which is how the app is built rather than a
    /// client it calls.
    pub fn gem_ancestor(&self, class: &str) -> Option<&String> {
        let mut current = class;
        for _ in 0..4 {
            let parent = self.parents.get(current)?;
            if !self.classes.contains_key(parent) {
                let framework = ["Active", "Action", "Rails::"]
                    .iter()
                    .any(|prefix| parent.trim_start_matches("::").starts_with(prefix));
                return (!framework).then_some(parent);
            }
            current = parent;
        }
        None
    }

    /// The classes that inherit from `class`, directly or further down
    /// (single-table inheritance keeps them in the parent's table).
    pub fn descendants(&self, class: &str) -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        let mut frontier = vec![class.to_owned()];
        while let Some(parent) = frontier.pop() {
            let mut children: Vec<&String> = self
                .parents
                .iter()
                .filter(|(_, p)| **p == parent)
                .map(|(c, _)| c)
                .collect();
            children.sort();
            for child in children {
                if !found.contains(child) && found.len() < 40 {
                    found.push(child.clone());
                    frontier.push(child.clone());
                }
            }
        }
        found
    }

    /// The model classes above `class` up to Active Record's base.
    pub fn model_ancestors(&self, class: &str) -> Vec<String> {
        let mut found = Vec::new();
        let mut current = class.to_owned();
        while let Some(parent) = self.parents.get(&current) {
            let is_model = self
                .classes
                .get(parent)
                .is_some_and(|(path, _)| is_model_path(path));
            if !is_model || parent.ends_with("ApplicationRecord") || found.contains(parent) {
                break;
            }
            found.push(parent.clone());
            current = parent.clone();
        }
        found
    }

    /// `constant` as written in a file inside `namespace`: the innermost
    /// enclosing module first, as Ruby looks it up.
    pub fn resolve(&self, constant: &str, namespace: &[String]) -> Option<String> {
        let constant = constant.trim_start_matches("::");
        (0..=namespace.len()).rev().find_map(|n| {
            let mut parts = namespace[..n].to_vec();
            parts.push(constant.to_owned());
            let full = parts.join("::");
            self.classes.contains_key(&full).then_some(full)
        })
    }

    /// `StripeService::Issuing::Card` where `module StripeService` does
    /// `include Stripe` and the application defines no `Issuing`: Ruby
    /// finds `Stripe::Issuing::Card`, a gem's constant.
    pub fn through_included_gem(&self, constant: &str) -> Option<String> {
        let constant = constant.trim_start_matches("::");
        let (head, rest) = constant.split_once("::")?;
        let (path, _) = self.modules.get(head).or_else(|| self.classes.get(head))?;
        let text = self.texts.get(path)?;
        text.lines()
            .filter_map(|l| l.trim().strip_prefix("include "))
            .map(str::trim)
            .find(|gem| {
                gem.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                    && !self.classes.contains_key(*gem)
                    && !self.modules.contains_key(*gem)
            })
            .map(|gem| format!("{gem}::{rest}"))
    }

    /// Where a class or module `full` is declared: (path, text).
    pub fn file_of(&self, full: &str) -> Option<(&String, &String)> {
        let (path, _) = self.classes.get(full).or_else(|| self.modules.get(full))?;
        Some((path, self.texts.get(path)?))
    }

    /// A module or class `constant` as written inside `namespace`.
    pub fn resolve_any(&self, constant: &str, namespace: &[String]) -> Option<String> {
        let constant = constant.trim_start_matches("::");
        (0..=namespace.len()).rev().find_map(|n| {
            let mut parts = namespace[..n].to_vec();
            parts.push(constant.to_owned());
            let full = parts.join("::");
            (self.classes.contains_key(&full) || self.modules.contains_key(&full)).then_some(full)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{binding, declared_event};

    #[test]
    fn an_event_is_declared_by_its_block_or_by_a_machine_level_transition_on_it() {
        assert_eq!(
            declared_event("  event :complete do"),
            Some("complete".into())
        );
        assert_eq!(
            declared_event(
                "    klass.next_event_transitions.each { |t| transition(t.merge(:on => :next)) }"
            ),
            Some("next".into())
        );
        assert_eq!(
            declared_event("  add_transition({:from => a, :on => :next})"),
            None
        );
        assert_eq!(
            declared_event("  transition(t.merge(:on => :next))"),
            Some("next".into())
        );
        assert_eq!(
            declared_event("  transition parked: :idling, on: [:ignite, :shift_up]"),
            Some("ignite".into())
        );
        assert_eq!(
            declared_event("  transition to: :complete, if: :paid?"),
            None
        );
        assert_eq!(declared_event("  transitions from: :a, to: :b"), None);
        assert_eq!(
            declared_event("  # transition(on: :next) is built below"),
            None
        );
    }

    #[test]
    fn an_initializer_binds_a_constant_to_a_gem_object() {
        assert_eq!(
            binding("ApplicationsTable = Airrecord.table(key, \"app\", \"tbl\")"),
            Some(("ApplicationsTable".into(), "Airrecord".into()))
        );
        assert_eq!(
            binding("STRIPE = Stripe::StripeClient.new(api_key)"),
            Some(("STRIPE".into(), "Stripe::StripeClient".into()))
        );
        assert_eq!(binding("  Rails.application.config.x = 1"), None);
        assert_eq!(binding("TIMEOUT = 30"), None);
    }
}
