//! What runs inside a site without the site's code showing it: the
//! callbacks of a record saved there, and the record's class when it was
//! built through an association.
//!
//! Active Record opens no transaction of its own for a save made inside
//! one already open: the save's callbacks run in the outer transaction,
//! and an outer lock is held until it commits. Their slow work is the
//! outer site's.

use super::{class_at, Frame, Walker, MAX_DEPTH};
use crate::context::callbacks::Method;
use crate::context::{camelize, singularize, ModelRef};

/// A callback of a save made inside site `at.0`, `at.1` calls from it,
/// reached by `route` at `depth`.
pub(super) struct CallbackInside {
    pub route: Vec<String>,
    pub depth: usize,
    pub model: String,
    pub label: String,
    pub method: Method,
    pub at: (usize, u32),
}

impl Walker<'_> {
    /// Reads what the callbacks of saves made inside a site call, once
    /// the walk from the entry is done (so that what it reads nearer the
    /// site keeps its place): they run in that site's transaction, so
    /// their slow work is the site's (spree's refund, built and saved
    /// inside `with_order_lock`, credits the gateway from its
    /// `after_create`: the lock is held across the call). Read as deep as
    /// a callback's own site reads it, within a budget of its own.
    pub fn read_callbacks_inside(&mut self) {
        while !self.callbacks_inside.is_empty() {
            for pending in std::mem::take(&mut self.callbacks_inside) {
                self.read_callback_inside(pending);
            }
        }
    }

    fn read_callback_inside(&mut self, pending: CallbackInside) {
        let CallbackInside {
            mut route,
            depth,
            model,
            label,
            method,
            at: (s, d),
        } = pending;
        route.push(label.clone());
        let callback = Frame {
            class: class_at(&method.file_text, method.line),
            path: method.path,
            file_text: method.file_text,
            start: method.line,
            body: method.body,
            label: label.clone(),
            route,
            depth: (depth + 1).max(MAX_DEPTH - 2),
            inside: Some((s, d + 1)),
            guessed: false,
            through: None,
        };
        // Its body is already a piece of `s`.
        if !self
            .seen
            .insert((Some(s), callback.path.clone(), callback.start))
        {
            return;
        }
        let calls: Vec<&str> = callback.body.lines().skip(1).collect();
        let calls = super::super::slow::without_deferred(&calls.join("\n"));
        let outer = self.in_callback.replace(model.clone());
        let nested = std::mem::replace(&mut self.inside_save, true);
        // Records it saves run their callbacks in `s` too.
        self.saves_in(&callback, &calls, Some((s, d + 1)));
        for child in self.calls(&callback, &calls, Some((s, d + 2))) {
            self.walk(child);
        }
        self.inside_save = nested;
        self.in_callback = outer;
        if !self
            .saved_inside
            .iter()
            .any(|(c, l, _)| (c, l) == (&model, &label))
        {
            self.saved_inside.push((model, label, s));
        }
    }

    /// The model a local or instance variable was built or found as
    /// through an association in this method: `@resource =
    /// payment.refunds.build(...)` is a refund, so `@resource.save` runs a
    /// refund's callbacks (spree's refund credits the gateway in its
    /// `after_create`). The association names the model, as Rails' own
    /// default `class_name` does.
    pub(super) fn built_through_association(
        &self,
        frame: &Frame,
        receiver: &str,
    ) -> Option<ModelRef> {
        const BUILDERS: [&str; 10] = [
            "build",
            "new",
            "create",
            "create!",
            "find",
            "find_by",
            "find_by!",
            "find_or_create_by",
            "find_or_create_by!",
            "find_or_initialize_by",
        ];
        let assigned = format!("{receiver} = ");
        frame.body.lines().find_map(|line| {
            let value = line.trim().strip_prefix(&assigned)?;
            let builder = BUILDERS.iter().find_map(|b| {
                let at = value.find(&format!(".{b}"))?;
                let after = value[at + 1 + b.len()..].chars().next();
                (after.is_none() || after.is_some_and(|c| c == '(' || c == ' ')).then_some(at)
            })?;
            let association = crate::context::identifier_before(&value[..builder], &[]);
            let dotted = value[..builder].len() > association.len();
            if !dotted || !association.starts_with(|c: char| c.is_ascii_lowercase()) {
                return None;
            }
            let class = camelize(&singularize(&association));
            let class = self.index.resolve(&class, &frame.namespace())?;
            self.model_of_class(&class)
        })
    }
}
