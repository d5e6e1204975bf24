//! The normalised alert every intake format is turned into.

use crate::query_source::QuerySource;
use serde::Serialize;

/// Which webhook format an alert arrived in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertOrigin {
    Alertmanager,
    Datadog,
}

impl AlertOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertOrigin::Alertmanager => "alertmanager",
            AlertOrigin::Datadog => "datadog",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertStatus {
    Firing,
    Resolved,
}

/// One long-transaction observation, whatever system reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub origin: AlertOrigin,
    pub status: AlertStatus,
    pub query_source: QuerySource,
    /// The table whose metadata lock was held, when the alert names one.
    pub table: Option<String>,
    /// How long the transaction had been open, in seconds, when known.
    pub duration_seconds: Option<f64>,
    /// A link back to the alerting system (generator URL, monitor link).
    pub link: Option<String>,
    /// The sessions seen waiting behind the holder, when the alert says.
    pub waiters: Option<crate::waiters::Waiters>,
}

/// Longest table name we keep; MySQL's limit is 64, PostgreSQL's 63.
pub const MAX_TABLE_LEN: usize = 128;
/// Longest link we keep from an alert.
pub const MAX_LINK_LEN: usize = 2048;

/// Problems with a single alert inside an otherwise readable body.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AlertError {
    #[error("missing {0}")]
    Missing(&'static str),
    #[error("invalid query_source: {0}")]
    QuerySource(#[from] crate::query_source::QuerySourceError),
    #[error("{field} is not a number of seconds: {value:?}")]
    NotANumber { field: &'static str, value: String },
    #[error("invalid {field}: {reason}")]
    Invalid {
        field: &'static str,
        reason: &'static str,
    },
    #[error("malformed alert: {0}")]
    Malformed(String),
}

/// Parses a duration in seconds the way alerting systems render numbers:
/// `"123"`, `"123.4"`, `" 1.2e+02 "`, `"1,234.5"`.
pub fn parse_seconds(field: &'static str, raw: &str) -> Result<f64, AlertError> {
    let cleaned: String = raw.trim().chars().filter(|c| *c != ',').collect();
    let value: f64 = cleaned.parse().map_err(|_| AlertError::NotANumber {
        field,
        value: truncate_for_message(raw),
    })?;
    if !value.is_finite() || value < 0.0 {
        return Err(AlertError::NotANumber {
            field,
            value: truncate_for_message(raw),
        });
    }
    if value > MAX_DURATION_SECONDS {
        return Err(AlertError::Invalid {
            field,
            reason: "over a week (604800 s): no transaction is held that long, so the figure is a unit mistake",
        });
    }
    Ok(value)
}

/// The longest duration an alert may report: a week. `1e308` was once
/// stored as it came and ranked above every real alert.
pub const MAX_DURATION_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// Validates an optional table name: short, printable, no whitespace.
pub fn clean_table(raw: Option<&str>) -> Result<Option<String>, AlertError> {
    let Some(raw) = raw.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    if raw.len() > MAX_TABLE_LEN {
        return Err(AlertError::Invalid {
            field: "table",
            reason: "longer than 128 bytes",
        });
    }
    if raw.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(AlertError::Invalid {
            field: "table",
            reason: "contains whitespace or control characters",
        });
    }
    Ok(Some(raw.to_owned()))
}

/// Reads the optional `waiters` label, annotation or tag (see
/// [`crate::waiters::Waiters`]'s forms).
pub fn parse_waiters(raw: Option<&str>) -> Result<Option<crate::waiters::Waiters>, AlertError> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    raw.parse().map(Some).map_err(|reason: String| {
        AlertError::Malformed(format!(
            "waiters {:?}: {reason} (expected ddl=N,dml=N,other=N)",
            truncate_for_message(raw)
        ))
    })
}

/// Keeps a link only when it is a plausible http(s) URL of sane length.
pub fn clean_link(raw: Option<&str>) -> Option<String> {
    let raw = raw?.trim();
    let plausible = (raw.starts_with("https://") || raw.starts_with("http://"))
        && raw.len() <= MAX_LINK_LEN
        && !raw.chars().any(|c| c.is_control() || c.is_whitespace());
    plausible.then(|| raw.to_owned())
}

/// Error messages echo user input; keep that echo short and printable.
pub(crate) fn truncate_for_message(raw: &str) -> String {
    raw.chars().filter(|c| !c.is_control()).take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_accept_the_ways_numbers_are_rendered() {
        assert_eq!(parse_seconds("value", "123").unwrap(), 123.0);
        assert_eq!(parse_seconds("value", " 1.5e+02 ").unwrap(), 150.0);
        assert_eq!(parse_seconds("value", "1,234.5").unwrap(), 1234.5);
    }

    #[test]
    fn seconds_reject_words_negative_and_infinite() {
        for bad in ["slow", "", "-3", "inf", "NaN", "1e308", "604801"] {
            assert!(parse_seconds("value", bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(parse_seconds("value", "604800").unwrap(), 604800.0);
        let week = parse_seconds("value", "1e308").unwrap_err().to_string();
        assert!(week.contains("over a week"), "{week}");
    }

    #[test]
    fn links_must_be_http() {
        assert_eq!(clean_link(Some("javascript:alert(1)")), None);
        assert_eq!(
            clean_link(Some("https://dd.example/monitors/1")).as_deref(),
            Some("https://dd.example/monitors/1")
        );
    }

    #[test]
    fn tables_with_spaces_are_invalid() {
        assert!(clean_table(Some("orders; drop")).is_err());
        assert_eq!(
            clean_table(Some(" orders ")).unwrap().as_deref(),
            Some("orders")
        );
        assert_eq!(clean_table(Some("")).unwrap(), None);
    }
}

/// One entry of a webhook body: its raw JSON (kept for the audit trail) and
/// what it parsed into. A bad entry does not spoil its neighbours.
#[derive(Debug)]
pub struct ReceivedAlert {
    pub raw: Box<serde_json::value::RawValue>,
    /// The `query_source` as sent, even when the alert was rejected, so the
    /// response can say which alert it was about.
    pub query_source_hint: Option<String>,
    pub parsed: Result<Alert, AlertError>,
}

/// Problems with a whole webhook body: nothing in it can be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BodyError {
    #[error("body is not valid JSON: {0}")]
    Json(String),
    #[error("unsupported Alertmanager webhook version {0:?} (longtx reads version 4)")]
    UnsupportedVersion(String),
}

impl BodyError {
    pub(crate) fn json(err: serde_json::Error) -> Self {
        BodyError::Json(err.to_string())
    }
}

/// serde's derived structs also accept JSON arrays (fields by position);
/// webhook bodies and alerts must be objects, so say so before parsing.
pub fn require_object(json: &[u8]) -> Result<(), String> {
    if json.trim_ascii_start().starts_with(b"{") {
        Ok(())
    } else {
        Err("expected a JSON object".to_owned())
    }
}
