//! Transaction sites: where the transaction that held the table is opened
//! or held, found by following the calls from the entry point across files
//! (to a bounded depth), and by reading the callbacks of the alerted
//! tables' models as Active Record runs them inside each save.
//!
//! A site is a `transaction do`, a row lock, or a callback that runs inside
//! a save's transaction; each carries the route from the entry, an excerpt
//! of its boundary and the slow work found inside it. Sites are ranked by
//! how likely the long work runs inside them: slow work inside counts by
//! its distance from the boundary.

mod boundary;
mod one_save;
mod overrides;
mod saves_inside;
mod slow;
mod walk;

use super::callbacks::{callbacks_of, Callback, SaveKind};
use super::{ClassIndex, ModelRef};
use crate::Candidate;
pub use one_save::fold_one_save;
pub use overrides::{fold_overrides, Alternative};
pub use saves_inside::fold_saves_inside;
use serde::Serialize;
use walk::{Frame, Walker};

/// At most this many sites reach the prompt.
pub const MAX_SITES: usize = 3;
/// Lines of a boundary or a method shown per site.
const EXCERPT_LINES: usize = 40;
/// Lines shown of a callback's method or of the method holding the slowest
/// call, below the boundary.
const REACHED_EXCERPT_LINES: usize = 24;
/// Lines shown of a lead where no slow call was recognised.
const LEAD_EXCERPT_LINES: usize = 12;
/// Callbacks listed under one lead, of its save or of saves made inside it;
/// past it a callback is left out of the prompt (the scan still reports it).
const MAX_LISTED_CALLBACKS: usize = 12;

/// A place the transaction is most likely held, for the prompt.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Site {
    pub path: String,
    pub line: usize,
    /// The route from the entry, a step each: `OrdersController#create`,
    /// `Checkout#call`, `Order after_save :notify` ([`Site::route`] joins them).
    pub steps: Vec<String>,
    pub why: String,
    /// The boundary, and the callback's method when it lives elsewhere.
    pub excerpt: String,
    pub score: u32,
    /// The lines the excerpt shows: (path, first, last).
    #[serde(skip)]
    pub covers: Vec<(String, usize, usize)>,
    /// The code that runs inside the transaction, with its distance in
    /// calls from the boundary: the evidence the patterns are chosen by.
    #[serde(skip)]
    pub inside: Vec<(String, u32)>,
    /// What the work inside looks like, slowest first, as the catalogue's
    /// `shapes` name it: `network-call`, `side-effect`, `loop-of-writes`...
    #[serde(skip)]
    pub shapes: Vec<String>,
    /// Every slow call found between where the transaction opens and where
    /// it commits, in the order the walk met them (at most [`MAX_LISTED`]).
    pub slow: Vec<SlowCall>,
    /// Slow calls found beyond [`MAX_LISTED`].
    pub more_slow: usize,
    /// Where the walk stopped or could not see inside this transaction,
    /// said plainly: the list above is what was read, not all there is.
    pub unseen: Vec<String>,
    /// A lead of last resort (a transaction the walk did not reach, or a
    /// callback where nothing slow was seen): shown, but no evidence for
    /// choosing a pattern.
    #[serde(skip)]
    pub last_resort: bool,
    /// Where the transaction opens when a method the site calls opens it
    /// (a helper yielding to the site's block, a service base class's
    /// `call`): the line a fix may change instead of the site's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opens: Option<SiteLine>,
    /// A single bulk statement outside any transaction, its own
    /// transaction (`Report.where(...).delete_all`): only the statement
    /// runs inside it, not what its arguments call first.
    #[serde(skip)]
    pub lone_statement: bool,
    /// Other classes' versions of this site's method that the same call
    /// runs instead, by the record's class (see [`fold_overrides`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Alternative>,
    /// The other callbacks of the same save of the same model, run in this
    /// transaction too (see [`fold_one_save`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub same_save: Vec<Alternative>,
    /// For a callback site: the site whose transaction the callback's save
    /// was made in (spree's refund saved inside `with_order_lock`), which
    /// holds its slow work too.
    #[serde(skip)]
    pub within: Option<SiteLine>,
    /// Callbacks of saves made inside this site, run in its transaction
    /// (see [`fold_saves_inside`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub saves_inside: Vec<Alternative>,
}

