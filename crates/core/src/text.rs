//! Untrusted text made safe for one line of a log, a column or a comment.

/// Control characters (NUL, newlines, escapes) as spaces: PostgreSQL's
/// text refuses NUL, and a log line or a markdown line must stay one line.
pub fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Characters that render as nothing: zero-width spaces and joiners,
/// direction marks and overrides, the word joiner and invisible operators,
/// the byte-order mark, soft hyphen, variation selectors and tags.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}'
        | '\u{3164}' | '\u{FEFF}' | '\u{FFA0}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{E0000}'..='\u{E0FFF}')
}

/// What a panic said (its `&str` or `String` payload), on one line and at
/// most 300 characters, for a log line or a readiness message.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_owned());
    one_line(&text).chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn controls_become_spaces_and_the_rest_stays() {
        assert_eq!(super::one_line("a\0b\nc\u{1b}[2Jé"), "a b c [2Jé");
    }
}
