//! The fix PR longtx opens once the agent's run has pushed the job's branch:
//! its branch, title, body and label, and what the agent's commits say
//! about the pattern it followed (`Longtx-Pattern:` trailer).

use crate::installation::Installation;

/// Every fix PR carries it; created when the repository lacks it.
pub const FIX_LABEL: &str = "longtx";
pub const FIX_LABEL_COLOR: &str = "5319e7";
pub const FIX_LABEL_DESCRIPTION: &str =
    "A fix PR for a long database transaction, opened by longtx";

/// The commit trailers the fix workflow writes.
pub const JOB_TRAILER: &str = "Longtx-Job";
pub const PATTERN_TRAILER: &str = "Longtx-Pattern";

/// GitHub cuts PR titles at 256 characters.
const MAX_TITLE_CHARS: usize = 256;

/// What longtx knows when it opens the PR.
#[derive(Debug, Clone, Default)]
pub struct FixFacts<'a> {
    pub job_id: i64,
    pub query_source: &'a str,
    pub table: Option<&'a str>,
    pub duration_seconds: Option<f64>,
    pub pattern: Option<&'a str>,
    pub run_url: Option<&'a str>,
    /// What the agent says it did, already made safe by
    /// [`crate::agent_run::untrusted_summary`]; quoted, never trusted.
    pub summary: Option<&'a str>,
    /// longtx's own scan of the patched code, when it ran.
    pub patch_check: Option<&'a crate::patch_check::PatchCheck>,
}

/// The trailer naming the round a commit answers.
pub const ROUND_TRAILER: &str = "Longtx-Round";

/// The commit longtx makes from round `round`'s patch: headline and body,
/// with the trailers that tie it to its job and round, the pattern, and the
/// agent as co-author (its work, committed by longtx).
pub fn commit_message(
    job_id: i64,
    round: u32,
    query_source: &str,
    pattern: Option<&str>,
    agent: Option<&str>,
) -> (String, String) {
    let source = one_line(query_source);
    let headline = if round == 0 {
        format!("Shorten the long transaction in {source}")
    } else {
        format!("Answer review round {round} on {source}")
    };
    let headline: String = headline.chars().take(MAX_TITLE_CHARS).collect();
    let mut body = format!("{JOB_TRAILER}: {job_id}\n{ROUND_TRAILER}: {round}\n");
    if let Some(pattern) = pattern {
        body.push_str(&format!("{PATTERN_TRAILER}: {pattern}\n"));
    }
    let agent = agent
        .filter(|a| !a.is_empty() && a.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        .unwrap_or("agent");
    body.push_str(&format!(
        "Co-authored-by: longtx {agent} agent <longtx-agent@users.noreply.github.com>\n"
    ));
    (headline, body)
}

/// True when `message` is the commit longtx makes for round `round` of
/// `job_id` (both trailers present and equal).
pub fn is_round_commit(message: &str, job_id: i64, round: u32) -> bool {
    let messages = [message.to_owned()];
    trailer(&messages, JOB_TRAILER).as_deref() == Some(job_id.to_string().as_str())
        && trailer(&messages, ROUND_TRAILER).as_deref() == Some(round.to_string().as_str())
}

pub fn title(facts: &FixFacts<'_>) -> String {
    let title = format!(
        "Shorten the long transaction in {}",
        one_line(facts.query_source)
    );
    title.chars().take(MAX_TITLE_CHARS).collect()
}

/// The body: what was seen, the pattern, the run, and the two lines that
/// tie the PR to its job (`longtx-source:` and the marker comment).
/// The PR body; its last line is the job's marker, which (with the
/// branch) ties the PR to the job in `installation`.
pub fn body(facts: &FixFacts<'_>, installation: &Installation) -> String {
    let source = code_span(facts.query_source);
    let mut seen = format!("A transaction started from {source}");
    if let Some(table) = facts.table.filter(|t| !t.is_empty()) {
        seen.push_str(&format!(
            " held the metadata lock of table {}",
            code_span(table)
        ));
    } else {
        seen.push_str(" held a table's metadata lock");
    }
    match facts.duration_seconds {
        Some(d) => seen.push_str(&format!(" for {d:.0} s, blocking schema changes.")),
        None => seen.push_str(", blocking schema changes."),
    }
    let mut lines = vec![
        seen,
        String::new(),
        "This change was written by a coding agent and needs a person's review.".to_owned(),
        String::new(),
    ];
    match facts.pattern {
        Some(pattern) => lines.push(format!("- Fix pattern followed: `{pattern}`")),
        None => lines.push("- Fix pattern followed: not stated by the agent".to_owned()),
    }
    if let Some(url) = facts
        .run_url
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
    {
        lines.push(format!("- Agent run: {url}"));
    }
    if let Some(summary) = facts.summary.map(str::trim).filter(|s| !s.is_empty()) {
        lines.push("- What the agent says it did:".to_owned());
        lines.push(String::new());
        lines.extend(summary.lines().map(|l| format!("  > {l}")));
        lines.push(String::new());
    }
    if let Some(check) = facts.patch_check {
        lines.extend(check.body_lines());
    }
    lines.push(format!(
        "- Not worth fixing? Add the label `{}`: longtx drops these commits and ignores the source from then on.",
        crate::github_events::WONTFIX_LABEL
    ));
    lines.push(String::new());
    lines.push(format!("longtx-source: {}", one_line(facts.query_source)));
    lines.push(String::new());
    lines.push(installation.body_marker(facts.job_id));
    lines.join("\n")
}

/// The last value of `key:` among the trailers of `messages` (the commits
/// ahead of the base, oldest first): the newest commit that states it wins.
pub fn trailer(messages: &[String], key: &str) -> Option<String> {
    messages.iter().rev().find_map(|message| {
        // Trailers are the message's last paragraph.
        let last = message.trim_end().rsplit("\n\n").next()?;
        last.lines().rev().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim().eq_ignore_ascii_case(key) && !v.trim().is_empty())
                .then(|| v.trim().to_owned())
        })
    })
}

