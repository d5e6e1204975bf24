//! What a method's text says without resolving anything: the saves it
//! makes and on what, the bulk statements, the calls on a bare `new`.
//! Pure text, so each rule is tested on its own lines.

use crate::context::identifier_before;

/// The bulk statement a line makes, when it makes one over a scope: not
/// the one-row `where(id: id).update_all(...)` of a counter or a flag.
pub(super) fn bulk_statement(code: &str) -> Option<&'static str> {
    if code.starts_with('#') {
        return None;
    }
    const BULK: [(&str, &str); 6] = [
        (".delete_all", "delete_all"),
        (".update_all", "update_all"),
        (".insert_all", "insert_all"),
        (".upsert_all", "upsert_all"),
        (".import(", "import"),
        (".import ", "import"),
    ];
    const ONE_ROW: [&str; 6] = [
        "(id: id",
        "(id: self.id",
        "id: @",
        ".find(",
        "find_by",
        "(id: record.id",
    ];
    let narrowed = code.replace("( ", "(");
    if ONE_ROW.iter().any(|one| narrowed.contains(one)) || code.contains("in_batches") {
        return None;
    }
    BULK.iter()
        .find(|(needle, _)| code.contains(needle))
        .map(|(_, name)| *name)
}

/// The receivers of saves in `text`: `order` in `order.save!`, `self` for
/// a bare `save`.
pub(super) fn save_receivers(text: &str) -> Vec<String> {
    receivers_of(
        text,
        &[
            ".save",
            ".update",
            ".create",
            ".destroy",
            ".update_attribute",
            ".touch",
        ],
    )
}

/// The receivers of calls of `verbs` in `text`, once each, at most 12: a
/// verb followed by a word character is another method (`destroy_all`),
/// except `update_*` (`update_attributes` saves too). `update_all`,
/// `update_column(s)` and `update_counters` write without instantiating a
/// record, so they run no callback: no save.
pub(super) fn receivers_of(text: &str, verbs: &[&str]) -> Vec<String> {
    const NO_CALLBACKS: [&str; 4] = ["_all", "_columns", "_column", "_counters"];
    let mut found: Vec<String> = Vec::new();
    for &save in verbs {
        for (at, _) in text.match_indices(save) {
            let rest = &text[at + save.len()..];
            let after = rest.chars().next();
            if after.is_some_and(|c| c.is_alphanumeric() || (c == '_' && save != ".update")) {
                continue;
            }
            let skips_callbacks = |suffix: &&str| {
                rest.strip_prefix(suffix)
                    .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
            };
            if save == ".update" && NO_CALLBACKS.iter().any(skips_callbacks) {
                continue;
            }
            let receiver = receiver_before(&text[..at]);
            if !receiver.is_empty() && !found.contains(&receiver) && found.len() < 12 {
                found.push(receiver);
            }
        }
    }
    found
}

/// The associations a record is appended to (`error.notices << @notice`
/// saves the notice, callbacks and all, when the owner is saved).
pub(super) fn appended_to(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (at, _) in text.match_indices(" << ") {
        let name = identifier_before(&text[..at], &[]);
        // A plural name, written as a method of another object.
        let dotted = text[..at - name.len()].ends_with('.');
        if dotted && name.len() > 3 && name.ends_with('s') && !found.contains(&name) {
            found.push(name);
        }
    }
    found
}

/// Attribute writers called in `text`, as (receiver, attribute):
/// `self.content = content` gives `("self", "content")`. Comparisons
/// (`==`) and operator assignments (`+=`, `||=`) are not writers.
pub(super) fn attribute_writes(text: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let code = line.trim();
        let Some((left, right)) = code.split_once(" = ") else {
            continue;
        };
        if right.starts_with('=') || left.ends_with(['=', '+', '-', '|', '&', '*', '!', '<', '>']) {
            continue;
        }
        let Some((receiver, attribute)) = left.rsplit_once('.') else {
            continue;
        };
        let simple = |w: &str| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '@')
        };
        if simple(receiver) && simple(attribute) && !attribute.contains('@') {
            let pair = (receiver.to_owned(), attribute.to_owned());
            if !found.contains(&pair) && found.len() < 12 {
                found.push(pair);
            }
        }
    }
    found
}

