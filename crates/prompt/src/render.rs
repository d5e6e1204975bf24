//! Filling the tera template with a job's facts, its code candidates and
//! the ranked patterns, inside a size budget.

use crate::locate::{explain_none, Candidate, CodeContext};
use crate::sanitize::clean;
use longtx_catalog::{rank, Catalogue, Evidence, Pattern};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The prompt's size budget unless configured: 48 KiB.
pub const DEFAULT_BUDGET_BYTES: usize = 48 * 1024;
/// (patterns shown in full, excerpt cap in characters), tried in turn until
/// the prompt fits: at most two patterns in full, the rest as an index of
/// one line each (three or four in full were a third to a half of a
/// prompt, and led the agent to the first one's fix whether it fitted).
const ATTEMPTS: [(usize, usize); 5] = [(2, 8000), (1, 8000), (0, 8000), (0, 2000), (0, 400)];
const HARD_CUT_NOTICE: &str = "\n\n[longtx: the prompt was cut here to fit its size budget]\n";

/// What the prompt says about the job. Built from the job row, or from the
/// command line for `longtx prompt`.
#[derive(Debug, Clone, Default)]
pub struct JobFacts {
    pub id: Option<i64>,
    pub query_source: String,
    pub tables: Vec<String>,
    pub max_duration_seconds: Option<f64>,
    pub alert_count: i64,
    pub first_seen_at: Option<String>,
    pub last_seen_at: Option<String>,
    pub threshold_seconds: f64,
    pub alert_links: Vec<String>,
    /// Why the pre-review rejected this source's previous fix, so the next
    /// attempt does not repeat it.
    pub previous_rejection: Vec<String>,
    /// The merged fix that did not hold, when a regression opened this job.
    pub previous_fix: Option<PreviousFix>,
}

/// A merged fix for the same source after which the alert came back.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PreviousFix {
    pub job_id: i64,
    pub pr: String,
    /// (path, lines changed).
    pub files: Vec<(String, u64)>,
    pub alerts_since: i64,
    pub longest_since_seconds: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct RenderedPrompt {
    pub text: String,
    /// `patterns sha256:… template sha256:…`: what it was made from.
    pub revision: String,
    /// The SHA-256 of `text`, hex, for the workflow to check what it fetched.
    pub sha256: String,
    /// What had to give way to the budget, if anything.
    pub truncation: Option<String>,
    /// The files the code was located in, best first (for predicting the
    /// fix's reviewers before it is paid for).
    pub located: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("the prompt template does not parse: {0}")]
    Template(String),
    #[error("the prompt template failed to render: {0}")]
    Render(String),
}

/// A compiled template; render many prompts with one.
pub struct PromptRenderer {
    tera: tera::Tera,
    template_revision: String,
    budget: usize,
}

const TEMPLATE_NAME: &str = "prompt.md";

#[derive(Serialize)]
struct Context<'a> {
    job: JobView,
    candidates: Vec<CandidateView>,
    /// Where the transaction is held, when found.
    sites: Vec<SiteView>,
    /// The first two sites scored within a fifth of each other: the
    /// prompt says so instead of ranking one as the likelier.
    sites_close: bool,
    /// The first site is one of several classes' versions of a method: the
    /// prompt says the record's class picks, not the score.
    first_alternatives: bool,
    no_candidates: Option<String>,
    /// The alerted tables' models and the calls of the located method.
    code: &'a CodeContext,
    full_patterns: Vec<PatternView<'a>>,
    index_patterns: Vec<PatternView<'a>>,
    catalogue_revision: &'a str,
    truncation_note: Option<String>,
}

#[derive(Serialize)]
struct JobView {
    id: Option<i64>,
    query_source: String,
    tables: Vec<String>,
    max_duration_seconds: Option<f64>,
    alert_count: i64,
    first_seen_at: Option<String>,
    last_seen_at: Option<String>,
    threshold_seconds: f64,
    alert_links: Vec<String>,
    previous_rejection: Vec<String>,
    previous_fix: Option<PreviousFix>,
}

