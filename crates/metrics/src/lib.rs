//! Process-wide counters and histograms for `/metrics`, in the Prometheus
//! text exposition format (0.0.4). Small on purpose: a mutex-guarded map is
//! plenty at webhook rates, and no exporter crate is needed.
//!
//! Label values come from outside (a `query_source`, a GitHub path), so
//! each metric keeps at most [`MAX_SERIES`] label sets; later ones are
//! counted under `other` values.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Mutex, OnceLock};

pub const MAX_SERIES: usize = 200;

/// Upper bounds of the latency histograms, in seconds.
pub const BUCKETS: [f64; 11] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

type Labels = Vec<(&'static str, String)>;

#[derive(Default)]
struct Registry {
    counters: BTreeMap<&'static str, Family<f64>>,
    histograms: BTreeMap<&'static str, Family<Histogram>>,
}

struct Family<T> {
    help: &'static str,
    series: BTreeMap<Labels, T>,
}

#[derive(Clone, Default)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

fn series_key<T>(family: &Family<T>, labels: &[(&'static str, &str)]) -> Labels {
    let key: Labels = labels.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
    if family.series.contains_key(&key) || family.series.len() < MAX_SERIES {
        key
    } else {
        labels
            .iter()
            .map(|(k, _)| (*k, "other".to_owned()))
            .collect()
    }
}

/// Adds `value` to the counter `name{labels}`.
pub fn add(name: &'static str, help: &'static str, labels: &[(&'static str, &str)], value: f64) {
    let mut registry = registry().lock().unwrap_or_else(|p| p.into_inner());
    let family = registry.counters.entry(name).or_insert_with(|| Family {
        help,
        series: BTreeMap::new(),
    });
    let key = series_key(family, labels);
    *family.series.entry(key).or_default() += value;
}

pub fn inc(name: &'static str, help: &'static str, labels: &[(&'static str, &str)]) {
    add(name, help, labels, 1.0);
}

/// Records one observation, in seconds, in the histogram `name{labels}`.
pub fn observe(
    name: &'static str,
    help: &'static str,
    labels: &[(&'static str, &str)],
    seconds: f64,
) {
    let mut registry = registry().lock().unwrap_or_else(|p| p.into_inner());
    let family = registry.histograms.entry(name).or_insert_with(|| Family {
        help,
        series: BTreeMap::new(),
    });
    let key = series_key(family, labels);
    let histogram = family.series.entry(key).or_default();
    for (bucket, bound) in histogram.buckets.iter_mut().zip(BUCKETS) {
        if seconds <= bound {
            *bucket += 1;
        }
    }
    histogram.count += 1;
    histogram.sum += seconds;
}

/// A value read at scrape time (jobs by state, pool usage).
pub struct Gauge {
    pub name: &'static str,
    pub help: &'static str,
    pub series: Vec<(Labels, f64)>,
}

/// Everything recorded so far, then `gauges`, as Prometheus text.
pub fn render(gauges: &[Gauge]) -> String {
    let registry = registry().lock().unwrap_or_else(|p| p.into_inner());
    let mut out = String::new();
    for (name, family) in &registry.counters {
        header(&mut out, name, family.help, "counter");
        for (labels, value) in &family.series {
            sample(&mut out, name, labels, None, *value);
        }
    }
    for (name, family) in &registry.histograms {
        header(&mut out, name, family.help, "histogram");
        for (labels, histogram) in &family.series {
            let bucket_name = format!("{name}_bucket");
            for (count, bound) in histogram.buckets.iter().zip(BUCKETS) {
                sample(
                    &mut out,
                    &bucket_name,
                    labels,
                    Some(&format_value(bound)),
                    *count as f64,
                );
            }
            sample(
                &mut out,
                &bucket_name,
                labels,
                Some("+Inf"),
                histogram.count as f64,
            );
            sample(
                &mut out,
                &format!("{name}_sum"),
                labels,
                None,
                histogram.sum,
            );
            sample(
                &mut out,
                &format!("{name}_count"),
                labels,
                None,
                histogram.count as f64,
            );
        }
    }
    for gauge in gauges {
        header(&mut out, gauge.name, gauge.help, "gauge");
        for (labels, value) in &gauge.series {
            sample(&mut out, gauge.name, labels, None, *value);
        }
    }
    out
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(
        out,
        "# HELP {name} {}",
        help.replace('\\', "\\\\").replace('\n', "\\n")
    );
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &Labels, le: Option<&str>, value: f64) {
    out.push_str(name);
    let mut pairs: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if let Some(le) = le {
        pairs.push(format!("le=\"{le}\""));
    }
    if !pairs.is_empty() {
        let _ = write!(out, "{{{}}}", pairs.join(","));
    }
    let _ = writeln!(out, " {}", format_value(value));
}

fn format_value(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// Label values escape `\`, `"` and line feeds, as the format requires.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_histograms_and_gauges_render_in_the_text_format() {
        inc("test_events_total", "Events.", &[("source", "a\"b\\c\nd")]);
        observe(
            "test_latency_seconds",
            "Latency.",
            &[("endpoint", "x")],
            0.003,
        );
        let text = render(&[Gauge {
            name: "test_jobs",
            help: "Jobs.",
            series: vec![(vec![("state", "queued".into())], 3.0)],
        }]);
        assert!(text.contains("# TYPE test_events_total counter"), "{text}");
        assert!(
            text.contains(r#"test_events_total{source="a\"b\\c\nd"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"test_latency_seconds_bucket{endpoint="x",le="0.0025"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"test_latency_seconds_bucket{endpoint="x",le="0.005"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"test_latency_seconds_bucket{endpoint="x",le="+Inf"} 1"#),
            "{text}"
        );
        assert!(text.contains(r#"test_jobs{state="queued"} 3"#), "{text}");
    }

    #[test]
    fn label_sets_are_capped() {
        for i in 0..(MAX_SERIES + 50) {
            inc(
                "test_capped_total",
                "Capped.",
                &[("source", &format!("s{i}"))],
            );
        }
        let text = render(&[]);
        let series = text
            .lines()
            .filter(|l| l.starts_with("test_capped_total{"))
            .count();
        assert_eq!(series, MAX_SERIES + 1, "the rest fold into `other`");
        assert!(
            text.contains(r#"test_capped_total{source="other"} 50"#),
            "{text}"
        );
    }
}
