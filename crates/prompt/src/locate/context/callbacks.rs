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

/// Which of a model's saves the located code makes, as far as its name
/// tells: a controller's `create` creates, `update` updates, `destroy`
/// destroys. A job, a task or any other action may do all three.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(in crate::locate) enum SaveKind {
    Create,
    Update,
    Destroy,
    Any,
}

impl SaveKind {
    pub(in crate::locate) fn of_action(controller_path: &str, method: &str) -> SaveKind {
        if !controller_path.starts_with("app/controllers/") {
            return SaveKind::Any;
        }
        match method {
            "create" => SaveKind::Create,
            "update" => SaveKind::Update,
            "destroy" => SaveKind::Destroy,
            _ => SaveKind::Any,
        }
    }

    /// Whether Active Record runs `kind` (`after_destroy`, `validate`...)
    /// for this save; `on:` narrows a validation to creates or updates.
    fn runs(self, kind: &str, declaration: &str) -> bool {
        let destroying = kind.ends_with("_destroy");
        let only_on = |save: &str| {
            declaration.contains(&format!("on: :{save}"))
                || declaration.contains(&format!(":on => :{save}"))
        };
        match self {
            SaveKind::Any => true,
            SaveKind::Destroy => destroying || kind == "after_touch",
            SaveKind::Create => !destroying && !kind.ends_with("_update") && !only_on("update"),
            SaveKind::Update => !destroying && !kind.ends_with("_create") && !only_on("create"),
        }
    }
}

/// `has_many :entries, dependent: :destroy` loads and destroys every child
/// row, callbacks and all, inside the parent's destroy transaction (Active
/// Record's association docs): a parent with thousands of children is a
/// huge batch in one transaction.
const DESTROY_CASCADES: [&str; 2] = ["has_many", "has_one"];

/// CarrierWave's `mount_uploader :avatar, AvatarUploader` stores the file
/// (to S3 or any fog storage) from an `after_save` callback it adds, so the
/// upload runs inside the save's transaction; only its removal waits for the
/// commit (CarrierWave's `lib/carrierwave/orm/activerecord.rb`).
const UPLOADER_MOUNTS: [&str; 2] = ["mount_uploader", "mount_uploaders"];

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

/// Whether `code` names `column` as an identifier (`@user.export = ...`,
/// `update(export: file)`), not inside a longer name.
fn names(code: &str, column: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    !column.is_empty()
        && code.match_indices(column).any(|(at, _)| {
            !code[..at].ends_with(is_ident) && !code[at + column.len()..].starts_with(is_ident)
        })
}

/// `located` is the code the job runs as far as it was followed: an
/// uploader's callback counts only when that code assigns its column
/// (CarrierWave uploads only a newly assigned file).
pub(super) fn callbacks_of(
    index: &ClassIndex,
    model: &ModelRef,
    save: SaveKind,
    located: &str,
) -> Vec<CallRef> {
    let files = files_of(index, model);
    let mut found: Vec<CallRef> = Vec::new();
    let declares = |code: &str, kind: &str| {
        code.strip_prefix(kind)
            .is_some_and(|rest| rest.starts_with(' ') && rest.trim_start().starts_with(':'))
    };
    for (path, text) in &files {
        for (i, line) in text.lines().enumerate() {
            let code = line.trim();
            // A callback with no method body of its own to show: the
            // declaration line is the evidence and the place to point at.
            let declared_here = |call: String| CallRef {
                call,
                path: path.clone(),
                line: i + 1,
                body: code.to_owned(),
                file_text: String::new(),
            };
            // `mount_uploader :export, ...` -> `export`.
            let first_symbol = |after: &str| {
                declared_methods(code[after.len()..].trim_start())
                    .into_iter()
                    .next()
                    .unwrap_or_default()
            };
            if let Some(mount) = UPLOADER_MOUNTS.iter().find(|m| declares(code, m)) {
                // Not held to MAX_CALLBACKS: it is listed only when the code
                // reached assigns the column, so it is never noise, and a
                // big model's ordinary callbacks would otherwise crowd it out.
                let column = first_symbol(mount);
                if save != SaveKind::Destroy && names(located, &column) {
                    found.push(declared_here(format!(
                        "{} {mount} :{column} (CarrierWave uploads the file in after_save)",
                        model.class
                    )));
                }
                continue;
            }
            if let Some(assoc) = DESTROY_CASCADES.iter().find(|a| declares(code, a)) {
                let cascades =
                    code.contains("dependent: :destroy") || code.contains(":dependent => :destroy");
                if cascades
                    && save != SaveKind::Create
                    && save != SaveKind::Update
                    && names(located, "destroy")
                    && found.len() < MAX_CALLBACKS
                {
                    found.push(declared_here(format!(
                        "{} {assoc} :{}, dependent: :destroy (each row destroyed in the destroy's transaction)",
                        model.class,
                        first_symbol(assoc)
                    )));
                }
                continue;
            }
            let Some(kind) = IN_TRANSACTION.iter().find(|kind| declares(code, kind)) else {
                continue;
            };
            if !save.runs(kind, code) {
                continue;
            }
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
                    None => declared_here(call),
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{declared_methods, names, SaveKind};

    #[test]
    fn an_uploader_column_is_named_only_as_a_whole_identifier() {
        assert!(names("@user.export = data[:export]", "export"));
        assert!(names("user.update(export: file)", "export"));
        assert!(!names("perform_export_photos!", "export"));
        assert!(!names("anything", ""));
    }

    #[test]
    fn a_create_runs_no_destroy_or_update_callbacks() {
        let create = SaveKind::of_action("app/controllers/posts_controller.rb", "create");
        assert!(create.runs("after_create", "after_create :mention"));
        assert!(create.runs("validate", "validate :x"));
        assert!(!create.runs("after_destroy", "after_destroy :y"));
        assert!(!create.runs("validate", "validate :z, on: :update"));
        let destroy = SaveKind::of_action("app/controllers/posts_controller.rb", "destroy");
        assert!(destroy.runs("before_destroy", "before_destroy :a"));
        assert!(!destroy.runs("after_save", "after_save :b"));
        let job = SaveKind::of_action("app/jobs/sync_job.rb", "create");
        assert!(job.runs("after_destroy", "after_destroy :c"));
    }

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