/// A line of code in the checkout.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SiteLine {
    pub path: String,
    pub line: usize,
}

/// A line of a transaction's own code that calls down to slow work.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Through {
    pub path: String,
    pub line: usize,
    /// The line, trimmed and capped.
    pub code: String,
}

/// One slow call inside a site's transaction.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SlowCall {
    /// `an HTTP call`, `a mail delivery`...
    pub what: String,
    /// The line itself, trimmed and capped.
    pub code: String,
    /// For a gem's client the code does not show: what it is and where it
    /// is bound (`` `Table`, bound to `Airrecord` in config/initializers ``).
    pub via: Option<String>,
    pub path: String,
    pub line: usize,
    /// The call in the transaction's own code that leads to it, when the
    /// slow line sits in a method called from there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub through: Option<Through>,
}

/// What a destroy's `dependent: :destroy` association is listed as.
pub const CASCADE_WORK: &str = "a cascade of destroys, one row at a time";

/// Slow calls listed per site; the rest are counted.
pub const MAX_LISTED: usize = 12;
/// How a note on what the walk did not read says it: a gem's code, and a
/// method chosen at run time.
const UNREAD_GEM: &str = "calls code outside this repository (a gem or SDK), not read:";
const UNREAD_DYNAMIC: &str =
    "calls a method chosen at run time (`send`); the walk did not follow it";
/// How a note says the walk stopped at its depth in a site's code.
const WALK_STOPPED: &str = "the walk stopped";
/// Notes on what the walk did not see, per site.
const MAX_UNSEEN: usize = 4;

/// Code that runs inside a site's transaction.
#[derive(Debug, Clone)]
pub(super) struct Piece {
    pub text: String,
    pub dist: u32,
    /// Where it is: `Order#notify (app/models/order.rb line 40)`.
    pub at: String,
    /// Its file and first line.
    pub path: String,
    pub line: usize,
    /// The text is longtx's account of a gem's client (`Client = Gem`),
    /// not lines of the file: listed by `at`, not quoted.
    pub described: bool,
    /// The transaction's own line whose call led to this code.
    pub through: Option<Through>,
}

/// A site while it is being found.
#[derive(Debug, Clone)]
pub(super) struct Draft {
    pub path: String,
    pub line: usize,
    pub kind: String,
    pub route: Vec<String>,
    pub boundary: String,
    /// The boundary's first line when it shows more than the site's line
    /// (the whole method around a `transaction do`).
    pub boundary_start: usize,
    /// A line shown before the boundary: the state machine or event a
    /// hook sits in.
    pub context: Option<(usize, String)>,
    pub detail: Option<(String, usize, String)>,
    /// Where the transaction really opens when a helper the site calls
    /// opens it: (path, line).
    pub opens: Option<(String, usize)>,
    pub pieces: Vec<Piece>,
    /// How likely this kind of site holds the work before looking inside.
    pub prior: u32,
    pub is_callback: bool,
    /// Where the walk stopped inside this transaction.
    pub unseen: Vec<String>,
    /// A hook of a state machine whose events the job never seems to fire:
    /// its work counts half (an event named at run time may still fire it,
    /// so it is not dropped).
    pub unfired: bool,
    /// A hook of an AASM event other than the one the job fires.
    pub another_event: bool,
    /// Found by searching the code for the alerted model, not by the walk.
    pub elsewhere: bool,
    /// A destroy's cascade: slow work no call shows, so its
    /// `dependent: :destroy` declarations are listed as [`CASCADE_WORK`].
    pub cascade: bool,
    /// A single bulk statement, its own transaction.
    pub lone_statement: bool,
}

/// Tenths by distance: the boundary's own code counts whole, a method it
/// calls 0.7, one further 0.5...
const DISTANCE_TENTHS: [u32; 5] = [10, 7, 5, 3, 2];

