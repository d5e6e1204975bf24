//! `longtx collect --push`: the collector's peaks (each source's longest
//! transaction per table since the last push, under the threshold too) sent
//! to `serve`'s `POST /api/observations`, which keeps them as daily maxima.
//! A push is idempotent on the server (a maximum only grows), so a peak that
//! may or may not have landed is simply sent again.

use crate::collect::Push;
use anyhow::Context;
use longtx_collector::Collector;
use longtx_core::observation::{ObservationBatch, PushedSeries};
use longtx_core::what_if::Observation;
use reqwest::StatusCode;

/// What became of one push.
#[derive(Debug, PartialEq)]
pub enum Pushed {
    Delivered(usize),
    /// Kept for the next push (the server is down, busy or refused the token).
    Retry(String),
    /// The server refused the figures themselves; sending them again would
    /// fail the same way.
    Dropped(String),
}

pub async fn push_peaks(collector: Collector, push: Push) {
    let client = client();
    let mut tick = tokio::time::interval(push.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await; // the first tick is immediate: wait one interval
    loop {
        tick.tick().await;
        let peaks = collector.take_peaks();
        if peaks.is_empty() {
            continue;
        }
        match send(&client, &push, &peaks).await {
            Pushed::Delivered(n) => tracing::debug!(series = n, "peaks pushed"),
            Pushed::Retry(why) => {
                tracing::warn!(url = %push.url, why, "pushing peaks failed; keeping them for the next push");
                collector.return_peaks(peaks);
            }
            Pushed::Dropped(why) => {
                tracing::error!(url = %push.url, why, "the server refused the peaks; dropped")
            }
        }
    }
}

/// `--once --push`: the one poll's peaks, or an error saying why not.
pub async fn push_once(collector: &Collector, push: &Push) -> anyhow::Result<usize> {
    match send(&client(), push, &collector.take_peaks()).await {
        Pushed::Delivered(n) => Ok(n),
        Pushed::Retry(why) | Pushed::Dropped(why) => {
            Err(anyhow::anyhow!(why)).with_context(|| format!("pushing to {}", push.url))
        }
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .expect("a client with only a timeout builds")
}

/// `http://longtx:8080` and `http://longtx:8080/api/observations` both work.
fn endpoint(url: &reqwest::Url) -> reqwest::Url {
    if url.path().ends_with("/api/observations") {
        return url.clone();
    }
    let mut url = url.clone();
    let path = format!("{}/api/observations", url.path().trim_end_matches('/'));
    url.set_path(&path);
    url
}

async fn send(client: &reqwest::Client, push: &Push, peaks: &[Observation]) -> Pushed {
    if peaks.is_empty() {
        return Pushed::Delivered(0);
    }
    let batch = ObservationBatch {
        series: peaks
            .iter()
            .map(|o| PushedSeries {
                table: o.table.clone(),
                query_source: o.query_source.clone(),
                seconds: o.max_seconds,
            })
            .collect(),
    };
    let mut request = client.post(endpoint(&push.url)).json(&batch);
    if let Some(token) = &push.token {
        request = request.bearer_auth(token);
    }
    let response = match request.send().await {
        Ok(r) => r,
        // With its causes (refused, timed out...); reqwest's errors name the
        // URL, never the Authorization header.
        Err(err) => {
            let err = err.without_url();
            let mut why = err.to_string();
            let mut cause = std::error::Error::source(&err);
            while let Some(c) = cause {
                why = format!("{why}: {c}");
                cause = c.source();
            }
            return Pushed::Retry(why);
        }
    };
    let status = response.status();
    if status.is_success() {
        return Pushed::Delivered(peaks.len());
    }
    let body: String = response
        .text()
        .await
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect();
    let why = format!("HTTP {status}: {body}");
    match status {
        StatusCode::BAD_REQUEST
        | StatusCode::PAYLOAD_TOO_LARGE
        | StatusCode::UNPROCESSABLE_ENTITY => Pushed::Dropped(why),
        _ => Pushed::Retry(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_added_to_a_base_url_once() {
        let at = |u: &str| endpoint(&u.parse().unwrap()).to_string();
        assert_eq!(
            at("http://longtx:8080"),
            "http://longtx:8080/api/observations"
        );
        assert_eq!(at("http://h/longtx/"), "http://h/longtx/api/observations");
        assert_eq!(at("http://h/api/observations"), "http://h/api/observations");
    }
}
