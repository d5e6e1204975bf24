//! Following the calls from the entry point: constants (`Checkout.new(o)
//! .call`, `SyncJob.perform_now`), methods of the same class and of the
//! modules and parents it has, and methods on records named after their
//! model (`order.finalize!`, and the STI subclass that defines it). Each
//! call reached inside a transaction is that transaction's evidence.

use super::boundary::{opener, reach, Opener};
use super::{callback_kind, Draft, Piece, Through};
use crate::context::callbacks::{callbacks_of, Callback, SaveKind};
use crate::context::{
    camelize, constant_calls, is_model_path, receiver_calls, receiver_calls_each, words,
    ClassIndex, ModelRef,
};
use crate::controllers::included;
use crate::{
    block_from, declared_classes, find_def, find_instance_def, find_singleton_def,
    singleton_def_at, Candidate,
};
use std::collections::HashSet;

mod cascade;
mod clients;
mod elsewhere;
mod inside;
pub(super) mod text;

pub(super) use cascade::is_cascade;

use text::{
    appended_to, attribute_writes, bulk_statement, calls_on_bare_new, save_receivers, saves_bare,
};

/// Objects Rails hands the application (the database adapter, the
/// logger, the request and its parts): their methods are the framework's,
/// never the one method of that name the application defines (ekylibre's
/// `connection.execute(sql)` is no `FinancialYearClose#execute`).
const FRAMEWORK_OBJECTS: [&str; 9] = [
    "connection",
    "logger",
    "request",
    "response",
    "params",
    "session",
    "cookies",
    "flash",
    "headers",
];

/// Calls followed from the entry (and from a callback).
const MAX_DEPTH: usize = 4;
/// Methods read per job, whatever the depth.
const MAX_FRAMES: usize = 160;
/// Methods read per job in callbacks of saves made inside a site: a
/// budget of their own, so that reading them leaves the callbacks' own
/// sites as much as they had.
const MAX_FRAMES_INSIDE: usize = 80;
/// A polymorphic receiver's method defined by more classes than this is
/// too common a name to say which ran: left to the agent, and said so.
const MAX_POLYMORPHIC: usize = 4;
/// Subclasses read for their override of a model's method: Redmine's
/// `Repository` has seven, each reached by `repository.fetch_changesets`.
/// A prompt lists them under one lead (`overrides.rs`), so reading them
/// all costs it a line each.
const MAX_OVERRIDES: usize = super::overrides::MAX_ALTERNATIVES;
/// Ruby words that are never calls worth following.
const KEYWORDS: [&str; 16] = [
    "end", "if", "unless", "else", "elsif", "return", "yield", "self", "nil", "true", "false",
    "and", "not", "then", "rescue", "ensure",
];

/// Methods every Active Record model has from Rails: a call of one on a
/// receiver of unknown class is the model's own, never the one plain class
/// of the app that happens to define a method of that name (rubygems.org's
/// `trusted_publisher.save` is no `Pusher#save`).
const RECORD_METHODS: [&str; 14] = [
    "save",
    "save!",
    "update",
    "update!",
    "create",
    "create!",
    "destroy",
    "destroy!",
    "valid?",
    "reload",
    "touch",
    "delete",
    "update_columns",
    "update_column",
];

/// Constants of Ruby and Rails whose calls are not slow work to report as
/// unread (`Time.current`, `Rails.logger`).
const CORE_CONSTANTS: &[&str] = &[
    "ActiveRecord",
    "ActiveSupport",
    "ActiveModel",
    "ActionController",
    "ActionView",
    "ActionDispatch",
    "Rails",
    "Time",
    "Date",
    "DateTime",
    "JSON",
    "YAML",
    "I18n",
    "Hash",
    "Array",
    "String",
    "Integer",
    "Float",
    "BigDecimal",
    "Struct",
    "Set",
    "SecureRandom",
    "Digest",
    "Base64",
    "URI",
    "CGI",
    "ERB",
    "Kernel",
    "Object",
    "Module",
    "Class",
    "Regexp",
    "Range",
    "ApplicationRecord",
    // Settings and files of the process itself.
    "Settings",
    "ENV",
    "Figaro",
    "Tempfile",
    "Pathname",
    "Logger",
];

/// Methods of Ruby's and Rails' own objects: an unresolved call of one is
/// no lead (`items.map`, `order.errors`).
const COMMON_METHODS: &[&str] = &[
    "each",
    "map",
    "select",
    "reject",
    "find",
    "where",
    "first",
    "last",
    "count",
    "size",
    "length",
    "empty",
    "present",
    "blank",
    "nil",
    "to_s",
    "to_i",
    "to_f",
    "to_a",
    "to_h",
    "to_sym",
    "join",
    "split",
    "strip",
    "include",
    "merge",
    "keys",
    "values",
    "sort",
    "sort_by",
    "group_by",
    "index_by",
    "pluck",
    "order",
    "limit",
    "includes",
    "joins",
    "preload",
    "any",
    "none",
    "sum",
    "max",
    "min",
    "uniq",
    "compact",
    "flatten",
    "detect",
    "each_with_object",
    "inject",
    "reduce",
    "errors",
    "attributes",
    "assign_attributes",
    "new_record",
    "persisted",
    "changed",
    "saved_changes",
    "previous_changes",
    "reload",
    "lock",
    "with_lock",
    "save",
    "update",
    "create",
    "destroy",
    "delete",
    "valid",
    "build",
    "call",
    "then",
    "tap",
    "dup",
    "freeze",
    "fetch",
    "dig",
    "slice",
    "except",
    "permit",
    "require",
    "params",
    "format",
    "gsub",
    "downcase",
    "upcase",
    "start_with",
    "end_with",
    "touch",
    "increment",
    "decrement",
    "update_column",
    "update_columns",
    "update_attribute",
    "find_by",
    "exists",
];

/// A method found: (path, line, body, the text of its file).
type Def = (String, usize, String, String);

/// Lines `first..=last` of a body, and the site they run inside, with
/// their distance from its boundary.
type Region = (usize, usize, Option<(usize, u32)>);

/// One method (or callback block) being read.
#[derive(Debug, Clone)]
pub(in crate::context) struct Frame {
    path: String,
    file_text: String,
    /// 1-based line of the body's first line.
    start: usize,
    body: String,
    /// `Checkout#call`.
    label: String,
    route: Vec<String>,
    depth: usize,
    /// (site, distance) when this code runs inside a site's transaction.
    inside: Option<(usize, u32)>,
    class: String,
    /// Reached by guessing a polymorphic record's class: its slow work is
    /// listed, a step further off, but the records it saves open no
    /// callback sites of their own.
    guessed: bool,
    /// The line of the transaction's own code whose call led here, when
    /// this method runs inside a site: what a fix moves, when the slow
    /// line itself sits calls below it.
    through: Option<Through>,
}

impl Frame {
    pub fn entry(candidate: &Candidate) -> Option<Frame> {
        let body = candidate.excerpt.clone()?;
        let start = candidate.line?;
        let label = entry_label(candidate);
        Some(Frame {
            path: candidate.path.clone(),
            class: class_at(&candidate.file_text, start),
            file_text: candidate.file_text.clone(),
            start,
            body,
            route: vec![label.clone()],
            label,
            depth: 0,
            inside: None,
            guessed: false,
            through: None,
        })
    }

