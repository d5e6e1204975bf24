//! Cleaning values before they reach the prompt.

/// Drops control characters (keeping newlines and tabs when `multiline`)
/// and caps the length in characters, saying so when it cut.
pub fn clean(text: &str, max_chars: usize, multiline: bool) -> String {
    let kept = text
        .chars()
        .filter(|c| !c.is_control() || (multiline && (*c == '\n' || *c == '\t')));
    let mut out: String = kept.clone().take(max_chars).collect();
    if kept.count() > max_chars {
        out.push_str(if multiline { "\n… (cut)" } else { "…" });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn control_characters_go_and_length_is_capped() {
        assert_eq!(clean("a\u{1b}[2Jb\nc", 10, false), "a[2Jbc");
        assert_eq!(clean("a\nb\tc\r", 10, true), "a\nb\tc");
        assert_eq!(clean("abcdef", 3, false), "abc…");
    }
}
