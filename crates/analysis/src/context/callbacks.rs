//! The callbacks of an alerted table's model, read as Active Record runs
//! them: the model's own, its concerns', and those of the classes sharing
//! its table (single-table inheritance parents and subclasses); symbol,
//! block and lambda forms; state-machine hooks (AASM, state_machines); and
//! what a save or destroy does to associations (`dependent:` cascades,
//! nested attributes, `touch: true`, counter caches). Each is marked as
//! running inside the save's transaction or after its commit.

use super::{ClassIndex, ModelRef};
use crate::controllers::{constant_files, enclosing_modules, included};
use crate::{block_from, code_lines, find_def};

/// Declarations whose methods run inside the save's transaction.
pub(super) const IN_TRANSACTION: [&str; 17] = [
    "validate",
    "validates_with",
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

/// Declarations whose methods run once the transaction has committed.
const AFTER_COMMIT: [&str; 6] = [
    "after_commit",
    "after_create_commit",
    "after_update_commit",
    "after_destroy_commit",
    "after_save_commit",
    "after_rollback",
];

/// AASM runs an event's `before`/`after` (and a state's `before_enter`,
/// `after_enter`...) inside the transaction its bang event opens; only
/// `after_commit` waits for the commit (AASM's README, "Transactions").
const AASM_HOOKS: [&str; 9] = [
    "before",
    "after",
    "before_enter",
    "after_enter",
    "before_exit",
    "after_exit",
    "on_transition",
    "success",
    "after_all_transitions",
];

/// The state_machines gem runs transition callbacks inside the record's
/// save transaction (`use_transactions` is on by default).
const TRANSITION_HOOKS: [&str; 4] = [
    "before_transition",
    "after_transition",
    "around_transition",
    "after_failure",
];

/// CarrierWave's `mount_uploader :avatar, AvatarUploader` stores the file
/// (to S3 or any fog storage) from an `after_save` callback it adds, so the
/// upload runs inside the save's transaction; only its removal waits for the
/// commit (CarrierWave's `lib/carrierwave/orm/activerecord.rb`).
const UPLOADER_MOUNTS: [&str; 2] = ["mount_uploader", "mount_uploaders"];

/// Which of a model's saves the located code makes, as far as its name
/// tells: a controller's `create` creates, `update` updates, `destroy`
/// destroys. A job, a task or any other action may do all three.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SaveKind {
    Create,
    Update,
    Destroy,
    Any,
}

impl SaveKind {
    pub(crate) fn of_action(controller_path: &str, method: &str) -> SaveKind {
        if !controller_path.contains("app/controllers/") {
            return SaveKind::Any;
        }
        match method {
            "create" => SaveKind::Create,
            "update" => SaveKind::Update,
            "destroy" => SaveKind::Destroy,
            _ => SaveKind::Any,
        }
    }

    /// What the source's action says it does, when the entry's own file
    /// does not (an action a gem defines: `api/discussions#destroy` served
    /// by a `destroy_action` of a base controller).
    pub(crate) fn of_source(query_source: &str) -> SaveKind {
        match query_source.rsplit_once('#').map(|(_, action)| action) {
            Some("create") => SaveKind::Create,
            Some("update") => SaveKind::Update,
            Some("destroy") => SaveKind::Destroy,
            _ => SaveKind::Any,
        }
    }

    /// Whether Active Record runs `kind` (`after_destroy`, `validate`...)
    /// for this save; `on:` narrows a callback to creates or updates.
    fn runs(self, kind: &str, declaration: &str) -> bool {
        let destroying = kind.contains("destroy");
        let only_on = |save: &str| {
            declaration.contains(&format!("on: :{save}"))
                || declaration.contains(&format!(":on => :{save}"))
        };
        match self {
            SaveKind::Any => true,
            SaveKind::Destroy => destroying || kind == "after_touch",
            SaveKind::Create => !destroying && !kind.contains("_update") && !only_on("update"),
            SaveKind::Update => !destroying && !kind.contains("_create") && !only_on("create"),
        }
    }
}

/// The method a callback names, where the model or a concern defines it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Method {
    pub path: String,
    pub line: usize,
    pub body: String,
    pub file_text: String,
}

/// One callback, hook or association effect of a save.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Callback {
    /// `Order after_save :notify`, `Order after_create do … end`.
    pub label: String,
    pub path: String,
    /// The declaration's first line.
    pub line: usize,
    /// The declaration as written: a block form whole, else its lines.
    pub declaration: String,
    /// The named method, when the model or a concern defines it.
    pub method: Option<Method>,
    /// Runs inside the save's transaction (else after its commit).
    pub inside: bool,
    /// The text of the declaring file (the callback's own calls resolve there).
    pub file_text: String,
    /// The state machine or event the hook sits in: (line, text).
    pub context: Option<(usize, String)>,
    /// The AASM event it belongs to, whose bang method fires it.
    pub event: Option<String>,
}

