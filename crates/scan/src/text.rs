//! The scan for a person: each finding with its slow calls, the sources
//! that reach it and the pattern that fits; silenced ones last, with why.

use crate::Scan;
use std::fmt::Write;

pub fn render(scan: &Scan) -> String {
    let mut out = String::new();
    let active = scan.active().count();
    let silenced = scan.findings.len() - active;
    let _ = writeln!(
        out,
        "{active} finding(s) of slow work inside a transaction, {silenced} silenced ({} entry points read)",
        scan.entry_points
    );
    if let Some(note) = &scan.note {
        let _ = writeln!(out, "({note})");
    }
    for f in &scan.findings {
        let _ = writeln!(out);
        let state = match &f.silenced {
            Some(s) => format!(" [silenced by {}: {}]", s.by, s.reason),
            None if f.depends_on_rows => " [notice: as long as the rows it meets]".to_owned(),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "{}:{}: {} inside a transaction in {}{state}",
            f.path, f.line, f.kind, f.method
        );
        let _ = writeln!(out, "  {}", f.why);
        for s in &f.slow {
            let _ = writeln!(out, "  {}:{}: {}", s.path, s.line, s.code);
        }
        let more = if f.more_entries > 0 {
            format!(" and {} more", f.more_entries)
        } else {
            String::new()
        };
        let _ = writeln!(out, "  reached from: {}{more}", f.entries.join(", "));
        if let Some(p) = &f.pattern {
            let _ = writeln!(out, "  pattern: {} ({})", p.id, p.title);
        }
        let _ = writeln!(out, "  id: {}", f.id);
    }
    out
}
