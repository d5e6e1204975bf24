//! `longtx patterns lint`: every problem as `file:line: message`.

use crate::pattern::{parse_pattern, Pattern, REQUIRED_SECTIONS};
use crate::{pattern_files, CatalogueError};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
    }
}

/// Lints every pattern file of `dir` (files starting with `_` are the
/// template and the prompt, not patterns).
pub fn lint_dir(dir: &Path) -> Result<Vec<Problem>, CatalogueError> {
    let files = pattern_files(dir)?;
    let mut texts = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|cause| CatalogueError::Read {
            path: path.display().to_string(),
            cause,
        })?;
        texts.push((path, text));
    }
    Ok(lint_files(&texts))
}

/// Lints pattern files given as (path, text); links are checked against
/// the file system relative to each file.
pub fn lint_files(files: &[(PathBuf, String)]) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut parsed: Vec<Pattern> = Vec::new();
    for (path, text) in files {
        match parse_pattern(path, text) {
            Ok(pattern) => parsed.push(pattern),
            Err(err) => problems.push(Problem {
                file: path.clone(),
                line: err.line(),
                message: err
                    .to_string()
                    .split_once(": ")
                    .map(|(_, m)| m.to_owned())
                    .unwrap_or_default(),
            }),
        }
    }
    let mut first_seen: HashMap<&str, &Path> = HashMap::new();
    for pattern in &parsed {
        let text = &files
            .iter()
            .find(|(p, _)| p == &pattern.path)
            .expect("parsed from files")
            .1;
        let problem = |line: usize, message: String| Problem {
            file: pattern.path.clone(),
            line,
            message,
        };
        let key_line = |key: &str| line_of(text, &format!("{key}:")).unwrap_or(1);
        check_front_matter(pattern, &key_line, &mut |l, m| problems.push(problem(l, m)));
        if let Some(other) = first_seen.insert(pattern.id(), &pattern.path) {
            problems.push(problem(
                key_line("id"),
                format!("id {:?} is also used by {}", pattern.id(), other.display()),
            ));
        }
        check_sections(pattern, &mut |l, m| problems.push(problem(l, m)));
        check_links(pattern, &mut |l, m| problems.push(problem(l, m)));
    }
    let ids: Vec<&str> = parsed.iter().map(Pattern::id).collect();
    for pattern in &parsed {
        let text = &files.iter().find(|(p, _)| p == &pattern.path).unwrap().1;
        for related in &pattern.front.related {
            if !ids.contains(&related.as_str()) {
                problems.push(Problem {
                    file: pattern.path.clone(),
                    line: line_of(text, "related:").unwrap_or(1),
                    message: format!("related pattern {related:?} does not exist"),
                });
            }
        }
        for shape in &pattern.front.shapes {
            if !crate::pattern::KNOWN_SHAPES.contains(&shape.as_str()) {
                problems.push(Problem {
                    file: pattern.path.clone(),
                    line: line_of(text, "shapes:").unwrap_or(1),
                    message: format!(
                        "shape {shape:?} is not one longtx recognises ({})",
                        crate::pattern::KNOWN_SHAPES.join(", ")
                    ),
                });
            }
        }
    }
    problems.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    problems
}

fn is_kebab_case(id: &str) -> bool {
    !id.is_empty()
        && id.split('-').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

fn check_front_matter(
    pattern: &Pattern,
    key_line: &dyn Fn(&str) -> usize,
    report: &mut dyn FnMut(usize, String),
) {
    let front = &pattern.front;
    if !is_kebab_case(&front.id) {
        report(
            key_line("id"),
            format!(
                "id {:?} must be kebab-case (lowercase letters, digits, single dashes)",
                front.id
            ),
        );
    }
    let stem = pattern
        .path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("");
    if stem != front.id {
        report(
            key_line("id"),
            format!("id {:?} must match the file name ({stem}.md)", front.id),
        );
    }
    if front.title.trim().is_empty() {
        report(key_line("title"), "title is empty".into());
    }
    if front.applies_to.iter().all(|a| a.trim().is_empty()) {
        report(
            key_line("applies_to"),
            "applies_to names no stack (use rails, any, ...)".into(),
        );
    }
    if front.signals.iter().all(|s| s.trim().is_empty()) {
        report(
            key_line("signals"),
            "signals is empty: list the identifiers that suggest this pattern".into(),
        );
    }
}

/// Level-2 headings with their 1-based file lines, outside code fences.
fn headings(pattern: &Pattern) -> Vec<(usize, String)> {
    let mut in_fence = false;
    let mut found = Vec::new();
    for (i, line) in pattern.body.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            if let Some(title) = line.strip_prefix("## ") {
                found.push((pattern.body_line + i, title.trim().to_owned()));
            }
        }
    }
    found
}

