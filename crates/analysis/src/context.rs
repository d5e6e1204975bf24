//! What surrounds the located method: the model class of each alerted
//! table, and the methods the located code calls inside the repository,
//! one level deep. The transaction of a controller action usually lives a
//! call away (a service object, the model), so the agent gets where to look
//! as file:line, not whole files.

use super::{find_def, Candidate};
use serde::Serialize;

mod callbacks;
mod class_index;
mod models;
mod sites;
mod statesman;
use class_index::ClassIndex;
pub(crate) use class_index::{declared_event, is_model_path};
#[cfg(test)]
use models::explicit_table_name;
use models::model_of;
pub use models::{camelize, singularize};
pub use sites::{
    has_slow_work, has_slow_work_in_code, Alternative, Site, SiteLine, SlowCall, Through,
    CASCADE_WORK, MAX_SITES,
};
use std::path::Path;

/// At most this many calls are listed per prompt.
const MAX_CALLS: usize = 12;

/// A table's model: `versions` -> `Version` in `app/models/version.rb`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRef {
    pub table: String,
    pub class: String,
    pub path: String,
    pub line: usize,
    /// The model says `self.table_name = ...` (its name alone would not tell).
    pub explicit_table_name: bool,
}

/// A call in the located code, resolved to where it is defined.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRef {
    /// As written: `PaymentGateway.charge`, `notify_warehouse`.
    pub call: String,
    pub path: String,
    pub line: usize,
    /// The called method's body: evidence for ranking the patterns (the
    /// transaction often lives here), not printed.
    #[serde(skip)]
    pub body: String,
    /// The called method's whole file, where the methods it calls in turn
    /// are looked up (ranking evidence, one level further).
    #[serde(skip)]
    pub file_text: String,
}

/// A callback of an alerted table's model, where its code is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallbackRef {
    /// `Order after_save :notify`.
    pub call: String,
    pub path: String,
    pub line: usize,
    /// "inside the transaction" or "after commit".
    pub when: &'static str,
    /// Runs inside the save's transaction.
    #[serde(skip)]
    pub inside: bool,
    /// What runs: ranking evidence, not printed.
    #[serde(skip)]
    pub body: String,
}

/// At most this many callbacks are listed per model.
const MAX_CALLBACKS: usize = 8;

/// Everything [`code_context`] found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CodeContext {
    pub models: Vec<ModelRef>,
    pub calls: Vec<CallRef>,
    /// The models' callbacks, validations and hooks, likeliest first, each
    /// marked as running inside the save's transaction or after its commit
    /// (`CasaOrg validate :validate_twilio_credentials`).
    pub callbacks: Vec<CallbackRef>,
    /// Where the transaction is most likely held, likeliest first.
    pub sites: Vec<Site>,
    /// The bodies of the methods the calls make in their own files:
    /// ranking evidence only, never printed.
    #[serde(skip)]
    pub second_level: Vec<String>,
}

/// The tables models name themselves (`self.table_name = "unreads"`), as
/// (table, class), from the checkout's class index (built once per commit).
pub fn explicit_table_names(repo: &Path) -> Vec<(String, String)> {
    ClassIndex::of(repo)
        .table_names
        .iter()
        .map(|(table, class)| (table.clone(), class.clone()))
        .collect()
}

/// The models of `tables` and the calls of the first candidate's method.
pub fn code_context(
    repo: &Path,
    query_source: &str,
    tables: &[String],
    candidates: &[Candidate],
) -> CodeContext {
    context(repo, query_source, tables, candidates, false)
}

/// [`code_context`] as a prompt shows it: a site that is another class's
/// version of a better-ranked site's method (an STI subclass's override the
/// same call runs instead), or another callback of the same save, is listed
/// under that site, not as a lead of its own. The scan keeps each as a
/// finding: each is a line to change.
pub fn lead_context(
    repo: &Path,
    query_source: &str,
    tables: &[String],
    candidates: &[Candidate],
) -> CodeContext {
    context(repo, query_source, tables, candidates, true)
}

