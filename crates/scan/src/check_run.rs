//! A pull request's scan as the "long transactions" check run: the
//! findings the head adds over the merge base, an annotation on each line
//! that adds slow work inside a transaction, and the pattern that fits.
//! What a PR's code says reaches GitHub as plain-text annotations or as
//! Markdown code spans, never as Markdown of its own.

use crate::{Finding, Scan};
use longtx_core::patch_check::code_span;
use longtx_core::pr_check::{Annotation, CheckReport, PrCheckMode};
use std::fmt::Write;

/// What was compared, for the summary.
pub struct Compared<'a> {
    pub base: &'a str,
    pub head: &'a str,
    /// Entry points read at the head.
    pub entry_points: usize,
}

/// The check for `added` (the head's scan less the base's findings).
/// `pattern_link` turns a pattern id into a link, when longtx has a public
/// address to serve its catalogue from.
pub fn report(
    added: &Scan,
    compared: &Compared<'_>,
    mode: PrCheckMode,
    pattern_link: &dyn Fn(&str) -> Option<String>,
) -> CheckReport {
    let active: Vec<&Finding> = added.active().collect();
    let rows = active.iter().filter(|f| f.depends_on_rows).count();
    let silenced: Vec<&Finding> = added
        .findings
        .iter()
        .filter(|f| f.silenced.is_some())
        .collect();
    let annotations = active
        .iter()
        .flat_map(|f| {
            f.slow.iter().map(move |call| Annotation {
                path: call.path.clone(),
                start_line: call.line,
                end_line: call.line,
                annotation_level: mode.annotation_level(f.depends_on_rows),
                title: format!("{} inside a transaction", capitalised(&f.kind)),
                message: annotation_message(f, pattern_link),
            })
        })
        .collect();
    let title = if active.is_empty() {
        "No new slow work inside a transaction".to_owned()
    } else {
        let mut kinds: Vec<&str> = active.iter().map(|f| f.kind.as_str()).collect();
        kinds.dedup();
        format!(
            "{} new: {} inside a transaction",
            active.len(),
            kinds.join(", ")
        )
    };
    let mut summary = String::new();
    let _ = writeln!(
        summary,
        "longtx scanned the head {} against its merge base {} ({} entry points).\n",
        code_span(short(compared.head)),
        code_span(short(compared.base)),
        compared.entry_points
    );
    if active.is_empty() {
        summary.push_str(
            "This change adds no slow work (network, mail, enqueue, file I/O, bulk statements) inside a database transaction that longtx can see. It reads the Ruby code only and cannot follow every path.\n",
        );
    } else {
        let _ = writeln!(
            summary,
            "This change adds {} finding(s): slow work made while a database transaction is open keeps that transaction's locks, metadata locks included, for as long as the work takes, and every `ALTER TABLE` on those tables waits behind it.\n",
            active.len()
        );
        for f in &active {
            summary.push_str(&finding_lines(f, pattern_link));
        }
        if rows > 0 {
            let _ = writeln!(
                summary,
                "\nNotices ({rows}): database work whose length depends on how many rows it touches (a loop of writes, a bulk statement). How many, only production shows, so notices do not fail this check."
            );
        }
    }
    if !silenced.is_empty() {
        let _ = writeln!(summary, "\nSilenced ({}), not counted:\n", silenced.len());
        for f in &silenced {
            let why = f.silenced.as_ref().map(|s| s.reason.as_str()).unwrap_or("");
            let _ = writeln!(
                summary,
                "- {} in {} at {}: {}",
                f.kind,
                code_span(&f.method),
                code_span(&format!("{}:{}", f.path, f.line)),
                code_span(why)
            );
        }
    }
    let text = if active.is_empty() {
        String::new()
    } else {
        "To silence a finding that is not a problem, put `# longtx:ignore <reason>` on its line; it is then listed as silenced, never hidden.".to_owned()
    };
    CheckReport {
        conclusion: mode.conclusion(active.len() - rows, rows),
        title,
        summary,
        text,
        annotations,
    }
    .bounded()
}

fn annotation_message(f: &Finding, pattern_link: &dyn Fn(&str) -> Option<String>) -> String {
    let mut message = format!(
        "{} made inside the transaction held in {} ({}:{}): {}. Reached from {}.",
        capitalised(&f.kind),
        f.method,
        f.path,
        f.line,
        f.why,
        entries(f)
    );
    if let Some(p) = &f.pattern {
        let _ = write!(message, " Pattern: {} ({})", p.id, p.title);
        if let Some(link) = pattern_link(&p.id) {
            let _ = write!(message, ", {link}");
        }
        message.push('.');
    }
    message
}

