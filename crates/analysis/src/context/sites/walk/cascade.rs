//! A destroy that cascades. `record.destroy` opens a transaction of its
//! own, and every `dependent: :destroy` association of the record is loaded
//! and destroyed in it, row by row, each with its own destroy callbacks:
//! the call is one transaction over the whole tree. The transaction is
//! held at the call, so the call is the site, with each association it
//! cascades over (and what their rows' callbacks do) as the work inside.
//! A fix either moves the call (soft-delete now, destroy in a job) or
//! changes an association (`dependent: :delete_all`); the site shows both.

use super::{Frame, Walker};
use crate::context::callbacks::{callbacks_of, Callback, SaveKind};
use crate::context::sites::{Draft, Piece};
use crate::context::{camelize, singularize, ModelRef};

/// A `destroy`/`destroy!` call on a record of a known model, reached
/// outside any explicit transaction.
#[derive(Debug, Clone)]
pub(in crate::context::sites) struct DestroyCall {
    class: String,
    path: String,
    line: usize,
    code: String,
    /// The method around the call, and its first line.
    method: String,
    method_start: usize,
    label: String,
    route: Vec<String>,
}

/// Lines of a long method shown above the call.
const ABOVE: usize = 8;
/// Pieces of the site at most: associations and their rows' callbacks.
const MAX_PIECES: usize = 40;

impl Walker<'_> {
    /// Records the destroys of a model's records in `lines[first..=last]`
    /// of `frame` (a region outside any site), once per model.
    pub(super) fn destroys_in(&mut self, frame: &Frame, lines: &[&str], first: usize, last: usize) {
        for at in first..=last {
            let code = lines[at].trim();
            let Some(receiver) = destroyed_receiver(code) else {
                continue;
            };
            let Some(model) = self.model_named(frame, &receiver) else {
                continue;
            };
            if self.destroys.iter().any(|d| d.class == model.class) {
                continue;
            }
            let from = if lines.len() > super::super::EXCERPT_LINES {
                at.saturating_sub(ABOVE)
            } else {
                0
            };
            self.destroys.push(DestroyCall {
                class: model.class,
                path: frame.path.clone(),
                line: frame.start + at,
                code: code.to_owned(),
                method: lines[from..].join("\n"),
                method_start: frame.start + from,
                label: frame.label.clone(),
                route: frame.route.clone(),
            });
        }
    }

    /// The destroy of `class`'s records the walk reached, if it did.
    pub(in crate::context::sites) fn destroy_call(&self, class: &str) -> Option<DestroyCall> {
        self.destroys.iter().find(|d| d.class == class).cloned()
    }

    /// One site for the cascades of `model` a destroy runs: at `call`
    /// when the walk saw it, else (a destroy action whose call the walk
    /// could not follow) at the first association, saying so. Its work is
    /// each association and the destroy callbacks of the rows it destroys.
    pub(in crate::context::sites) fn cascade_site(
        &mut self,
        entry: &str,
        call: Option<&DestroyCall>,
        model: &ModelRef,
        cascades: &[Callback],
        located: &str,
    ) {
        let Some(first) = cascades.first() else {
            return;
        };
        let names: Vec<String> = cascades.iter().filter_map(association_of).collect();
        let mut pieces = Vec::new();
        if let Some(call) = call {
            pieces.push(Piece {
                text: call.code.clone(),
                dist: 0,
                at: format!("`{}` ({} line {})", call.label, call.path, call.line),
                path: call.path.clone(),
                line: call.line,
                described: false,
                through: None,
            });
        }
        for cascade in cascades {
            pieces.push(Piece {
                text: cascade.declaration.clone(),
                dist: u32::from(call.is_some()),
                at: format!(
                    "`{}` ({} line {})",
                    cascade.label, cascade.path, cascade.line
                ),
                path: cascade.path.clone(),
                line: cascade.line,
                described: false,
                through: None,
            });
            let Some(child) = self.child_model(model, cascade) else {
                continue;
            };
            for callback in callbacks_of(self.index, &child, SaveKind::Destroy, located) {
                // A row's own cascades go one level deeper than the site
                // lists: the agent reads them from the first level.
                if !callback.inside || is_cascade(&callback) || pieces.len() >= MAX_PIECES {
                    continue;
                }
                let (path, line) = callback
                    .method
                    .as_ref()
                    .map_or((callback.path.clone(), callback.line), |m| {
                        (m.path.clone(), m.line)
                    });
                pieces.push(Piece {
                    text: callback.body().to_owned(),
                    dist: 1 + u32::from(call.is_some()),
                    at: format!(
                        "`{}` ({} line {}), for each row destroyed",
                        callback.label, callback.path, callback.line
                    ),
                    path,
                    line,
                    described: false,
                    through: None,
                });
            }
        }
        let short = model.class.rsplit("::").next().unwrap_or(&model.class);
        let rows = names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let each = "(`dependent: :destroy`: each row loaded and destroyed one at a time, its own callbacks included)";
        let (path, line, kind, boundary, boundary_start, mut route, prior) = match call {
            Some(call) => (
                call.path.clone(),
                call.line,
                format!(
                    "`{}` in `{}` destroys the {short} and, in the same transaction, every row of {rows} {each}",
                    call.code, call.label
                ),
                call.method.clone(),
                call.method_start,
                call.route.clone(),
                // Seen on the route, and a tree of rows in one transaction
                // is the commonest long transaction a destroy holds.
                5,
            ),
            None => (
                first.path.clone(),
                first.line,
                format!(
                    "destroying a {short} destroys, in the same transaction, every row of {rows} {each}; the walk did not see where the entry calls the destroy, so find that call: it holds the transaction"
                ),
                // The rest are listed as its slow work, line by line.
                first.declaration.clone(),
                first.line,
                if entry.is_empty() {
                    Vec::new()
                } else {
                    vec![entry.to_owned()]
                },
                4,
            ),
        };
        route.push(format!("{short}#destroy"));
        self.drafts.push(Draft {
            path,
            line,
            kind,
            route,
            boundary,
            boundary_start,
            context: None,
            detail: None,
            opens: None,
            pieces,
            prior,
            is_callback: false,
            unseen: Vec::new(),
            unfired: false,
            another_event: false,
            elsewhere: false,
            cascade: true,
            lone_statement: false,
        });
    }

    /// The model of a cascade's rows: `has_many :line_items` is a
    /// `LineItem`, unless `class_name:` says otherwise.
    fn child_model(&self, owner: &ModelRef, cascade: &Callback) -> Option<ModelRef> {
        let class = class_name_option(&cascade.declaration)
            .or_else(|| Some(camelize(&singularize(&association_of(cascade)?))))?;
        let scope: Vec<String> = owner.class.split("::").map(str::to_owned).collect();
        let class = self.index.resolve(&class, &scope)?;
        let (path, line) = self.index.classes.get(&class)?;
        Some(ModelRef {
            table: String::new(),
            class,
            path: path.clone(),
            line: *line,
            explicit_table_name: false,
        })
    }
}

