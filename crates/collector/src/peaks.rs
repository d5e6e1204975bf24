//! The longest transaction per (table, source) since the figures were last
//! taken: between two pushes the collector polls many times, and a peak
//! seen once must not be lost because the next poll saw less.

use crate::fold::{Series, DDL_IN_PROGRESS, OTHER, UNKNOWN};
use longtx_core::what_if::Observation;
use std::collections::BTreeMap;

/// Pairs kept at most between two takes; a new pair past it is dropped
/// (the collector's own caps keep a poll far below).
pub const MAX_PAIRS: usize = 5_000;

#[derive(Debug, Default)]
pub struct Peaks {
    longest: BTreeMap<(String, String), f64>,
}

impl Peaks {
    /// Only named sources on named tables: `unknown` and `other` are no
    /// source a job could fix, and an ALTER in progress is the migration.
    pub fn raise(&mut self, series: &[Series]) {
        for s in series {
            if s.query_source == UNKNOWN
                || s.query_source == OTHER
                || s.table == OTHER
                || s.table == DDL_IN_PROGRESS
            {
                continue;
            }
            self.raise_one(&s.table, &s.query_source, s.seconds);
        }
    }

    fn raise_one(&mut self, table: &str, source: &str, seconds: f64) {
        let key = (table.to_owned(), source.to_owned());
        if let Some(longest) = self.longest.get_mut(&key) {
            *longest = longest.max(seconds);
        } else if self.longest.len() < MAX_PAIRS {
            self.longest.insert(key, seconds);
        }
    }

    pub fn take(&mut self) -> Vec<Observation> {
        std::mem::take(&mut self.longest)
            .into_iter()
            .map(|((table, query_source), max_seconds)| Observation {
                table,
                query_source,
                max_seconds,
            })
            .collect()
    }

    pub fn put_back(&mut self, undelivered: Vec<Observation>) {
        for o in undelivered {
            self.raise_one(&o.table, &o.query_source, o.max_seconds);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(table: &str, source: &str, seconds: f64) -> Series {
        Series {
            table: table.into(),
            query_source: source.into(),
            seconds,
            waiters: Default::default(),
        }
    }

    #[test]
    fn the_longest_of_many_polls_survives_and_a_failed_delivery_is_kept() {
        let mut peaks = Peaks::default();
        peaks.raise(&[
            series("orders", "CartWorker", 30.0),
            series("t", "unknown", 99.0),
        ]);
        peaks.raise(&[
            series("orders", "CartWorker", 4.0),
            series("ddl_in_progress", "rake:db:migrate", 9.0),
        ]);
        let taken = peaks.take();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].max_seconds, 30.0);
        assert!(peaks.take().is_empty(), "taking empties");
        peaks.raise(&[series("orders", "CartWorker", 12.0)]);
        peaks.put_back(taken);
        assert_eq!(peaks.take()[0].max_seconds, 30.0);
    }
}