fn finding_lines(f: &Finding, pattern_link: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = format!(
        "- **{}** inside the transaction held in {} at {}, reached from {}\n",
        capitalised(&f.kind),
        code_span(&f.method),
        code_span(&format!("{}:{}", f.path, f.line)),
        f.entries
            .iter()
            .map(|e| code_span(e))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for call in &f.slow {
        let _ = writeln!(
            out,
            "  - {}: {}",
            code_span(&format!("{}:{}", call.path, call.line)),
            code_span(&call.code)
        );
    }
    if let Some(p) = &f.pattern {
        let named = format!(
            "{} ({})",
            code_span(&p.id),
            longtx_core::text::one_line(&p.title)
        );
        let _ = match pattern_link(&p.id) {
            Some(link) => writeln!(out, "  - pattern: [{named}]({link})"),
            None => writeln!(out, "  - pattern: {named}"),
        };
    }
    out
}

fn entries(f: &Finding) -> String {
    let mut listed = f.entries.join(", ");
    if f.more_entries > 0 {
        let _ = write!(listed, " and {} more", f.more_entries);
    }
    listed
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PatternRef, Silenced, SlowLine};
    use longtx_core::pr_check::{AnnotationLevel, Conclusion};

    fn finding(kind: &str, line: usize, silenced: bool) -> Finding {
        Finding {
            id: format!("app/controllers/orders_controller.rb:OrdersController#create:{kind}"),
            path: "app/controllers/orders_controller.rb".into(),
            line: 4,
            method: "OrdersController#create".into(),
            kind: kind.into(),
            depends_on_rows: crate::confidence::depends_on_rows(kind),
            why: "`transaction do` opens here".into(),
            opens: None,
            slow: vec![SlowLine {
                path: "app/controllers/orders_controller.rb".into(),
                line,
                code: "Net::HTTP.post(URI(`x`), body) <!-- hide".into(),
            }],
            entries: vec!["orders#create".into()],
            more_entries: 0,
            pattern: Some(PatternRef {
                id: "external-http-call-in-transaction".into(),
                title: "External HTTP or API call inside a transaction or lock".into(),
            }),
            silenced: silenced.then(|| Silenced {
                by: "comment".into(),
                reason: "the call is to localhost".into(),
            }),
        }
    }

    fn compared() -> Compared<'static> {
        Compared {
            base: "1111111111111111111111111111111111111111",
            head: "2222222222222222222222222222222222222222",
            entry_points: 3,
        }
    }

    fn link(id: &str) -> Option<String> {
        Some(format!("https://longtx.example/patterns/{id}"))
    }

    #[test]
    fn an_added_call_is_annotated_on_its_line_and_the_check_is_neutral_by_default() {
        let added = Scan {
            entry_points: 3,
            reaching: Vec::new(),
            note: None,
            findings: vec![
                finding("an HTTP call", 6, false),
                finding("a mail delivery", 9, true),
            ],
        };
        let report = report(&added, &compared(), PrCheckMode::Neutral, &link);
        assert_eq!(report.conclusion, Conclusion::Neutral);
        assert_eq!(report.title, "1 new: an HTTP call inside a transaction");
        assert_eq!(
            report.annotations.len(),
            1,
            "the silenced finding is not annotated"
        );
        let a = &report.annotations[0];
        assert_eq!(
            (a.start_line, a.annotation_level),
            (6, AnnotationLevel::Warning)
        );
        assert!(
            a.message
                .contains("https://longtx.example/patterns/external-http-call-in-transaction"),
            "{}",
            a.message
        );
        assert!(
            report
                .summary
                .contains("`Net::HTTP.post(URI('x'), body) < !-- hide`"),
            "{}",
            report.summary
        );
        assert!(
            report.summary.contains("Silenced (1)"),
            "{}",
            report.summary
        );
        assert!(report.summary.contains("the call is to localhost"));
    }

    #[test]
    fn failure_mode_fails_only_when_something_is_added() {
        let added = Scan {
            entry_points: 3,
            reaching: Vec::new(),
            note: None,
            findings: vec![finding("an HTTP call", 6, false)],
        };
        let failing = report(&added, &compared(), PrCheckMode::Failure, &|_| None);
        assert_eq!(failing.conclusion, Conclusion::Failure);
        assert_eq!(
            failing.annotations[0].annotation_level,
            AnnotationLevel::Failure
        );
        assert!(
            !failing.annotations[0].message.contains("https://"),
            "no link without a public URL"
        );
        let only_silenced = Scan {
            entry_points: 3,
            reaching: Vec::new(),
            note: None,
            findings: vec![finding("an HTTP call", 6, true)],
        };
        let passing = report(&only_silenced, &compared(), PrCheckMode::Failure, &|_| None);
        assert_eq!(passing.conclusion, Conclusion::Success);
        assert_eq!(passing.title, "No new slow work inside a transaction");
    }

    #[test]
    fn work_as_long_as_its_rows_is_a_notice_that_fails_no_check() {
        let rows_only = Scan {
            entry_points: 3,
            reaching: Vec::new(),
            note: None,
            findings: vec![finding("a batch write", 7, false)],
        };
        let report_of = |scan: &Scan| report(scan, &compared(), PrCheckMode::Failure, &|_| None);
        let shown = report_of(&rows_only);
        assert_eq!(shown.conclusion, Conclusion::Neutral);
        assert_eq!(shown.title, "1 new: a batch write inside a transaction");
        assert_eq!(
            shown.annotations[0].annotation_level,
            AnnotationLevel::Notice
        );
        assert!(
            shown.summary.contains("Notices (1): database work"),
            "{}",
            shown.summary
        );
        let with_a_call = Scan {
            findings: vec![
                finding("a batch write", 7, false),
                finding("an HTTP call", 6, false),
            ],
            ..rows_only
        };
        let failing = report_of(&with_a_call);
        assert_eq!(failing.conclusion, Conclusion::Failure);
        let levels: Vec<_> = failing
            .annotations
            .iter()
            .map(|a| (a.start_line, a.annotation_level))
            .collect();
        assert_eq!(
            levels,
            [(7, AnnotationLevel::Notice), (6, AnnotationLevel::Failure)]
        );
    }
}
