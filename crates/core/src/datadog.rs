//! Datadog's webhook integration, with the custom payload README recommends:
//!
//! ```json
//! {"id": "$ID", "alert_id": "$ALERT_ID", "transition": "$ALERT_TRANSITION",
//!  "title": "$EVENT_TITLE", "scope": "$ALERT_SCOPE", "tags": "$TAGS",
//!  "value": "{{value}}", "link": "$LINK", "date": "$DATE"}
//! ```
//!
//! Datadog substitutes every variable as text, so each field is read as a
//! string even when it holds a number, and a number is accepted where a
//! string was expected. One body is one alert.

use crate::alert::{
    clean_link, clean_table, parse_seconds, require_object, Alert, AlertError, AlertOrigin,
    AlertStatus, BodyError, ReceivedAlert,
};
use crate::query_source::QuerySource;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

#[derive(Debug, Default, Deserialize)]
pub struct DatadogPayload {
    #[serde(default, deserialize_with = "loose_string")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "loose_string")]
    pub alert_id: Option<String>,
    #[serde(default, deserialize_with = "loose_string")]
    pub transition: Option<String>,
    #[serde(default, deserialize_with = "loose_string")]
    pub title: Option<String>,
    #[serde(default, deserialize_with = "loose_string")]
    pub scope: Option<String>,
    #[serde(default, deserialize_with = "loose_string")]
    pub tags: Option<String>,
    #[serde(default, deserialize_with = "loose_string")]
    pub value: Option<String>,
    #[serde(default, deserialize_with = "loose_string")]
    pub link: Option<String>,
    #[serde(default, deserialize_with = "loose_string")]
    pub date: Option<String>,
    /// `ddl=N,dml=N,other=N`, when the webhook's payload template sets it.
    #[serde(default, deserialize_with = "loose_string")]
    pub waiters: Option<String>,
}

/// Accepts a string, number or boolean and keeps its text; `null` is absent.
fn loose_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Loose {
        Text(String),
        Number(serde_json::Number),
        Flag(bool),
    }
    Ok(Option::<Loose>::deserialize(d)?.map(|v| match v {
        Loose::Text(s) => s,
        Loose::Number(n) => n.to_string(),
        Loose::Flag(b) => b.to_string(),
    }))
}

/// Parses a Datadog webhook body: always exactly one alert.
pub fn parse_body(body: &[u8]) -> Result<ReceivedAlert, BodyError> {
    let raw: Box<RawValue> = serde_json::from_slice(body).map_err(BodyError::json)?;
    require_object(raw.get().as_bytes()).map_err(BodyError::Json)?;
    let payload: DatadogPayload = serde_json::from_str(raw.get()).map_err(BodyError::json)?;
    let query_source_hint = tag_value(&payload, "query_source").map(str::to_owned);
    Ok(ReceivedAlert {
        raw,
        query_source_hint,
        parsed: to_alert(&payload),
    })
}

pub fn to_alert(payload: &DatadogPayload) -> Result<Alert, AlertError> {
    let status = match payload.transition.as_deref().map(str::trim) {
        // "No Data" on a gauge that is only reported while a long
        // transaction exists means there is none any more.
        Some("Recovered") | Some("No Data") | Some("Re-No Data") => AlertStatus::Resolved,
        _ => AlertStatus::Firing,
    };
    let raw_source = tag_value(payload, "query_source")
        .ok_or(AlertError::Missing("query_source tag in scope or tags"))?;
    let query_source = QuerySource::parse(raw_source)?;
    let table =
        clean_table(tag_value(payload, "table").or_else(|| tag_value(payload, "table_name")))?;
    let duration_seconds = payload
        .value
        .as_deref()
        .filter(|v| !is_unrendered(v))
        .map(|v| parse_seconds("value", v))
        .transpose()?;
    // The payload's `waiters` field, else `waiters_ddl:N`-style tags (a
    // Datadog tag value cannot hold the `,` of the label form).
    let waiters = match payload.waiters.as_deref().filter(|v| !is_unrendered(v)) {
        Some(raw) => crate::alert::parse_waiters(Some(raw))?,
        None => {
            let tagged: Vec<String> = ["ddl", "dml", "other"]
                .into_iter()
                .filter_map(|kind| {
                    tag_value(payload, &format!("waiters_{kind}")).map(|n| format!("{kind}={n}"))
                })
                .collect();
            crate::alert::parse_waiters(Some(&tagged.join(",")))?
        }
    };
    Ok(Alert {
        origin: AlertOrigin::Datadog,
        status,
        query_source,
        table,
        duration_seconds,
        link: clean_link(payload.link.as_deref()),
        waiters,
    })
}

