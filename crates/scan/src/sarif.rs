//! The scan as SARIF 2.1.0, the format GitHub code scanning and SARIF
//! viewers read (OASIS SARIF v2.1.0; GitHub's "SARIF support for code
//! scanning" lists the fields it uses: `ruleId`, `message.text`, a
//! physical location with `uri` and `region.startLine`, and
//! `partialFingerprints` to follow a result across commits).
//!
//! One rule per kind of slow call; a result per finding, at its first slow
//! call's line, with the site as a related location. A silenced finding
//! carries a `suppressions` entry (in source for the comment, external for
//! the ignore list) rather than being left out.

use crate::Scan;
use serde_json::{json, Value};

pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

pub fn render(scan: &Scan) -> Value {
    let mut kinds: Vec<&str> = scan.findings.iter().map(|f| f.kind.as_str()).collect();
    kinds.sort();
    kinds.dedup();
    let rules: Vec<Value> = kinds
        .iter()
        .map(|kind| {
            json!({
                "id": rule_id(kind),
                "name": "SlowWorkInsideTransaction",
                "shortDescription": {"text": format!("{} inside a database transaction", capitalised(kind))},
                "fullDescription": {"text": format!(
                    "{} made while a transaction is open keeps its locks, metadata locks included, for as long as it takes: every ALTER TABLE on those tables waits behind it.",
                    capitalised(kind))},
                "defaultConfiguration": {"level": level(crate::confidence::depends_on_rows(kind))},
                "properties": {"tags": ["long-transaction", "database"]}
            })
        })
        .collect();
    let results: Vec<Value> = scan
        .findings
        .iter()
        .map(|f| {
            let at = f
                .slow
                .first()
                .map(|s| (s.path.as_str(), s.line))
                .unwrap_or((f.path.as_str(), f.line));
            let pattern = f
                .pattern
                .as_ref()
                .map(|p| format!(" Pattern: {} ({}).", p.id, p.title))
                .unwrap_or_default();
            let mut result = json!({
                "ruleId": rule_id(&f.kind),
                "level": level(f.depends_on_rows),
                "message": {"text": format!(
                    "{} inside a transaction held in {} ({}:{}): {}. Reached from {}.{pattern}",
                    capitalised(&f.kind), f.method, f.path, f.line, f.why,
                    f.entries.join(", "))},
                "locations": [location(at.0, at.1)],
                "relatedLocations": [{
                    "id": 1,
                    "physicalLocation": location(&f.path, f.line)["physicalLocation"].clone(),
                    "message": {"text": "where the transaction is held"}
                }],
                "partialFingerprints": {"longtxFinding/v1": f.id},
                "properties": {"entries": f.entries, "method": f.method}
            });
            if let Some(o) = &f.opens {
                result["relatedLocations"]
                    .as_array_mut()
                    .expect("built as an array above")
                    .push(json!({
                        "id": 2,
                        "physicalLocation": location(&o.path, o.line)["physicalLocation"].clone(),
                        "message": {"text": "where the transaction opens"}
                    }));
            }
            if let Some(s) = &f.silenced {
                result["suppressions"] = json!([{
                    "kind": if s.by == "comment" { "inSource" } else { "external" },
                    "justification": s.reason
                }]);
            }
            result
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "longtx",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules
            }},
            "results": results
        }]
    })
}

fn location(path: &str, line: usize) -> Value {
    json!({"physicalLocation": {
        "artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": line.max(1)}
    }})
}

/// `an HTTP call` -> `longtx/slow-work/http-call`.
fn rule_id(kind: &str) -> String {
    let bare = kind
        .strip_prefix("an ")
        .or_else(|| kind.strip_prefix("a "))
        .unwrap_or(kind);
    let slug: String = bare
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("longtx/slow-work/{}", slug.trim_matches('-'))
}

fn capitalised(kind: &str) -> String {
    let mut chars = kind.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().collect::<String>() + chars.as_str())
        .unwrap_or_default()
}

/// SARIF's `note` for database work whose length depends on row counts,
/// which code scanning shows without counting it as a problem's warning.
fn level(depends_on_rows: bool) -> &'static str {
    if depends_on_rows {
        "note"
    } else {
        "warning"
    }
}