impl Draft {
    /// (score, its shapes, the piece holding the slowest work).
    fn weigh(&self) -> (u32, Vec<String>, Option<usize>) {
        // Each kind of slow work counts once, where it weighs most.
        let mut best: Vec<(&'static str, u32, &'static str, usize)> = Vec::new();
        let mut looped = false;
        for (p, piece) in self.pieces.iter().enumerate() {
            let tenths = DISTANCE_TENTHS[(piece.dist as usize).min(DISTANCE_TENTHS.len() - 1)];
            for (weight, what, needle) in slow::slow_work(&piece.text) {
                if needle == ".each" && piece.dist == 0 {
                    looped = true;
                }
                let value = weight * tenths;
                match best.iter_mut().find(|(_, _, w, ..)| *w == what) {
                    Some(known) if known.1 >= value => {}
                    Some(known) => *known = (needle, value, what, p),
                    None => best.push((needle, value, what, p)),
                }
            }
        }
        best.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let mut slow: u32 = best.iter().map(|b| b.1).sum();
        if self.unfired {
            slow /= 2;
        }
        let slowest = best.first().map(|b| b.3);
        let mut shapes: Vec<String> = Vec::new();
        for shape in best.iter().filter_map(|b| slow::shape_of(b.2, b.0)) {
            if !shapes.iter().any(|s| s == shape) {
                shapes.push(shape.to_owned());
            }
        }
        if looped {
            shapes.push("loop-of-writes".to_owned());
        }
        (slow + self.prior * 10, shapes, slowest)
    }

    /// Every slow call inside, once per line, in walk order.
    fn slow_calls(&self) -> Vec<SlowCall> {
        let mut calls: Vec<SlowCall> = Vec::new();
        for piece in &self.pieces {
            let lines: Vec<&str> = piece.text.lines().collect();
            if self.cascade
                && piece.dist <= 1
                && piece.text.contains("dependent: :destroy")
                && !listed_at(&calls, &piece.path, piece.line)
            {
                calls.push(SlowCall {
                    what: CASCADE_WORK.to_owned(),
                    code: lines[0].trim().chars().take(120).collect(),
                    via: None,
                    path: piece.path.clone(),
                    line: piece.line,
                    through: None,
                });
            }
            for (i, _, what, _) in slow::slow_lines(&piece.text) {
                // `.perform_async(id)` continues the line above it
                // (`Worker`): the call is listed from where its statement
                // starts, so it says what it calls.
                let start = statement_start(&lines, i);
                let line = piece.line + start;
                if listed_at(&calls, &piece.path, line) {
                    continue;
                }
                let statement: Vec<&str> = lines[start..=i].iter().map(|l| l.trim()).collect();
                let code: String = statement.concat().chars().take(120).collect();
                calls.push(SlowCall {
                    what: what.to_owned(),
                    code: if piece.described { String::new() } else { code },
                    via: piece.described.then(|| piece.at.clone()),
                    path: piece.path.clone(),
                    line,
                    // Said once for the calls one line leads to.
                    through: piece.through.clone().filter(|t| {
                        (t.path.as_str(), t.line) != (piece.path.as_str(), line)
                            && !calls.iter().any(|c| c.through.as_ref() == Some(t))
                    }),
                });
            }
        }
        calls
    }