impl Callback {
    /// What runs when the callback runs: its block, or its method.
    pub fn body(&self) -> &str {
        self.method.as_ref().map_or(&self.declaration, |m| &m.body)
    }

    /// Whether Rails could run it for the code in `reached`: a destroy
    /// callback runs only when something is destroyed, and a job that
    /// creates a comment destroys nothing.
    pub fn may_run_for(&self, reached: &str) -> bool {
        let destroys = self.label.contains("_destroy") || self.label.contains("dependent:");
        !destroys || reached.contains("destroy")
    }
}

/// `validate :check_credentials, if: :enabled` -> `["check_credentials"]`:
/// the symbols before the first option.
fn declared_methods(declaration: &str) -> Vec<String> {
    declaration
        .split(',')
        .map(str::trim)
        // `:to => :complete` is an option in the old hash syntax, not a
        // method: the names end where the options begin.
        .take_while(|part| part.starts_with(':') && !part.contains("=>"))
        .map(|part| {
            part[1..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '?' | '!'))
                .collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// `after: :notify`, `do: :finalize!`, `after: [:a, :b]` -> the names.
fn option_methods(declaration: &str, key: &str) -> Vec<String> {
    let mut found = Vec::new();
    for needle in [format!("{key}: "), format!(":{key} => ")] {
        for (at, _) in declaration.match_indices(&needle) {
            let before = declaration[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = declaration[at + needle.len()..].trim_start();
            let list = match rest.strip_prefix('[') {
                Some(inner) => inner.split(']').next().unwrap_or(""),
                None => rest.split([',', ' ', ')']).next().unwrap_or(""),
            };
            found.extend(declared_methods(list));
        }
    }
    found
}

/// The model's own file, the files of the classes sharing its table (STI
/// parents and subclasses), and the concerns each includes.
fn files_of(index: &ClassIndex, model: &ModelRef) -> Vec<(String, String, String)> {
    let mut classes = vec![model.class.clone()];
    classes.extend(index.model_ancestors(&model.class));
    classes.extend(index.descendants(&model.class));
    let mut files: Vec<(String, String, String)> = Vec::new();
    for class in classes {
        let Some((path, _)) = index.classes.get(&class) else {
            continue;
        };
        let Some(text) = index.texts.get(path) else {
            continue;
        };
        if files.iter().any(|(p, _, _)| p == path) {
            continue;
        }
        files.push((class.clone(), path.clone(), text.clone()));
        // Inside `class Order`, `include Checkout` is `Order::Checkout`
        // first: the class is part of the lexical scope.
        let scope: Vec<String> = class.split("::").map(str::to_owned).collect();
        for concern in included(text).iter() {
            let found = index
                .resolve_any(concern, &scope)
                .and_then(|full| index.file_of(&full).map(|(p, t)| (p.clone(), t.clone())));
            if let Some((p, t)) = found {
                if !files.iter().any(|(known, _, _)| *known == p) {
                    files.push((class.clone(), p, t));
                }
            }
        }
        let namespace = enclosing_modules(text);
        let root = path.split("app/models/").next().unwrap_or("");
        let dirs = [
            format!("{root}app/models/concerns"),
            format!("{root}app/models"),
            format!("{root}lib"),
        ];
        let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
        for concern in included(text).iter() {
            let found = constant_files(concern, &namespace, &dirs)
                .into_iter()
                .find_map(|p| index.texts.get(&p).map(|t| (p, t.clone())));
            if let Some((p, t)) = found {
                if !files.iter().any(|(known, _, _)| *known == p) {
                    files.push((class.clone(), p, t));
                }
            }
        }
    }
    files
}

/// Whether `code` names `column` as an identifier (`@user.export = ...`,
/// `update(export: file)`), not inside a longer name.
pub(crate) fn names(code: &str, column: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    !column.is_empty()
        && code.match_indices(column).any(|(at, _)| {
            !code[..at].ends_with(is_ident) && !code[at + column.len()..].starts_with(is_ident)
        })
}

/// `kind` opens the line as a call: `after_save :x`, `after_save do`,
/// `after_save(on: :create) do`, `after_save { … }`, `after_save -> { … }`.
fn declares<'a>(code: &'a str, kind: &str) -> Option<&'a str> {
    let rest = code.strip_prefix(kind)?;
    (rest.is_empty() || rest.starts_with([' ', '(', '{'])).then(|| rest.trim_start())
}

fn opens_block(rest: &str) -> bool {
    let rest = rest.trim_end();
    rest.ends_with(" do")
        || rest == "do"
        || rest.contains(" do |")
        || rest.starts_with("do |")
        || rest.starts_with('{')
        || rest.starts_with("->")
        || rest.starts_with("lambda")
        || rest.starts_with("proc")
        || rest.starts_with("(")
            && (rest.ends_with(" do") || rest.contains(" do |") || rest.contains('{'))
}

/// The declaration starting at the 1-based `line`: continuation lines of a
/// list (`after_create :a,\n  :b`) joined, or a block to its `end`.
fn declaration_at(text: &str, line: usize, rest: &str) -> String {
    let rest = rest.trim_end();
    let do_block =
        rest.ends_with(" do") || rest.contains(" do |") || rest == "do" || rest.starts_with("do |");
    if do_block {
        return block_from(text, line);
    }
    // Only the declaration's own lines: a model declares many callbacks,
    // and splitting the whole file for each made reading it quadratic.
    let mut lines = text.lines().skip(line - 1).take(7);
    let mut joined = lines.next().unwrap_or("").trim().to_owned();
    for next in lines {
        if !joined.ends_with(',') {
            break;
        }
        joined.push(' ');
        joined.push_str(next.trim());
    }
    joined
}

struct Reader<'a> {
    index: &'a ClassIndex,
    files: &'a [(String, String, String)],
    save: SaveKind,
    located: &'a str,
    found: Vec<Callback>,
    context: Option<(usize, String)>,
    event: Option<String>,
}