#[derive(Serialize)]
struct CandidateView {
    path: String,
    line: Option<usize>,
    reason: String,
    excerpt: Option<String>,
    /// A code fence longer than any backtick run in the excerpt.
    fence: String,
}

#[derive(Serialize)]
struct SiteView {
    path: String,
    line: usize,
    route: String,
    why: String,
    excerpt: String,
    fence: String,
    /// Every slow call found inside, with where it is.
    slow: Vec<crate::locate::SlowCall>,
    more_slow: usize,
    /// Where the walk stopped: what the list above may lack.
    unseen: Vec<String>,
    /// Other classes' versions of its method, one of which the same call
    /// runs instead.
    alternatives: Vec<AlternativeView>,
    /// The other callbacks of the same save, run in its transaction too.
    same_save: Vec<AlternativeView>,
    /// Callbacks of saves made inside it, run in its transaction.
    saves_inside: Vec<AlternativeView>,
}

#[derive(Serialize)]
struct AlternativeView {
    method: String,
    path: String,
    line: usize,
    slow: Vec<crate::locate::SlowCall>,
    more_slow: usize,
}

#[derive(Serialize)]
struct PatternView<'a> {
    id: &'a str,
    title: &'a str,
    score: u32,
    matched: Vec<String>,
    /// With its headings demoted to nest under the prompt's own sections.
    body: String,
}

/// A pattern is printed in full only when its signals matched at least
/// this much: one hit in the located method of a signal few patterns share,
/// or one in the rest of its file of a signal only it lists. A pattern
/// matched only by shared or weak words is kilobytes of noise.
const MIN_FULL_SCORE: u32 = 2 * longtx_catalog::UNIQUE_SIGNAL;

/// `body` without its `## {title}` section: what a fix changes for the
/// transaction's length is the agent's to say in the PR, not to read.
fn without_section(body: &str, title: &str) -> String {
    let heading = format!("## {title}");
    let mut skipping = false;
    let mut fenced = false;
    let mut kept = Vec::new();
    for line in body.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && line.starts_with("## ") {
            skipping = line.trim_end() == heading;
        }
        if !skipping {
            kept.push(line);
        }
    }
    kept.join("\n")
}

