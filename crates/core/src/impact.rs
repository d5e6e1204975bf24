//! Which queued job to pay an agent for first. The alert measures the
//! longest holder; the harm is what waits behind it and how often it comes
//! back. So a job's impact adds three bounded parts:
//!
//! - **over**: 20 points per doubling of the longest transaction past the
//!   threshold (2x: 20, 4x: 40), at most [`MAX_OVER`];
//! - **recurrence**: 5 points per alert a day over the last 7 days (12
//!   alerts in 7 days: 8.6), at most [`MAX_RECURRENCE`];
//! - **waiters**: 25 per schema change, 2 per query and 1 per other
//!   statement seen waiting behind it, at most [`MAX_WAITERS`].
//!
//! The dispatcher orders by impact plus [`AGE_BONUS_PER_HOUR`] for every
//! hour queued. As impact never exceeds [`MAX_SCORE`], a job is never
//! passed by one queued [`MAX_SCORE`] / [`AGE_BONUS_PER_HOUR`] hours (50 h)
//! or more after it: nothing starves.

use crate::waiters::Waiters;
use serde::Serialize;

pub const OVER_PER_DOUBLING: f64 = 20.0;
pub const MAX_OVER: f64 = 60.0;
pub const PER_ALERT_PER_DAY: f64 = 5.0;
pub const MAX_RECURRENCE: f64 = 40.0;
pub const PER_DDL_WAITER: f64 = 25.0;
pub const PER_DML_WAITER: f64 = 2.0;
pub const PER_OTHER_WAITER: f64 = 1.0;
pub const MAX_WAITERS: f64 = 100.0;
pub const MAX_SCORE: f64 = MAX_OVER + MAX_RECURRENCE + MAX_WAITERS;
pub const AGE_BONUS_PER_HOUR: f64 = 4.0;
/// The window recurrence is counted over.
pub const RECURRENCE_DAYS: u32 = 7;

/// What a job's impact is computed from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImpactInputs {
    pub longest_seconds: Option<f64>,
    /// The threshold of the job's first table.
    pub threshold_seconds: f64,
    /// Alerts about the source over the last [`RECURRENCE_DAYS`] days.
    pub alerts_in_window: u32,
    /// The most sessions seen waiting behind it, per kind.
    pub waiters: Waiters,
}

/// A job's impact, its parts, and why in words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Impact {
    pub score: f64,
    pub over: f64,
    pub recurrence: f64,
    pub waiting: f64,
    /// "1 schema change waited behind it; 12 alerts in 7 days; 3.2x the
    /// threshold".
    pub why: String,
}

pub fn impact(inputs: &ImpactInputs) -> Impact {
    let ratio = match inputs.longest_seconds {
        Some(longest) if inputs.threshold_seconds > 0.0 => longest / inputs.threshold_seconds,
        _ => 0.0,
    };
    let over = if ratio > 1.0 {
        (OVER_PER_DOUBLING * ratio.log2()).min(MAX_OVER)
    } else {
        0.0
    };
    let per_day = f64::from(inputs.alerts_in_window) / f64::from(RECURRENCE_DAYS);
    let recurrence = (PER_ALERT_PER_DAY * per_day).min(MAX_RECURRENCE);
    let w = inputs.waiters;
    let waiting = (PER_DDL_WAITER * f64::from(w.ddl)
        + PER_DML_WAITER * f64::from(w.dml)
        + PER_OTHER_WAITER * f64::from(w.other))
    .min(MAX_WAITERS);
    let mut why = Vec::new();
    if let Some(waited) = w.describe() {
        why.push(waited);
    }
    why.push(format!(
        "{} alert{} in {RECURRENCE_DAYS} days",
        inputs.alerts_in_window,
        if inputs.alerts_in_window == 1 {
            ""
        } else {
            "s"
        }
    ));
    if ratio > 0.0 {
        why.push(format!("{ratio:.1}x the threshold"));
    }
    Impact {
        score: round2(over + recurrence + waiting),
        over: round2(over),
        recurrence: round2(recurrence),
        waiting: round2(waiting),
        why: why.join("; "),
    }
}