/// Both, from one class index: a checkout without git is indexed afresh
/// on every call, so the folds must not ask for it a second time.
fn context(
    repo: &Path,
    query_source: &str,
    tables: &[String],
    candidates: &[Candidate],
    as_leads: bool,
) -> CodeContext {
    let index = ClassIndex::of(repo);
    let models: Vec<ModelRef> = tables
        .iter()
        .filter_map(|table| model_of(&index, table))
        .collect();
    let save = candidates
        .first()
        .map(|c| {
            let method = c.excerpt.as_deref().map(defined_method).unwrap_or_default();
            callbacks::SaveKind::of_action(&c.path, &method)
        })
        .filter(|kind| *kind != callbacks::SaveKind::Any)
        .unwrap_or_else(|| callbacks::SaveKind::of_source(query_source));
    let calls = candidates
        .first()
        .and_then(|c| c.excerpt.as_ref().map(|e| (c, e)))
        .map(|(candidate, excerpt)| calls_in(&index, candidate, excerpt))
        .unwrap_or_default();
    let second_level = second_level_bodies(&calls);
    let located = candidates
        .first()
        .map(|c| reached_code(c, &calls, &second_level))
        .unwrap_or_default();
    let callbacks = models
        .iter()
        .flat_map(|model| listed_callbacks(callbacks::callbacks_of(&index, model, save, &located)))
        .collect();
    // `api/discussions#destroy` destroys a `discussions` row.
    let destroyed_table = (save == callbacks::SaveKind::Destroy)
        .then(|| query_source.rsplit_once('#'))
        .flatten()
        .and_then(|(controller, _)| controller.rsplit('/').next());
    let mut sites =
        sites::transaction_sites(&index, &models, candidates.first(), save, destroyed_table);
    if as_leads {
        let versions = sites::fold_overrides(&index, sites);
        sites = sites::fold_one_save(sites::fold_saves_inside(versions));
    }
    CodeContext {
        models,
        calls,
        callbacks,
        sites,
        second_level,
    }
}

/// A model's callbacks as listed: the likeliest to hold the table first
/// (inside the transaction, slow work in its code), never the first by line
/// number, at most [`MAX_CALLBACKS`].
fn listed_callbacks(found: Vec<callbacks::Callback>) -> Vec<CallbackRef> {
    let mut listed: Vec<(u32, usize, CallbackRef)> = found
        .into_iter()
        .enumerate()
        .map(|(order, c)| {
            let slow = sites::slowness(c.body()) + sites::slowness(&c.declaration);
            let weight = if c.inside { slow + 1 } else { 0 };
            let (path, line) = c
                .method
                .as_ref()
                .map_or((c.path.clone(), c.line), |m| (m.path.clone(), m.line));
            let callback = CallbackRef {
                call: c.label.clone(),
                path,
                line,
                when: if c.inside {
                    "inside the transaction"
                } else {
                    "after commit"
                },
                body: c.body().to_owned(),
                inside: c.inside,
            };
            (weight, order, callback)
        })
        .collect();
    listed.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    listed.truncate(MAX_CALLBACKS);
    listed.into_iter().map(|(_, _, c)| c).collect()
}

