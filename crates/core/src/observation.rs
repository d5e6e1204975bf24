//! What a collector pushes to `POST /api/observations`: the longest
//! transaction it saw per table and source since its last push. The figures
//! land in the daily maxima the what-if reads.

use crate::query_source::QuerySource;
use crate::what_if::Observation;
use serde::{Deserialize, Serialize};

/// Series one push may carry: the collector caps sources at 100 and tables
/// at 500, so a real push is far below.
pub const MAX_SERIES: usize = 5_000;
/// A duration longer than this is a clock or unit mistake (a year).
const MAX_SECONDS: f64 = 366.0 * 86_400.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationBatch {
    pub series: Vec<PushedSeries>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushedSeries {
    pub table: String,
    pub query_source: String,
    pub seconds: f64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ObservationError {
    #[error("at most {MAX_SERIES} series per push")]
    TooMany,
    #[error("series {index}: table is at most 128 characters with no control characters")]
    Table { index: usize },
    #[error("series {index}: query_source {reason}")]
    Source { index: usize, reason: String },
    #[error("series {index}: seconds must be a finite number from 0 to a year")]
    Seconds { index: usize },
}

impl ObservationBatch {
    /// The batch as observations, sources in their canonical form; the
    /// first bad series refuses the whole push (nothing half-applied).
    pub fn validate(self) -> Result<Vec<Observation>, ObservationError> {
        if self.series.len() > MAX_SERIES {
            return Err(ObservationError::TooMany);
        }
        self.series
            .into_iter()
            .enumerate()
            .map(|(index, s)| {
                if s.table.chars().count() > 128 || s.table.chars().any(char::is_control) {
                    return Err(ObservationError::Table { index });
                }
                let source =
                    QuerySource::parse(&s.query_source).map_err(|e| ObservationError::Source {
                        index,
                        reason: e.to_string(),
                    })?;
                if !(s.seconds.is_finite() && (0.0..=MAX_SECONDS).contains(&s.seconds)) {
                    return Err(ObservationError::Seconds { index });
                }
                Ok(Observation {
                    table: s.table,
                    query_source: source.as_str().to_owned(),
                    max_seconds: s.seconds,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(table: &str, source: &str, seconds: f64) -> PushedSeries {
        PushedSeries {
            table: table.into(),
            query_source: source.into(),
            seconds,
        }
    }

    #[test]
    fn a_push_is_refused_whole_at_its_first_bad_series() {
        let ok = ObservationBatch {
            series: vec![series("orders", "admin/orders#update", 12.5)],
        };
        assert_eq!(ok.validate().unwrap()[0].max_seconds, 12.5);
        let bad = |s: PushedSeries| {
            ObservationBatch {
                series: vec![series("orders", "CartWorker", 1.0), s],
            }
            .validate()
            .unwrap_err()
        };
        assert_eq!(
            bad(series("orders", "W", f64::NAN)),
            ObservationError::Seconds { index: 1 }
        );
        assert_eq!(
            bad(series("orders", "W", -1.0)),
            ObservationError::Seconds { index: 1 }
        );
        assert_eq!(
            bad(series("t\u{7}", "W", 1.0)),
            ObservationError::Table { index: 1 }
        );
        assert!(matches!(
            bad(series("orders", "<script>\u{0}", 1.0)),
            ObservationError::Source { index: 1, .. }
        ));
    }
}
