//! Transactions the walk did not reach from the entry but that name an
//! alerted model and hold slow work: a lead of last resort, so a prompt
//! whose walk stopped short (a call it could not resolve, a depth it did
//! not pass) still shows where the table is written inside a transaction,
//! as an agent searching the code for it would find.

use super::super::boundary::opener;
use super::super::slowness;
use super::{class_at, Frame, Walker, MAX_DEPTH};
use crate::context::ModelRef;

/// Methods read this way per job, the slowest first.
const MAX_METHODS: usize = 4;
/// The walk already shows this many sites with slow work: enough leads.
const ENOUGH: usize = super::super::MAX_SITES;

impl Walker<'_> {
    /// Adds, after the walk, the transactions elsewhere that write one of
    /// `alerted`, as sites ranked below every site the walk reached.
    pub fn elsewhere(&mut self, entry: &str, alerted: &[ModelRef]) {
        let slow_sites = self
            .drafts
            .iter()
            .filter(|d| d.pieces.iter().any(|p| slowness(&p.text) > 0))
            .count();
        if slow_sites >= ENOUGH || alerted.is_empty() {
            return;
        }
        let names: Vec<&str> = alerted
            .iter()
            .map(|m| m.class.rsplit("::").next().unwrap_or(&m.class))
            .collect();
        let mut found: Vec<(u32, Frame)> = Vec::new();
        let mut paths: Vec<&String> = self.index.texts.keys().collect();
        paths.sort();
        for path in paths {
            if !is_code(path) {
                continue;
            }
            let text = &self.index.texts[path];
            if !text.contains("transaction") && !text.contains("lock") {
                continue;
            }
            let own_file = alerted.iter().any(|m| m.path == *path);
            let lines: Vec<&str> = text.lines().collect();
            let mut i = 0;
            while i < lines.len() {
                let line = lines[i];
                if opener(line).is_none() {
                    i += 1;
                    continue;
                }
                let Some((start, end)) = enclosing_method(text, &lines, i) else {
                    i += 1;
                    continue;
                };
                let body = lines[start..=end].join("\n");
                let names_model = own_file
                    || names
                        .iter()
                        .any(|n| super::super::slow::occurrences(&body, n) > 0);
                let slow = slowness(&body);
                if names_model && slow > 0 {
                    let label = format!(
                        "{}#{}",
                        class_at(text, start + 1),
                        crate::context::defined_method(lines[start])
                    );
                    found.push((
                        slow + 10 * u32::from(own_file),
                        Frame {
                            path: path.clone(),
                            file_text: text.clone(),
                            start: start + 1,
                            body,
                            route: vec![entry.to_owned(), label.clone()]
                                .into_iter()
                                .filter(|s| !s.is_empty())
                                .collect(),
                            label,
                            depth: MAX_DEPTH - 2,
                            inside: None,
                            class: class_at(text, start + 1),
                            guessed: false,
                            through: None,
                        },
                    ));
                }
                i = end + 1;
            }
        }
        found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.path.cmp(&b.1.path)));
        let before = self.drafts.len();
        for (_, frame) in found.into_iter().take(MAX_METHODS) {
            // A method the walk already read holds no news.
            let last = frame.start + frame.body.lines().count();
            let read = self
                .drafts
                .iter()
                .any(|d| d.path == frame.path && (frame.start..last).contains(&d.line));
            if read {
                continue;
            }
            self.walk(frame);
        }
        // What this adds ranks below what the walk reached, and only where
        // slow work was seen inside it.
        let mut added: Vec<_> = self.drafts.drain(before..).collect();
        added.retain(|d| !d.is_callback && d.pieces.iter().any(|p| slowness(&p.text) > 0));
        for draft in &mut added {
            draft.prior = 0;
            draft.elsewhere = true;
            draft.kind = format!(
                "{}; the walk did not reach it from the entry point, but it writes an alerted table's model",
                draft.kind
            );
        }
        self.drafts.extend(added);
    }
}

/// Application code, not its tests or its schema's history.
fn is_code(path: &str) -> bool {
    !(path.starts_with("spec/")
        || path.starts_with("test/")
        || path.contains("/spec/")
        || path.contains("/test/")
        || path.starts_with("db/migrate/"))
}

/// The 0-based first and last lines of the method around line `at`, as
/// [`crate::block_from`] reads a method for the rest of the walk.
fn enclosing_method(text: &str, lines: &[&str], at: usize) -> Option<(usize, usize)> {
    let start = (0..=at)
        .rev()
        .find(|&i| lines[i].trim_start().starts_with("def "))?;
    let end = start + crate::block_from(text, start + 1).lines().count().max(1) - 1;
    (end >= at).then_some((start, end))
}