/// `Const.method` / `Const::Inner.method` / `Const.new(...).method`, and
/// bare calls of methods the same file defines.
fn calls_in(index: &ClassIndex, candidate: &Candidate, excerpt: &str) -> Vec<CallRef> {
    let mut calls: Vec<CallRef> = Vec::new();
    let body: Vec<&str> = excerpt.lines().skip(1).collect();
    let body = body.join("\n");
    let mut push = |call: String, path: String, line: usize, body: String, file_text: String| {
        if calls.len() < MAX_CALLS && !calls.iter().any(|c| c.call == call) {
            calls.push(CallRef {
                call,
                path,
                line,
                body,
                file_text,
            });
        }
    };
    for (constant, method) in constant_calls(&body) {
        let Some((path, _)) = index.classes.get(&constant).cloned() else {
            continue;
        };
        let text = index.texts.get(&path).cloned().unwrap_or_default();
        // A method the class does not define itself (`User.update_all`)
        // is the framework's: nothing to point at.
        let Some((line, body)) = find_def(&text, &method) else {
            continue;
        };
        push(format!("{constant}.{method}"), path, line, body, text);
    }
    let own_method = defined_method(excerpt);
    for (word, line, body) in defined_in(&candidate.file_text, excerpt, &own_method) {
        // Its file is the candidate's, already evidence.
        push(word, candidate.path.clone(), line, body, String::new());
    }
    for (receiver, method) in receiver_calls(&body) {
        if let Some((path, line, body, text)) = on_named_model(index, &receiver, &method) {
            push(format!("{receiver}.{method}"), path, line, body, text);
            continue;
        }
        // `@order.finalize!`: a method only one model or service defines.
        if !receiver.starts_with('@') {
            continue;
        }
        let Some([(path, line)]) = index.methods.get(&method).map(Vec::as_slice) else {
            continue;
        };
        let text = index.texts.get(path).cloned().unwrap_or_default();
        let body = find_def(&text, &method).map(|(_, b)| b).unwrap_or_default();
        push(
            format!("{receiver}.{method}"),
            path.clone(),
            *line,
            body,
            text,
        );
    }
    calls
}

/// `sync.perform` in `def perform(sync)`: Rails code names a record after
/// its model, so a receiver `sync` (or `@sync`) is taken for a `Sync` when
/// that model's own file defines the method. A method the model only
/// inherits (`save`, `destroy`) gives nothing to point at.
fn on_named_model(
    index: &ClassIndex,
    receiver: &str,
    method: &str,
) -> Option<(String, usize, String, String)> {
    let class = camelize(receiver.trim_start_matches('@'));
    let (path, _) = index.classes.get(&class)?;
    if !is_model_path(path) {
        return None;
    }
    let text = index.texts.get(path)?;
    let (line, body) = find_def(text, method)?;
    Some((path.clone(), line, body, text.clone()))
}

/// `receiver.method`: calls on instance variables and on locals or
/// parameters (lower-case names; `self` and constants are not receivers),
/// each method once, with the first receiver it is called on.
fn receiver_calls(code: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for (receiver, method) in receiver_calls_each(code) {
        if !found.iter().any(|(_, m)| *m == method) {
            found.push((receiver, method));
        }
    }
    found
}

/// Every distinct receiver and method: `order.finalize!` then
/// `invoice.finalize!` are two calls, and may run two classes' methods.
fn receiver_calls_each(code: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for (at, _) in code.match_indices('.') {
        // `profile&.activate` is a call on `profile` as well.
        let receiver = identifier_before(code[..at].trim_end_matches('&'), &['@']);
        let method = word_at(&code[at + 1..]);
        let name = receiver.trim_start_matches('@');
        let variable = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && name != "self"
            && name.len() > 1;
        let call = (receiver, method);
        if variable && call.1.len() >= 4 && !found.contains(&call) {
            found.push(call);
        }
    }
    found
}

/// The identifier `text` ends with (letters, digits, `_`, and `extra`).
fn identifier_before(text: &str, extra: &[char]) -> String {
    let start = text
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphanumeric() || *c == '_' || extra.contains(c))
        .last()
        .map_or(text.len(), |(at, _)| at);
    text[start..].to_owned()
}

/// `create` for a method that starts `def create` or `def self.create`.
fn defined_method(method: &str) -> String {
    method
        .lines()
        .next()
        .and_then(|l| l.trim().strip_prefix("def "))
        .map(|rest| word_at(rest.trim_start_matches("self.")))
        .unwrap_or_default()
}