    fn into_site(self) -> Option<Site> {
        let (score, shapes, slowest) = self.weigh();
        // A callback with nothing slow in it is listed, not a site; unless
        // it calls code the walk could not read (a gem, a method chosen at
        // run time, or methods past the walk's depth: Solidus's transition
        // reaches its gateway four calls below the hook): then it stays,
        // last, as a lead the agent reads itself.
        let unread = self.unseen.iter().any(|note| {
            note.contains(UNREAD_GEM)
                || note.contains(UNREAD_DYNAMIC)
                || note.starts_with(WALK_STOPPED)
        });
        let nothing_slow = self.is_callback && score <= self.prior * 10;
        // A hook of an event the job never fires is no lead either way.
        if nothing_slow && (!unread || self.unfired || self.another_event) {
            return None;
        }
        // Such a lead ranks after every site where slow work was seen; so
        // does a transaction the walk did not reach (the slowest first).
        let score = if nothing_slow {
            self.prior
        } else if self.elsewhere {
            1 + (score / 20).min(8)
        } else {
            score
        };
        // A lead shows less: its notes say what to read.
        let limit = if nothing_slow {
            LEAD_EXCERPT_LINES
        } else {
            EXCERPT_LINES
        };
        let cut_to = |text: &str, limit: usize| -> String {
            let lines: Vec<&str> = text.lines().collect();
            let mut shown = lines[..lines.len().min(limit)].join("\n");
            if lines.len() > limit {
                shown.push_str("\n    # … (cut)");
            }
            shown
        };
        let cut = |text: &str| cut_to(text, limit);
        // A method the boundary reaches shows less than the boundary: the
        // slow lines are listed by file and line below it anyway.
        let cut_reached = |text: &str| cut_to(text, limit.min(REACHED_EXCERPT_LINES));
        let boundary = cut(&self.boundary);
        let mut covers = vec![(
            self.path.clone(),
            self.boundary_start,
            self.boundary_start + boundary.lines().count().max(1) - 1,
        )];
        let mut excerpt = boundary;
        if let Some((line, text)) = &self.context {
            covers.push((self.path.clone(), *line, *line));
            excerpt = format!("{text}\n  # …\n{excerpt}");
        }
        if let Some((path, line, body)) = &self.detail {
            let body = cut_reached(body);
            covers.push((path.clone(), *line, line + body.lines().count().max(1) - 1));
            excerpt.push_str(&format!("\n\n# {path} line {line}\n{body}"));
        }
        // The slow call itself, when it lives in a method the boundary
        // reaches rather than in what is already shown.
        if let Some(piece) = slowest.map(|p| &self.pieces[p]) {
            let shown = covers.iter().any(|(path, first, last)| {
                *path == piece.path && (*first..=*last).contains(&piece.line)
            });
            if !shown && piece.dist > 0 {
                let body = cut_reached(&piece.text);
                covers.push((
                    piece.path.clone(),
                    piece.line,
                    piece.line + body.lines().count().max(1) - 1,
                ));
                excerpt.push_str(&format!(
                    "\n\n# the slow call: {} line {}\n{body}",
                    piece.path, piece.line
                ));
            }
        }
        let mut slow = self.slow_calls();
        let why = if slow.is_empty() {
            format!("{}; no slow call was recognised inside it", self.kind)
        } else {
            self.kind.clone()
        };
        let more_slow = slow.len().saturating_sub(MAX_LISTED);
        slow.truncate(MAX_LISTED);
        let mut unseen = self.unseen.clone();
        unseen.truncate(MAX_UNSEEN);
        Some(Site {
            path: self.path,
            line: self.line,
            steps: self.route,
            why,
            excerpt,
            score,
            covers,
            inside: self.pieces.into_iter().map(|p| (p.text, p.dist)).collect(),
            shapes,
            slow,
            more_slow,
            unseen,
            last_resort: nothing_slow || self.elsewhere,
            opens: self.opens.map(|(path, line)| SiteLine { path, line }),
            lone_statement: self.lone_statement,
            alternatives: Vec::new(),
            same_save: Vec::new(),
            within: None,
            saves_inside: Vec::new(),
        })
    }
}

