//! Statesman (`include Statesman::Machine`): a machine's `before_transition`
//! and `after_transition` blocks run inside the transaction that
//! `transition_to` opens around the transition's INSERT, unless declared
//! `after_commit: true` (Statesman v0.4.0 release notes: such callbacks run
//! "after the transaction has been committed on the ActiveRecord adapter";
//! `lib/statesman/adapters/active_record.rb` wraps the rest in the
//! transition's transaction). They are read when the code reached calls
//! `transition_to`.

use super::callbacks::Callback;
use super::ClassIndex;
use crate::{block_from, declared_classes};

/// A hook and whether the state it waits for is named in the code reached
/// (`transition_to(id, :confirmed)` for `after_transition(to: :confirmed)`).
pub(super) struct Hook {
    pub class: String,
    pub callback: Callback,
    pub agrees: bool,
}

pub(super) fn hooks(index: &ClassIndex, reached: &str) -> Vec<Hook> {
    if !reached.contains("transition_to") {
        return Vec::new();
    }
    let mut paths: Vec<&String> = index
        .texts
        .iter()
        .filter(|(_, text)| text.contains("include Statesman::Machine"))
        .map(|(path, _)| path)
        .collect();
    paths.sort();
    let mut found = Vec::new();
    for path in paths {
        let text = &index.texts[path];
        let Some((_, class)) = declared_classes(text).first().cloned() else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            let code = line.trim();
            let is_hook =
                code.starts_with("before_transition") || code.starts_with("after_transition");
            if !is_hook || code.contains("after_commit: true") {
                continue;
            }
            let declaration = if code.ends_with(" do") || code.contains(" do |") {
                block_from(text, i + 1)
            } else {
                line.to_owned()
            };
            let head = code.split(" do").next().unwrap_or(code);
            let agrees = state_of(code).is_some_and(|state| reached.contains(&format!(":{state}")));
            found.push(Hook {
                class: class.clone(),
                callback: Callback {
                    label: format!("{class} {head} do … end"),
                    path: path.clone(),
                    line: i + 1,
                    declaration,
                    method: None,
                    inside: true,
                    file_text: text.clone(),
                    context: None,
                    event: None,
                },
                agrees,
            });
        }
    }
    found
}

/// `after_transition(from: :paid, to: :canceled)` -> `canceled`.
fn state_of(code: &str) -> Option<&str> {
    let rest = &code[code.find("to: :")? + "to: :".len()..];
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::state_of;

    #[test]
    fn the_state_a_hook_waits_for_is_read() {
        assert_eq!(
            state_of("after_transition(to: :confirmed) do |t|"),
            Some("confirmed")
        );
        assert_eq!(
            state_of("after_transition(from: :paid, to: :canceled) do |c|"),
            Some("canceled")
        );
        assert_eq!(state_of("before_transition do |t|"), None);
    }
}
