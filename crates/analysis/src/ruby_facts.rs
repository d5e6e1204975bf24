//! What one Ruby file declares, read line by line as Ruby files are
//! written (nesting by indentation): its classes and modules with their
//! full names and parents, the methods each defines (instance or
//! singleton), and the modules each includes or prepends.

/// A class or module a file opens.
#[derive(Debug, Clone, PartialEq)]
pub struct Decl {
    pub full: String,
    pub line: usize,
    pub is_class: bool,
    /// `class X < Parent`: the parent as written.
    pub parent: Option<String>,
    /// The modules around it, outermost first (for constant lookup).
    pub namespace: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Def {
    pub owner: String,
    pub name: String,
    pub line: usize,
    /// `def self.x`, or inside `class << self`.
    pub singleton: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum MixinKind {
    Include,
    Prepend,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Mixin {
    pub owner: String,
    pub module: String,
    pub kind: MixinKind,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RubyFacts {
    pub decls: Vec<Decl>,
    pub defs: Vec<Def>,
    /// In the order written.
    pub mixins: Vec<Mixin>,
    /// The identifiers that start lines ([`class_level_calls`]): the class
    /// macros the file's class bodies may call.
    pub calls: Vec<String>,
}

struct Open {
    indent: usize,
    full: String,
    singleton: bool,
}

pub fn read(text: &str) -> RubyFacts {
    let mut facts = RubyFacts {
        calls: class_level_calls(text),
        ..RubyFacts::default()
    };
    let mut stack: Vec<Open> = Vec::new();
    for (i, indent, code) in super::code_lines(text) {
        if code.starts_with('#') {
            continue;
        }
        if code == "end" || code.starts_with("end ") || code.starts_with("end;") {
            if stack.last().is_some_and(|o| o.indent == indent) {
                stack.pop();
            }
            continue;
        }
        let owner = stack
            .iter()
            .rev()
            .find(|o| !o.singleton)
            .map(|o| o.full.clone());
        let in_singleton = stack.last().is_some_and(|o| o.singleton);
        // A concern's `class_methods do` block defines class methods, as
        // `class << self` does (danbooru's `ApplicationRecord.update!`).
        if code.starts_with("class << self") || code == "class_methods do" {
            if let Some(owner) = owner {
                stack.push(Open {
                    indent,
                    full: owner,
                    singleton: true,
                });
            }
            continue;
        }
        let opened = code
            .strip_prefix("module ")
            .map(|rest| (false, rest))
            .or_else(|| code.strip_prefix("class ").map(|rest| (true, rest)));
        if let Some((is_class, rest)) = opened {
            let name = constant_at(rest);
            if name.is_empty() {
                continue;
            }
            let full = full_name(owner.as_deref(), &name);
            let parent = is_class
                .then(|| rest.split_once('<'))
                .flatten()
                .map(|(_, p)| constant_at(p))
                .filter(|p| !p.is_empty());
            let mut namespace: Vec<String> = full.split("::").map(str::to_owned).collect();
            namespace.pop();
            facts.decls.push(Decl {
                full: full.clone(),
                line: i + 1,
                is_class,
                parent,
                namespace,
            });
            let one_line = code.ends_with(" end") || code.ends_with(";end");
            if !one_line {
                stack.push(Open {
                    indent,
                    full,
                    singleton: false,
                });
            }
            continue;
        }
        let Some(owner) = owner else {
            continue;
        };
        if let Some(rest) = code.strip_prefix("def ") {
            let (singleton, rest) = match rest.strip_prefix("self.") {
                Some(rest) => (true, rest),
                None => (in_singleton, rest),
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '?' | '!' | '='))
                .collect();
            if !name.is_empty() {
                facts.defs.push(Def {
                    owner,
                    name,
                    line: i + 1,
                    singleton,
                });
            }
            continue;
        }
        for (keyword, kind) in [
            ("include ", MixinKind::Include),
            ("prepend ", MixinKind::Prepend),
        ] {
            if let Some(rest) = code.strip_prefix(keyword) {
                for module in rest.split(',').map(constant_at).filter(|m| !m.is_empty()) {
                    facts.mixins.push(Mixin {
                        owner: owner.clone(),
                        module,
                        kind: kind.clone(),
                    });
                }
            }
        }
    }
    facts
}

/// The full name of `name` opened inside `outer`. A compact name whose
/// first segment is one of the enclosing modules (`class Admin::Users`
/// inside `module Shop; module Admin`) resolves, as Ruby's lexical lookup
/// does, to that module: `Shop::Admin::Users`.
fn full_name(outer: Option<&str>, name: &str) -> String {
    if let Some(absolute) = name.strip_prefix("::") {
        return absolute.to_owned();
    }
    let Some(outer) = outer else {
        return name.to_owned();
    };
    let segments: Vec<&str> = outer.split("::").collect();
    if let Some((first, rest)) = name.split_once("::") {
        if let Some(at) = segments.iter().rposition(|s| *s == first) {
            return format!("{}::{rest}", segments[..=at].join("::"));
        }
    }
    format!("{outer}::{name}")
}

/// Identifiers that start lines at class level: the calls a class body
/// makes (`crudify :page`, `before_action :x`), a class macro among them.
fn class_level_calls(text: &str) -> Vec<String> {
    let mut calls = Vec::new();
    for line in text.lines() {
        let code = line.trim_start();
        let word: String = code
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        let after = &code[word.len()..];
        let is_call = !word.is_empty()
            && (after.starts_with(' ') || after.starts_with('('))
            && !matches!(
                word.as_str(),
                "def"
                    | "end"
                    | "if"
                    | "unless"
                    | "include"
                    | "prepend"
                    | "extend"
                    | "return"
                    | "private"
                    | "protected"
                    | "public"
                    | "require"
                    | "module"
                    | "class"
                    | "else"
                    | "elsif"
                    | "when"
                    | "case"
                    | "do"
                    | "while"
                    | "until"
            );
        if is_call && !calls.contains(&word) {
            calls.push(word);
        }
    }
    calls
}

/// The constant at the start of `text`: `Admin::Base`, `::Foo`.
fn constant_at(text: &str) -> String {
    let name: String = text
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    if name
        .trim_start_matches(':')
        .starts_with(|c: char| c.is_ascii_uppercase())
    {
        name
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_parents_methods_and_mixins_are_read() {
        let text = "module Spree\n  module Admin\n    class ProductsController < ResourceController\n      include Spree::Backend::Callbacks\n      prepend Audited\n\n      def update\n      end\n\n      class << self\n        def model_class\n        end\n      end\n\n      def self.build; end\n    end\n  end\nend\nmodule Callbacks\n  module ClassMethods\n    def update(*m); end\n  end\nend\n";
        let f = read(text);
        assert_eq!(f.decls[2].full, "Spree::Admin::ProductsController");
        assert_eq!(f.decls[2].parent.as_deref(), Some("ResourceController"));
        assert_eq!(f.decls[2].namespace, ["Spree", "Admin"]);
        let defs: Vec<_> = f
            .defs
            .iter()
            .map(|d| (d.owner.as_str(), d.name.as_str(), d.line, d.singleton))
            .collect();
        assert_eq!(
            defs,
            [
                ("Spree::Admin::ProductsController", "update", 7, false),
                ("Spree::Admin::ProductsController", "model_class", 11, true),
                ("Spree::Admin::ProductsController", "build", 15, true),
                ("Callbacks::ClassMethods", "update", 21, false),
            ]
        );
        assert_eq!(f.mixins.len(), 2);
        assert_eq!(f.mixins[1].kind, MixinKind::Prepend);
    }

    #[test]
    fn a_compact_name_resolves_to_the_enclosing_module_it_starts_with() {
        let f = read(
            "module Workarea
  module Admin
    class Admin::UsersController < Admin::ApplicationController
    end
  end
end
",
        );
        assert_eq!(f.decls[2].full, "Workarea::Admin::UsersController");
        assert_eq!(
            full_name(Some("Shop"), "Billing::Sync"),
            "Shop::Billing::Sync"
        );
    }
}
