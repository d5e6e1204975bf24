//! The callbacks and validations of an alerted table's model: Active
//! Record runs them inside the save's (or destroy's) transaction, so a
//! plain `@record.update(...)` in a controller can hold the table for as
//! long as a geocoding lookup or a credentials check against an API takes.

use super::{ClassIndex, ModelRef};
use crate::locate::controllers::{constant_files, enclosing_modules, included};
use crate::locate::{find_def, CallRef};

/// Declarations whose methods run inside the transaction. `after_commit`,
/// `after_*_commit` and `after_rollback` run after it: never listed.
const IN_TRANSACTION: [&str; 16] = [
    "validate",
    "before_validation",
    "after_validation",
    "before_save",
    "around_save",
    "after_save",
    "before_create",
    "around_create",
    "after_create",
    "before_update",
    "around_update",
    "after_update",
    "before_destroy",
    "around_destroy",
    "after_destroy",
    "after_touch",
];

/// At most this many per model.
const MAX_CALLBACKS: usize = 8;

/// `validate :check_credentials, if: :enabled` -> `["check_credentials"]`:
/// the symbols before the first option.
fn declared_methods(declaration: &str) -> Vec<String> {
    declaration
        .split(',')
        .map(str::trim)
        .take_while(|part| part.starts_with(':'))
        .map(|part| {
            part[1..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '?' | '!'))
                .collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// The model's own file and the concerns it includes from the repository
/// (a concern is a module, looked up where Rails autoloads it from).
fn files_of(index: &ClassIndex, model: &ModelRef) -> Vec<(String, String)> {
    let Some(text) = index.texts.get(&model.path) else {
        return Vec::new();
    };
    let mut files = vec![(model.path.clone(), text.clone())];
    let namespace = enclosing_modules(text);
    for concern in included(text) {
        let found = constant_files(
            &concern,
            &namespace,
            &["app/models/concerns", "app/models", "lib"],
        )
        .into_iter()
        .find_map(|path| index.texts.get(&path).map(|text| (path, text.clone())));
        if let Some((path, text)) = found {
            if !files.iter().any(|(p, _)| *p == path) {
                files.push((path, text));
            }
        }
    }
    files
}

pub(super) fn callbacks_of(index: &ClassIndex, model: &ModelRef) -> Vec<CallRef> {
    let files = files_of(index, model);
    let mut found: Vec<CallRef> = Vec::new();
    for (path, text) in &files {
        for (i, line) in text.lines().enumerate() {
            let code = line.trim();
            let Some(kind) = IN_TRANSACTION.iter().find(|kind| {
                code.strip_prefix(**kind)
                    .is_some_and(|rest| rest.starts_with(' ') && rest.trim_start().starts_with(':'))
            }) else {
                continue;
            };
            for method in declared_methods(code[kind.len()..].trim_start()) {
                if found.len() >= MAX_CALLBACKS {
                    return found;
                }
                let call = format!("{} {kind} :{method}", model.class);
                // Defined in the model or one of its concerns; else the
                // method is a gem's (`geocode`): the declaration is all
                // there is to show.
                let defined = files
                    .iter()
                    .find_map(|(p, t)| find_def(t, &method).map(|(line, body)| (p, t, line, body)));
                found.push(match defined {
                    Some((p, t, line, body)) => CallRef {
                        call,
                        path: p.clone(),
                        line,
                        body,
                        file_text: t.clone(),
                    },
                    None => CallRef {
                        call,
                        path: path.clone(),
                        line: i + 1,
                        body: code.to_owned(),
                        file_text: String::new(),
                    },
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::declared_methods;

    #[test]
    fn the_symbols_before_the_options_are_the_methods() {
        assert_eq!(
            declared_methods(":validate_twilio_credentials, if: :twilio_enabled, on: :update"),
            ["validate_twilio_credentials"]
        );
        assert_eq!(declared_methods(":a, :b?"), ["a", "b?"]);
        assert!(declared_methods("-> { touch }").is_empty());
    }
}
