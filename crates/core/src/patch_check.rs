//! What longtx's own scan says about an agent's patch, before its PR opens:
//! whether the alerted source still reaches slow work inside a transaction
//! in the patched code, and whether the patch added any elsewhere. longtx
//! ran the scan, so this is its finding, not the agent's claim; the code
//! lines come from the agent's patch and are only ever shown as code.

use serde::{Deserialize, Serialize};

/// Calls listed per part; the rest are counted.
const MAX_LISTED: usize = 10;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PatchCheck {
    /// Slow calls inside a transaction the alerted source reached before
    /// the patch (at the base).
    pub held_before: usize,
    /// Those it still reaches in the patched code.
    pub still_held: Vec<CheckedCall>,
    /// Slow work inside a transaction the patch added, wherever it is.
    pub added: Vec<CheckedCall>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckedCall {
    /// `an HTTP call`, `a mail delivery`...
    pub kind: String,
    pub path: String,
    pub line: usize,
    pub code: String,
}

impl PatchCheck {
    /// The alerted slow work is still inside a transaction after the patch.
    pub fn leaves_slow_work(&self) -> bool {
        !self.still_held.is_empty()
    }

    /// The check as lines of the PR body (Markdown).
    pub fn body_lines(&self) -> Vec<String> {
        let mut lines = vec!["- longtx's scan of the patched code:".to_owned()];
        if self.leaves_slow_work() {
            lines.push("  - **Still inside a transaction** the alerted source reaches:".to_owned());
            lines.extend(listed(&self.still_held));
        } else if self.held_before > 0 {
            lines.push(format!(
                "  - The alerted source no longer reaches slow work inside a transaction ({} call(s) before the patch).",
                self.held_before
            ));
        } else {
            lines.push(
                "  - It found no slow work inside a transaction from the alerted source, before or after the patch (it cannot follow every path: read the change).".to_owned(),
            );
        }
        if self.added.is_empty() {
            lines.push("  - The patch adds no other slow work inside a transaction.".to_owned());
        } else {
            lines.push("  - **Added by the patch**:".to_owned());
            lines.extend(listed(&self.added));
        }
        lines
    }
}

fn listed(calls: &[CheckedCall]) -> Vec<String> {
    let mut lines: Vec<String> = calls
        .iter()
        .take(MAX_LISTED)
        .map(|c| {
            format!(
                "    - {} at {}: {}",
                crate::text::one_line(&c.kind),
                code_span(&format!("{}:{}", c.path, c.line)),
                code_span(&c.code)
            )
        })
        .collect();
    if calls.len() > MAX_LISTED {
        lines.push(format!("    - and {} more", calls.len() - MAX_LISTED));
    }
    lines
}

/// Backticks would end the span early, and `<!--` would hide the rest.
pub fn code_span(text: &str) -> String {
    let text: String = crate::text::one_line(text).chars().take(160).collect();
    format!("`{}`", text.replace('`', "'").replace("<!--", "< !--"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(code: &str) -> CheckedCall {
        CheckedCall {
            kind: "an HTTP call".into(),
            path: "app/models/order.rb".into(),
            line: 12,
            code: code.into(),
        }
    }

    #[test]
    fn the_body_says_what_the_patch_left_and_added_with_code_kept_as_code() {
        let left = PatchCheck {
            held_before: 1,
            still_held: vec![call("Net::HTTP.post(uri) # `@team` <!-- x")],
            added: Vec::new(),
        };
        let text = left.body_lines().join("\n");
        assert!(text.contains("**Still inside a transaction**"), "{text}");
        assert!(
            text.contains("`app/models/order.rb:12`: `Net::HTTP.post(uri) # '@team' < !-- x`"),
            "{text}"
        );
        assert!(text.contains("adds no other slow work"));
        let fixed = PatchCheck {
            held_before: 2,
            ..PatchCheck::default()
        };
        assert!(fixed
            .body_lines()
            .join("\n")
            .contains("no longer reaches slow work"));
        assert!(!fixed.leaves_slow_work());
    }
}