/// The transaction sites of a job, likeliest first.
pub(super) fn transaction_sites(
    index: &ClassIndex,
    models: &[ModelRef],
    entry: Option<&Candidate>,
    save: SaveKind,
    destroyed_table: Option<&str>,
) -> Vec<Site> {
    let mut walker = Walker::new(index, models);
    let entry_label = entry.map(walk::entry_label).unwrap_or_default();
    if let Some(frame) = entry.and_then(Frame::entry) {
        walker.walk(frame);
    }
    walker.read_callbacks_inside();
    let located: String = walker.reached.join("\n");
    // The alerted tables' models, then the models the job saves (their
    // callbacks run in the same transaction and may touch the table).
    let alerted: Vec<String> = models.iter().map(|m| m.class.clone()).collect();
    let mut read: Vec<ModelRef> = models.to_vec();
    let mut round = 0;
    while round < 2 {
        round += 1;
        let saved: Vec<ModelRef> = walker
            .saved_models()
            .into_iter()
            .filter(|m| !read.iter().any(|r| r.class == m.class))
            .take(6)
            .collect();
        let fresh: Vec<ModelRef> = if round == 1 {
            read.iter().cloned().chain(saved.iter().cloned()).collect()
        } else {
            saved.clone()
        };
        if fresh.is_empty() {
            break;
        }
        read.extend(saved);
        for model in &fresh {
            // Which saves the entry makes is a guess from its name: every
            // callback is read, those that agree with it rank a little higher.
            let expected = callbacks_of(index, model, save, &located);
            let is_alerted = alerted.contains(&model.class);
            // A destroy cascades in its own transaction: one site, at the
            // call when the walk saw it (else at the model, for a destroy
            // action on the alerted table), the associations its work.
            let destroy = walker.destroy_call(&model.class);
            let destroyed = destroyed_table.is_some_and(|t| t == model.table);
            let folded = destroy.is_some() || (save == SaveKind::Destroy && destroyed);
            let (cascades, callbacks): (Vec<Callback>, Vec<Callback>) =
                callbacks_of(index, model, SaveKind::Any, &located)
                    .into_iter()
                    .filter(|c| c.may_run_for(&located))
                    .partition(|c| folded && walk::is_cascade(c));
            if folded {
                walker.cascade_site(&entry_label, destroy.as_ref(), model, &cascades, &located);
            }
            for callback in callbacks {
                let agrees = expected.contains(&callback);
                // A destroy runs the destroyed model's destroy callbacks,
                // never its save callbacks: a `before_save` of `discussions`
                // is no lead for `discussions#destroy` (but `users#destroy`
                // may create an `account_deletions` row, callbacks and all).
                if save == SaveKind::Destroy && destroyed && !agrees {
                    continue;
                }
                if callback.inside {
                    walker.callback_site(&entry_label, model, &callback, agrees, is_alerted);
                } else {
                    // After the commit, but it may open a transaction of its own.
                    walker.after_commit(&entry_label, model, &callback);
                }
            }
        }
    }
    walker.elsewhere(&entry_label, models);
    // Statesman's transition hooks, when the job moves a machine.
    for hook in super::statesman::hooks(index, &located) {
        let machine = ModelRef {
            table: String::new(),
            class: hook.class.clone(),
            path: hook.callback.path.clone(),
            line: 1,
            explicit_table_name: false,
        };
        walker.callback_site(&entry_label, &machine, &hook.callback, hook.agrees, false);
    }
    let within = std::mem::take(&mut walker.within);
    let mut sites: Vec<Site> = walker
        .drafts
        .into_iter()
        .enumerate()
        .filter_map(|(at, draft)| {
            let mut site = draft.into_site()?;
            site.within = within
                .iter()
                .find(|(callback, _)| *callback == at)
                .map(|(_, outer)| outer.clone());
            Some(site)
        })
        .collect();
    sites.sort_by(|a, b| {
        b.score
            .cmp(&a.score)
            .then(a.path.cmp(&b.path))
            .then(a.line.cmp(&b.line))
    });
    // Sites at one line are one declaration (`after_save :a, :b, :c`):
    // its methods all run in the save's transaction, so their work is the
    // first one's too, not a duplicate to drop.
    let mut kept: Vec<Site> = Vec::new();
    for site in sites {
        match kept
            .iter_mut()
            .find(|k| k.path == site.path && k.line == site.line)
        {
            Some(first) => first.absorb(site),
            None => kept.push(site),
        }
    }
    kept
}

impl Site {
    /// `OrdersController#create → Checkout#call → Order after_save :notify`.
    pub fn route(&self) -> String {
        self.steps.join(" → ")
    }

    /// The sites listed under this lead: other classes' versions of its
    /// method, the other callbacks of its save, the callbacks of saves
    /// made inside it.
    pub fn listed(&self) -> impl Iterator<Item = &Alternative> {
        self.alternatives
            .iter()
            .chain(&self.same_save)
            .chain(&self.saves_inside)
    }

    /// Takes in the slow work of another site held at the same line.
    fn absorb(&mut self, other: Site) {
        let before = self.slow.len() + self.more_slow;
        for call in other.slow {
            if listed_at(&self.slow, &call.path, call.line) {
                continue;
            }
            if self.slow.len() < MAX_LISTED {
                self.slow.push(call);
            } else {
                self.more_slow += 1;
            }
        }
        self.more_slow += other.more_slow;
        const WITH: &str = "; so do the methods declared with it, whose slow work is listed too";
        if self.slow.len() + self.more_slow > before && !self.why.ends_with(WITH) {
            self.why.push_str(WITH);
        }
        for note in other.unseen {
            if self.unseen.len() < MAX_UNSEEN && !self.unseen.contains(&note) {
                self.unseen.push(note);
            }
        }
        for shape in other.shapes {
            if !self.shapes.contains(&shape) {
                self.shapes.push(shape);
            }
        }
        self.inside.extend(other.inside);
        self.last_resort &= other.last_resort;
    }
}