/// The bare calls in `method`'s body (past its `def` line) of methods that
/// `file` defines, other than `own` and names under three letters: each as
/// (name, line, body).
fn defined_in<'a>(
    file: &'a str,
    method: &str,
    own: &'a str,
) -> impl Iterator<Item = (String, usize, String)> + 'a {
    let body = method.lines().skip(1).collect::<Vec<_>>().join("\n");
    words(&body)
        .into_iter()
        .filter(move |word| word != own && word.len() >= 3)
        .filter_map(move |word| find_def(file, &word).map(|(line, body)| (word, line, body)))
}

/// The bodies of the methods the listed calls make in their own files (a
/// service's `call` usually hands the work to a private method there).
fn second_level_bodies(calls: &[CallRef]) -> Vec<String> {
    let mut bodies = Vec::new();
    for call in calls.iter().filter(|c| !c.file_text.is_empty()) {
        let own = call.call.rsplit('.').next().unwrap_or_default();
        for (_, _, body) in defined_in(&call.file_text, &call.body, own) {
            if bodies.len() >= MAX_CALLS {
                return bodies;
            }
            bodies.push(body);
        }
    }
    bodies
}

/// The code the first candidate runs as far as it is followed: its method,
/// the methods it calls and the ones those call in their own files (the
/// candidate's own file included: `update` -> `update_user` ->
/// `upload_export_files`).
fn reached_code(candidate: &Candidate, calls: &[CallRef], second_level: &[String]) -> String {
    let mut reached = vec![candidate.excerpt.clone().unwrap_or_default()];
    reached.extend(calls.iter().map(|c| c.body.clone()));
    reached.extend(second_level.iter().cloned());
    for call in calls.iter().filter(|c| c.file_text.is_empty()) {
        reached.extend(
            defined_in(&candidate.file_text, &call.body, &call.call).map(|(_, _, body)| body),
        );
    }
    reached.join("\n")
}

/// `(Const, method)` for each `Const.method`, `Const.new(...).method`.
fn constant_calls(code: &str) -> Vec<(String, String)> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let word_or_path = |c: char| c.is_alphanumeric() || c == '_' || c == ':' || c == '.';
        // `::Const` (from the top level) starts a constant too.
        let rooted = i >= 2
            && chars[i - 1] == ':'
            && chars[i - 2] == ':'
            && (i == 2 || !word_or_path(chars[i - 3]));
        let starts_word = i == 0 || rooted || !word_or_path(chars[i - 1]);
        if !(starts_word && chars[i].is_ascii_uppercase()) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == ':')
        {
            i += 1;
        }
        let constant: String = chars[start..i]
            .iter()
            .collect::<String>()
            .trim_end_matches(':')
            .to_owned();
        // `Utils::get_file_for_upload(url)`: Ruby calls a class method
        // with `::` as well, when the name after it starts lower case.
        if let Some((owner, method)) = constant.rsplit_once("::") {
            if method.starts_with(|c: char| c.is_ascii_lowercase() || c == '_') {
                let is_constant = |part: &str| part.starts_with(|c: char| c.is_ascii_uppercase());
                if owner.split("::").all(is_constant) {
                    found.push((owner.to_owned(), method.to_owned()));
                }
                continue;
            }
        }
        if i >= chars.len() || chars[i] != '.' {
            continue;
        }
        let rest: String = chars[i + 1..].iter().take(2000).collect();
        let mut method = word_at(&rest);
        // `User::SendEmail.(user)` is Ruby's shorthand for `.call(user)`
        // (the style of service objects built with Mandate).
        if rest.starts_with('(') {
            method = "call".to_owned();
        }
        if method == "new" {
            // `Const.new(args).call`: the method after the constructor; or
            // `svc = Const.new(args)` and later `svc.call`.
            let after = skip_parens(&rest[3..]).trim_start();
            method = match after.strip_prefix('.') {
                Some(chained) => word_at(chained),
                None => assigned_to(&chars[..start])
                    .and_then(|var| method_on(&chars[i..].iter().collect::<String>(), &var))
                    .unwrap_or_default(),
            };
        }
        if !method.is_empty() && method != "new" {
            found.push((constant, method));
        }
    }
    found
}