/// Whether a callback is a `dependent: :destroy` cascade.
pub(in crate::context::sites) fn is_cascade(callback: &Callback) -> bool {
    callback.label.contains(", dependent: :destroy")
}

/// The association a cascade's label names: `Discussion has_many
/// :comments, dependent: …` -> `comments`.
fn association_of(cascade: &Callback) -> Option<String> {
    let (_, rest) = cascade.label.split_once(" :")?;
    Some(rest.split(',').next()?.trim().to_owned())
}

/// `class_name: "Poll"` or `:class_name => 'Poll'` in a declaration.
pub(super) fn class_name_option(declaration: &str) -> Option<String> {
    let at = declaration.find("class_name")?;
    let rest = &declaration[at..];
    let open = rest.find(['"', '\''])?;
    let quote = rest[open..].chars().next()?;
    let value = &rest[open + 1..];
    Some(value[..value.find(quote)?].to_owned())
}

/// The receiver of a `destroy`/`destroy!` call on `code`: `discussion` in
/// `discussion.destroy!`; none for `destroy_all` or a bare `destroy`.
fn destroyed_receiver(code: &str) -> Option<String> {
    super::text::receivers_of(code, &[".destroy"])
        .into_iter()
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destroy_names_its_receiver_and_destroy_all_does_not() {
        assert_eq!(
            destroyed_receiver("discussion.destroy!").as_deref(),
            Some("discussion")
        );
        assert_eq!(
            destroyed_receiver("@lesson.destroy if removed").as_deref(),
            Some("@lesson")
        );
        assert_eq!(destroyed_receiver("Comment.where(x).destroy_all"), None);
        assert_eq!(destroyed_receiver("destroy"), None);
    }

    #[test]
    fn a_class_name_option_is_read_in_either_syntax() {
        assert_eq!(
            class_name_option("has_many :votes, class_name: \"PollVote\", dependent: :destroy")
                .as_deref(),
            Some("PollVote")
        );
        assert_eq!(
            class_name_option("has_many :votes, :class_name => 'PollVote'").as_deref(),
            Some("PollVote")
        );
        assert_eq!(class_name_option("has_many :votes"), None);
    }
}