impl Reader<'_> {
    fn method(&self, name: &str) -> Option<Method> {
        self.files.iter().find_map(|(_, path, text)| {
            find_def(text, name).map(|(line, body)| Method {
                path: path.clone(),
                line,
                body,
                file_text: text.clone(),
            })
        })
    }

    fn push(
        &mut self,
        file: usize,
        line: usize,
        label: String,
        declaration: String,
        method: Option<&str>,
        inside: bool,
    ) {
        let (_, path, text) = &self.files[file];
        let method = method.and_then(|m| self.method(m));
        if self
            .found
            .iter()
            .any(|c| c.label == label && c.path == *path && c.line == line)
        {
            return;
        }
        self.found.push(Callback {
            label,
            path: path.clone(),
            line,
            declaration,
            method,
            inside,
            file_text: text.clone(),
            context: self.context.clone(),
            event: self.event.clone(),
        });
    }

    fn read_file(&mut self, file: usize) {
        let files = self.files;
        let (class, _, text) = &files[file];
        // (indent, "aasm" | "state_machine", line, text, event) of the
        // open machine and event blocks.
        let mut machines: Vec<(usize, &'static str, usize, String, Option<String>)> = Vec::new();
        for (i, indent, code) in code_lines(text) {
            let line = i + 1;
            if code.starts_with('#') {
                continue;
            }
            if code == "end" || code.starts_with("end ") || code.starts_with("end.") {
                if machines.last().is_some_and(|m| m.0 == indent) {
                    machines.pop();
                }
                continue;
            }
            let opens = code.ends_with(" do") || code.contains(" do |");
            for machine in ["aasm", "state_machine"] {
                if declares(code, machine).is_some() && opens {
                    machines.push((indent, machine, line, code.to_owned(), None));
                }
            }
            if machines.last().is_some_and(|m| m.2 == line) {
                continue;
            }
            if let Some((_, machine, at, opening, event)) = machines.last().cloned() {
                self.context = Some((at, opening));
                self.event = event;
                if declares(code, "event").is_some() {
                    let name = declared_methods(declares(code, "event").unwrap_or(""))
                        .into_iter()
                        .next();
                    self.event = name.clone();
                    self.machine_line(file, class, text, line, code, machine);
                    if opens {
                        machines.push((indent, machine, line, code.to_owned(), name));
                    }
                } else {
                    self.machine_line(file, class, text, line, code, machine);
                }
                self.context = None;
                self.event = None;
                continue;
            }
            self.model_line(file, class, text, line, code);
        }
    }

    /// A line inside an `aasm` or `state_machine` block.
    fn machine_line(
        &mut self,
        file: usize,
        class: &str,
        text: &str,
        line: usize,
        code: &str,
        machine: &str,
    ) {
        let hooks: &[&str] = if machine == "aasm" {
            &AASM_HOOKS
        } else {
            &TRANSITION_HOOKS
        };
        // Options on an event or a state: `event :pay, after: :notify do`.
        if machine == "aasm"
            && (declares(code, "event").is_some() || declares(code, "state").is_some())
        {
            for hook in AASM_HOOKS {
                for m in option_methods(code, hook) {
                    self.push(
                        file,
                        line,
                        format!("{class} AASM {hook}: :{m}"),
                        code.to_owned(),
                        Some(&m),
                        true,
                    );
                }
            }
            for m in option_methods(code, "after_commit") {
                self.push(
                    file,
                    line,
                    format!("{class} AASM after_commit: :{m}"),
                    code.to_owned(),
                    Some(&m),
                    false,
                );
            }
            return;
        }
        let commit_hook = declares(code, "after_commit").map(|r| ("after_commit", r));
        let hook = hooks
            .iter()
            .find_map(|h| declares(code, h).map(|r| (*h, r)))
            .or(commit_hook);
        let Some((hook, rest)) = hook else {
            return;
        };
        // `state_machine :state, use_transactions: false` runs its
        // transitions, and their callbacks, without a transaction.
        let no_transaction = machine == "state_machine"
            && self.context.as_ref().is_some_and(|(_, opening)| {
                opening.contains("use_transactions: false")
                    || opening.contains(":use_transactions => false")
            });
        let inside = hook != "after_commit" && !no_transaction;
        let kind = if machine == "aasm" {
            "AASM"
        } else {
            "state_machine"
        };
        let declaration = declaration_at(text, line, rest);
        let mut named = declared_methods(rest);
        named.extend(option_methods(rest, "do"));
        if named.is_empty() {
            let label = format!("{class} {kind} {hook} do … end");
            self.push(file, line, label, declaration, None, inside);
            return;
        }
        for m in named {
            self.push(
                file,
                line,
                format!("{class} {kind} {hook} :{m}"),
                declaration.clone(),
                Some(&m),
                inside,
            );
        }
    }

    /// A line of the model's body outside any state machine.
    fn model_line(&mut self, file: usize, class: &str, text: &str, line: usize, code: &str) {
        let first_symbol = |rest: &str| {
            declared_methods(rest)
                .into_iter()
                .next()
                .unwrap_or_default()
        };
        if let Some((mount, rest)) = UPLOADER_MOUNTS
            .iter()
            .find_map(|m| declares(code, m).map(|r| (m, r)))
        {
            // Listed only when the code reached assigns the column: never
            // noise, and not crowded out by a big model's callbacks.
            let column = first_symbol(rest);
            if self.save != SaveKind::Destroy && names(self.located, &column) {
                let label = format!(
                    "{class} {mount} :{column} (CarrierWave uploads the file in after_save)"
                );
                self.push(file, line, label, code.to_owned(), None, true);
            }
            return;
        }
        for assoc in [
            "has_many",
            "has_one",
            "belongs_to",
            "has_and_belongs_to_many",
        ] {
            let Some(rest) = declares(code, assoc) else {
                continue;
            };
            let name = first_symbol(rest);
            let declaration = declaration_at(text, line, rest);
            let cascades = declaration.contains("dependent: :destroy")
                || declaration.contains(":dependent => :destroy");
            if cascades
                && self.save != SaveKind::Create
                && self.save != SaveKind::Update
                && names(self.located, "destroy")
            {
                let label = format!("{class} {assoc} :{name}, dependent: :destroy (each row destroyed in the destroy's transaction)");
                self.push(file, line, label, declaration.clone(), None, true);
            }
            if declaration.contains("touch: true") || declaration.contains(":touch => true") {
                let label = format!("{class} {assoc} :{name}, touch: true (the parent is saved, with its callbacks, in the same transaction)");
                self.push(file, line, label, declaration.clone(), None, true);
            }
            if declaration.contains("counter_cache:") || declaration.contains(":counter_cache =>") {
                let label = format!("{class} {assoc} :{name}, counter_cache (the parent's row is updated in the same transaction)");
                self.push(file, line, label, declaration, None, true);
            }
            return;
        }
        if let Some(rest) = declares(code, "accepts_nested_attributes_for") {
            let label = format!("{class} accepts_nested_attributes_for :{} (each nested record saved in the same transaction)", first_symbol(rest));
            self.push(file, line, label, code.to_owned(), None, true);
            return;
        }
        let kinds = IN_TRANSACTION
            .iter()
            .map(|k| (*k, true))
            .chain(AFTER_COMMIT.iter().map(|k| (*k, false)));
        for (kind, inside) in kinds {
            let Some(rest) = declares(code, kind) else {
                continue;
            };
            let declaration = declaration_at(text, line, rest);
            if !self.save.runs(kind, &declaration) {
                return;
            }
            let named = declared_methods(&declaration[kind.len()..]);
            if named.is_empty() {
                if opens_block(rest) {
                    let label = format!("{class} {kind} do … end");
                    self.push(file, line, label, declaration, None, inside);
                }
                return;
            }
            for m in named {
                let label = format!("{class} {kind} :{m}");
                self.push(file, line, label, declaration.clone(), Some(&m), inside);
            }
            return;
        }
        let _ = self.index;
    }
}

