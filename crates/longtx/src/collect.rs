//! `longtx collect`: the collector on its own `/metrics` listener, for
//! Prometheus to scrape next to the database.

use anyhow::Context;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use longtx_collector::{Caps, Collector, Dsn, Settings};
use std::net::SocketAddr;
use std::time::Duration;

pub struct CollectArgs {
    pub dsn: Dsn,
    pub listen: SocketAddr,
    pub interval: Duration,
    pub timeout: Duration,
    pub max_sources: usize,
    /// Poll once, print the figures, exit (non-zero when the poll failed).
    pub once: bool,
    pub push: Option<Push>,
}

/// Where the collector sends its peaks for the what-if.
pub struct Push {
    pub url: reqwest::Url,
    pub interval: Duration,
    pub token: Option<String>,
}

pub async fn run(args: CollectArgs) -> anyhow::Result<()> {
    if args.once {
        let settings = settings(&args);
        let collector = Collector::once(&settings)
            .await
            .with_context(|| format!("polling {}", settings.dsn))?;
        print!("{}", longtx_metrics::render(&collector.gauges()));
        if let Some(push) = &args.push {
            let pushed = crate::collect_push::push_once(&collector, push).await?;
            eprintln!("pushed {pushed} series to {}", push.url);
        }
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let collector = Collector::spawn(settings(&args));
    if let Some(push) = args.push {
        tokio::spawn(crate::collect_push::push_peaks(collector.clone(), push));
    }
    tracing::info!(listen = %args.listen, "serving the collector's /metrics");
    let app = axum::Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(collector);
    axum::serve(listener, app)
        .with_graceful_shutdown(crate::signals::shutdown_signal())
        .await
        .context("serving HTTP")
}

fn settings(args: &CollectArgs) -> Settings {
    Settings {
        dsn: args.dsn.clone(),
        interval: args.interval,
        timeout: args.timeout,
        caps: Caps {
            max_sources: args.max_sources,
            max_tables: 500,
        },
    }
}

async fn metrics(State(collector): State<Collector>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        longtx_metrics::render(&collector.gauges()),
    )
}

/// `15s`, `1m`, `500ms`, or bare seconds.
pub fn parse_interval(raw: &str) -> Result<Duration, String> {
    let d = match raw.trim().strip_suffix("ms") {
        Some(millis) => Duration::from_millis(
            millis
                .trim()
                .parse()
                .map_err(|_| format!("invalid duration {raw:?}"))?,
        ),
        None => longtx_core::duration::parse_duration(raw).map_err(|e| e.to_string())?,
    };
    if d < Duration::from_millis(100) {
        return Err("at least 100ms".into());
    }
    Ok(d)
}