    fn namespace(&self) -> Vec<String> {
        self.class
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    fn place(&self) -> String {
        format!("`{}` ({} line {})", self.label, self.path, self.start)
    }

    fn piece(&self, text: String, dist: u32) -> Piece {
        Piece {
            text,
            dist,
            at: self.place(),
            path: self.path.clone(),
            line: self.start,
            described: false,
            through: self.through.clone(),
        }
    }
}

/// `OrdersController#create`, or the rake task's file and line.
pub(in crate::context) fn entry_label(candidate: &Candidate) -> String {
    let line = candidate.line.unwrap_or(1);
    let method = candidate
        .excerpt
        .as_deref()
        .map(crate::context::defined_method)
        .unwrap_or_default();
    let class = class_at(&candidate.file_text, line);
    match (class.is_empty(), method.is_empty()) {
        (false, false) => format!("{class}#{method}"),
        _ => format!("{} line {line}", candidate.path),
    }
}

/// The innermost class whose body holds the 1-based `line`: not a class
/// closed above it (`class PrivilegeError < StandardError; end` at the
/// top of `User` leaves the rest of the file `User`'s).
fn class_at(text: &str, line: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let ends_at = |start: usize| -> usize {
        let Some(first) = lines.get(start - 1) else {
            return start;
        };
        let code = first.trim_end();
        if code.ends_with(" end") || code.ends_with(";end") {
            return start;
        }
        let indent = first.len() - first.trim_start().len();
        lines
            .iter()
            .enumerate()
            .skip(start)
            .find(|(_, l)| {
                let t = l.trim_start();
                l.len() - t.len() == indent && (t == "end" || t.starts_with("end "))
            })
            .map_or(lines.len(), |(i, _)| i + 1)
    };
    declared_classes(text)
        .iter()
        .rfind(|(at, _)| *at <= line && ends_at(*at) >= line)
        .map(|(_, name)| name.clone())
        .unwrap_or_default()
}

pub(in crate::context) struct Walker<'a> {
    index: &'a ClassIndex,
    models: &'a [ModelRef],
    pub drafts: Vec<Draft>,
    /// The code read outside any site, for callbacks that depend on what
    /// the job does (an uploader's column, a destroy).
    pub reached: Vec<String>,
    /// The routes to saves of an alerted model: class to route.
    saves: Vec<(String, Vec<String>)>,
    seen: HashSet<(Option<usize>, String, usize)>,
    frames: usize,
    /// Methods read in callbacks of saves made inside a site, and whether
    /// one is being read.
    frames_inside: usize,
    inside_save: bool,
    /// The model whose callback is being read, if one is.
    in_callback: Option<String>,
    /// Destroys of a model's records reached outside any site.
    destroys: Vec<cascade::DestroyCall>,
    /// Callbacks run by a save inside a site that is no callback, to be
    /// read there once the walk from the entry is done.
    callbacks_inside: Vec<inside::CallbackInside>,
    /// Those read: (class, callback, site).
    saved_inside: Vec<(String, String, usize)>,
    /// Callback sites whose save was made inside another site:
    /// (callback site, that site's line).
    pub within: Vec<(usize, super::SiteLine)>,
}

impl<'a> Walker<'a> {
    pub fn new(index: &'a ClassIndex, models: &'a [ModelRef]) -> Self {
        Walker {
            index,
            models,
            drafts: Vec::new(),
            reached: Vec::new(),
            saves: Vec::new(),
            seen: HashSet::new(),
            frames: 0,
            frames_inside: 0,
            inside_save: false,
            in_callback: None,
            destroys: Vec::new(),
            callbacks_inside: Vec::new(),
            saved_inside: Vec::new(),
            within: Vec::new(),
        }
    }