/// Markdown headings two levels deeper (`## Problem` → `#### Problem`),
/// outside code fences, so a pattern's sections sit under the prompt's
/// `## Fix patterns that fit` instead of beside it.
pub(crate) fn demote_headings(body: &str) -> String {
    let mut fenced = false;
    body.lines()
        .map(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if !fenced && line.starts_with('#') {
                format!("##{line}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl PromptRenderer {
    /// Compiles `template` (the text of `_prompt.md.tera`). A syntax error
    /// is returned, never panicked on: the service records it on the job.
    pub fn new(template: &str, budget: usize) -> Result<Self, PromptError> {
        let mut tera = tera::Tera::default();
        // A `.md` name: tera escapes HTML only for html/xml templates.
        tera.add_raw_template(TEMPLATE_NAME, template)
            .map_err(|e| PromptError::Template(error_chain(&e)))?;
        Ok(PromptRenderer {
            tera,
            template_revision: short_sha256(template.as_bytes()),
            budget,
        })
    }

    pub fn render(
        &self,
        job: &JobFacts,
        candidates: &[Candidate],
        catalogue: &Catalogue,
    ) -> Result<RenderedPrompt, PromptError> {
        self.render_with(job, candidates, None, &CodeContext::default(), catalogue)
    }

    /// As [`render`](Self::render), with the sentence to show when there are
    /// no candidates (default: why the usual places held nothing) and what
    /// surrounds the located code.
    pub fn render_with(
        &self,
        job: &JobFacts,
        candidates: &[Candidate],
        none_reason: Option<&str>,
        code: &CodeContext,
        catalogue: &Catalogue,
    ) -> Result<RenderedPrompt, PromptError> {
        let ranked = rank_patterns(job, candidates, code, catalogue);
        let revision = format!(
            "patterns {} template {}",
            catalogue.revision, self.template_revision
        );
        // Give way in steps: fewer patterns in full, then shorter excerpts,
        // then a hard cut. Every step is logged and said in the prompt.
        let mut last = String::new();
        for (attempt, (full, cap)) in ATTEMPTS.into_iter().enumerate() {
            let note = (attempt > 0).then(|| {
                format!(
                    "this prompt was shortened to fit its {} KiB budget: {full} pattern(s) in full, code excerpts cut at {cap} characters",
                    self.budget / 1024
                )
            });
            last = self.render_once(
                job,
                candidates,
                none_reason,
                code,
                catalogue,
                &ranked,
                full,
                cap,
                note.clone(),
            )?;
            if last.len() <= self.budget {
                return Ok(finish(last, revision, note));
            }
        }
        let cut = hard_cut(&last, self.budget);
        let note = Some(format!(
            "the prompt was cut at {} bytes to fit its budget",
            cut.len()
        ));
        Ok(finish(cut, revision, note))
    }

    #[allow(clippy::too_many_arguments)]
    fn render_once(
        &self,
        job: &JobFacts,
        candidates: &[Candidate],
        none_reason: Option<&str>,
        code: &CodeContext,
        catalogue: &Catalogue,
        ranked: &[longtx_catalog::Ranked],
        full: usize,
        excerpt_cap: usize,
        truncation_note: Option<String>,
    ) -> Result<String, PromptError> {
        let view = |r: &longtx_catalog::Ranked| {
            let p: &Pattern = &catalogue.patterns[r.index];
            PatternView {
                id: p.id(),
                title: &p.front.title,
                score: r.score,
                matched: r.matched.clone(),
                // The signature is how longtx recognised the pattern; the
                // leads above already say what was recognised, and the
                // whole pattern stays in `patterns/` for the agent to read.
                body: demote_headings(&without_section(
                    &without_section(&p.body, "Effect"),
                    "Signature",
                )),
            }
        };
        // A pattern is chosen by the slow work found: none is printed in
        // full when no slow call was recognised where the transaction is
        // held (or, with no site, in the entry's code).
        let slow_seen = match code.sites.first() {
            Some(site) => !site.slow.is_empty(),
            None => candidates
                .iter()
                .filter_map(|c| c.excerpt.as_deref())
                .any(crate::locate::has_slow_work),
        };
        // The second is printed in full only when the slow work found is
        // of a shape it names: a runner-up by words alone is one line.
        let shapes: &[String] = code.sites.first().map_or(&[], |s| &s.shapes);
        let full = if slow_seen {
            ranked
                .iter()
                .take(full)
                .enumerate()
                .take_while(|(i, r)| {
                    r.score >= MIN_FULL_SCORE
                        && (*i == 0
                            || catalogue.patterns[r.index]
                                .front
                                .shapes
                                .iter()
                                .any(|s| shapes.contains(s)))
                })
                .count()
        } else {
            0
        };
        let context = Context {
            job: job_view(job),
            candidates: candidates
                .iter()
                .take(5)
                .map(|c| {
                    let mut view = candidate_view(c, excerpt_cap);
                    if shown_at_a_site(c, &code.sites) {
                        // Its method is a site's excerpt already: twice is noise.
                        view.excerpt = None;
                        view.reason
                            .push_str("; its code is shown with a lead above");
                    }
                    view
                })
                .collect(),
            sites: code
                .sites
                .iter()
                .take(crate::locate::MAX_SITES)
                .map(|s| site_view(s, excerpt_cap))
                .collect(),
            sites_close: sites_close(&code.sites),
            first_alternatives: code
                .sites
                .first()
                .is_some_and(|s| !s.alternatives.is_empty()),
            no_candidates: candidates.is_empty().then(|| match none_reason {
                Some(reason) => reason.to_owned(),
                None => explain_none(&clean(&job.query_source, 256, false)),
            }),
            code,
            full_patterns: ranked.iter().take(full).map(view).collect(),
            index_patterns: ranked.iter().skip(full).map(view).collect(),
            catalogue_revision: &catalogue.revision,
            truncation_note,
        };
        let context = tera::Context::from_serialize(&context)
            .map_err(|e| PromptError::Render(error_chain(&e)))?;
        let text = self
            .tera
            .render(TEMPLATE_NAME, &context)
            .map_err(|e| PromptError::Render(error_chain(&e)))?;
        // The template may open with a comment; the prompt opens with text.
        Ok(text.trim_start().to_owned())
    }
}

fn finish(text: String, revision: String, truncation: Option<String>) -> RenderedPrompt {
    if let Some(note) = &truncation {
        tracing::warn!(%note, "prompt shortened to fit its budget");
    }
    RenderedPrompt {
        sha256: hex_sha256(text.as_bytes()),
        text,
        revision,
        truncation,
        located: Vec::new(),
    }
}

fn hard_cut(text: &str, budget: usize) -> String {
    let mut end = budget.saturating_sub(HARD_CUT_NOTICE.len()).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{HARD_CUT_NOTICE}", &text[..end])
}

/// The catalogue ranked for a job as its prompt ranks it, best first: by
/// the located methods and the methods they call (one level), then the
/// rest of their files, then the alert.
pub fn rank_patterns(
    job: &JobFacts,
    candidates: &[Candidate],
    code: &CodeContext,
    catalogue: &Catalogue,
) -> Vec<longtx_catalog::Ranked> {
    rank(&catalogue.patterns, &evidence(job, candidates, code))
}

/// The located method, the calls it makes and the callbacks inside the
/// save's transaction, then their files, then the alert; and, weighing
/// most, the code between the first transaction site's open and its commit
/// (its block or callback and what that calls one level down), with the
/// shapes recognised there.
fn evidence(job: &JobFacts, candidates: &[Candidate], code: &CodeContext) -> Evidence {
    let mut evidence = Evidence {
        excerpts: candidates
            .iter()
            .filter_map(|c| c.excerpt.clone())
            .chain(code.calls.iter().map(|c| c.body.clone()))
            .chain(
                code.callbacks
                    .iter()
                    .filter(|c| c.inside)
                    .map(|c| c.body.clone()),
            )
            .chain(code.second_level.iter().cloned())
            .collect(),
        files: candidates.iter().map(|c| c.file_text.clone()).collect(),
        alert: format!("{} {}", job.query_source, job.tables.join(" ")),
        ..Evidence::default()
    };
    // Code inside a transaction at most one call from its boundary, or deeper.
    let at = |inside: &[(String, u32)], near: bool| -> Vec<String> {
        inside
            .iter()
            .filter(|(_, d)| (*d <= 1) == near)
            .map(|(t, _)| t.clone())
            .collect()
    };
    // Leads of last resort are shown to the agent, but their code was not
    // reached from the entry: it says nothing of which pattern fits.
    let mut reached = code.sites.iter().filter(|s| !s.last_resort);
    if let Some(site) = reached.next() {
        evidence.inside = at(&site.inside, true);
        // Deeper inside the transaction: still run while it is held, so as
        // likely as the located method's own calls (an HTTP request three
        // calls down a lock helper holds the lock all the same).
        evidence.excerpts.extend(at(&site.inside, false));
        evidence.shapes.clone_from(&site.shapes);
    }
    // The runner-up sites: as likely as the located method's own calls.
    for site in reached {
        evidence.excerpts.extend(at(&site.inside, true));
    }
    // So are those listed under a lead, as they were when leads themselves.
    let listed = code
        .sites
        .iter()
        .flat_map(crate::locate::Site::listed)
        .filter(|a| !a.last_resort);
    for other in listed {
        evidence.excerpts.extend(at(&other.inside, true));
    }
    evidence
}

fn job_view(job: &JobFacts) -> JobView {
    JobView {
        id: job.id,
        query_source: clean(&job.query_source, 256, false),
        tables: job
            .tables
            .iter()
            .take(20)
            .map(|t| clean(t, 128, false))
            .collect(),
        max_duration_seconds: job.max_duration_seconds,
        alert_count: job.alert_count,
        first_seen_at: job.first_seen_at.as_deref().map(|t| clean(t, 64, false)),
        last_seen_at: job.last_seen_at.as_deref().map(|t| clean(t, 64, false)),
        threshold_seconds: job.threshold_seconds,
        alert_links: job
            .alert_links
            .iter()
            .take(5)
            .map(|l| clean(l, 2048, false))
            .collect(),
        previous_rejection: job
            .previous_rejection
            .iter()
            .take(10)
            .map(|r| clean(r, 1000, false))
            .collect(),
        previous_fix: job.previous_fix.as_ref().map(|f| PreviousFix {
            job_id: f.job_id,
            pr: clean(&f.pr, 512, false),
            files: f
                .files
                .iter()
                .take(20)
                .map(|(p, n)| (clean(p, 300, false), *n))
                .collect(),
            alerts_since: f.alerts_since,
            longest_since_seconds: f.longest_since_seconds,
        }),
    }
}

fn candidate_view(candidate: &Candidate, excerpt_cap: usize) -> CandidateView {
    let excerpt = candidate
        .excerpt
        .as_deref()
        .map(|e| clean(e, excerpt_cap, true));
    let longest_run = excerpt.as_deref().map(longest_backtick_run).unwrap_or(0);
    CandidateView {
        path: clean(&candidate.path, 512, false),
        line: candidate.line,
        reason: clean(&candidate.reason, 512, false),
        excerpt,
        fence: "`".repeat(longest_run.max(2) + 1),
    }
}

fn site_view(site: &crate::locate::Site, excerpt_cap: usize) -> SiteView {
    let excerpt = clean(&site.excerpt, excerpt_cap, true);
    SiteView {
        path: clean(&site.path, 512, false),
        line: site.line,
        route: clean(&site.route(), 1000, false),
        why: clean(&site.why, 1000, false),
        fence: "`".repeat(longest_backtick_run(&excerpt).max(2) + 1),
        excerpt,
        slow: site.slow.iter().map(slow_view).collect(),
        more_slow: site.more_slow,
        unseen: site.unseen.iter().map(|u| clean(u, 600, false)).collect(),
        alternatives: site.alternatives.iter().map(alternative_view).collect(),
        same_save: site.same_save.iter().map(alternative_view).collect(),
        saves_inside: site.saves_inside.iter().map(alternative_view).collect(),
    }
}

fn alternative_view(other: &crate::locate::Alternative) -> AlternativeView {
    AlternativeView {
        method: clean(&other.method, 300, false),
        path: clean(&other.path, 512, false),
        line: other.line,
        slow: other.slow.iter().map(slow_view).collect(),
        more_slow: other.more_slow,
    }
}

fn slow_view(call: &crate::locate::SlowCall) -> crate::locate::SlowCall {
    crate::locate::SlowCall {
        what: clean(&call.what, 100, false),
        code: clean(&call.code, 160, false).replace('`', "'"),
        via: call.via.as_deref().map(|v| clean(v, 300, false)),
        path: clean(&call.path, 512, false),
        line: call.line,
        through: call.through.as_ref().map(|t| crate::locate::Through {
            path: clean(&t.path, 512, false),
            line: t.line,
            code: clean(&t.code, 160, false).replace('`', "'"),
        }),
    }
}

/// Whether a shown site's excerpt already holds the candidate's first line
/// (the entry's own `transaction do` is a site, with its method).
fn shown_at_a_site(candidate: &Candidate, sites: &[crate::locate::Site]) -> bool {
    let Some(line) = candidate.line else {
        return false;
    };
    sites
        .iter()
        .take(crate::locate::MAX_SITES)
        .flat_map(|s| &s.covers)
        .any(|(path, first, last)| *path == candidate.path && (*first..=*last).contains(&line))
}

/// Whether the runner-up site scored within a fifth of the first: then
/// neither is the likelier, and the prompt lets the agent choose.
fn sites_close(sites: &[crate::locate::Site]) -> bool {
    match sites {
        [first, second, ..] => second.score * 5 >= first.score * 4,
        _ => false,
    }
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

pub fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn short_sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", &hex_sha256(bytes)[..16])
}