/// The methods called on a bare `new(...)` (`new(scope).publish_all!`,
/// `new.call`): instance methods of the class the code is in.
pub(super) fn calls_on_bare_new(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (at, _) in text.match_indices("new") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '@')) {
            continue;
        }
        let rest = crate::context::skip_parens(&text[at + 3..]);
        if let Some(after) = rest.strip_prefix('.') {
            let method = crate::context::word_at(after);
            if method.len() >= 3 && !found.contains(&method) {
                found.push(method);
            }
        }
    }
    found
}

/// Whether `text` calls a save with no receiver (`create!(kind: ...)`,
/// `save!`): the method's own class saves a record. A `def save`, a
/// symbol (`on: :create`) or a longer name (`after_create`) is none.
pub(super) fn saves_bare(text: &str) -> bool {
    const BARE: [&str; 6] = ["create!", "create", "save!", "save", "update!", "update"];
    text.lines().any(|line| {
        let code = without_strings(line.trim());
        let code = code.as_str();
        if code.starts_with("def ") || code.starts_with('#') {
            return false;
        }
        BARE.iter().any(|save| {
            code.match_indices(save).any(|(at, _)| {
                let before = code[..at].chars().next_back();
                let after = code[at + save.len()..].chars().next();
                let starts = before.is_none_or(|c| matches!(c, ' ' | '(' | '=' | '|' | '{'));
                let ends = after.is_none_or(|c| matches!(c, '(' | ' ' | ')'));
                // `save` inside `save!` is the other word's match.
                starts && ends && !code[at + save.len()..].starts_with('!')
            })
        })
    })
}

/// The line with its quoted strings emptied (`raise 'could not create'`
/// holds no call).
pub(super) fn without_strings(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut quote: Option<char> = None;
    for c in code.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                out.push(c);
            }
            Some(_) => {}
            None => {
                if c == '\'' || c == '"' {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

/// `text` without its strings and comments, line by line (an apostrophe
/// in a comment empties no more than its line).
/// What is interpolated in a double-quoted string (`"#{name} sent"`) is
/// code and stays.
pub(in crate::context::sites) fn code_only(text: &str) -> String {
    text.lines()
        .map(code_of_line)
        .collect::<Vec<_>>()
        .join("\n")
}

fn code_of_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quote: Option<char> = None;
    // Open braces of an interpolation being copied.
    let mut depth = 0usize;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if depth > 0 {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if depth > 0 {
                out.push(c);
            } else {
                out.push(' ');
            }
            continue;
        }
        match quote {
            Some('"') if c == '#' && chars.peek() == Some(&'{') => {
                chars.next();
                depth = 1;
                out.push(' ');
            }
            // An escaped character, quote or not, stays in the string.
            Some(_) if c == '\\' => {
                chars.next();
            }
            Some(q) if c == q => {
                quote = None;
                out.push(c);
            }
            Some(_) => {}
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push(c);
            }
            // With no string open, a `#` starts a comment.
            None if c == '#' => break,
            None => out.push(c),
        }
    }
    out
}

/// The receiver `text` ends with: `@order`, `Spree::Order`, `order`.
pub(super) fn receiver_before(text: &str) -> String {
    identifier_before(text, &['@', ':'])
}

