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
    fn template_and_shell_metacharacters_survive_literally() {
        let raw = "{{ 7*7 }}; $(rm -rf /) `id` 'x' \"y\"";
        assert_eq!(QuerySource::parse(raw).unwrap().as_str(), raw);
    }
}