/// Where the statement at line `i` of `lines` starts: the line above when
/// line `i` opens with `.` and the line above is a bare receiver
/// (`PublishingApiDocumentRepublishingWorker`), else line `i` itself. A
/// longer chain keeps its slow line alone, so the listed code still shows
/// the slow call.
fn statement_start(lines: &[&str], i: usize) -> usize {
    let bare_receiver = |line: &str| {
        let line = line.trim();
        !line.is_empty()
            && !line.starts_with('.')
            && line
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '@' | '.'))
    };
    if i > 0 && lines[i].trim_start().starts_with('.') && bare_receiver(lines[i - 1]) {
        i - 1
    } else {
        i
    }
}

/// Whether `calls` already lists a slow call at `path` line `line`.
fn listed_at(calls: &[SlowCall], path: &str, line: usize) -> bool {
    calls.iter().any(|c| c.path == path && c.line == line)
}

/// Whether `code` holds any slow work longtx recognises.
pub fn has_slow_work(code: &str) -> bool {
    !slow::slow_work(code).is_empty()
}

/// Whether `code` holds slow work outside its strings and its trailing
/// comment: `File.join(__dir__, 'df_api')` and `logger.warn("Twilio
/// status")` name slow work in words only. The walk reads words as leads;
/// a check that must be right when it speaks asks for code.
pub fn has_slow_work_in_code(code: &str) -> bool {
    has_slow_work(&walk::text::code_only(code))
}

/// How slow `code` looks, unweighted by distance.
pub(super) fn slowness(code: &str) -> u32 {
    slow::slow_work(code).iter().map(|(w, ..)| w).sum()
}

/// How a callback is named in a route and a reason.
pub(super) fn callback_kind(callback: &Callback) -> String {
    if callback.inside && transition_machine(callback).is_some() {
        format!(
            "`{}` runs inside the transition's transaction (the machine's `use_transactions`, on unless it is turned off)",
            callback.label
        )
    } else if callback.inside {
        format!("`{}` runs inside the save's transaction", callback.label)
    } else {
        format!("`{}` runs after the commit", callback.label)
    }
}

/// The line of the `state_machine` declaration whose transitions open the
/// transaction a hook of it runs in: the gem wraps each transition, its
/// callbacks and its save in one, unless `use_transactions: false` there
/// says otherwise, so that line is where the transaction is decided.
pub(super) fn transition_machine(callback: &Callback) -> Option<usize> {
    let (line, text) = callback.context.as_ref()?;
    (callback.label.contains(" state_machine ") && text.contains("state_machine")).then_some(*line)
}

/// A site at line 3 of `path` reached by `steps`, nothing slow in it.
#[cfg(test)]
fn test_site(path: &str, steps: &[&str]) -> Site {
    Site {
        path: path.into(),
        line: 3,
        why: String::new(),
        excerpt: String::new(),
        score: 10,
        covers: Vec::new(),
        inside: Vec::new(),
        shapes: Vec::new(),
        slow: Vec::new(),
        more_slow: 0,
        unseen: Vec::new(),
        last_resort: false,
        opens: None,
        lone_statement: false,
        steps: steps.iter().map(|s| s.to_string()).collect(),
        alternatives: Vec::new(),
        same_save: Vec::new(),
        within: None,
        saves_inside: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::statement_start;

    #[test]
    fn a_call_continued_from_a_bare_receiver_starts_on_the_receivers_line() {
        let lines = [
            "if chart_changed?",
            "  PublishingApiDocumentRepublishingWorker",
            "    .perform_async(about_us.document_id)",
            "  scope.where(a: 1)",
            "    .update_all(b: 2)",
            "  Foo",
            "  .bar",
            "    .deliver_later",
        ];
        assert_eq!(statement_start(&lines, 2), 1);
        // A receiver with arguments of its own keeps the slow line alone.
        assert_eq!(statement_start(&lines, 4), 4);
        // One line up only: `.bar` is no bare receiver.
        assert_eq!(statement_start(&lines, 7), 7);
        assert_eq!(statement_start(&lines, 0), 0);
    }
}
