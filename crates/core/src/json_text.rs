//! Raw JSON as received, made safe to keep: a nesting limit checked before
//! any parser recurses, and one rule for the two escapes valid JSON may hold
//! that PostgreSQL's `jsonb` refuses (`\u0000`, and a UTF-16 surrogate
//! escape that is not half of a pair). Both work on the text, in one pass,
//! without building a value.

/// Deeper than this is refused (400): no webhook longtx reads nests past
/// four levels, and PostgreSQL's own parser fails somewhat past 6,000.
pub const MAX_DEPTH: usize = 64;

/// The deepest `[`/`{` nesting of `json`, counting only outside strings.
/// Stops counting once past `limit` (the answer is then `limit + 1`).
pub fn depth(json: &[u8], limit: usize) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut in_string = false;
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > deepest {
                        deepest = depth;
                        if deepest > limit {
                            return deepest;
                        }
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        i += 1;
    }
    deepest
}

/// The storage rule: in `json` (valid JSON text), every `\u0000` escape and
/// every lone surrogate escape (`\uD800`–`\uDFFF` not forming a pair) gets
/// its backslash escaped, so it is kept as the six visible characters
/// `\u0000` inside the string instead of a code point `jsonb` refuses. The
/// text is otherwise unchanged; `None` when there was nothing to change.
pub fn storable(json: &str) -> Option<String> {
    let bytes = json.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !in_string {
            in_string = b == b'"';
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = false;
                i += 1;
            }
            b'\\' if bytes.get(i + 1) == Some(&b'u') => {
                let unit = hex4(bytes, i + 2);
                let refused = match unit {
                    Some(0) => true,
                    Some(high @ 0xD800..=0xDBFF) => {
                        // A high surrogate is fine when a low one follows.
                        let pair = bytes.get(i + 6) == Some(&b'\\')
                            && bytes.get(i + 7) == Some(&b'u')
                            && matches!(hex4(bytes, i + 8), Some(0xDC00..=0xDFFF));
                        if pair {
                            let _ = high;
                            i += 12;
                            continue;
                        }
                        true
                    }
                    Some(0xDC00..=0xDFFF) => true,
                    _ => false,
                };
                if refused {
                    let text = out.get_or_insert_with(|| String::with_capacity(json.len() + 16));
                    text.push_str(&json[copied..i]);
                    text.push('\\');
                    copied = i;
                }
                i += 6;
            }
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    out.map(|mut text| {
        text.push_str(&json[copied..]);
        text
    })
}

fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_structure_not_strings() {
        assert_eq!(depth(br#"{"a": [1, {"b": "[[[[{{{"}]}"#, 10), 3);
        assert_eq!(depth(br#"{"a": "\"[[["}"#, 10), 1);
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(depth(deep.as_bytes(), MAX_DEPTH), MAX_DEPTH + 1);
    }

    #[test]
    fn nul_and_lone_surrogates_are_kept_visibly_and_the_rest_untouched() {
        let raw = r#"{"a": "x\u0000y", "b": "\ud800", "c": "\ud83d\ude00", "d": "\\u0000", "e": "\udc00z"}"#;
        let stored = storable(raw).unwrap();
        assert_eq!(
            stored,
            r#"{"a": "x\\u0000y", "b": "\\ud800", "c": "\ud83d\ude00", "d": "\\u0000", "e": "\\udc00z"}"#
        );
        let value: serde_json::Value = serde_json::from_str(&stored).unwrap();
        assert_eq!(value["a"], "x\\u0000y", "the six characters, visible");
        assert_eq!(value["c"], "😀", "a real pair is left alone");
        assert_eq!(storable(r#"{"plain": "text \n \u00e9"}"#), None);
        assert_eq!(
            storable(r#"{"key\u0000": 1}"#).unwrap(),
            r#"{"key\\u0000": 1}"#
        );
    }
}
