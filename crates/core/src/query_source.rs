//! `query_source`: the code path a long transaction came from, validated.
//!
//! Values arrive from alert labels that anyone able to reach the webhook can
//! set, so a `QuerySource` is checked before it touches the database, logs
//! or (later) prompts: bounded length, no control characters.

use serde::Serialize;
use std::fmt;

/// The longest `query_source` accepted, in bytes.
pub const MAX_LEN: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct QuerySource(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuerySourceError {
    #[error("it is empty")]
    Empty,
    #[error("it is longer than {MAX_LEN} bytes")]
    TooLong,
    #[error("it contains control characters")]
    ControlCharacters,
    /// Unicode format characters (category Cf: bidirectional overrides,
    /// zero-width spaces and joiners, the BOM) and line or paragraph
    /// separators: invisible, they would make a look-alike of a real
    /// source, a second job for the same code.
    #[error("it contains invisible formatting characters (U+{0:04X})")]
    InvisibleCharacters(u32),
}

/// Unicode's format characters (general category Cf) and the line and
/// paragraph separators (Zl, Zp): the characters that change how text
/// looks or reads without showing. Listed by range from the Unicode
/// Character Database (DerivedGeneralCategory.txt, Cf).
pub fn is_invisible(c: char) -> bool {
    matches!(c as u32,
        0x00AD | 0x0600..=0x0605 | 0x061C | 0x06DD | 0x070F | 0x0890..=0x0891 | 0x08E2
        | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F
        | 0xFEFF | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F
        | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F
        | 0x2028 | 0x2029)
}

/// The form every origin is compared in: Datadog's tag normalisation
/// (docs "Getting started with tags"; dd-trace-rb's `to_tag`): lowercase,
/// and every character but ASCII letters, digits, `_ - : . /` turned into
/// `_`; runs of `_` are folded and trailing ones dropped, so the forms
/// Datadog sends for one source all meet. `Billing::SyncWorker` and
/// `billing::syncworker` share `billing::syncworker`; `api/v1/rubygems#create`
/// and `api/v1/rubygems_create` share `api/v1/rubygems_create`.
pub fn canonical(source: &str) -> String {
    canonical_with(source, |_| false)
}

/// As [`canonical`], keeping glob characters (`*`, `?`, `[`, `]`), for
/// ignore-list patterns.
pub fn canonical_pattern(pattern: &str) -> String {
    canonical_with(pattern, |c| matches!(c, '*' | '?' | '[' | ']'))
}

fn canonical_with(text: &str, keep: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.trim().chars() {
        let c = c.to_ascii_lowercase();
        let kept = c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.' | '/') || keep(c);
        let c = if kept { c } else { '_' };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    while out.ends_with('_') && out.len() > 1 {
        out.pop();
    }
    out
}

impl QuerySource {
    /// Validates and normalises a raw value. A Rails Query Logs comment
    /// (`namespaced_controller:admin/users,action:update`) is reduced to the
    /// source it names (`admin/users#update`); other values are kept as given.
    pub fn parse(raw: &str) -> Result<Self, QuerySourceError> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(QuerySourceError::Empty);
        }
        if trimmed.len() > MAX_LEN {
            return Err(QuerySourceError::TooLong);
        }
        if trimmed.chars().any(char::is_control) {
            return Err(QuerySourceError::ControlCharacters);
        }
        // Checked before trimming too: U+2028 and U+2029 count as white
        // space, and a trimmed-away one would hide what was sent.
        if let Some(c) = raw.chars().find(|&c| is_invisible(c)) {
            return Err(QuerySourceError::InvisibleCharacters(c as u32));
        }
        let normalised = if crate::query_logs::looks_like_comment(trimmed) {
            crate::query_logs::query_source_from_comment(trimmed)
                .unwrap_or_else(|| trimmed.to_owned())
        } else {
            trimmed.to_owned()
        };
        Ok(QuerySource(normalised))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key dedupe, the cooldown, the ignore list and metric labels use:
    /// [`canonical`].
    pub fn key(&self) -> String {
        canonical(&self.0)
    }
}

impl fmt::Display for QuerySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_forms_are_kept() {
        for s in [
            "admin/users#update",
            "Billing::SyncWorker",
            "rake:ns:task",
            "unknown",
        ] {
            assert_eq!(QuerySource::parse(s).unwrap().as_str(), s);
        }
    }

    #[test]
    fn comments_are_normalised() {
        let qs = QuerySource::parse("namespaced_controller:admin/users,action:update").unwrap();
        assert_eq!(qs.as_str(), "admin/users#update");
    }

    #[test]
    fn hostile_values_are_refused() {
        assert_eq!(QuerySource::parse("  "), Err(QuerySourceError::Empty));
        assert_eq!(
            QuerySource::parse("a\u{0}b"),
            Err(QuerySourceError::ControlCharacters)
        );
        assert_eq!(
            QuerySource::parse("a\nb"),
            Err(QuerySourceError::ControlCharacters)
        );
        assert_eq!(
            QuerySource::parse(&"x".repeat(MAX_LEN + 1)),
            Err(QuerySourceError::TooLong)
        );
    }

    #[test]
    fn every_invisible_variant_is_refused() {
        for c in [
            '\u{202E}', '\u{200B}', '\u{200D}', '\u{FEFF}', '\u{2028}', '\u{2029}', '\u{2066}',
            '\u{00AD}',
        ] {
            let look_alike = format!("admin/users{c}#update");
            assert_eq!(
                QuerySource::parse(&look_alike),
                Err(QuerySourceError::InvisibleCharacters(c as u32)),
                "U+{:04X}",
                c as u32
            );
        }
        assert!(
            QuerySource::parse("café#show").is_ok(),
            "visible non-ASCII stays"
        );
    }

    #[test]
    fn datadog_forms_and_raw_forms_share_one_key() {
        let pairs = [
            ("Billing::SyncWorker", "billing::syncworker"),
            ("api/v1/rubygems#create", "api/v1/rubygems_create"),
            ("admin/users#update", "admin/users_update"),
            ("rake:ns:task", "rake:ns:task"),
            (
                "Admin::Users Controller#update",
                "admin::users_controller_update",
            ),
        ];
        for (raw, datadog) in pairs {
            assert_eq!(canonical(raw), canonical(datadog), "{raw} vs {datadog}");
            assert_eq!(
                canonical(datadog),
                canonical(&canonical(datadog)),
                "idempotent"
            );
        }
        assert_eq!(canonical("Billing::SyncWorker"), "billing::syncworker");
        assert_eq!(canonical("a##b#"), "a_b");
        assert_eq!(canonical_pattern("Billing::*Worker"), "billing::*worker");
    }

    #[test]
    fn template_and_shell_metacharacters_survive_literally() {
        let raw = "{{ 7*7 }}; $(rm -rf /) `id` 'x' \"y\"";
        assert_eq!(QuerySource::parse(raw).unwrap().as_str(), raw);
    }
}