    pub fn walk(&mut self, frame: Frame) {
        let site = frame.inside.map(|(s, _)| s);
        let (frames, limit) = if self.inside_save {
            (&mut self.frames_inside, MAX_FRAMES_INSIDE)
        } else {
            (&mut self.frames, MAX_FRAMES)
        };
        if *frames >= limit {
            if let Some(s) = site {
                self.note(
                    s,
                    format!("the walk read its limit of {limit} methods before `{}` ({} line {}); nothing past it was read", frame.label, frame.path, frame.start),
                );
            }
            return;
        }
        if !self.seen.insert((site, frame.path.clone(), frame.start)) {
            return;
        }
        *frames += 1;
        let lines: Vec<&str> = frame.body.lines().collect();
        if lines.is_empty() {
            return;
        }
        // (first, last, inside) regions of the body.
        let mut regions: Vec<Region> = Vec::new();
        if let Some((s, d)) = frame.inside {
            self.drafts[s]
                .pieces
                .push(frame.piece(frame.body.clone(), d));
            regions.push((0, lines.len() - 1, Some((s, d + 1))));
        } else {
            self.reached.push(frame.body.clone());
            let skip_def = lines[0].trim_start().starts_with("def ");
            let mut from = 0;
            let mut i = usize::from(skip_def);
            while i < lines.len() {
                let Some((opened, helper, one_line)) = self.opener_at(&frame, lines[i]) else {
                    self.bulk_site(&frame, &lines, i);
                    i += 1;
                    continue;
                };
                let last = if one_line { i } else { reach(&lines, i) };
                if from < i {
                    regions.push((from, i - 1, None));
                }
                let s = self.open_site(&frame, &lines, i, last, opened, helper);
                regions.push((i, last, Some((s, 1))));
                from = last + 1;
                i = last + 1;
            }
            if from < lines.len() {
                regions.push((from, lines.len() - 1, None));
            }
        }
        if frame.depth >= MAX_DEPTH {
            if let Some(s) = site {
                // What it calls in a gem is named even here: the last
                // method read may be the one that calls the SDK.
                let body = lines[1.min(lines.len() - 1)..].join("\n");
                self.note_unread(&frame, &body, s);
                let calls = self.calls(&frame, &body, None);
                if !calls.is_empty() {
                    self.note(
                        s,
                        format!(
                            "{} {MAX_DEPTH} calls deep at {}: what it calls ({}) was not read",
                            super::WALK_STOPPED,
                            frame.place(),
                            calls
                                .iter()
                                .take(3)
                                .map(|c| format!("`{}`", c.label))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    );
                }
            }
            return;
        }
        for (first, last, inside) in regions {
            let text = lines[first..=last].join("\n");
            let skip = usize::from(first == 0 && lines[0].trim_start().starts_with("def "));
            let text_calls = lines[first + skip..=last].join("\n");
            if !frame.guessed {
                self.saves_in(&frame, &text, inside);
            }
            if inside.is_none() {
                self.destroys_in(&frame, &lines, first, last);
            }
            self.client_classes(&frame, &text_calls, inside);
            if let Some((s, _)) = inside {
                self.note_unread(&frame, &text_calls, s);
            }
            // What a block given to `after_commit` calls runs after the
            // commit: not inside this site.
            let text_calls = match inside {
                Some(_) => super::slow::without_deferred(&text_calls),
                None => text_calls,
            };
            for child in self.calls(&frame, &text_calls, inside) {
                self.walk(child);
            }
        }
    }

    /// A note on what the walk did not see inside site `s`, once each.
    fn note(&mut self, s: usize, text: String) {
        let unseen = &mut self.drafts[s].unseen;
        if !unseen.contains(&text) {
            unseen.push(text);
        }
    }

    /// What `text` (run inside site `s`) calls that the walk cannot follow:
    /// code outside the repository (a gem, an SDK), calls on objects whose
    /// class the code does not tell, and dynamic dispatch. Said so the agent
    /// reads them itself instead of taking the list of slow work as whole.
    fn note_unread(&mut self, frame: &Frame, text: &str, s: usize) {
        let namespace = frame.namespace();
        // A URL or a message in a string is no call (`"https://crm.example/users"`
        // read as `crm.example`); line by line, so an apostrophe in a
        // comment empties no more than its line.
        let code: Vec<String> = text.lines().map(text::without_strings).collect();
        let text = code.join("\n");
        let text = text.as_str();
        // A constant whose call is already listed as slow work (`Stripe::`,
        // a mailer) needs no second word.
        let gems: Vec<String> = constant_calls(text)
            .into_iter()
            .filter(|(constant, method)| {
                let root = constant
                    .trim_start_matches("::")
                    .split("::")
                    .next()
                    .unwrap_or("");
                !CORE_CONSTANTS.contains(&root)
                    && super::slow::slow_work(&format!("{constant}.{method}")).is_empty()
                    && self.index.resolve(constant, &namespace).is_none()
                    && self.index.resolve_any(constant, &namespace).is_none()
                    && !self.index.bound.contains_key(constant)
            })
            .map(|(constant, method)| format!("`{constant}.{method}`"))
            .take(4)
            .collect();
        if !gems.is_empty() {
            self.note(
                s,
                format!(
                    "{} {} {}",
                    frame.place(),
                    super::UNREAD_GEM,
                    gems.join(", ")
                ),
            );
        }
        let unknown: Vec<String> = receiver_calls(text)
            .into_iter()
            .filter(|(receiver, method)| {
                // A record of a known model (`@order.total_cents`) is no
                // unknown: its attributes are columns, not code to read.
                !COMMON_METHODS.contains(&method.trim_end_matches(['!', '?']))
                    && self.model_named(frame, receiver).is_none()
                    && self.on_receiver(frame, receiver, method, true).0.is_empty()
            })
            .map(|(receiver, method)| format!("`{receiver}.{method}`"))
            .take(4)
            .collect();
        if !unknown.is_empty() {
            self.note(
                s,
                format!(
                    "{} calls methods on objects whose class the code does not tell, not followed: {}",
                    frame.place(),
                    unknown.join(", ")
                ),
            );
        }
        if [
            ".send(",
            ".public_send(",
            " send(",
            "public_send(",
            ".method(",
        ]
        .iter()
        .any(|d| text.contains(d))
        {
            self.note(s, format!("{} {}", frame.place(), super::UNREAD_DYNAMIC));
        }
    }

    /// A line that opens a transaction or lock: directly, or by calling a
    /// helper of the class that does and yields (`with_order_lock do`).
    fn opener_at(&self, frame: &Frame, line: &str) -> Option<(Opener, Option<Helper>, bool)> {
        if let Some(opened) = super::boundary::opener_in(&frame.path, line) {
            return Some((opened, None, false));
        }
        let code = line.trim();
        if let Some((opened, helper)) = self.service_wrapper(frame, code) {
            return Some((opened, Some(helper), true));
        }
        if !(code.ends_with(" do") || code.contains(" do |")) {
            return None;
        }
        let helper = self.block_helper(frame, code, 1)?;
        Some((helper.0, Some(helper.1), false))
    }

    /// The helper `code` calls with a block, when it opens a transaction
    /// or lock and runs the block inside: the class's own or an ancestor's
    /// (`with_order_lock do`), or another class's
    /// (`OrderLocker.lock_order_and_variants(o) do`), called for its value
    /// too (`response = with_event_logging(...) do`). A helper that only
    /// hands its block on (`EventLogger.log_command(klass, payload, &block)`)
    /// is followed `hops` more times to the one that opens.
    fn block_helper(&self, frame: &Frame, code: &str, hops: usize) -> Option<(Opener, Helper)> {
        let call = assigned_value(code);
        let name = crate::context::word_at(call);
        if name.len() < 4 || KEYWORDS.contains(&name.as_str()) {
            return None;
        }
        let mut shown = name.clone();
        let (path, def_line, body, _) = self.own_method(frame, &name).or_else(|| {
            let (constant, method) = constant_calls(call).into_iter().next()?;
            shown = format!("{constant}.{method}");
            let Some(class) = self.index.resolve(&constant, &frame.namespace()) else {
                // A module's own method (`EventLogger.log_command`).
                let module = self.index.resolve_any(&constant, &frame.namespace())?;
                let (path, text) = self.index.file_of(&module)?;
                let (line, body) = find_singleton_def(text, &method)?;
                return Some((path.clone(), line, body, text.clone()));
            };
            let def = self.class_method(&class, &method, true)?;
            // `def self.call(*args, &block) = new(*args).(&block)`: the
            // block runs in the instance's `call`, where the lock is.
            if opened_in(&def.2).is_none() && hands_to_instance(&def.2, &method) {
                return self.class_method(&class, &method, false);
            }
            Some(def)
        })?;
        let Some((offset, opened)) = opened_in(&body) else {
            let handed_on = body.lines().skip(1).find(|l| hands_block_on(l))?;
            let (opened, inner) =
                self.block_helper(frame, handed_on.trim(), hops.checked_sub(1)?)?;
            let helper = Helper {
                said: format!(
                    "`{shown}` ({path} line {def_line}), which hands its block to {}",
                    inner.said
                ),
                ..inner
            };
            return Some((opened, helper));
        };
        // The block is run by `yield`, or by a `&block` it was given.
        let runs_block = body.contains("yield") || body.contains("block.call");
        runs_block.then(|| {
            let helper = Helper {
                said: format!("`{shown}` ({path} line {def_line})"),
                opens: (path, def_line + offset),
                body,
                def_line,
            };
            (opened, helper)
        })
    }

    /// `Orders::Place.call(order)` where a base class's `self.call` opens a
    /// transaction around `new(...).call`: the service's own `call` runs
    /// inside it, though neither the caller nor the service shows one.
    fn service_wrapper(&self, frame: &Frame, code: &str) -> Option<(Opener, Helper)> {
        for (constant, method) in constant_calls(code) {
            if !matches!(method.as_str(), "call" | "perform" | "run" | "execute") {
                continue;
            }
            let Some(mut class) = self.index.resolve(&constant, &frame.namespace()) else {
                continue;
            };
            for _ in 0..4 {
                let found = self.index.classes.get(&class).and_then(|(path, _)| {
                    let text = self.index.texts.get(path)?;
                    let (line, body) = find_singleton_def(text, &method)?;
                    Some((path.clone(), line, body))
                });
                if let Some((path, line, body)) = found {
                    let opened = opened_in(&body).filter(|_| body.contains("new"));
                    if let Some((offset, opened)) = opened {
                        let helper = Helper {
                            said: format!("`{constant}.{method}`, whose `{class}.{method}` ({path} line {line}) wraps the service's own `#{method}` in it"),
                            opens: (path, line + offset),
                            body,
                            def_line: line,
                        };
                        return Some((opened, helper));
                    }
                    break;
                }
                let Some(parent) = self.index.parents.get(&class) else {
                    break;
                };
                class = parent.clone();
            }
        }
        None
    }

    /// A single bulk statement outside any transaction is a transaction of
    /// its own over every row it touches (`Report.where(...).delete_all`,
    /// `Item.import(rows)`): a site, as a `transaction do` is.
    fn bulk_site(&mut self, frame: &Frame, lines: &[&str], at: usize) {
        let code = lines[at].trim();
        let Some(statement) = bulk_statement(code) else {
            return;
        };
        let from = if lines.len() > super::EXCERPT_LINES {
            at.saturating_sub(8)
        } else {
            0
        };
        self.drafts.push(Draft {
            path: frame.path.clone(),
            line: frame.start + at,
            kind: format!(
                "`{statement}` in `{}` is one statement, and so one transaction over every row it touches",
                frame.label
            ),
            route: frame.route.clone(),
            boundary: lines[from..].join("\n"),
            boundary_start: frame.start + from,
            context: None,
            detail: None,
            opens: None,
            pieces: vec![Piece {
                line: frame.start + at,
                ..frame.piece(lines[at].to_owned(), 0)
            }],
            prior: 3,
            is_callback: false,
            unseen: Vec::new(),
            unfired: false,
            another_event: false,
            elsewhere: false,
            cascade: false,
            lone_statement: true,
        });
    }

    fn open_site(
        &mut self,
        frame: &Frame,
        lines: &[&str],
        at: usize,
        last: usize,
        opened: Opener,
        helper: Option<Helper>,
    ) -> usize {
        let block = lines[at..=last].join("\n");
        // The whole method shows where the transaction opens and what runs
        // before it; a long one from a little above the opener.
        let from = if lines.len() > super::EXCERPT_LINES {
            at.saturating_sub(8)
        } else {
            0
        };
        let method = lines[from..].join("\n");
        let kind = match &helper {
            Some(helper) => format!("calls {}, which {}", helper.said, opened.describe()),
            None => format!("{} in `{}`", opened.describe(), frame.label),
        };
        // The helper's own code shows where the transaction really opens:
        // a fix may well be there (the wrapper's `transaction do` removed).
        let opens = helper.as_ref().map(|h| h.opens.clone());
        let detail = helper.map(|h| (h.opens.0, h.def_line, h.body));
        self.drafts.push(Draft {
            path: frame.path.clone(),
            line: frame.start + at,
            kind,
            route: frame.route.clone(),
            boundary: method,
            boundary_start: frame.start + from,
            context: None,
            detail,
            opens,
            pieces: vec![Piece {
                line: frame.start + at,
                ..frame.piece(block, 0)
            }],
            // An opener on the route from the entry is seen, not guessed.
            prior: if frame.depth == 0 { 6 } else { 5 },
            is_callback: false,
            unseen: Vec::new(),
            unfired: false,
            another_event: false,
            elsewhere: false,
            cascade: false,
            lone_statement: false,
        });
        self.drafts.len() - 1
    }

    /// A callback of an alerted model that runs inside the save's
    /// transaction, as a site of its own.
    /// An `after_commit` callback: outside the save's transaction, but a
    /// transaction or lock it opens itself is a site.
    pub fn after_commit(&mut self, entry: &str, model: &ModelRef, callback: &Callback) {
        let Some(m) = &callback.method else {
            return;
        };
        let mut route = Vec::new();
        if !entry.is_empty() {
            route.push(entry.to_owned());
        }
        route.push(callback.label.clone());
        self.in_callback = Some(model.class.clone());
        self.walk(Frame {
            class: class_at(&m.file_text, m.line),
            path: m.path.clone(),
            file_text: m.file_text.clone(),
            start: m.line,
            body: m.body.clone(),
            label: callback.label.clone(),
            route,
            depth: MAX_DEPTH - 2,
            inside: None,
            guessed: false,
            through: None,
        });
        self.in_callback = None;
    }

    pub fn callback_site(
        &mut self,
        entry: &str,
        model: &ModelRef,
        callback: &Callback,
        agrees: bool,
        alerted: bool,
    ) {
        let mut route: Vec<String> = self
            .saves
            .iter()
            .find(|(class, route)| *class == model.class && !route.is_empty())
            .map(|(_, route)| route.clone())
            .unwrap_or_else(|| {
                let mut r = Vec::new();
                if !entry.is_empty() {
                    r.push(entry.to_owned());
                }
                r
            });
        let saved = self.saves.iter().any(|(class, _)| *class == model.class);
        // An AASM hook whose event the job fires (`contract.mark_sent!`).
        let fired = callback.event.as_ref().is_some_and(|event| {
            let bang = format!("{event}!");
            self.reached.iter().any(|code| code.contains(&bang))
        });
        // A hook of a state machine runs only when one of its events fires:
        // a job that never calls `order.next` (or `next!`, `cancel`...)
        // runs no `after_transition`, however often it saves the order.
        let unfired = callback.context.is_some() && !fired && !self.fires_an_event(callback);
        route.push(callback.label.clone());
        let label = callback.label.clone();
        self.drafts.push(Draft {
            path: callback.path.clone(),
            line: callback.line,
            kind: callback_kind(callback),
            route: route.clone(),
            boundary: callback.declaration.clone(),
            boundary_start: callback.line,
            context: callback.context.clone(),
            detail: callback
                .method
                .as_ref()
                .map(|m| (m.path.clone(), m.line, m.body.clone())),
            opens: super::transition_machine(callback)
                .filter(|_| callback.inside)
                .map(|line| (callback.path.clone(), line)),
            pieces: vec![Piece {
                text: callback.declaration.clone(),
                dist: 0,
                at: format!("`{label}` ({} line {})", callback.path, callback.line),
                path: callback.path.clone(),
                line: callback.line,
                described: false,
                through: None,
            }],
            prior: if unfired {
                1
            } else {
                2 + u32::from(saved)
                    + u32::from(agrees)
                    + 2 * u32::from(fired)
                    + 2 * u32::from(alerted)
            },
            is_callback: true,
            unseen: Vec::new(),
            unfired,
            another_event: callback.event.is_some() && !fired,
            elsewhere: false,
            cascade: false,
            lone_statement: false,
        });
        let site = self.drafts.len() - 1;
        let read_inside = self
            .saved_inside
            .iter()
            .find(|(c, l, _)| *c == model.class && *l == callback.label);
        if let Some(&(.., outer)) = read_inside {
            let outer = super::SiteLine {
                path: self.drafts[outer].path.clone(),
                line: self.drafts[outer].line,
            };
            self.within.push((site, outer));
        }
        // A named method the repository does not define is a gem's (an
        // uploader's `remove_file!`): said, so the agent reads it.
        if callback.method.is_none() {
            if let Some((_, name)) = callback.label.rsplit_once(" :") {
                let name = name.trim_end_matches(',');
                self.note(
                    site,
                    format!(
                        "`{}` ({} line {}) {} `{name}`",
                        callback.label,
                        callback.path,
                        callback.line,
                        super::UNREAD_GEM
                    ),
                );
            }
        }
        let (path, start, body, file_text) = match &callback.method {
            Some(m) => (m.path.clone(), m.line, m.body.clone(), m.file_text.clone()),
            None => (
                callback.path.clone(),
                callback.line,
                callback.declaration.clone(),
                callback.file_text.clone(),
            ),
        };
        let class = class_at(&file_text, start);
        self.in_callback = Some(model.class.clone());
        self.walk(Frame {
            path,
            file_text,
            start,
            body,
            label,
            route,
            depth: MAX_DEPTH - 2,
            inside: Some((site, 0)),
            class,
            guessed: false,
            through: None,
        });
        self.in_callback = None;
    }

    /// Saves of an alerted model in `text`: they run its callbacks inside
    /// their own transaction (or the one around them).
    fn saves_in(&mut self, frame: &Frame, text: &str, inside: Option<(usize, u32)>) {
        let mut models: Vec<ModelRef> = self
            .models
            .iter()
            .filter(|model| saves_model(text, frame, model, self.index))
            .cloned()
            .collect();
        let mut receivers = save_receivers(text);
        receivers.extend(appended_to(text));
        // `create!(...)` in a model's own class method (`Event.publish!`)
        // saves a record of that model, callbacks and all.
        if saves_bare(text) {
            receivers.push("self".to_owned());
        }
        for receiver in receivers {
            if let Some(model) = self.model_named(frame, &receiver) {
                if !models.iter().any(|m| m.class == model.class) {
                    models.push(model);
                }
            }
        }
        for model in self.has_one_assigned(frame, text) {
            if !models.iter().any(|m| m.class == model.class) {
                models.push(model);
            }
        }
        for model in self.transitioned(frame, text) {
            if !models.iter().any(|m| m.class == model.class) {
                models.push(model);
            }
        }
        for model in &models {
            // A model's callback saving its own record says nothing of
            // whether the job saves one (`Order after_transition` calling
            // `save!` does not make a job that only locks orders save them).
            let own = self.in_callback.as_ref() == Some(&model.class);
            if !own && !self.saves.iter().any(|(c, _)| *c == model.class) {
                // A save found inside a callback has no route of its own
                // worth showing: the callback's is shown instead.
                let route = if self.in_callback.is_some() {
                    Vec::new()
                } else {
                    frame.route.clone()
                };
                self.saves.push((model.class.clone(), route));
            }
            let Some((s, d)) = inside else {
                continue;
            };
            // A save inside an explicit transaction runs its callbacks in
            // it; a callback's own saves are followed as sites of their own.
            if self.drafts[s].is_callback {
                continue;
            }
            let kind = save_kind(text, frame, model, self.index);
            for callback in callbacks_of(self.index, model, kind, text) {
                if callback.inside && callback.may_run_for(text) && self.drafts[s].pieces.len() < 40
                {
                    let (path, line) = callback
                        .method
                        .as_ref()
                        .map_or((callback.path.clone(), callback.line), |m| {
                            (m.path.clone(), m.line)
                        });
                    self.drafts[s].pieces.push(Piece {
                        text: callback.body().to_owned(),
                        dist: d + 1,
                        at: format!(
                            "`{}` ({} line {})",
                            callback.label, callback.path, callback.line
                        ),
                        path,
                        line,
                        described: false,
                        through: frame.through.clone(),
                    });
                    if let Some(method) = &callback.method {
                        self.callbacks_inside.push(inside::CallbackInside {
                            route: frame.route.clone(),
                            depth: frame.depth,
                            model: model.class.clone(),
                            label: callback.label.clone(),
                            method: method.clone(),
                            at: (s, d),
                        });
                    }
                }
            }
        }
    }

    /// The records `text` moves through a state machine: `order.complete`
    /// (or `complete!`) where the model declares `event :complete`. The
    /// state_machines and AASM integrations save the record in the
    /// transition, so its save callbacks and the machine's hooks run.
    fn transitioned(&self, frame: &Frame, text: &str) -> Vec<ModelRef> {
        let mut found: Vec<ModelRef> = Vec::new();
        for (receiver, method) in receiver_calls_each(text) {
            let event = method.trim_end_matches('!');
            if !self.index.events.contains(event) {
                continue;
            }
            let Some(model) = self.model_named(frame, &receiver) else {
                continue;
            };
            let declares = self
                .index
                .file_of(&model.class)
                .is_some_and(|(_, file)| declares_event(file, event));
            if declares && !found.iter().any(|m| m.class == model.class) {
                found.push(model);
            }
        }
        found
    }

    /// The models saved along the way, as references.
    pub fn saved_models(&self) -> Vec<ModelRef> {
        self.saves
            .iter()
            .filter_map(|(class, _)| {
                let (path, line) = self.index.classes.get(class)?;
                Some(ModelRef {
                    table: String::new(),
                    class: class.clone(),
                    path: path.clone(),
                    line: *line,
                    explicit_table_name: false,
                })
            })
            .collect()
    }

    /// The model a receiver is named after: `@order`, `current_journal`
    /// (its last words), `Spree::Order`; `self` in a model's own method.
    fn model_named(&self, frame: &Frame, receiver: &str) -> Option<ModelRef> {
        self.class_named(frame, receiver)
            .and_then(|class| self.model_of_class(&class))
            .or_else(|| self.built_through_association(frame, receiver))
    }

    /// Whether `class` descends from Active Record (a form kept in
    /// `app/models` does not).
    fn is_record_class(&self, class: &str) -> bool {
        let mut current = class;
        for _ in 0..8 {
            let Some(parent) = self.index.parents.get(current) else {
                return false;
            };
            let parent = parent.trim_start_matches("::");
            if matches!(parent, "ApplicationRecord" | "ActiveRecord::Base") {
                return true;
            }
            current = parent;
        }
        false
    }

    /// `class` as a model, when its file is one.
    fn model_of_class(&self, class: &str) -> Option<ModelRef> {
        let (path, line) = self.index.classes.get(class)?;
        is_model_path(path).then(|| ModelRef {
            table: String::new(),
            class: class.to_owned(),
            path: path.clone(),
            line: *line,
            explicit_table_name: false,
        })
    }

    /// The records saved by assigning a `has_one` association: Rails saves
    /// the assigned record at once, callbacks and all, when its owner
    /// exists ("Assigning an object to a has_one association automatically
    /// saves that object", the Active Record associations guide), and with
    /// the owner's save otherwise. redmine's `self.content = content` in
    /// `WikiPage#save_with_content` saves a `WikiContent`.
    fn has_one_assigned(&self, frame: &Frame, text: &str) -> Vec<ModelRef> {
        let mut found = Vec::new();
        for (receiver, attribute) in attribute_writes(text) {
            let Some(owner) = self.model_named(frame, &receiver) else {
                continue;
            };
            let Some(owner_text) = self.index.texts.get(&owner.path) else {
                continue;
            };
            let declared = owner_text.lines().find_map(|line| {
                let rest = line.trim().strip_prefix("has_one :")?;
                let rest = rest.strip_prefix(attribute.as_str())?;
                rest.starts_with([',', ' '])
                    .then_some(line)
                    .or_else(|| rest.is_empty().then_some(line))
            });
            let Some(declaration) = declared else {
                continue;
            };
            let class =
                cascade::class_name_option(declaration).unwrap_or_else(|| camelize(&attribute));
            let scope: Vec<String> = owner.class.split("::").map(str::to_owned).collect();
            let model = self.index.resolve(&class, &scope);
            found.extend(model.and_then(|class| self.model_of_class(&class)));
        }
        found
    }

    /// The class a receiver is named after, model or not: `@gpo_verify_form`
    /// is a `GpoVerifyForm`, `importer` an `Importer`; `self` the frame's.
    fn class_named(&self, frame: &Frame, receiver: &str) -> Option<String> {
        let name = receiver.trim_start_matches('@');
        let class = if name == "self" || name.is_empty() {
            Some(frame.class.clone())
        } else if name.starts_with(|c: char| c.is_ascii_uppercase()) {
            self.index.resolve(name, &frame.namespace())
        } else {
            let parts: Vec<&str> = name.split('_').collect();
            (0..parts.len()).find_map(|cut| {
                let tail = parts[cut..].join("_");
                self.index
                    .resolve(&camelize(&tail), &frame.namespace())
                    .or_else(|| {
                        self.index
                            .resolve(&camelize(tail.trim_end_matches('s')), &frame.namespace())
                    })
            })
        }?;
        Some(class)
    }

    /// The class a local was made from in this method: `form =
    /// GpoVerifyForm.new(...)`, `order = Order.find(id)`.
    fn assigned_class(&self, frame: &Frame, receiver: &str) -> Option<String> {
        let assigned = format!("{receiver} = ");
        frame.body.lines().find_map(|line| {
            // Read off the line itself: `Replacer.new(post: self)` with no
            // call after it is no `(constant, method)` pair, yet it makes
            // a `Replacer` all the same.
            let constant = made_from(line.trim().strip_prefix(&assigned)?)?;
            self.index.resolve(constant, &frame.namespace())
        })
    }

    /// The classes a local is made from in this method: on its own line
    /// ([`Walker::assigned_class`]), or in each branch of an `if` or `case`
    /// it is assigned (`form = if legacy` / `LegacyForm.new(...)` / `else`
    /// / `Form.new(...)` / `end`).
    fn assigned_classes(&self, frame: &Frame, receiver: &str) -> Vec<String> {
        if let Some(class) = self.assigned_class(frame, receiver) {
            return vec![class];
        }
        let lines: Vec<&str> = frame.body.lines().collect();
        let opening = [format!("{receiver} = if "), format!("{receiver} = case ")];
        let Some(at) = lines
            .iter()
            .position(|l| opening.iter().any(|o| l.trim().starts_with(o.as_str())))
        else {
            return Vec::new();
        };
        let indent = |l: &str| l.len() - l.trim_start().len();
        let mut classes = Vec::new();
        for line in &lines[at + 1..] {
            let code = line.trim();
            if code == "end" && indent(line) <= indent(lines[at]) + receiver.len() + 3 {
                break;
            }
            if let Some(class) =
                made_from(code).and_then(|c| self.index.resolve(c, &frame.namespace()))
            {
                if !classes.contains(&class) {
                    classes.push(class);
                }
            }
        }
        classes
    }

    /// Whether the receiver was made in this file from a class the
    /// application does not define (`@doc = XML::Document.new`): a
    /// library's object, whose `@doc.import` is LibXML's, not the one
    /// model method of that name.
    fn library_object(&self, frame: &Frame, receiver: &str) -> bool {
        let assigned = format!("{receiver} = ");
        frame.file_text.lines().any(|line| {
            line.trim()
                .strip_prefix(&assigned)
                .and_then(made_from)
                .is_some_and(|constant| {
                    self.index
                        .resolve_any(constant, &frame.namespace())
                        .is_none()
                })
        })
    }

    /// Whether the receiver is a constant's method that builds a library's
    /// object (`Services.publishing_api`, whose body is `@publishing_api
    /// ||= GdsApi::PublishingApi.new(...)`): a gem client, so its
    /// `publish` is the gem's, not the one `publish` the application
    /// defines (collections-publisher's `TagPublisher#publish`, round 14).
    fn library_accessor(&self, frame: &Frame, receiver: &str) -> bool {
        let needle = format!(".{receiver}.");
        frame.body.match_indices(&needle).any(|(at, _)| {
            let constant = crate::context::identifier_before(&frame.body[..at], &[':']);
            if !constant.starts_with(|c: char| c.is_ascii_uppercase()) {
                return false;
            }
            // A class's or a module's (`module Services`).
            let Some(owner) = self.index.resolve_any(&constant, &frame.namespace()) else {
                return false;
            };
            let Some((_, text)) = self.index.file_of(&owner) else {
                return false;
            };
            let Some((_, body)) = find_singleton_def(text, receiver) else {
                return false;
            };
            // What it memoises or assigns, or its first line (a method of
            // one expression returns it); not any line that names a gem.
            body.lines().skip(1).enumerate().any(|(i, line)| {
                let line = line.trim();
                let value = match line.split_once("||= ").or_else(|| line.split_once(" = ")) {
                    Some((_, value)) => value.trim(),
                    None if i == 0 => line,
                    None => return false,
                };
                made_from(value)
                    .is_some_and(|made| self.index.resolve_any(made, &frame.namespace()).is_none())
            })
        })
    }

    /// A method of the frame's class: its file, its modules, its parents.
    fn own_method(&self, frame: &Frame, name: &str) -> Option<Def> {
        if let Some((line, body)) = find_def(&frame.file_text, name) {
            return Some((frame.path.clone(), line, body, frame.file_text.clone()));
        }
        let mut owners: Vec<String> = included(&frame.file_text)
            .iter()
            .filter_map(|m| self.index.resolve_any(m, &frame.namespace()))
            .collect();
        let mut class = frame.class.clone();
        for _ in 0..4 {
            let Some(parent) = self.index.parents.get(&class) else {
                break;
            };
            owners.push(parent.clone());
            // The parent's modules too (`include OrderLock` in a base controller).
            if let Some((_, text)) = self.index.file_of(parent) {
                let scope: Vec<String> = parent.split("::").map(str::to_owned).collect();
                owners.extend(
                    included(text)
                        .iter()
                        .filter_map(|m| self.index.resolve_any(m, &scope)),
                );
            }
            class = parent.clone();
        }
        // A record's own `update!` called bare is Active Record's.
        owners.into_iter().find_map(|owner| {
            let (path, text) = self.index.file_of(&owner)?;
            let (line, body) = find_def(text, name)?;
            if class_method_shadowing_record(name, text, line) {
                return None;
            }
            Some((path.clone(), line, body, text.clone()))
        })
    }

    fn child(
        &self,
        frame: &Frame,
        label: String,
        found: Def,
        inside: Option<(usize, u32)>,
    ) -> Frame {
        let (path, start, body, file_text) = found;
        let mut route = frame.route.clone();
        route.push(label.clone());
        let method = label.rsplit(['#', '.']).next().unwrap_or_default();
        let through = frame
            .through
            .clone()
            .or_else(|| inside.and_then(|_| call_line(frame, method)));
        Frame {
            class: class_at(&file_text, start),
            path,
            file_text,
            start,
            body,
            label,
            route,
            depth: frame.depth + 1,
            inside,
            guessed: frame.guessed,
            through,
        }
    }

    /// The methods `text` calls that the repository defines.
    fn calls(&self, frame: &Frame, text: &str, inside: Option<(usize, u32)>) -> Vec<Frame> {
        let deferred = text::deferred_methods(text);
        let mut found: Vec<Frame> = Vec::new();
        let namespace = frame.namespace();
        for (constant, method) in constant_calls(text) {
            let Some(class) = self.index.resolve(&constant, &namespace) else {
                continue;
            };
            // `perform_now` runs `perform` here and now; an enqueue does not.
            let method = match method.as_str() {
                "perform_now" => "perform".to_owned(),
                "perform_later" | "perform_async" | "perform_in" | "deliver_later" => continue,
                _ => method,
            };
            // `Const.new(x).call` reads as (Const, call): an instance method.
            let singleton = !matches!(method.as_str(), "call" | "perform" | "run");
            if let Some(def) = self.class_method(&class, &method, singleton) {
                // A class method that builds an instance (`def for_year(...)
                // new(...)`): what is called on its result is the instance's.
                let chained = (singleton && builds_instance(&def.2))
                    .then(|| crate::context::chained_after(text, &constant, &method))
                    .flatten()
                    .and_then(|then| {
                        let instance = self.class_method(&class, &then, false)?;
                        Some((then, instance))
                    });
                found.push(self.child(frame, format!("{class}#{method}"), def, inside));
                if let Some((then, instance)) = chained {
                    found.push(self.child(frame, format!("{class}#{then}"), instance, inside));
                }
            }
        }
        // A method already on the route (this frame's own among them) is
        // being read: reading it again from here would run its lines after
        // the transaction inside it (panoptes' `" (copy: #{time})"` in
        // `copy_project`, read as a call of `copy`, the method whose
        // transaction was open).
        let on_route = |word: &str| {
            frame
                .route
                .iter()
                .any(|label| label.rsplit(['#', '.']).next() == Some(word))
        };
        // Its own methods: called bare, or on a bare `new(scope)` in a
        // class method (`new(scope).publish_all!`).
        for word in words(text).into_iter().chain(calls_on_bare_new(text)) {
            if word.len() < 3 || KEYWORDS.contains(&word.as_str()) || on_route(&word) {
                continue;
            }
            if let Some(def) = self.own_method(frame, &word) {
                let owner = class_at(&def.3, def.1);
                found.push(self.child(frame, format!("{owner}#{word}"), def, inside));
            }
        }
        // `records.each(&:fetch_changesets)` in a model: its own instances'.
        for (at, _) in text.match_indices("(&:") {
            let method = crate::context::word_at(&text[at + 3..]);
            if method.len() < 3 || frame.class.is_empty() {
                continue;
            }
            let mut owners = vec![frame.class.clone()];
            owners.extend(self.index.descendants(&frame.class).into_iter().take(6));
            for owner in owners {
                let Some((path, text)) = self.index.file_of(&owner) else {
                    continue;
                };
                if let Some((line, body)) = find_instance_def(text, &method) {
                    let def = (path.clone(), line, body, text.clone());
                    found.push(self.child(frame, format!("{owner}#{method}"), def, inside));
                }
            }
        }
        for (receiver, method) in receiver_calls_each(text) {
            let (defs, guessed) = self.on_receiver(frame, &receiver, &method, inside.is_some());
            for (class, def) in defs {
                let mut child = self.child(frame, format!("{class}#{method}"), def, inside);
                if guessed {
                    child.guessed = true;
                    child.inside = inside.map(|(s, d)| (s, d + 1));
                }
                found.push(child);
            }
        }
        found.retain(|f| {
            let method = f.label.rsplit(['#', '.']).next().unwrap_or("");
            !deferred.iter().any(|d| d == method)
        });
        found
    }

    /// `method` of `class` (or its parents): the instance method first,
    /// then a class method of that name.
    fn class_method(&self, class: &str, method: &str, singleton_first: bool) -> Option<Def> {
        let mut class = class.to_owned();
        for _ in 0..4 {
            if let Some((path, _)) = self.index.classes.get(&class) {
                if let Some(text) = self.index.texts.get(path) {
                    let def = if singleton_first {
                        find_singleton_def(text, method).or_else(|| find_def(text, method))
                    } else {
                        find_instance_def(text, method).or_else(|| find_def(text, method))
                    };
                    if let Some((line, body)) = def {
                        return Some((path.clone(), line, body, text.clone()));
                    }
                }
            }
            class = self.index.parents.get(&class)?.clone();
        }
        None
    }

    /// `order.finalize!`: the model the receiver is named after, or the
    /// subclasses sharing its table that define the method; an instance
    /// variable's method that one model or service alone defines; and,
    /// with `in_site`, a polymorphic association's method each class that
    /// defines it. And whether the class was guessed so (several read).
    fn on_receiver(
        &self,
        frame: &Frame,
        receiver: &str,
        method: &str,
        in_site: bool,
    ) -> (Vec<(String, Def)>, bool) {
        let mut found = Vec::new();
        // `self.class.where(...)`: a class method of the code's own class,
        // else Active Record's query interface or Ruby's, never the one
        // plain class that defines a method of that name (brave-intl
        // publishers' `self.class.where` in a `Channel` validation is no
        // `Uphold::Models::Card#where`, an API client's).
        if receiver == "class" {
            if let Some(def) = self.class_method(&frame.class, method, true) {
                found.push((frame.class.clone(), def));
            }
            return (found, false);
        }
        let named = self.model_named(frame, receiver).map(|m| m.class);
        if let Some(class) = named {
            // `record.update!` is Active Record's too.
            if let Some(def) = self
                .class_method(&class, method, false)
                .filter(|def| !class_method_shadowing_record(method, &def.3, def.1))
            {
                found.push((class.clone(), def));
            }
            {
                // Subclasses sharing the table override it (`Repository::Git`).
                for sub in self
                    .index
                    .descendants(&class)
                    .into_iter()
                    .take(MAX_OVERRIDES)
                {
                    let Some((path, _)) = self.index.classes.get(&sub) else {
                        continue;
                    };
                    let Some(text) = self.index.texts.get(path) else {
                        continue;
                    };
                    if let Some((line, body)) = find_def(text, method) {
                        found.push((sub.clone(), (path.clone(), line, body, text.clone())));
                    }
                }
            }
            return (found, false);
        }
        // A form or service made here whose class defines `update` or
        // `save` itself (caseflow's `form = if legacy ... else
        // HearingUpdateForm.new(...) end; form.update`): the class's own,
        // not Active Record's.
        if RECORD_METHODS.contains(&method) {
            for class in self.assigned_classes(frame, receiver) {
                if !self.is_record_class(&class) {
                    if let Some(def) = self.class_method(&class, method, false) {
                        found.push((class, def));
                    }
                }
            }
            return (found, false);
        }
        // A plain class (a form, a service, an importer) the receiver was
        // made from here, or is named after.
        let plain = self
            .assigned_class(frame, receiver)
            .or_else(|| self.class_named(frame, receiver));
        if let Some(class) = plain {
            if let Some(def) = self.class_method(&class, method, false) {
                found.push((class, def));
                return (found, false);
            }
        }
        let defined = self
            .index
            .methods
            .get(method)
            .map_or(&[][..], Vec::as_slice);
        // A polymorphic association's record may be of any class defining
        // the method (upcase's `purchaseable.send_registration_emails`, a
        // `Product`'s or a `Section`'s): inside a transaction each is read,
        // as Ruby may run any, so their slow work is listed. Outside one it
        // is not: a guess at the class must not add transactions of its own
        // that crowd out the ones the route surely reaches.
        let polymorphic = in_site
            && self
                .index
                .polymorphic
                .contains(receiver.trim_start_matches('@'));
        let followed = match defined.len() {
            1 => defined,
            2..=MAX_POLYMORPHIC if polymorphic => defined,
            _ => &[][..],
        };
        if followed.is_empty()
            || FRAMEWORK_OBJECTS.contains(&receiver)
            || self.library_object(frame, receiver)
            || self.library_accessor(frame, receiver)
        {
            return (found, false);
        }
        for (path, line) in followed {
            if let Some(text) = self.index.texts.get(path) {
                if let Some((_, body)) = find_def(text, method) {
                    let class = class_at(text, *line);
                    found.push((class, (path.clone(), *line, body, text.clone())));
                }
            }
        }
        // More than one class ran it only by a polymorphic guess.
        let guessed = found.len() > 1;
        (found, guessed)
    }
}

/// The constant an assigned value is made from: `Replacer` for
/// `Replacer.new(post: self)` or `Replacer.build`, none for a call on a
/// variable or a literal.
fn made_from(value: &str) -> Option<&str> {
    let end = value
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(value.len());
    let constant = value[..end].trim_end_matches(':');
    (constant.starts_with(|c: char| c.is_ascii_uppercase()) && value[end..].starts_with('.'))
        .then_some(constant)
}

/// Whether the `def` of `name` at `line` of `text` is a class method of a
/// name a record answers itself (`update!`, `save`): a record's `update!`
/// is Active Record's, never a class method of that name (danbooru's
/// `ApplicationRecord.update!`, which updates every row of a relation).
fn class_method_shadowing_record(name: &str, text: &str, line: usize) -> bool {
    RECORD_METHODS.contains(&name) && singleton_def_at(text, line)
}

/// A method that opens the transaction for the code that calls it: a
/// helper yielding to the caller's block, or a service base class's `call`.
struct Helper {
    /// How the site's reason names it.
    said: String,
    /// Where its transaction or lock opens: (path, 1-based line).
    opens: (String, usize),
    /// Its whole `def`, shown with the site.
    body: String,
    def_line: usize,
}

/// Whether a method's last statement builds an instance of its class
/// (`new(year, close_on)`, `self.new(...)`): a factory.
fn builds_instance(body: &str) -> bool {
    let statements: Vec<&str> = body
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#') && *line != "end")
        .collect();
    statements.last().is_some_and(|last| {
        last.starts_with("new(")
            || last.starts_with("new ")
            || last.starts_with("self.new(")
            || *last == "new"
    })
}

/// Whether a model's file declares a state-machine event of that name
/// (`event :complete do`, `event :pay, after: :notify`).
fn declares_event(file: &str, event: &str) -> bool {
    file.lines()
        .filter_map(crate::context::declared_event)
        .any(|declared| declared == event)
}

/// Whether a singleton method only builds an instance and calls the
/// instance's method of the same name (`new(*args).call(&block)`, or the
/// `.()` shorthand), so the work is in the instance's method.
fn hands_to_instance(body: &str, method: &str) -> bool {
    body.lines().skip(1).any(|line| {
        let line = line.trim();
        line.contains("new(") && (line.contains(&format!(").{method}")) || line.contains(").("))
    })
}

/// The first line of `frame`'s body after its `def` that calls `method`
/// (`Adapters::ContentStore.call(...)`, `.(...)` for `call`).
fn call_line(frame: &Frame, method: &str) -> Option<Through> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    frame
        .body
        .lines()
        .enumerate()
        .skip(1)
        .find_map(|(i, line)| {
            let code = line.trim();
            if code.starts_with('#') {
                return None;
            }
            let named = code.match_indices(method).any(|(at, _)| {
                !code[..at].ends_with(is_word)
                    && !code[at + method.len()..].starts_with(|c: char| is_word(c) || c == ':')
            });
            let shorthand = method == "call" && code.contains(".(");
            (named || shorthand).then(|| Through {
                path: frame.path.clone(),
                line: frame.start + i,
                code: code.chars().take(100).collect(),
            })
        })
}

