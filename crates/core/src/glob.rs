//! Glob matching for exclude rules and ignore-list entries.
//!
//! `*` matches any run of characters (including `/` and `:`, so
//! `rake:tmp:*` covers `rake:tmp:cache:clear`), `?` matches one character.
//! Everything else is literal: query sources are not paths.

/// True when `pattern` contains a wildcard and so is not an exact name.
pub fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?'])
}

/// Matches `text` against `pattern`. Only the last `*` is ever revisited, so
/// the cost is bounded by len(pattern) x len(text): no exponential blow-up on
/// hostile input such as `a*a*a*a*b`.
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    // Position after the last `*` seen, and the text index it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi + 1, ti));
            pi += 1;
        } else if let Some((after_star, tried)) = star {
            pi = after_star;
            ti = tried + 1;
            star = Some((after_star, tried + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn star_crosses_separators() {
        assert!(matches("rake:tmp:*", "rake:tmp:cache:clear"));
        assert!(matches("admin/*", "admin/users#update"));
        assert!(!matches("rake:tmp:*", "rake:db:migrate"));
    }

    #[test]
    fn exact_and_question_mark() {
        assert!(matches("unknown", "unknown"));
        assert!(!matches("unknown", "unknown2"));
        assert!(matches("Job?", "Job1"));
        assert!(!matches("Job?", "Job12"));
        assert!(matches("*", ""));
        assert!(!matches("a*b", "a"));
    }

    #[test]
    fn hostile_patterns_finish() {
        let text = "a".repeat(5000);
        assert!(!matches("a*a*a*a*a*a*a*a*b", &text));
    }
}