fn check_sections(pattern: &Pattern, report: &mut dyn FnMut(usize, String)) {
    let found = headings(pattern);
    let mut cursor = 0;
    for required in REQUIRED_SECTIONS {
        match found.iter().position(|(_, t)| t == required) {
            None => report(
                pattern.body_line,
                format!(
                    "missing section \"## {required}\" (sections, in order: {})",
                    REQUIRED_SECTIONS.join("; ")
                ),
            ),
            Some(index) if index < cursor => report(
                found[index].0,
                format!(
                    "section \"## {required}\" is out of order (sections, in order: {})",
                    REQUIRED_SECTIONS.join("; ")
                ),
            ),
            Some(index) => cursor = index,
        }
    }
    if let Some(start) = found.iter().position(|(_, t)| t == "Before / After") {
        let from = found[start].0 - pattern.body_line;
        let to = found
            .get(start + 1)
            .map(|(l, _)| l - pattern.body_line)
            .unwrap_or(usize::MAX);
        let fences = pattern
            .body
            .lines()
            .enumerate()
            .filter(|(i, l)| *i > from && *i < to && l.trim_start().starts_with("```"))
            .count();
        if fences < 4 {
            report(
                found[start].0,
                "\"## Before / After\" needs two fenced code blocks (before, then after)".into(),
            );
        }
    }
}

/// Relative markdown links must point at files that exist.
fn check_links(pattern: &Pattern, report: &mut dyn FnMut(usize, String)) {
    let dir = pattern.path.parent().unwrap_or(Path::new("."));
    let mut in_fence = false;
    for (i, line) in pattern.body.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for target in link_targets(line) {
            let path_part = target.split('#').next().unwrap_or("");
            let external = target.contains("://") || target.starts_with("mailto:");
            if external || path_part.is_empty() {
                continue;
            }
            if !dir.join(path_part).exists() {
                report(
                    pattern.body_line + i,
                    format!("link target {target:?} does not exist"),
                );
            }
        }
    }
}

/// Targets of `[text](target)` links on one line.
fn link_targets(line: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else { break };
        targets.push(after[..end].trim());
        rest = &after[end + 1..];
    }
    targets
}

fn line_of(text: &str, prefix: &str) -> Option<usize> {
    text.lines()
        .position(|l| l.starts_with(prefix))
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good(id: &str) -> String {
        format!(
            "---\nid: {id}\ntitle: T\napplies_to: [rails]\nsignals: [with_lock]\n---\n# T\n\n## Summary\ns\n\n## Signature\ns\n\n## Before / After\n```ruby\na\n```\n```ruby\nb\n```\n\n## Effect\ne\n\n## Caveats and trade-offs\nc\n"
        )
    }

    fn lint_one(name: &str, text: String) -> Vec<String> {
        lint_files(&[(PathBuf::from(name), text)])
            .iter()
            .map(Problem::to_string)
            .collect()
    }

    #[test]
    fn a_good_pattern_has_no_problems() {
        assert_eq!(lint_one("a-b.md", good("a-b")), Vec::<String>::new());
    }

    #[test]
    fn missing_and_misordered_sections_are_reported_at_their_line() {
        let text = good("a-b").replace("## Effect\ne\n\n", "").replace(
            "## Summary\ns\n\n## Signature",
            "## Signature\ns\n\n## Summary",
        );
        let problems = lint_one("a-b.md", text);
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("a-b.md:7: missing section \"## Effect\"")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("a-b.md:9: section \"## Signature\" is out of order")),
            "{problems:?}"
        );
    }

    #[test]
    fn ids_must_be_kebab_unique_and_match_the_file() {
        let problems = lint_files(&[
            (PathBuf::from("a-b.md"), good("a-b")),
            (PathBuf::from("c.md"), good("a-b")),
            (PathBuf::from("Bad_Id.md"), good("Bad_Id")),
        ]);
        let text: Vec<String> = problems.iter().map(Problem::to_string).collect();
        assert!(
            text.iter()
                .any(|p| p.starts_with("c.md:2: id \"a-b\" is also used by a-b.md")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|p| p.starts_with("c.md:2: id \"a-b\" must match the file name")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|p| p.starts_with("Bad_Id.md:2: id \"Bad_Id\" must be kebab-case")),
            "{text:?}"
        );
    }

    #[test]
    fn broken_links_related_ids_and_front_matter() {
        let text = good("a-b")
            .replace(
                "## Effect\ne",
                "## Effect\nsee [other](nope.md) and [web](https://x.example)",
            )
            .replace(
                "signals: [with_lock]",
                "signals: [with_lock]\nrelated: [ghost]",
            );
        let problems = lint_one("a-b.md", text);
        assert!(
            problems
                .iter()
                .any(|p| p.contains(":25: link target \"nope.md\" does not exist")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("a-b.md:6: related pattern \"ghost\" does not exist")),
            "{problems:?}"
        );
        let problems = lint_one("x.md", "---\nid: x\n".into());
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("x.md:1: "), "{problems:?}");
    }
}