/// The methods `text` sends through a job library's proxy:
/// `delay(priority: 1).commit_records` (delayed_job, Sidekiq's extension)
/// enqueues `commit_records`, which runs later in a worker, so the walk
/// must not read it as run inside the transaction (nor read its name in
/// the job's `unique_hash` string as a call). The enqueue itself is still
/// seen on its line.
pub(super) fn deferred_methods(text: &str) -> Vec<String> {
    const PROXIES: [&str; 3] = ["delay", "delay_for", "delay_until"];
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut found: Vec<String> = Vec::new();
    for (at, _) in text.match_indices("delay") {
        let word_end = text[at..]
            .find(|c: char| !is_word(c))
            .map_or(text.len(), |n| at + n);
        let starts_word = text[..at].chars().next_back().is_none_or(|c| !is_word(c));
        if !starts_word || !PROXIES.contains(&&text[at..word_end]) {
            continue;
        }
        // `).` and the method may be split over lines.
        let rest = crate::context::skip_parens(&text[word_end..]);
        let Some(after) = rest.trim_start().strip_prefix('.') else {
            continue;
        };
        let method = crate::context::word_at(after.trim_start());
        if !method.is_empty() && !found.contains(&method) {
            found.push(method);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_create_in_a_class_method_is_a_save_and_words_in_strings_are_not() {
        assert!(saves_bare("  create!(kind: 'new', eventable: d)"));
        assert!(saves_bare("    x = save"));
        assert!(!saves_bare("  raise 'could not create the user' if x"));
        assert!(!saves_bare("  def save"));
        assert!(!saves_bare(
            "  after_create :notify\n  validates :a, on: :create"
        ));
        assert!(!saves_bare("  order.save!"));
    }

    #[test]
    fn writes_that_skip_callbacks_are_no_saves() {
        // ekylibre (round 15): `JournalEntryItem.where(...).update_all`
        // was read as a save, so the items' callbacks seemed to run.
        assert_eq!(
            save_receivers("entry.update_attributes(state: s)\nitem.update!(x: 1)"),
            ["entry", "item"]
        );
        assert!(save_receivers(
            "items.update_all(state: s)\nrow.update_columns(a: 1)\nrow.update_column(:a, 1)\nUser.update_counters(id, n: 1)"
        )
        .is_empty());
    }

    #[test]
    fn a_record_appended_to_an_association_is_saved() {
        assert_eq!(appended_to("error.notices << @notice"), ["notices"]);
        assert!(appended_to("ids << id").is_empty(), "a local array");
        assert!(appended_to("@log_cache << message").is_empty());
    }

    #[test]
    fn attribute_writers_are_read_and_comparisons_are_not() {
        let text =
            "ret = save\nself.content = content\n@page.author = user\nx.count += 1\nif a.b == c\n";
        assert_eq!(
            attribute_writes(text),
            vec![
                ("self".to_owned(), "content".to_owned()),
                ("@page".to_owned(), "author".to_owned())
            ]
        );
    }

    #[test]
    fn methods_on_a_bare_new_are_the_classes_own() {
        assert_eq!(
            calls_on_bare_new("new(editions_scope, x.y(1)).publish_all!"),
            ["publish_all!"]
        );
        assert_eq!(calls_on_bare_new("new.call"), ["call"]);
        assert!(
            calls_on_bare_new("Foo.new(a).run").is_empty(),
            "a constant's own"
        );
        assert!(calls_on_bare_new("renew(a).run").is_empty());
    }

    #[test]
    fn the_receiver_before_a_call_keeps_its_sigil_and_namespace() {
        assert_eq!(receiver_before("x = @order"), "@order");
        assert_eq!(receiver_before("(Spree::Order"), "Spree::Order");
        assert_eq!(receiver_before("foo("), "");
    }

    #[test]
    fn code_only_drops_strings_and_comments() {
        assert_eq!(
            code_only("name += \" (copy: at)\"\n# copy the rows\nsave! # copy\ncopy"),
            "name += \"\"\n\nsave! \ncopy"
        );
        // Interpolated code stays; an escaped quote does not end the string.
        assert_eq!(
            code_only("log \"a \\\" copy #{send_mail(x)} b\""),
            "log \" send_mail(x) \""
        );
    }

    #[test]
    fn without_strings_keeps_the_code_around_them() {
        assert_eq!(
            without_strings("raise 'a create' if \"x\" == y"),
            "raise '' if \"\" == y"
        );
    }

    #[test]
    fn a_method_sent_through_a_job_proxy_is_not_a_call_made_here() {
        let text = "self.delay(priority: 1, queue: \"x\").commit_records\nProjectUser.delay.update_curators(id)\nIdentification.\n  delay(\n    run_at: 1.minute.from_now\n  ).\n  run_update( id )\nsave!\n";
        assert_eq!(
            deferred_methods(text),
            ["commit_records", "update_curators", "run_update"]
        );
        assert!(deferred_methods("delayed_job.run\ndelay = 3\n").is_empty());
    }
}
