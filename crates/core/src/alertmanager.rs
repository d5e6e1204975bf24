//! Prometheus Alertmanager's webhook body (version 4).
//!
//! Every entry of `alerts[]` is one alert; `query_source` and `table` are
//! labels, the duration is the `value` (or `duration_seconds`) annotation.

use crate::alert::{
    clean_link, clean_table, parse_seconds, require_object, Alert, AlertError, AlertOrigin,
    AlertStatus, BodyError, ReceivedAlert,
};
use crate::query_source::QuerySource;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// The envelope. Alerts stay raw until each is parsed on its own, so one
/// malformed entry is rejected while the rest of the batch goes through.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub version: Option<String>,
    pub status: Option<String>,
    pub receiver: Option<String>,
    pub group_key: Option<String>,
    #[serde(default)]
    pub truncated_alerts: u64,
    #[serde(rename = "externalURL")]
    pub external_url: Option<String>,
    pub alerts: Vec<Box<RawValue>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlertmanagerAlert {
    pub status: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    pub starts_at: Option<String>,
    pub ends_at: Option<String>,
    #[serde(rename = "generatorURL")]
    pub generator_url: Option<String>,
    pub fingerprint: Option<String>,
}

/// Parses a whole webhook body into its alerts.
pub fn parse_body(body: &[u8]) -> Result<(Envelope, Vec<ReceivedAlert>), BodyError> {
    // The envelope itself is not kept: parse it once, straight from the body.
    require_object(body).map_err(BodyError::Json)?;
    let envelope: Envelope = serde_json::from_slice(body).map_err(BodyError::json)?;
    if let Some(version) = envelope.version.as_deref() {
        if version != "4" {
            return Err(BodyError::UnsupportedVersion(version.to_owned()));
        }
    }
    let group_status = envelope.status.clone();
    let alerts = envelope
        .alerts
        .iter()
        .map(|raw| parse_one(raw.clone(), group_status.as_deref()))
        .collect();
    Ok((envelope, alerts))
}

fn parse_one(raw: Box<RawValue>, group_status: Option<&str>) -> ReceivedAlert {
    let typed = require_object(raw.get().as_bytes()).and_then(|()| {
        serde_json::from_str::<AlertmanagerAlert>(raw.get()).map_err(|e| e.to_string())
    });
    match typed {
        Err(err) => ReceivedAlert {
            raw,
            query_source_hint: None,
            parsed: Err(AlertError::Malformed(err)),
        },
        Ok(alert) => ReceivedAlert {
            raw,
            query_source_hint: alert.labels.get("query_source").cloned(),
            parsed: to_alert(&alert, group_status),
        },
    }
}

/// Turns one typed Alertmanager alert into the normalised form.
pub fn to_alert(
    alert: &AlertmanagerAlert,
    group_status: Option<&str>,
) -> Result<Alert, AlertError> {
    let status = match alert.status.as_deref().or(group_status) {
        Some("resolved") => AlertStatus::Resolved,
        Some("firing") | None => AlertStatus::Firing,
        Some(_) => {
            return Err(AlertError::Invalid {
                field: "status",
                reason: "must be firing or resolved",
            })
        }
    };
    let raw_source = alert
        .labels
        .get("query_source")
        .ok_or(AlertError::Missing("label query_source"))?;
    let query_source = QuerySource::parse(raw_source)?;
    let table = clean_table(
        alert
            .labels
            .get("table")
            .or_else(|| alert.labels.get("table_name"))
            .map(String::as_str),
    )?;
    let duration_seconds = ["value", "duration_seconds"]
        .into_iter()
        .find_map(|key| alert.annotations.get(key).map(|v| (key, v)))
        .map(|(key, v)| parse_seconds(annotation_field(key), v))
        .transpose()?;
    let waiters = crate::alert::parse_waiters(
        alert
            .labels
            .get("waiters")
            .or_else(|| alert.annotations.get("waiters"))
            .map(String::as_str),
    )?;
    Ok(Alert {
        origin: AlertOrigin::Alertmanager,
        status,
        query_source,
        table,
        duration_seconds,
        link: clean_link(alert.generator_url.as_deref()),
        waiters,
    })
}

