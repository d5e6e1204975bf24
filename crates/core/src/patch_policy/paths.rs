//! Paths as the policy compares them. A protected path must stay protected
//! however an agent spells it: `.Claude/settings.json` is the same folder on
//! a case-insensitive checkout (macOS, Windows: the people who review the
//! PR), `.claude./settings.json` is `.claude` to Windows, and `.gıthub`
//! (dotless ı) or `.gi\u{200c}thub` (a zero-width non-joiner) read as
//! `.github` to a person skimming a diff. So both the pattern and the path
//! are folded the same way before they are matched: compatibility form
//! (NFKC), invisible characters dropped, look-alike letters mapped to the
//! Latin letter they imitate, lower case, and trailing dots and spaces cut
//! from every part.

use crate::text::is_invisible;
use unicode_normalization::UnicodeNormalization;

/// `path` folded for comparison (see the module's doc).
pub fn fold(path: &str) -> String {
    let mapped: String = path
        .nfkc()
        .filter(|c| !is_invisible(*c))
        .map(look_alike)
        .flat_map(char::to_lowercase)
        .collect();
    // Lower-casing can produce combining marks (`İ` gives `i̇`); fold once more.
    let mapped: String = mapped.nfkc().filter(|c| !is_invisible(*c)).collect();
    mapped
        .split('/')
        .map(|part| part.trim_end_matches(['.', ' ']))
        .collect::<Vec<_>>()
        .join("/")
}

/// True when folding changes `path` in a way that only hides something:
/// invisible characters or look-alike letters (case and trailing dots are
/// ordinary and are only matched loosely, not refused).
pub fn is_deceptive(path: &str) -> bool {
    path.chars()
        .any(|c| is_invisible(c) || (look_alike(c) != c && !c.is_ascii()))
}

/// Letters from other scripts that look like a Latin one in a file list,
/// mapped to that letter. Not Unicode's whole confusables table: the
/// letters that can spell the names the policy protects (`.github`,
/// `.claude`, `vendor`, `codeowners`, `agents.md`, ...) in Cyrillic, Greek
/// and Turkish look-alikes, which is what a path needs to slip past it.
fn look_alike(c: char) -> char {
    match c {
        'ı' | 'і' | 'ι' | 'Ι' | 'І' | 'Ӏ' => 'i',
        'ј' | 'Ј' => 'j',
        'а' | 'А' | 'α' | 'Α' => 'a',
        'е' | 'Е' | 'ε' | 'Ε' => 'e',
        'о' | 'О' | 'ο' | 'Ο' | 'σ' => 'o',
        'р' | 'Р' | 'ρ' | 'Ρ' => 'p',
        'с' | 'С' | 'ϲ' | 'Ϲ' => 'c',
        'у' | 'У' | 'γ' => 'y',
        'х' | 'Х' | 'χ' | 'Χ' => 'x',
        'ѕ' | 'Ѕ' | 'ſ' => 's',
        'һ' | 'Һ' | 'Η' => 'h',
        'ԁ' => 'd',
        'ɡ' | 'ց' => 'g',
        'ⅼ' | 'ӏ' => 'l',
        'к' | 'К' | 'κ' | 'Κ' => 'k',
        'м' | 'М' | 'Μ' => 'm',
        'т' | 'Т' | 'τ' | 'Τ' => 't',
        'в' | 'В' | 'β' | 'Β' => 'b',
        'н' | 'Н' | 'Ν' => 'n',
        'ԝ' | 'ѡ' => 'w',
        'ս' | 'υ' => 'u',
        'ν' => 'v',
        'ᴢ' | 'ζ' | 'Ζ' => 'z',
        other => other,
    }
}

/// Whether `pattern` covers `path`, both folded: `dir/**` covers the folder
/// and everything in it; a pattern that starts with `**/` matches at any
/// depth (`**/CLAUDE.md` is `CLAUDE.md` and `app/CLAUDE.md`); other
/// patterns are globs over the whole path (`*` crosses `/`).
pub fn protects(pattern: &str, path: &str) -> bool {
    let (pattern, path) = (fold(pattern), fold(path));
    match pattern.strip_prefix("**/") {
        Some(rest) => std::iter::once(path.as_str())
            .chain(path.match_indices('/').map(|(at, _)| &path[at + 1..]))
            .any(|tail| covers(rest, tail)),
        None => covers(&pattern, &path),
    }
}

fn covers(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix("/**") {
        Some(dir) => {
            path == dir
                || path.starts_with(&format!("{dir}/"))
                || crate::glob::matches(pattern, path)
        }
        None => crate::glob::matches(pattern, path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_a_protected_folder_all_fold_to_it() {
        for spelled in [
            ".Claude/settings.json",
            ".claude./settings.json",
            ".claude /settings.json",
            ".cla\u{200B}ude/settings.json",
            ".сlaude/settings.json",  // Cyrillic es
            "．claude/settings.json", // fullwidth full stop (NFKC)
        ] {
            assert_eq!(fold(spelled), ".claude/settings.json", "{spelled:?}");
        }
        assert_eq!(fold(".gıthub/workflows/x.yml"), ".github/workflows/x.yml");
        assert_eq!(fold(".gi\u{200c}thub/x"), ".github/x");
        assert_eq!(fold("Vendor/x.rb"), "vendor/x.rb");
    }

    #[test]
    fn any_depth_patterns_match_every_folder_and_only_whole_names() {
        assert!(protects("**/CLAUDE.md", "CLAUDE.md"));
        assert!(protects("**/CLAUDE.md", "app/models/claude.md"));
        assert!(!protects("**/CLAUDE.md", "app/models/notclaude.md"));
        assert!(protects("**/.husky/**", "frontend/.husky/pre-commit"));
        assert!(protects(".github/**", ".GitHub/workflows/evil.yml"));
        assert!(!protects(".github/**", "docs/github.md"));
    }

    #[test]
    fn invisible_and_look_alike_letters_are_deceptive_but_case_is_not() {
        assert!(is_deceptive(".gi\u{200c}thub/x"));
        assert!(is_deceptive(".gıthub/x"));
        assert!(!is_deceptive("App/Models/Order.rb"));
        assert!(!is_deceptive("app/models/café.rb"));
    }
}