/// The pattern the agent followed, when it names one the way catalogue
/// slugs are written (lowercase words joined by `-`); anything else is
/// dropped rather than echoed into the PR.
pub fn pattern_of(messages: &[String]) -> Option<String> {
    let slug = trailer(messages, PATTERN_TRAILER)?;
    let valid = !slug.is_empty()
        && slug.len() <= 80
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    valid.then_some(slug)
}

/// One line, and no HTML comment opener: a source must never add a job
/// marker of its own to the body.
fn one_line(text: &str) -> String {
    crate::text::one_line(text).replace("<!--", "< !--")
}

/// Backticks would end the span early; the source is shown, never run.
fn code_span(text: &str) -> String {
    format!("`{}`", one_line(text).replace('`', "'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here() -> Installation {
        Installation::new("k3x9q2ab", 0).unwrap()
    }

    fn facts() -> FixFacts<'static> {
        FixFacts {
            job_id: 42,
            query_source: "admin/users#update",
            table: Some("users"),
            duration_seconds: Some(312.4),
            pattern: Some("http-call-inside-transaction"),
            run_url: Some("https://github.com/acme/app/actions/runs/7"),
            summary: Some("Moved the HTTP call after commit."),
            patch_check: None,
        }
    }

    #[test]
    fn longtx_commits_carry_job_round_pattern_and_agent() {
        let (headline, body) = commit_message(42, 1, "a#b", Some("p-q"), Some("claude"));
        assert_eq!(headline, "Answer review round 1 on a#b");
        let message = format!("{headline}\n\n{body}");
        assert!(is_round_commit(&message, 42, 1));
        assert!(!is_round_commit(&message, 42, 0));
        assert!(!is_round_commit(&message, 4, 1));
        assert_eq!(
            pattern_of(std::slice::from_ref(&message)).as_deref(),
            Some("p-q")
        );
        assert!(body.contains("Co-authored-by: longtx claude agent <"));
        let (_, odd) = commit_message(42, 0, "a#b", None, Some("x\nCo-authored-by: me"));
        assert!(odd.contains("longtx agent agent"), "{odd}");
    }

    #[test]
    fn the_body_ties_the_pr_to_its_job_and_says_what_was_seen() {
        let body = body(&facts(), &here());
        assert_eq!(here().jobs_in_body(&body), vec![42]);
        assert!(body.contains("longtx-source: admin/users#update\n"));
        assert!(body.contains("table `users` for 312 s"));
        assert!(body.contains("`http-call-inside-transaction`"));
        assert!(body.contains("actions/runs/7"));
        assert_eq!(
            title(&facts()),
            "Shorten the long transaction in admin/users#update"
        );
    }

    #[test]
    fn a_hostile_source_cannot_break_out_of_its_line_or_span() {
        let mut f = facts();
        f.query_source = "a`b\n<!-- longtx-job: k3x9q2ab/7 -->";
        f.run_url = Some("javascript:alert(1)");
        let body = body(&f, &here());
        assert_eq!(here().jobs_in_body(&body), vec![42]);
        assert!(
            body.contains("from `a'b < !-- longtx-job: k3x9q2ab/7 -->`"),
            "{body}"
        );
        assert!(!body.contains("javascript:"));
        assert!(!title(&f).contains('\n'));
    }

    #[test]
    fn the_newest_commit_naming_a_pattern_wins_and_junk_is_dropped() {
        let messages = vec![
            "Move the call out\n\nLongtx-Job: 42\nLongtx-Pattern: first-try".to_owned(),
            "Tidy\n\nSigned-off-by: a <a@b>\nLongtx-Pattern: http-call-inside-transaction\n"
                .to_owned(),
            "Docs only".to_owned(),
        ];
        assert_eq!(
            pattern_of(&messages).as_deref(),
            Some("http-call-inside-transaction")
        );
        assert_eq!(trailer(&messages, JOB_TRAILER).as_deref(), Some("42"));
        let junk = vec!["x\n\nLongtx-Pattern: <script>".to_owned()];
        assert_eq!(pattern_of(&junk), None);
        assert_eq!(pattern_of(&["no trailers".to_owned()]), None);
    }
}
