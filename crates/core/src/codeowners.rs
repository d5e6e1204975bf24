//! CODEOWNERS as GitHub reads it.
//!
//! The rules differ from `.gitignore` in ways that matter for reviewer
//! choice, so they are spelled out here and tested case by case:
//! - the last matching line wins, and a line with no owners makes the
//!   paths it matches unowned;
//! - `*` and `?` never cross `/`; `docs/*` owns `docs/a.md` but not
//!   `docs/sub/b.md`; `**` spans any number of directories;
//! - a pattern with a `/` at its start or middle is anchored to the root,
//!   one without matches at any depth; a trailing `/` owns everything inside;
//! - `!` negation, `[ ]` ranges and `\#` escapes do not work, and such lines
//!   (like any line GitHub would call invalid) are skipped with a warning,
//!   never failing the whole file;
//! - a `#` word after the pattern starts an inline comment (GitHub's own
//!   example: `*.js @js-owner #This is an inline comment.`), and `\ ` is a
//!   space inside a pattern (`My\ Documents/`);
//! - paths are case-sensitive.

use std::fmt;

/// Where GitHub looks, in the order it looks; the first file found is used.
pub const LOCATIONS: [&str; 3] = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    User(String),
    /// `org/team-slug`.
    Team(String),
    Email(String),
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::User(login) => write!(f, "@{login}"),
            Owner::Team(team) => write!(f, "@{team}"),
            Owner::Email(email) => f.write_str(email),
        }
    }
}

/// One valid line of the file.
#[derive(Debug, Clone)]
pub struct Rule {
    /// 1-based line number, for reasons shown to people.
    pub line: usize,
    pub pattern: String,
    pub owners: Vec<Owner>,
    matcher: Matcher,
}

/// A skipped line and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub line: usize,
    pub message: String,
}

#[derive(Debug, Clone, Default)]
pub struct Codeowners {
    rules: Vec<Rule>,
    pub warnings: Vec<Warning>,
}

impl Codeowners {
    pub fn parse(text: &str) -> Codeowners {
        let mut parsed = Codeowners::default();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            match parse_line(trimmed) {
                Ok((pattern, owners, matcher)) => parsed.rules.push(Rule {
                    line,
                    pattern,
                    owners,
                    matcher,
                }),
                Err(message) => parsed.warnings.push(Warning { line, message }),
            }
        }
        parsed
    }

    /// The rule that decides `path`: the last one that matches.
    pub fn rule_for(&self, path: &str) -> Option<&Rule> {
        let path = path.trim_start_matches('/');
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        self.rules
            .iter()
            .rev()
            .find(|rule| rule.matcher.matches(&segments))
    }

    /// `None`: no rule matches. `Some(&[])`: a rule matches and says the
    /// path has no owner.
    pub fn owners_of(&self, path: &str) -> Option<&[Owner]> {
        self.rule_for(path).map(|rule| rule.owners.as_slice())
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }
}