/// Every callback of `model` that runs for `save`. `located` is the code the
/// job runs as far as it was followed: an uploader's callback counts only
/// when that code assigns its column (CarrierWave uploads only a newly
/// assigned file), a `dependent: :destroy` only when it destroys.
pub(crate) fn callbacks_of(
    index: &ClassIndex,
    model: &ModelRef,
    save: SaveKind,
    located: &str,
) -> Vec<Callback> {
    let files = files_of(index, model);
    let mut reader = Reader {
        index,
        files: &files,
        save,
        located,
        found: Vec::new(),
        context: None,
        event: None,
    };
    for file in 0..files.len() {
        reader.read_file(file);
    }
    reader.found.extend(observer_callbacks(index, model, save));
    reader.found
}

/// The callbacks a Rails observer adds to `model` (`class ProjectObserver <
/// ActiveRecord::Observer` with `def after_create(project)`): the
/// rails-observers gem, Rails' own before 4.0, runs each as the model's
/// callback of that name, so `after_save` and the rest run inside the
/// save's transaction and `after_commit` after it. An observer observes the
/// models its `observe :a, :b` names, else the one its class name names.
fn observer_callbacks(index: &ClassIndex, model: &ModelRef, save: SaveKind) -> Vec<Callback> {
    let short = model.class.rsplit("::").next().unwrap_or(&model.class);
    let snake = longtx_core::query_logs::underscore(short);
    let mut found = Vec::new();
    for class in &index.observers {
        let Some((path, text)) = index.file_of(class) else {
            continue;
        };
        if !observes(class, text, short, &snake) {
            continue;
        }
        for (i, _, code) in code_lines(text) {
            let Some(rest) = code.strip_prefix("def ") else {
                continue;
            };
            let name = super::word_at(rest);
            let inside = IN_TRANSACTION[2..].contains(&name.as_str());
            if !(inside || AFTER_COMMIT.contains(&name.as_str())) || !save.runs(&name, code) {
                continue;
            }
            found.push(Callback {
                label: format!("{class} {name} (observes {short})"),
                path: path.clone(),
                line: i + 1,
                declaration: code.to_owned(),
                method: Some(Method {
                    path: path.clone(),
                    line: i + 1,
                    body: block_from(text, i + 1),
                    file_text: text.clone(),
                }),
                inside,
                file_text: text.clone(),
                context: None,
                event: None,
            });
        }
    }
    found.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    found
}