/// The variable a constructor's result is assigned to: `svc = ` just
/// before it on its line.
fn assigned_to(before: &[char]) -> Option<String> {
    let line: String = before
        .iter()
        .rev()
        .take_while(|c| **c != '\n')
        .collect::<String>()
        .chars()
        .rev()
        .collect();
    let lhs = line.trim_end().strip_suffix('=')?.trim_end();
    let var = lhs
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_' || c == '@'))
        .next()?;
    (!var.is_empty() && !lhs.ends_with(['=', '!', '<', '>'])).then(|| var.to_owned())
}

/// The first method called on `var` in `code`: `var.call` gives `call`.
fn method_on(code: &str, var: &str) -> Option<String> {
    let needle = format!("{var}.");
    code.match_indices(&needle)
        .find(|(at, _)| !code[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        .map(|(at, _)| word_at(&code[at + needle.len()..]))
        .filter(|m| !m.is_empty())
}

/// The method called on the result of `constant.method(...)` in `code`:
/// `FinancialYearClose.for_year(year, ...).execute` gives `execute`.
fn chained_after(code: &str, constant: &str, method: &str) -> Option<String> {
    let call = format!("{constant}.{method}");
    code.match_indices(&call).find_map(|(at, _)| {
        let rest = &code[at + call.len()..];
        if rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            return None;
        }
        let chained = skip_parens(rest).trim_start().strip_prefix('.')?;
        let word = word_at(chained);
        (word.len() >= 3).then_some(word)
    })
}

fn skip_parens(text: &str) -> &str {
    if !text.starts_with('(') {
        return text;
    }
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &text[i + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

fn word_at(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '?' || *c == '!')
        .collect()
}

/// Lower-case identifiers of `code` that stand alone (a call on self, not
/// `x.name` nor `Const::name`), in order, each once.
fn words(code: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '?' || c == '!';
    let mut start = None;
    for (i, c) in code
        .char_indices()
        .chain(std::iter::once((code.len(), ' ')))
    {
        match (is_word(c), start) {
            (true, None) => start = Some(i),
            (false, Some(from)) => {
                start = None;
                let raw = &code[from..i];
                let on_receiver = code[..from].ends_with(['.', ':', '@']);
                if !on_receiver
                    && raw.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
                    && !seen.iter().any(|s| s == raw)
                {
                    seen.push(raw.to_owned());
                }
            }
            _ => {}
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_on_constants_are_read_with_and_without_new() {
        let code = "  Payments::Gateway.charge(order)\n  x = Refund.new(order).call\n  Rails.logger.info('x')\n  a.B.c\n  svc = Approval.new(\n    partner: p\n  )\n  svc.call\n";
        assert_eq!(
            constant_calls(code),
            vec![
                ("Payments::Gateway".to_owned(), "charge".to_owned()),
                ("Refund".to_owned(), "call".to_owned()),
                ("Rails".to_owned(), "logger".to_owned()),
                ("Approval".to_owned(), "call".to_owned()),
            ]
        );
        // `::` before a lower-case name is a call too (danbooru's
        // `Utils::get_file_for_upload`); before a capital, a constant.
        assert_eq!(
            constant_calls("  file = Utils::get_file_for_upload(url)\n  x = Post::STATUSES\n"),
            vec![("Utils".to_owned(), "get_file_for_upload".to_owned())]
        );
        // `.(args)` is `.call(args)`.
        assert_eq!(
            constant_calls("  User::SendEmail.(user) do\n"),
            vec![("User::SendEmail".to_owned(), "call".to_owned())]
        );
        assert_eq!(
            explicit_table_name(
                "class V < ApplicationRecord\n  self.table_name = \"legacy_versions\"\nend\n"
            ),
            Some("legacy_versions".to_owned())
        );
    }
}