/// `response = with_event_logging(...) do` -> the call after the
/// assignment; any other line as it is.
fn assigned_value(code: &str) -> &str {
    let Some((target, value)) = code.split_once(" = ").or_else(|| code.split_once(" ||= ")) else {
        return code;
    };
    let target = target.trim_start_matches('@');
    let is_variable = target.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && target.chars().all(|c| c.is_alphanumeric() || c == '_');
    if is_variable {
        value.trim_start()
    } else {
        code
    }
}

/// A line that passes the block its method was given on to another call
/// (`EventLogger.log_command(klass, payload, &block)`, `lock(&)`).
fn hands_block_on(line: &str) -> bool {
    let code = line.trim();
    !code.starts_with("def ")
        && !code.starts_with('#')
        && ["&block)", "&blk)", "&)", "&proc)"]
            .iter()
            .any(|passed| code.contains(passed))
}

/// The first line of a method's body (after its `def`) that opens a
/// transaction or lock, as (lines after the `def`, what it opens).
fn opened_in(body: &str) -> Option<(usize, Opener)> {
    body.lines()
        .enumerate()
        .skip(1)
        .find_map(|(offset, line)| opener(line).map(|opened| (offset, opened)))
}

/// Whether `text` saves (or destroys) a record of `model`: on a receiver
/// named after it, on the class itself, or as the model's own `save`.
fn saves_model(text: &str, frame: &Frame, model: &ModelRef, index: &ClassIndex) -> bool {
    !verbs_saving(text, frame, model, index).is_empty()
}