/// Whether the observer `class` (its file's `text`) observes the model
/// `short` (`snake` in a symbol): by an `observe` line, else by its name.
fn observes(class: &str, text: &str, short: &str, snake: &str) -> bool {
    let observe = code_lines(text).find_map(|(_, _, code)| code.strip_prefix("observe "));
    match observe {
        Some(list) => list.split(',').map(str::trim).any(|name| {
            name.trim_start_matches(':') == snake && name.starts_with(':')
                || name.trim_start_matches("::") == short
        }),
        None => class.rsplit("::").next() == Some(&format!("{short}Observer")),
    }
}

#[cfg(test)]
mod tests {
    use super::{declared_methods, names, option_methods, SaveKind};

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
        assert!(!create.runs("after_update_commit", "after_update_commit :z"));
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
        // The old hash syntax's options are no methods (solidus's
        // `before_transition :to => :complete do |order|`).
        assert!(declared_methods(":to => :complete do |order|").is_empty());
        assert_eq!(declared_methods(":notify, :if => :paid?"), ["notify"]);
        assert!(declared_methods("-> { touch }").is_empty());
        assert_eq!(
            option_methods("event :pay, after: :notify do", "after"),
            ["notify"]
        );
        assert_eq!(
            option_methods("after_transition to: :complete, do: [:a, :b!]", "do"),
            ["a", "b!"]
        );
        assert!(option_methods("event :x, after_commit: :y", "after").is_empty());
    }
}
