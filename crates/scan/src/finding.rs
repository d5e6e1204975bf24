//! One finding: a kind of slow call inside one transaction site, named by
//! what does not move when lines do.

use longtx_analysis::Site;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The comment that silences a finding, on its site's or a slow call's line.
pub const IGNORE_COMMENT: &str = "longtx:ignore";
/// Entry points listed per finding; the rest are counted.
const MAX_ENTRIES: usize = 20;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Finding {
    /// Stable: the site's file, the method around it and the kind of call.
    pub id: String,
    /// The site: where the transaction opens or is held.
    pub path: String,
    pub line: usize,
    /// The method around the site (`Order#complete`), or the class and the
    /// declaration for a callback (`Order after_save :notify`).
    pub method: String,
    /// The kind of slow call: `an HTTP call`, `a mail delivery`...
    pub kind: String,
    /// Database work whose length depends on how many rows it touches (a
    /// loop of writes, a bulk statement), which a read of the code cannot
    /// count: reported as a notice that fails no check and no CI step.
    /// Reviewers judged such findings real far less often than slow calls
    /// out of the database (the book's "How well it finds them").
    pub depends_on_rows: bool,
    /// How the transaction is held there, as the prompt says it.
    pub why: String,
    /// Where the transaction opens when a method the site calls opens it
    /// (a helper that yields to the site's block): absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opens: Option<SlowLine>,
    /// The calls of that kind between open and commit, in walk order.
    pub slow: Vec<SlowLine>,
    /// The `query_source`s whose code reaches the site.
    pub entries: Vec<String>,
    /// Entry points beyond those listed.
    pub more_entries: usize,
    /// The catalogue's pattern that fits the work inside.
    pub pattern: Option<PatternRef>,
    pub silenced: Option<Silenced>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SlowLine {
    pub path: String,
    pub line: usize,
    pub code: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PatternRef {
    pub id: String,
    pub title: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Silenced {
    /// `comment` or `ignore-list`.
    pub by: String,
    pub reason: String,
}

impl Finding {
    pub(crate) fn add_entry(&mut self, source: &str) {
        if self.entries.iter().any(|e| e == source) {
            return;
        }
        if self.entries.len() < MAX_ENTRIES {
            self.entries.push(source.to_owned());
        } else {
            self.more_entries += 1;
        }
    }
}

/// The findings of one site: one per kind of slow call in it.
/// Only the slow calls `owned` gives this site are reported at it.
pub(crate) fn of_site(
    repo: &Path,
    facts: &crate::confidence::CheckoutFacts,
    site: &Site,
    owned: &dyn Fn(&str, usize) -> bool,
) -> Vec<Finding> {
    let calls: Vec<_> = site
        .slow
        .iter()
        .filter(|s| owned(&s.path, s.line))
        // A lone statement holds only itself: `Report.import(File.open(f))`
        // reads the file before the statement's transaction begins.
        .filter(|s| !site.lone_statement || crate::confidence::is_statement_kind(&s.what))
        .filter(|s| {
            // Whether mail or a job goes to a local queue is said where
            // the call ends (`).deliver_later`), lines below its start.
            let code = match s.what.as_str() {
                "a mail delivery" | "a job enqueue" => {
                    crate::confidence::whole_statement(repo, &s.path, s.line, &s.code)
                }
                _ => s.code.clone(),
            };
            crate::confidence::confident(repo, facts, &s.what, &code)
        })
        .filter(|s| {
            !matches!(s.what.as_str(), "a notification" | "a mail delivery")
                || !crate::confidence::local_mail_only(repo, facts, &s.path, &s.code)
        })
        .filter(|s| {
            s.what != "a mail delivery" || !crate::confidence::own_deliver(repo, &s.path, &s.code)
        })
        .filter(|s| !crate::confidence::name_only_callback(repo, &s.path, &s.code))
        .filter(|s| !crate::confidence::named_only(&s.code))
        .collect();
    // A job run inline is listed as the way to its body's slow work, while
    // that work is listed too.
    let calls = if calls
        .iter()
        .all(|s| crate::confidence::route_only(repo, &s.what, &s.code))
    {
        Vec::new()
    } else {
        calls
    };
    if calls.is_empty() {
        return Vec::new();
    }
    let site_text = read(repo, &site.path);
    let method = enclosing_method(site_text.as_deref().unwrap_or(""), site.line);
    let mut kinds: Vec<&str> = calls.iter().map(|s| s.what.as_str()).collect();
    kinds.dedup();
    let mut unique: Vec<&str> = Vec::new();
    for kind in kinds {
        if !unique.contains(&kind) {
            unique.push(kind);
        }
    }
    unique
        .into_iter()
        .map(|kind| {
            let slow: Vec<SlowLine> = calls
                .iter()
                .filter(|s| s.what == kind)
                .map(|s| SlowLine {
                    path: s.path.clone(),
                    line: s.line,
                    code: s.code.clone(),
                })
                .collect();
            let silenced = silencing_comment(repo, site, &slow);
            Finding {
                id: identity(&site.path, &method, kind),
                path: site.path.clone(),
                line: site.line,
                method: method.clone(),
                kind: kind.to_owned(),
                depends_on_rows: crate::confidence::depends_on_rows(kind),
                why: site.why.clone(),
                opens: site.opens.as_ref().map(|o| SlowLine {
                    path: o.path.clone(),
                    line: o.line,
                    code: read(repo, &o.path)
                        .and_then(|t| {
                            t.lines()
                                .nth(o.line.saturating_sub(1))
                                .map(|l| l.trim().to_owned())
                        })
                        .unwrap_or_default(),
                }),
                slow,
                entries: Vec::new(),
                more_entries: 0,
                pattern: None,
                silenced,
            }
        })
        .collect()
}

fn identity(path: &str, method: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{path}\0{method}\0{kind}").as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn read(repo: &Path, relative: &str) -> Option<String> {
    let path = repo.join(relative);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    meta.is_file().then(|| std::fs::read_to_string(path).ok())?
}

/// The nearest `def` above `line` indented less than the line itself, as
/// `Class#method` with the nearest class or module above it; a line in a
/// class body (a callback declaration) is named by the class alone.
pub(crate) fn enclosing_method(text: &str, line: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let at = line.saturating_sub(1).min(lines.len().saturating_sub(1));
    let indent = |l: &str| l.len() - l.trim_start().len();
    let own = lines.get(at).map_or(0, |l| indent(l));
    let mut method = None;
    let mut class = None;
    // The class around the method is indented less than the method's `def`
    // (or the line, outside any method), and is no one-line class
    // (`class Failure < StandardError; end`) declared above it.
    let mut within = own + 1;
    let mut fallback = None;
    for i in (0..=at).rev() {
        let Some(l) = lines.get(i) else { continue };
        let t = l.trim_start();
        let declared = |keyword: &str| {
            t.strip_prefix(keyword).map(|rest| {
                rest.split(|c: char| c.is_whitespace() || c == '(' || c == '<' || c == ';')
                    .next()
                    .unwrap_or("")
                    .to_owned()
            })
        };
        if method.is_none() && (indent(l) < own || i == at) {
            if let Some(name) = declared("def ") {
                method = Some(name);
                within = indent(l);
                continue;
            }
            // A rake task's block: the tasks of one file are as many
            // methods, not one "top level".
            if let Some(name) = t.strip_prefix("task ").and_then(crate::entries::symbol) {
                method = Some(format!("task {name}"));
                within = indent(l);
                continue;
            }
        }
        let one_line = t.trim_end().ends_with("; end") || t.trim_end().ends_with(";end");
        if one_line {
            continue;
        }
        let named = declared("class ").or_else(|| declared("module "));
        // `class << self` opens the class's singleton, not a class.
        if let Some(name) = named.filter(|n| !n.is_empty()) {
            // A file indented throughout (otwarchive's `user.rb` has its
            // class and its defs at the same depth) still has its class:
            // the nearest one is kept until one less indented is found.
            if indent(l) >= within {
                fallback.get_or_insert(name);
                continue;
            }
            class = Some(name);
            break;
        }
    }
    // A declaration in a class body (`after_save :notify`) is named by its
    // first two words: a class has many callbacks, and one that becomes
    // `after_commit` is another finding, or none.
    let declaration = || {
        let words: Vec<&str> = lines
            .get(at)
            .map_or("", |l| l.split('#').next().unwrap_or(""))
            .split_whitespace()
            .take(2)
            .collect();
        words.join(" ").trim_end_matches(',').to_owned()
    };
    match (class.or(fallback), method) {
        (Some(c), Some(m)) => format!("{c}#{m}"),
        (None, Some(m)) => m,
        (Some(c), None) => format!("{c} {}", declaration()).trim_end().to_owned(),
        (None, None) => "(top level)".into(),
    }
}

/// A `# longtx:ignore <reason>` on the site's line or a slow call's line.
fn silencing_comment(repo: &Path, site: &Site, slow: &[SlowLine]) -> Option<Silenced> {
    let places = std::iter::once((site.path.as_str(), site.line))
        .chain(slow.iter().map(|s| (s.path.as_str(), s.line)));
    for (path, line) in places {
        let Some(text) = read(repo, path) else {
            continue;
        };
        let Some(l) = text.lines().nth(line.saturating_sub(1)) else {
            continue;
        };
        if let Some((_, after)) = l.split_once(IGNORE_COMMENT) {
            let reason = after.trim();
            return Some(Silenced {
                by: "comment".into(),
                reason: if reason.is_empty() {
                    "no reason given".into()
                } else {
                    reason.chars().take(200).collect()
                },
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_is_named_by_its_class_and_method() {
        let text = "class Order < ApplicationRecord\n  after_save :notify\n\n  def complete!\n    transaction do\n      charge\n    end\n  end\nend\n";
        assert_eq!(enclosing_method(text, 5), "Order#complete!");
        assert_eq!(enclosing_method(text, 2), "Order after_save :notify");
        assert_eq!(enclosing_method(text, 4), "Order#complete!");
    }

    #[test]
    fn a_one_line_class_above_a_method_is_not_its_class() {
        // whitehall's EditionPublishingWorker declares its error class on
        // one line at the top of its body.
        let text = "class EditionPublishingWorker\n  class ScheduledPublishingFailure < StandardError; end\n\n  def perform(id)\n    Edition.transaction do\n      publish(id)\n    end\n  end\nend\n";
        assert_eq!(enclosing_method(text, 5), "EditionPublishingWorker#perform");
        let nested = "module Admin\n  class Import\n    class Row\n      def save; end\n    end\n\n    def run\n      transaction do\n      end\n    end\n  end\nend\n";
        assert_eq!(enclosing_method(nested, 8), "Import#run");
        let indented = "  class User < ApplicationRecord\n  def reset!\n    transaction do\n    end\n  end\n  end\n";
        assert_eq!(enclosing_method(indented, 3), "User#reset!");
        let singleton = "class Token\n  class << self\n    def expire\n      transaction do\n      end\n    end\n  end\nend\n";
        assert_eq!(enclosing_method(singleton, 4), "Token#expire");
    }

    #[test]
    fn each_rake_task_is_a_method_of_its_own() {
        let text = "namespace :sessions do\n  task backfill: :environment do\n    with_timeout do\n      x.in_batches { |b| b.update_all(a: 1) }\n    end\n  end\n\n  task :rollback => :environment do\n    with_timeout do\n      y.in_batches { |b| b.update_all(a: nil) }\n    end\n  end\nend\n";
        assert_eq!(enclosing_method(text, 3), "task backfill");
        assert_eq!(enclosing_method(text, 9), "task rollback");
    }

    #[test]
    fn identity_ignores_the_line() {
        assert_eq!(
            identity("app/models/order.rb", "Order#complete!", "an HTTP call"),
            identity("app/models/order.rb", "Order#complete!", "an HTTP call")
        );
        assert_ne!(
            identity("app/models/order.rb", "Order#complete!", "an HTTP call"),
            identity("app/models/order.rb", "Order#complete!", "a mail delivery")
        );
    }
}
