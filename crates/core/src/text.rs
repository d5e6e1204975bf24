//! Untrusted text made safe for one line of a log, a column or a comment.

/// Control characters (NUL, newlines, escapes) as spaces: PostgreSQL's
/// text refuses NUL, and a log line or a markdown line must stay one line.
pub fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn controls_become_spaces_and_the_rest_stays() {
        assert_eq!(super::one_line("a\0b\nc\u{1b}[2Jé"), "a b c [2Jé");
    }
}