/// Which callbacks a save of `model` in `text` runs: only the update ones
/// when every save of it there is an update of a record that exists
/// (`user.update(password: ...)` sends no `after_create` welcome mail).
fn save_kind(text: &str, frame: &Frame, model: &ModelRef, index: &ClassIndex) -> SaveKind {
    const UPDATES: [&str; 6] = [
        "update",
        "update!",
        "update_attribute",
        "update_attributes",
        "update_attributes!",
        "touch",
    ];
    let verbs = verbs_saving(text, frame, model, index);
    let others = text::receivers_of(text, &[".save", ".create", ".destroy"])
        .into_iter()
        .chain(text::appended_to(text))
        .any(|r| frame_model_is(frame, &r, model));
    if !verbs.is_empty()
        && verbs.iter().all(|v| UPDATES.contains(v))
        && !others
        && !text::saves_bare(text)
    {
        SaveKind::Update
    } else {
        SaveKind::Any
    }
}

/// Whether `receiver` reads as a record of `model` (`@user`, `user`).
fn frame_model_is(frame: &Frame, receiver: &str, model: &ModelRef) -> bool {
    let short = model.class.rsplit("::").next().unwrap_or(&model.class);
    let name = receiver.trim_start_matches('@');
    camelize(name) == short || (name == "self" && frame.class == model.class)
}

