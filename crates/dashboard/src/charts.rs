//! Chart geometry for inline SVG: pure arithmetic from figures to boxes,
//! so the templates only place what is computed here.

use chrono::NaiveDate;
use serde::Serialize;

/// One bar, in SVG user units; `title` is the tooltip (escaped by tera).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bar {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    pub title: String,
    /// A CSS class: `over` for a duration above the threshold.
    pub class: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spark {
    pub width: f64,
    pub height: f64,
    pub bars: Vec<Bar>,
    /// Where the threshold line runs, when the chart has one.
    pub threshold_y: Option<f64>,
}

/// A daily value for a chart: the day and the figure, `None` when absent.
pub type Daily = (NaiveDate, Option<f64>);

/// Bars of one value per day over `days` days ending `today`, scaled to the
/// largest value (and the threshold, when given, so its line always shows).
pub fn daily_bars(
    values: &[Daily],
    today: NaiveDate,
    days: i64,
    threshold: Option<f64>,
    label: impl Fn(f64) -> String,
) -> Spark {
    const WIDTH: f64 = 240.0;
    const HEIGHT: f64 = 36.0;
    let days = days.max(1);
    let step = WIDTH / days as f64;
    let top = values
        .iter()
        .filter_map(|(_, v)| *v)
        .chain(threshold)
        .fold(0.0_f64, f64::max)
        * 1.1;
    let scale = |v: f64| if top > 0.0 { v / top * HEIGHT } else { 0.0 };
    let bars = values
        .iter()
        .filter_map(|(day, value)| {
            let value = (*value)?;
            let age = (today - *day).num_days();
            if !(0..days).contains(&age) {
                return None;
            }
            let height = scale(value).max(1.0);
            Some(Bar {
                x: round((days - 1 - age) as f64 * step + 0.5),
                y: round(HEIGHT - height),
                width: round((step - 1.0).max(1.0)),
                height: round(height),
                title: format!("{day}: {}", label(value)),
                class: if threshold.is_some_and(|t| value > t) {
                    "over"
                } else {
                    "under"
                },
            })
        })
        .collect();
    Spark {
        width: WIDTH,
        height: HEIGHT,
        bars,
        threshold_y: threshold.map(|t| round(HEIGHT - scale(t))),
    }
}

/// Grouped bars: one group per week, one bar per series, on a shared scale.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grouped {
    pub width: f64,
    pub height: f64,
    pub bars: Vec<Bar>,
    /// Week labels under each group: (x of the group's middle, text).
    pub labels: Vec<(f64, String)>,
}

/// `groups` are (label, values per series); `series` names and classes them.
pub fn grouped_bars(groups: &[(String, Vec<i64>)], series: &[(&str, &'static str)]) -> Grouped {
    const HEIGHT: f64 = 120.0;
    const GROUP: f64 = 56.0;
    let bar = (GROUP - 8.0) / series.len().max(1) as f64;
    let top = groups
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let mut bars = Vec::new();
    let mut labels = Vec::new();
    for (g, (label, values)) in groups.iter().enumerate() {
        let left = g as f64 * GROUP + 4.0;
        labels.push((round(left + (GROUP - 8.0) / 2.0), label.clone()));
        for (s, (&value, (name, class))) in values.iter().zip(series).enumerate() {
            if value == 0 {
                continue;
            }
            let height = (value as f64 / top * HEIGHT).max(1.0);
            bars.push(Bar {
                x: round(left + s as f64 * bar),
                y: round(HEIGHT - height),
                width: round(bar - 1.0),
                height: round(height),
                title: format!("{label}: {value} {name}"),
                class,
            });
        }
    }
    Grouped {
        width: groups.len() as f64 * GROUP,
        height: HEIGHT,
        bars,
        labels,
    }
}

fn round(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 12, d).unwrap()
    }

    #[test]
    fn today_is_the_rightmost_bar_and_old_days_fall_off() {
        let spark = daily_bars(
            &[
                (day(3), Some(5.0)),
                (day(1), Some(10.0)),
                (day(1) - chrono::Days::new(40), Some(99.0)),
            ],
            day(3),
            30,
            None,
            |v| format!("{v}"),
        );
        assert_eq!(
            spark.bars.len(),
            2,
            "the day 42 days ago is outside the window"
        );
        let today = &spark.bars[0];
        let two_days_ago = &spark.bars[1];
        assert!(today.x > two_days_ago.x);
        assert!(two_days_ago.height > today.height, "10 is taller than 5");
        assert_eq!(today.title, "2026-12-03: 5");
        assert!(spark.threshold_y.is_none());
    }

    #[test]
    fn durations_over_the_threshold_are_marked_and_the_line_always_fits() {
        let spark = daily_bars(
            &[(day(2), Some(40.0)), (day(3), Some(150.0))],
            day(3),
            7,
            Some(100.0),
            |v| format!("{v} s"),
        );
        let classes: Vec<_> = spark.bars.iter().map(|b| b.class).collect();
        assert_eq!(classes, ["under", "over"]);
        let line = spark.threshold_y.unwrap();
        assert!(line > 0.0 && line < spark.height);
        // Everything below the threshold: the line still fits in the chart.
        let low = daily_bars(&[(day(3), Some(1.0))], day(3), 7, Some(100.0), |v| {
            format!("{v}")
        });
        assert!(low.threshold_y.unwrap() >= 0.0);
        assert!(low.bars[0].height < 2.0);
    }

    #[test]
    fn grouped_bars_share_one_scale_and_skip_zeros() {
        let chart = grouped_bars(
            &[
                ("11-23".into(), vec![4, 2, 0]),
                ("11-30".into(), vec![2, 1, 1]),
            ],
            &[
                ("opened", "opened"),
                ("merged", "merged"),
                ("closed", "closed"),
            ],
        );
        assert_eq!(chart.bars.len(), 5);
        assert_eq!(chart.labels.len(), 2);
        let tallest = chart.bars.iter().map(|b| b.height).fold(0.0, f64::max);
        assert_eq!(tallest, chart.height, "the largest value fills the height");
        assert_eq!(chart.bars[0].title, "11-23: 4 opened");
    }
}