/// The dispatcher's order key: impact plus the age bonus.
pub fn priority(score: f64, queued_hours: f64) -> f64 {
    score + AGE_BONUS_PER_HOUR * queued_hours.max(0.0)
}

/// A queued job as the dispatcher ranks it.
#[derive(Debug, Clone, PartialEq)]
pub struct Queued {
    pub id: i64,
    pub impact: f64,
    pub queued_hours: f64,
}

/// Highest priority first; among equals, the older job (the lower id).
pub fn rank(mut queue: Vec<Queued>) -> Vec<Queued> {
    queue.sort_by(|a, b| {
        priority(b.impact, b.queued_hours)
            .total_cmp(&priority(a.impact, a.queued_hours))
            .then(a.id.cmp(&b.id))
    });
    queue
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(longest: f64, alerts: u32, waiters: Waiters) -> ImpactInputs {
        ImpactInputs {
            longest_seconds: Some(longest),
            threshold_seconds: 100.0,
            alerts_in_window: alerts,
            waiters,
        }
    }

    #[test]
    fn each_part_follows_the_documented_formula() {
        // 400 s at a 100 s threshold: two doublings, 40 points.
        let i = impact(&inputs(400.0, 0, Waiters::default()));
        assert_eq!(
            (i.over, i.recurrence, i.waiting, i.score),
            (40.0, 0.0, 0.0, 40.0)
        );
        // 14 alerts in 7 days: 2 a day, 10 points.
        let i = impact(&inputs(100.0, 14, Waiters::default()));
        assert_eq!((i.over, i.recurrence, i.score), (0.0, 10.0, 10.0));
        // 1 ALTER and 3 queries: 25 + 6.
        let w = Waiters {
            ddl: 1,
            dml: 3,
            other: 0,
        };
        let i = impact(&inputs(150.0, 7, w));
        assert_eq!(i.waiting, 31.0);
        assert_eq!(i.over, 11.7, "20 * log2(1.5) = 11.70");
        assert_eq!(i.score, 11.7 + 5.0 + 31.0);
        assert_eq!(
            i.why,
            "1 schema change and 3 queries waited behind it; 7 alerts in 7 days; 1.5x the threshold"
        );
    }

    #[test]
    fn every_part_is_capped_so_the_score_is_bounded() {
        let w = Waiters {
            ddl: 50,
            dml: 1000,
            other: 9,
        };
        let i = impact(&inputs(1e9, 10_000, w));
        assert_eq!(i.score, MAX_SCORE);
        let none = impact(&ImpactInputs {
            longest_seconds: None,
            threshold_seconds: 100.0,
            alerts_in_window: 0,
            waiters: Waiters::default(),
        });
        assert_eq!(none.score, 0.0);
        assert_eq!(none.why, "0 alerts in 7 days");
    }

    #[test]
    fn impact_orders_the_queue_and_age_breaks_ties() {
        let queue = vec![
            Queued {
                id: 1,
                impact: 10.0,
                queued_hours: 1.0,
            },
            Queued {
                id: 2,
                impact: 60.0,
                queued_hours: 0.0,
            },
            Queued {
                id: 3,
                impact: 30.0,
                queued_hours: 2.0,
            },
            Queued {
                id: 4,
                impact: 38.0,
                queued_hours: 0.0,
            },
        ];
        let order: Vec<i64> = rank(queue).iter().map(|q| q.id).collect();
        // Priorities: 14, 60, 38, 38: the tie goes to the older job, 3.
        assert_eq!(order, [2, 3, 4, 1]);
    }

    #[test]
    fn nothing_starves_past_the_age_bonus() {
        // The weakest job, queued 50 hours before the strongest possible.
        let hours = MAX_SCORE / AGE_BONUS_PER_HOUR;
        assert_eq!(hours, 50.0);
        let weakest = Queued {
            id: 1,
            impact: 0.0,
            queued_hours: hours + 0.01,
        };
        let strongest = Queued {
            id: 2,
            impact: MAX_SCORE,
            queued_hours: 0.0,
        };
        assert_eq!(rank(vec![strongest, weakest])[0].id, 1);
    }
}
