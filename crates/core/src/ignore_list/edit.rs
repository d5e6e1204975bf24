//! Adding an entry to an ignore-list file people also edit by hand: the
//! text is appended, so every existing entry, comment and blank line stays
//! where it was, and each value is written as a YAML double-quoted scalar
//! with every character that could mean something escaped, so a hostile
//! `query_source` or reason reads back as exactly itself.

use super::{IgnoreEntry, IgnoreList, IgnoreListError};

/// What adding an entry did.
#[derive(Debug, Clone, PartialEq)]
pub enum Added {
    /// The new file text.
    Changed(String),
    /// An entry with exactly this `query_source` is already there.
    AlreadyListed,
}

/// Appends `entry` to `text` (an ignore-list file, possibly empty). The
/// result is checked by parsing it back: it must hold the old entries,
/// unchanged and in order, and then exactly the new one.
pub fn add_entry(text: &str, entry: &IgnoreEntry) -> Result<Added, IgnoreListError> {
    let before = IgnoreList::parse(text)?;
    if before
        .entries()
        .iter()
        .any(|e| e.query_source.trim() == entry.query_source)
    {
        return Ok(Added::AlreadyListed);
    }
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&render_entry(entry));
    let mut expected = before.entries().to_vec();
    expected.push(entry.clone());
    match IgnoreList::parse(&out) {
        Ok(after) if after.entries() == expected.as_slice() => Ok(Added::Changed(out)),
        _ => Err(IgnoreListError::Yaml(
            "the file is not a plain YAML list of entries (`- query_source: ...`), so an entry cannot be appended to it without rewriting it".into(),
        )),
    }
}

/// One entry as block YAML, every value double-quoted.
pub fn render_entry(entry: &IgnoreEntry) -> String {
    let mut out = format!("- query_source: {}\n", quote(&entry.query_source));
    let optional = [
        ("reason", &entry.reason),
        ("pr", &entry.pr),
        ("added_by", &entry.added_by),
        ("added_at", &entry.added_at),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            out.push_str(&format!("  {key}: {}\n", quote(value)));
        }
    }
    if entry.exact {
        out.push_str("  exact: true\n");
    }
    out
}

/// A YAML double-quoted scalar: `"` and `\` are escaped, and so is every
/// character YAML would fold, normalise or refuse (line breaks, tabs,
/// control characters, BOM, line and paragraph separators).
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            '\u{feff}' | '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(source: &str, reason: &str) -> IgnoreEntry {
        IgnoreEntry {
            query_source: source.into(),
            reason: Some(reason.into()),
            pr: Some("https://github.com/acme/monolith/pull/41".into()),
            added_by: Some("alice".into()),
            added_at: Some("2026-12-03T07:00:00Z".into()),
            exact: false,
        }
    }

    const HAND_EDITED: &str = "# Reviewed sources.\n\n- query_source: admin/reports#export # nightly\n  reason: one snapshot\n\n# Legacy importers\n- query_source: 'Legacy::*'\n";

    #[test]
    fn appending_keeps_every_line_and_comment_in_order() {
        let Added::Changed(text) =
            add_entry(HAND_EDITED, &entry("OrderSyncWorker", "needs the lock")).unwrap()
        else {
            panic!("an entry was added");
        };
        assert!(text.starts_with(HAND_EDITED), "{text}");
        let list = IgnoreList::parse(&text).unwrap();
        let sources: Vec<&str> = list
            .entries()
            .iter()
            .map(|e| e.query_source.as_str())
            .collect();
        assert_eq!(
            sources,
            ["admin/reports#export", "Legacy::*", "OrderSyncWorker"]
        );
    }

    #[test]
    fn an_empty_or_unterminated_file_gets_a_well_formed_entry() {
        for text in ["", "# nothing yet", "- query_source: a#b"] {
            let Added::Changed(out) = add_entry(text, &entry("x#y", "r")).unwrap() else {
                panic!()
            };
            assert_eq!(
                IgnoreList::parse(&out)
                    .unwrap()
                    .entries()
                    .last()
                    .unwrap()
                    .query_source,
                "x#y"
            );
        }
    }

    #[test]
    fn a_source_already_listed_is_not_added_twice() {
        assert_eq!(
            add_entry(HAND_EDITED, &entry("admin/reports#export", "again")).unwrap(),
            Added::AlreadyListed
        );
    }

    #[test]
    fn hostile_strings_round_trip_exactly() {
        let hostile = [
            "a#b\": x\n- query_source: evil",
            "$(rm -rf /); `id` && echo ${HOME} | tee >(cat) 'q' \"dq\"",
            "*&anchor !!python/object:os.system [ ] { } % @ ` | > ? : - ,",
            "tab\tcr\rnul\u{0}bell\u{7}del\u{7f}nel\u{85}ls\u{2028}bom\u{feff}",
            "\\\\server\\share\\n not a newline",
            "   leading and trailing spaces   ",
            "---\n...\n# not a comment",
            "日本語のコメント #決済",
        ];
        for value in hostile {
            let e = IgnoreEntry {
                query_source: "admin/users#update".into(),
                reason: Some(value.into()),
                pr: None,
                added_by: Some(value.into()),
                added_at: None,
                exact: false,
            };
            let Added::Changed(text) = add_entry("", &e).unwrap() else {
                panic!()
            };
            let list = IgnoreList::parse(&text).unwrap();
            assert_eq!(list.entries(), std::slice::from_ref(&e), "{text}");
            assert_eq!(
                text.lines().filter(|l| l.starts_with("- ")).count(),
                1,
                "one entry: {text}"
            );
        }
    }

    #[test]
    fn a_source_with_wildcards_is_written_as_an_exact_name() {
        let source = crate::QuerySource::parse("Report*Worker?").unwrap();
        let mut e = IgnoreEntry::exact(&source);
        e.reason = Some("r".into());
        let Added::Changed(text) = add_entry("", &e).unwrap() else {
            panic!()
        };
        let list = IgnoreList::parse(&text).unwrap();
        assert!(list.matching(&source).is_some());
        let other = crate::QuerySource::parse("ReportExportWorker1").unwrap();
        assert!(list.matching(&other).is_none(), "not a glob: {text}");
    }

    #[test]
    fn a_flow_style_file_is_refused_rather_than_rewritten() {
        let err = add_entry("[]\n", &entry("a#b", "r")).unwrap_err();
        assert!(err.to_string().contains("plain YAML list"), "{err}");
    }
}