/// The save verbs `text` sends to a record of `model`: on a receiver
/// named after it, on the class itself, or as the model's own `save`.
fn verbs_saving(
    text: &str,
    frame: &Frame,
    model: &ModelRef,
    index: &ClassIndex,
) -> Vec<&'static str> {
    let mut verbs = Vec::new();
    const SAVES: [&str; 12] = [
        "save",
        "save!",
        "update",
        "update!",
        "update_attribute",
        "update_attributes",
        "update_attributes!",
        "create",
        "create!",
        "destroy",
        "destroy!",
        "touch",
    ];
    let short = model.class.rsplit("::").next().unwrap_or(&model.class);
    let mut relatives = vec![model.class.clone()];
    relatives.extend(index.descendants(&model.class));
    let own = relatives.contains(&frame.class);
    for line in text.lines() {
        let code = line.trim();
        for save in SAVES {
            for (at, _) in code.match_indices(save) {
                let after = code[at + save.len()..].chars().next();
                if after.is_some_and(|c| {
                    c.is_alphanumeric() || c == '_' || (c == '!' && !save.ends_with('!'))
                }) {
                    continue;
                }
                let before = &code[..at];
                if !before.ends_with('.') {
                    // A bare `save!` in the model's own method.
                    if own && !before.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                        verbs.push(save);
                    }
                    continue;
                }
                let receiver = text::receiver_before(&before[..before.len() - 1]);
                let name = receiver.trim_start_matches('@');
                if name == short
                    || receiver == model.class
                    || camelize(name) == short
                    || (own && name == "self")
                    || relatives
                        .iter()
                        .any(|r| r.rsplit("::").next() == Some(&camelize(name)))
                {
                    verbs.push(save);
                }
            }
        }
    }
    let _ = block_from;
    verbs
}