/// An empty value, or a template variable Datadog left as it was, means the
/// monitor did not pass a value; the monitor's own threshold then stands.
fn is_unrendered(value: &str) -> bool {
    let v = value.trim();
    v.is_empty() || v.starts_with('$') || v.contains("{{")
}

/// The value of `key:value` in the alert's scope, else in its tags.
/// `query_source:rake:db:migrate` keeps every colon after the first.
fn tag_value<'a>(payload: &'a DatadogPayload, key: &str) -> Option<&'a str> {
    [payload.scope.as_deref(), payload.tags.as_deref()]
        .into_iter()
        .flatten()
        .find_map(|list| {
            list.split(',').find_map(|tag| {
                let (k, v) = tag.trim().split_once(':')?;
                (k == key && !v.trim().is_empty()).then(|| v.trim())
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(fields: &str) -> Vec<u8> {
        format!("{{{fields}}}").into_bytes()
    }

    #[test]
    fn reads_source_and_table_from_scope_and_strings_as_numbers() {
        let b = body(
            r#""id":"7","alert_id":"1234","transition":"Triggered","scope":"query_source:admin/users#update,table:users",
               "tags":"env:prod","value":"153.0","link":"https://app.datadoghq.com/event/1","date":"1764669600000""#,
        );
        let alert = parse_body(&b).unwrap().parsed.unwrap();
        assert_eq!(alert.query_source.as_str(), "admin/users#update");
        assert_eq!(alert.table.as_deref(), Some("users"));
        assert_eq!(alert.duration_seconds, Some(153.0));
        assert_eq!(alert.status, AlertStatus::Firing);
    }

    #[test]
    fn tags_are_the_fallback_and_colons_survive() {
        let b = body(
            r#""transition":"Re-Triggered","scope":"","tags":"env:prod, query_source:rake:db:seed ""#,
        );
        let alert = parse_body(&b).unwrap().parsed.unwrap();
        assert_eq!(alert.query_source.as_str(), "rake:db:seed");
    }

    #[test]
    fn numbers_are_accepted_where_strings_were_expected() {
        let b = body(r#""alert_id":1234,"value":99.5,"scope":"query_source:FooWorker""#);
        assert_eq!(
            parse_body(&b).unwrap().parsed.unwrap().duration_seconds,
            Some(99.5)
        );
    }

    #[test]
    fn recovered_is_resolved_and_unrendered_values_are_absent() {
        let b = body(
            r#""transition":"Recovered","value":"{{value}}","scope":"query_source:FooWorker""#,
        );
        let alert = parse_body(&b).unwrap().parsed.unwrap();
        assert_eq!(alert.status, AlertStatus::Resolved);
        assert_eq!(alert.duration_seconds, None);
    }

    #[test]
    fn missing_source_and_wordy_values_are_rejected() {
        let missing = parse_body(&body(r#""scope":"table:users""#)).unwrap();
        assert!(matches!(missing.parsed, Err(AlertError::Missing(_))));
        let wordy = parse_body(&body(r#""scope":"query_source:X","value":"very long""#)).unwrap();
        assert!(matches!(wordy.parsed, Err(AlertError::NotANumber { .. })));
        assert!(matches!(parse_body(b"[1,2]"), Err(BodyError::Json(_))));
    }

    #[test]
    fn waiters_come_from_the_payload_field_or_per_kind_tags() {
        let field = body(r#""scope":"query_source:w","waiters":"ddl=1,dml=2""#);
        let alert = parse_body(&field).unwrap().parsed.unwrap();
        assert_eq!(alert.waiters.map(|w| (w.ddl, w.dml)), Some((1, 2)));
        let tags =
            body(r#""scope":"query_source:w","tags":"waiters_ddl:3,waiters_other:1,env:prod""#);
        let alert = parse_body(&tags).unwrap().parsed.unwrap();
        assert_eq!(
            alert.waiters.map(|w| (w.ddl, w.dml, w.other)),
            Some((3, 0, 1))
        );
        let unrendered = body(r#""scope":"query_source:w","waiters":"$WAITERS""#);
        assert_eq!(
            parse_body(&unrendered).unwrap().parsed.unwrap().waiters,
            None
        );
    }
}
