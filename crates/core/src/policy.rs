//! What one alert should do, before the database is asked.
//!
//! The store then turns `Decision::Enqueue` into `created` or `deduped`
//! (the database, not this process, knows whether a job is active).

use crate::alert::{Alert, AlertStatus};
use crate::glob;
use crate::ignore_list::IgnoreList;
use crate::job::Outcome;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct IntakePolicy {
    /// Alerts whose duration is below this (seconds) create no job.
    pub threshold_seconds: f64,
    /// Per-table thresholds that replace the global one.
    pub table_thresholds: BTreeMap<String, f64>,
    /// `query_source` globs that never create jobs (`unknown`, `rake:tmp:*`).
    pub exclude: Vec<String>,
    /// After a job ends, how long before the same source may open a new one.
    pub cooldown: Duration,
    /// `LONGTX_DEPLOY_GRACE`: after a merge, alerts this long are the old
    /// code still running (counted, never a regression).
    pub deploy_grace: Duration,
    /// `LONGTX_VERIFY_WINDOW`: after the grace, a merged fix with no alert
    /// this long is `verified`.
    pub verify_window: Duration,
}

impl Default for IntakePolicy {
    fn default() -> Self {
        IntakePolicy {
            threshold_seconds: 100.0,
            table_thresholds: BTreeMap::new(),
            exclude: vec!["unknown".into(), "rake:tmp:*".into()],
            cooldown: Duration::from_secs(7 * 86_400),
            deploy_grace: Duration::from_secs(2 * 3600),
            verify_window: Duration::from_secs(7 * 86_400),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The alert reports that the transaction is over.
    Resolved,
    Excluded {
        pattern: String,
    },
    Ignored {
        entry: String,
        reason: Option<String>,
    },
    BelowThreshold {
        duration: f64,
        threshold: f64,
    },
    /// Create a job, or join the active one for this source.
    Enqueue,
}

impl IntakePolicy {
    pub fn threshold_for(&self, table: Option<&str>) -> f64 {
        table
            .and_then(|t| self.table_thresholds.get(t))
            .copied()
            .unwrap_or(self.threshold_seconds)
    }

    /// Source filters come before the measurement: an excluded or ignored
    /// source is reported as such whatever its duration.
    pub fn decide(&self, alert: &Alert, ignore: &IgnoreList) -> Decision {
        if alert.status == AlertStatus::Resolved {
            return Decision::Resolved;
        }
        let key = alert.query_source.key();
        if let Some(pattern) = self
            .exclude
            .iter()
            .find(|p| glob::matches(&crate::query_source::canonical_pattern(p), &key))
        {
            return Decision::Excluded {
                pattern: pattern.clone(),
            };
        }
        if let Some(entry) = ignore.matching(&alert.query_source) {
            return Decision::Ignored {
                entry: entry.query_source.clone(),
                reason: entry.reason.clone(),
            };
        }
        let threshold = self.threshold_for(alert.table.as_deref());
        // No duration: the alerting system already applied its threshold.
        if let Some(duration) = alert.duration_seconds {
            if duration < threshold {
                return Decision::BelowThreshold {
                    duration,
                    threshold,
                };
            }
        }
        Decision::Enqueue
    }
}

impl Decision {
    /// The outcome when it is known without the database.
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            Decision::Resolved => Some(Outcome::Resolved),
            Decision::Excluded { .. } => Some(Outcome::Excluded),
            Decision::Ignored { .. } => Some(Outcome::Ignored),
            Decision::BelowThreshold { .. } => Some(Outcome::BelowThreshold),
            Decision::Enqueue => None,
        }
    }

    /// A short explanation for the response and the audit trail.
    pub fn detail(&self) -> Option<String> {
        match self {
            Decision::Resolved | Decision::Enqueue => None,
            Decision::Excluded { pattern } => Some(format!("matches exclude pattern {pattern:?}")),
            Decision::Ignored { entry, .. } => Some(format!("in the ignore list as {entry:?}")),
            Decision::BelowThreshold {
                duration,
                threshold,
            } => Some(format!("{duration}s is below the {threshold}s threshold")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alert::AlertOrigin;
    use crate::ignore_list::IgnoreEntry;
    use crate::query_source::QuerySource;

    fn alert(source: &str, table: Option<&str>, duration: Option<f64>) -> Alert {
        Alert {
            origin: AlertOrigin::Alertmanager,
            status: AlertStatus::Firing,
            query_source: QuerySource::parse(source).unwrap(),
            table: table.map(str::to_owned),
            duration_seconds: duration,
            link: None,
            waiters: None,
        }
    }

    #[test]
    fn defaults_exclude_unknown_and_tmp_rake_tasks() {
        let policy = IntakePolicy::default();
        let none = IgnoreList::default();
        assert!(matches!(
            policy.decide(&alert("unknown", None, Some(500.0)), &none),
            Decision::Excluded { .. }
        ));
        assert!(matches!(
            policy.decide(&alert("rake:tmp:backfill", None, Some(500.0)), &none),
            Decision::Excluded { .. }
        ));
        assert_eq!(
            policy.decide(&alert("rake:db:seed", None, Some(500.0)), &none),
            Decision::Enqueue
        );
    }

    #[test]
    fn thresholds_are_per_table_when_configured() {
        let mut policy = IntakePolicy::default();
        policy.table_thresholds.insert("orders".into(), 30.0);
        let none = IgnoreList::default();
        assert_eq!(
            policy.decide(&alert("A#b", Some("orders"), Some(40.0)), &none),
            Decision::Enqueue
        );
        assert!(matches!(
            policy.decide(&alert("A#b", Some("users"), Some(40.0)), &none),
            Decision::BelowThreshold { threshold, .. } if threshold == 100.0
        ));
        assert_eq!(
            policy.decide(&alert("A#b", None, None), &none),
            Decision::Enqueue
        );
    }

    #[test]
    fn ignored_sources_create_nothing_whatever_their_duration() {
        let ignore = IgnoreList::from_entries(vec![IgnoreEntry {
            query_source: "admin/*".into(),
            reason: Some("needs one snapshot".into()),
            pr: None,
            added_by: None,
            added_at: None,
            exact: false,
        }]);
        let d = IntakePolicy::default()
            .decide(&alert("admin/users#update", None, Some(900.0)), &ignore);
        assert!(matches!(d, Decision::Ignored { .. }));
        assert_eq!(d.outcome(), Some(Outcome::Ignored));
    }
}
