//! What the walk learns beyond the methods it reads: a gem's client
//! reached through the application's own names, and whether a state
//! machine's events fire at all.

use super::{Frame, Piece, Walker};
use crate::locate::context::callbacks::Callback;
use crate::locate::context::constant_calls;

impl Walker<'_> {
    /// A class of the application built on a gem's class (`class
    /// ApplicationsTable < Airrecord::Table`): calling it is calling that
    /// gem, so its declaration counts as code run where the call is.
    pub(super) fn client_classes(
        &mut self,
        frame: &Frame,
        text: &str,
        inside: Option<(usize, u32)>,
    ) {
        let Some((s, calls_at)) = inside else {
            return;
        };
        // As near as the code that makes the call, like a `Faraday.post`.
        let d = calls_at.saturating_sub(1);
        let namespace = frame.namespace();
        let mut seen: Vec<String> = Vec::new();
        for (constant, _) in constant_calls(text) {
            if let Some(target) = self.index.bound.get(&constant) {
                if !seen.contains(&constant) {
                    seen.push(constant.clone());
                    self.drafts[s].pieces.push(Piece {
                        text: format!("{constant} = {target}"),
                        dist: d,
                        at: format!("`{constant}`, bound to `{target}` in config/initializers"),
                        path: frame.path.clone(),
                        line: frame.start,
                    });
                }
                continue;
            }
            let Some(class) = self.index.resolve(&constant, &namespace) else {
                if let Some(gem) = self.index.through_included_gem(&constant) {
                    if !seen.contains(&gem) {
                        seen.push(gem.clone());
                        self.drafts[s].pieces.push(Piece {
                            text: gem.clone(),
                            dist: d,
                            at: format!("`{constant}`, that is `{gem}`"),
                            path: frame.path.clone(),
                            line: frame.start,
                        });
                    }
                }
                continue;
            };
            if seen.contains(&class) {
                continue;
            }
            seen.push(class.clone());
            let mut current = class.clone();
            for _ in 0..4 {
                let Some(parent) = self.index.parents.get(&current) else {
                    break;
                };
                if self.index.classes.contains_key(parent) {
                    current = parent.clone();
                    continue;
                }
                // Rails' own bases (`ActiveRecord::Base`, `ActionMailer::Base`)
                // are how the app is built, not a client it calls.
                let framework = ["Active", "Action", "Rails::"]
                    .iter()
                    .any(|prefix| parent.trim_start_matches("::").starts_with(prefix));
                let Some((path, _)) = self.index.file_of(&class).filter(|_| !framework) else {
                    break;
                };
                self.drafts[s].pieces.push(Piece {
                    text: format!("class {class} < {parent}"),
                    dist: d,
                    at: format!("`{class}`, built on `{parent}` ({path})"),
                    path: path.clone(),
                    line: 1,
                });
                break;
            }
        }
    }

    /// Whether the code reached calls an event declared in the callback's
    /// file (`event :next do` read as `.next` or `.next!`), or fires one
    /// by a name known only at run time.
    pub(super) fn fires_an_event(&self, callback: &Callback) -> bool {
        let events: Vec<String> = callback
            .file_text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("event :"))
            .map(crate::locate::context::word_at)
            .filter(|e| !e.is_empty())
            .collect();
        let is_word = |c: char| c.is_alphanumeric() || c == '_';
        self.reached.iter().any(|code| {
            // An event named at run time (`@order.public_send(params[:e])`)
            // may be any of them.
            code.contains("fire_state_event")
                || code.contains("fire_events")
                || code.contains("public_send(")
                || code.contains(".send(")
                || events.iter().any(|event| {
                    code.match_indices(event.as_str()).any(|(at, _)| {
                        let before = code[..at].chars().next_back();
                        let after = code[at + event.len()..].chars().next();
                        before == Some('.') && !after.is_some_and(is_word)
                    })
                })
        })
    }
}
