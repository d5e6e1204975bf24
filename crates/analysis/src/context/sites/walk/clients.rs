//! What the walk learns beyond the methods it reads: a gem's client
//! reached through the application's own names, and whether a state
//! machine's events fire at all.

use super::{Frame, Piece, Walker};
use crate::context::callbacks::Callback;
use crate::context::constant_calls;
use crate::context::sites::slow::occurrences;

impl Walker<'_> {
    /// A gem's client the application reaches through its own names, which
    /// counts as code run where the call is (like a `Faraday.post`): a class
    /// built on the gem's class (`class ApplicationsTable < Airrecord::Table`),
    /// a constant an initializer binds to the gem (`ApplicationsTable =
    /// Airrecord.table(...)`), or a constant found through a module that
    /// includes the gem (`StripeService::Issuing::Card`).
    pub(super) fn client_classes(
        &mut self,
        frame: &Frame,
        text: &str,
        inside: Option<(usize, u32)>,
    ) {
        let Some((s, calls_at)) = inside else {
            return;
        };
        let dist = calls_at.saturating_sub(1);
        let namespace = frame.namespace();
        let mut seen: Vec<String> = Vec::new();
        for (constant, _) in constant_calls(text) {
            let Some((text, at, path, line)) = self.client_of(frame, &constant, &namespace) else {
                continue;
            };
            if seen.contains(&text) {
                continue;
            }
            seen.push(text.clone());
            // Point at the line that calls the client, not the method's.
            let line = if path == frame.path {
                frame
                    .body
                    .lines()
                    .position(|l| l.contains(constant.as_str()))
                    .map_or(line, |i| frame.start + i)
            } else {
                line
            };
            self.drafts[s].pieces.push(Piece {
                text,
                dist,
                at,
                path,
                line,
                described: true,
                through: frame.through.clone(),
            });
        }
    }

    /// (the gem's code as it reads, where it is named, the file and line to
    /// point at) for one constant the code calls, when it is a gem's client.
    fn client_of(
        &self,
        frame: &Frame,
        constant: &str,
        namespace: &[String],
    ) -> Option<(String, String, String, usize)> {
        if let Some(target) = self.index.bound.get(constant) {
            return Some((
                format!("{constant} = {target}"),
                format!("`{constant}`, bound to `{target}` in config/initializers"),
                frame.path.clone(),
                frame.start,
            ));
        }
        let Some(class) = self.index.resolve(constant, namespace) else {
            let gem = self.index.through_included_gem(constant)?;
            return Some((
                gem.clone(),
                format!("`{constant}`, that is `{gem}`"),
                frame.path.clone(),
                frame.start,
            ));
        };
        let parent = self.index.gem_ancestor(&class)?;
        let (path, _) = self.index.file_of(&class)?;
        Some((
            format!("class {class} < {parent}"),
            format!("`{class}`, built on `{parent}` ({path})"),
            path.clone(),
            1,
        ))
    }

    /// Whether the code reached calls an event declared in the callback's
    /// file (`event :next do` read as `.next` or `.next!`), or fires one
    /// by a name known only at run time.
    pub(super) fn fires_an_event(&self, callback: &Callback) -> bool {
        let events: Vec<String> = callback
            .file_text
            .lines()
            .filter_map(crate::context::declared_event)
            .map(|e| format!(".{e}"))
            .collect();
        self.reached.iter().any(|code| {
            // An event named at run time (`@order.public_send(params[:e])`)
            // may be any of them.
            code.contains("fire_state_event")
                || code.contains("fire_events")
                || code.contains("public_send(")
                || code.contains(".send(")
                || events.iter().any(|call| occurrences(code, call) > 0)
        })
    }
}