/// The line's words: split on white space that is not escaped (`\ `), up
/// to an inline comment (a word after the pattern that starts with `#`).
fn words_of(line: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek().is_some_and(|n| *n == ' ') {
            word.push(chars.next().expect("peeked"));
        } else if c.is_whitespace() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        } else {
            if word.is_empty() && c == '#' && !words.is_empty() {
                return words;
            }
            word.push(c);
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

fn parse_line(line: &str) -> Result<(String, Vec<Owner>, Matcher), String> {
    let words = words_of(line);
    let mut words = words.iter().map(String::as_str);
    let pattern = words.next().unwrap_or_default().to_owned();
    if pattern.starts_with('!') {
        return Err(format!("{pattern:?}: negation with `!` is not supported"));
    }
    if pattern.contains(['[', ']']) {
        return Err(format!(
            "{pattern:?}: character ranges with `[ ]` are not supported"
        ));
    }
    if pattern.starts_with('\\') {
        return Err(format!("{pattern:?}: escaping with `\\` is not supported"));
    }
    let owners = words
        .map(|word| parse_owner(word).ok_or_else(|| format!("{word:?} is not a valid owner")))
        .collect::<Result<Vec<_>, _>>()?;
    let matcher = Matcher::new(&pattern).ok_or_else(|| format!("{pattern:?} matches nothing"))?;
    Ok((pattern, owners, matcher))
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

fn parse_owner(word: &str) -> Option<Owner> {
    if let Some(name) = word.strip_prefix('@') {
        return match name.split_once('/') {
            Some((org, team))
                if !org.is_empty()
                    && !team.is_empty()
                    && org.chars().all(is_name_char)
                    && team.chars().all(is_name_char) =>
            {
                Some(Owner::Team(name.to_owned()))
            }
            None if !name.is_empty() && name.chars().all(is_name_char) => {
                Some(Owner::User(name.to_owned()))
            }
            _ => None,
        };
    }
    let (local, domain) = word.split_once('@')?;
    let valid = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains('@')
        && word.chars().all(|c| c.is_ascii_graphic());
    valid.then(|| Owner::Email(word.to_owned()))
}

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    /// `**`: any number of whole segments, including none.
    AnyDepth,
    /// A segment glob; `*` and `?` stay inside the segment.
    Glob(String),
}

/// How the end of a pattern relates to the end of a path.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reach {
    /// The pattern names the file itself (its last segment has a wildcard,
    /// as in `docs/*` or `*.rb`).
    FileOnly,
    /// A literal last segment names a file, or a directory and all inside.
    FileOrDirectory,
    /// A trailing `/` or `/**`: only what is inside the directory.
    Inside,
}

#[derive(Debug, Clone)]
struct Matcher {
    segments: Vec<Segment>,
    reach: Reach,
}

impl Matcher {
    fn new(pattern: &str) -> Option<Matcher> {
        let anchored = pattern.starts_with('/') || pattern.trim_end_matches('/').contains('/');
        let mut reach = if pattern.ends_with('/') {
            Reach::Inside
        } else {
            Reach::FileOrDirectory
        };
        let mut segments: Vec<Segment> = pattern
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| {
                if s == "**" {
                    Segment::AnyDepth
                } else {
                    Segment::Glob(s.to_owned())
                }
            })
            .collect();
        if segments.is_empty() {
            return None;
        }
        if segments.last() == Some(&Segment::AnyDepth) && segments.len() > 1 {
            segments.pop();
            reach = Reach::Inside;
        } else if let Some(Segment::Glob(last)) = segments.last() {
            if reach != Reach::Inside && crate::glob::is_glob(last) {
                reach = Reach::FileOnly;
            }
        }
        if !anchored {
            segments.insert(0, Segment::AnyDepth);
        }
        Some(Matcher { segments, reach })
    }

    fn matches(&self, path: &[&str]) -> bool {
        if path.is_empty() {
            return false;
        }
        match self.reach {
            Reach::FileOnly => match_segments(&self.segments, path),
            // A prefix of the path matches: the directory (or the file).
            Reach::FileOrDirectory => {
                (1..=path.len()).any(|k| match_segments(&self.segments, &path[..k]))
            }
            Reach::Inside => (1..path.len()).any(|k| match_segments(&self.segments, &path[..k])),
        }
    }
}

/// Segment-wise matching by dynamic programming over (pattern, path)
/// positions, so hostile runs of `**` cost len(pattern) x len(path), not
/// an exponential search.
fn match_segments(pattern: &[Segment], path: &[&str]) -> bool {
    // reachable[j]: the first i pattern segments can consume path[..j].
    let mut reachable = vec![false; path.len() + 1];
    reachable[0] = true;
    for segment in pattern {
        let mut next = vec![false; path.len() + 1];
        match segment {
            Segment::AnyDepth => {
                let mut seen = false;
                for j in 0..=path.len() {
                    seen |= reachable[j];
                    next[j] = seen;
                }
            }
            Segment::Glob(glob) => {
                for j in 0..path.len() {
                    if reachable[j] && crate::glob::matches(glob, path[j]) {
                        next[j + 1] = true;
                    }
                }
            }
        }
        reachable = next;
    }
    reachable[path.len()]
}

#[cfg(test)]
mod tests;