fn annotation_field(key: &str) -> &'static str {
    if key == "value" {
        "annotation value"
    } else {
        "annotation duration_seconds"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BATCH: &str = r#"{
      "version": "4", "status": "firing", "receiver": "longtx",
      "groupKey": "{}:{alertname=\"LongTransaction\"}", "truncatedAlerts": 0,
      "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
      "externalURL": "http://am.example:9093",
      "alerts": [
        {"status": "firing", "labels": {"alertname": "LongTransaction", "query_source": "admin/users#update", "table": "users"},
         "annotations": {"value": "142.5"}, "startsAt": "2026-12-01T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
         "generatorURL": "http://prom.example/graph?g0.expr=x", "fingerprint": "abc"},
        {"status": "firing", "labels": {"alertname": "LongTransaction"}, "annotations": {}},
        {"status": "resolved", "labels": {"query_source": "FooWorker"}, "annotations": {"duration_seconds": "slow"}},
        "not an alert"
      ]
    }"#;

    #[test]
    fn each_alert_parses_or_fails_on_its_own() {
        let (_, alerts) = parse_body(BATCH.as_bytes()).unwrap();
        assert_eq!(alerts.len(), 4);
        let first = alerts[0].parsed.as_ref().unwrap();
        assert_eq!(first.query_source.as_str(), "admin/users#update");
        assert_eq!(first.table.as_deref(), Some("users"));
        assert_eq!(first.duration_seconds, Some(142.5));
        assert_eq!(first.status, AlertStatus::Firing);
        assert_eq!(
            alerts[1].parsed,
            Err(AlertError::Missing("label query_source"))
        );
        assert!(matches!(
            alerts[2].parsed,
            Err(AlertError::NotANumber {
                field: "annotation duration_seconds",
                ..
            })
        ));
        assert_eq!(alerts[2].query_source_hint.as_deref(), Some("FooWorker"));
        assert!(matches!(alerts[3].parsed, Err(AlertError::Malformed(_))));
    }

    #[test]
    fn other_versions_and_bad_json_are_body_errors() {
        let v3 = r#"{"version":"3","alerts":[]}"#;
        assert!(matches!(
            parse_body(v3.as_bytes()),
            Err(BodyError::UnsupportedVersion(_))
        ));
        assert!(matches!(
            parse_body(b"{\"alerts\":"),
            Err(BodyError::Json(_))
        ));
        assert!(matches!(parse_body(b"{}"), Err(BodyError::Json(_))));
    }

    #[test]
    fn group_status_applies_when_the_alert_has_none() {
        let body =
            r#"{"version":"4","status":"resolved","alerts":[{"labels":{"query_source":"X"}}]}"#;
        let (_, alerts) = parse_body(body.as_bytes()).unwrap();
        assert_eq!(
            alerts[0].parsed.as_ref().unwrap().status,
            AlertStatus::Resolved
        );
    }

    #[test]
    fn waiters_come_from_a_label_or_an_annotation_and_a_bad_one_is_named() {
        let body = r#"{"version":"4","alerts":[
            {"labels":{"query_source":"A","waiters":"ddl=1,dml=3"}},
            {"labels":{"query_source":"B"},"annotations":{"waiters":"ddl=2,dml=1,"}},
            {"labels":{"query_source":"C"}},
            {"labels":{"query_source":"D"},"annotations":{"waiters":"locks=9"}}]}"#;
        let (_, alerts) = parse_body(body.as_bytes()).unwrap();
        let waiters = |i: usize| alerts[i].parsed.as_ref().unwrap().waiters;
        assert_eq!(waiters(0).map(|w| (w.ddl, w.dml)), Some((1, 3)));
        assert_eq!(waiters(1).map(|w| (w.ddl, w.dml)), Some((2, 1)));
        assert_eq!(waiters(2), None);
        let err = alerts[3].parsed.as_ref().unwrap_err().to_string();
        assert!(err.contains("waiters") && err.contains("ddl=N"), "{err}");
    }
}
