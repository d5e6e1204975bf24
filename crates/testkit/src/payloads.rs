//! Builders for webhook bodies, shaped exactly like the real senders'.

use serde_json::{json, Map, Value};

/// One alert inside an Alertmanager webhook.
#[derive(Debug, Clone)]
pub struct AmAlert {
    status: &'static str,
    labels: Map<String, Value>,
    annotations: Map<String, Value>,
}

impl AmAlert {
    /// A firing `LongTransaction` alert for `query_source`.
    pub fn firing(query_source: &str) -> Self {
        let mut labels = Map::new();
        labels.insert("alertname".into(), json!("LongTransaction"));
        labels.insert("severity".into(), json!("warning"));
        labels.insert("query_source".into(), json!(query_source));
        AmAlert {
            status: "firing",
            labels,
            annotations: Map::new(),
        }
    }

    /// An alert with no `query_source` label at all.
    pub fn without_source() -> Self {
        let mut alert = Self::firing("x");
        alert.labels.remove("query_source");
        alert
    }

    pub fn resolved(mut self) -> Self {
        self.status = "resolved";
        self
    }

    pub fn table(self, table: &str) -> Self {
        self.label("table", table)
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.into(), json!(value));
        self
    }

    /// The `value` annotation, rendered as Prometheus renders `$value`.
    pub fn value(self, seconds: f64) -> Self {
        self.annotation("value", &seconds.to_string())
    }

    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.into(), json!(value));
        self
    }

    fn to_json(&self) -> Value {
        let fingerprint = format!(
            "{:016x}",
            fnv(&Value::Object(self.labels.clone()).to_string())
        );
        let resolved = self.status == "resolved";
        json!({
            "status": self.status,
            "labels": self.labels,
            "annotations": self.annotations,
            "startsAt": "2026-12-02T09:58:15.123Z",
            "endsAt": if resolved { "2026-12-02T10:04:15.123Z" } else { "0001-01-01T00:00:00Z" },
            "generatorURL": "http://prometheus.example:9090/graph?g0.expr=longtx_mdl_holder_max_tx_duration_seconds+%3E+100&g0.tab=1",
            "fingerprint": fingerprint,
        })
    }
}

/// A whole Alertmanager (version 4) webhook body.
#[derive(Debug, Clone, Default)]
pub struct AmWebhook {
    alerts: Vec<AmAlert>,
}

impl AmWebhook {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with(alert: AmAlert) -> Self {
        Self::new().alert(alert)
    }

    pub fn alert(mut self, alert: AmAlert) -> Self {
        self.alerts.push(alert);
        self
    }

    pub fn to_json(&self) -> Value {
        let status = if self.alerts.iter().any(|a| a.status == "firing") {
            "firing"
        } else {
            "resolved"
        };
        json!({
            "receiver": "longtx",
            "status": status,
            "alerts": self.alerts.iter().map(AmAlert::to_json).collect::<Vec<_>>(),
            "groupLabels": {"alertname": "LongTransaction"},
            "commonLabels": {"alertname": "LongTransaction", "severity": "warning"},
            "commonAnnotations": {},
            "externalURL": "http://alertmanager.example:9093",
            "version": "4",
            "groupKey": "{}:{alertname=\"LongTransaction\"}",
            "truncatedAlerts": 0,
        })
    }
}

/// A Datadog webhook with the custom payload README recommends; Datadog
/// substitutes every variable as a string.
#[derive(Debug, Clone)]
pub struct DdWebhook {
    transition: &'static str,
    scope: Vec<String>,
    tags: Vec<String>,
    value: Option<String>,
}

impl DdWebhook {
    pub fn triggered(query_source: &str) -> Self {
        DdWebhook {
            transition: "Triggered",
            scope: vec![format!("query_source:{query_source}")],
            tags: vec!["env:prod".into(), "team:platform".into()],
            value: None,
        }
    }

    pub fn recovered(mut self) -> Self {
        self.transition = "Recovered";
        self
    }

    pub fn table(mut self, table: &str) -> Self {
        self.scope.push(format!("table:{table}"));
        self
    }

    pub fn value(mut self, value: &str) -> Self {
        self.value = Some(value.to_owned());
        self
    }

    pub fn to_json(&self) -> Value {
        json!({
            "id": "7604211837260293214",
            "alert_id": "148021873",
            "transition": self.transition,
            "title": format!("[{}] Long transaction holding a metadata lock", self.transition),
            "scope": self.scope.join(","),
            "tags": self.tags.join(","),
            "value": self.value.clone().unwrap_or_else(|| "{{value}}".into()),
            "link": "https://app.datadoghq.com/event/event?id=7604211837260293214",
            "date": "1764669495000",
        })
    }
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf29ce484222325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}
