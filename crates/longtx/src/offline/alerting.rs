//! `longtx scan --alerting-from URL`: the sources a running longtx already
//! has jobs for, read from its API (`GET /api/jobs`, every page), so the
//! scan can print only the findings those sources reach: the backlog that
//! is already costing migrations.

use anyhow::{bail, Context};
use std::collections::HashSet;
use std::time::Duration;

/// Jobs read at most (200 a page).
const MAX_PAGES: usize = 100;

/// The canonical keys of the sources `url`'s longtx has jobs for. The
/// webhook token (`LONGTX_WEBHOOK_TOKEN`) is sent when set: the API needs
/// it off loopback.
pub fn alerting_sources(url: &str) -> anyhow::Result<HashSet<String>> {
    let base =
        reqwest::Url::parse(url).with_context(|| format!("--alerting-from {url}: not a URL"))?;
    if !matches!(base.scheme(), "http" | "https") {
        bail!("--alerting-from {url}: not an http(s) URL");
    }
    let token = std::env::var("LONGTX_WEBHOOK_TOKEN")
        .ok()
        .filter(|t| !t.is_empty());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()?;
        let mut keys = HashSet::new();
        let mut before: Option<i64> = None;
        for _ in 0..MAX_PAGES {
            let mut page = base.clone();
            page.set_path(&format!("{}/api/jobs", base.path().trim_end_matches('/')));
            page.query_pairs_mut().append_pair("limit", "200");
            if let Some(id) = before {
                page.query_pairs_mut().append_pair("before", &id.to_string());
            }
            let mut request = client.get(page);
            if let Some(token) = &token {
                request = request.bearer_auth(token);
            }
            let response = request
                .send()
                .await
                .with_context(|| format!("--alerting-from {url}: no answer"))?;
            let status = response.status();
            if !status.is_success() {
                bail!("--alerting-from {url}: /api/jobs answered {status} (is LONGTX_WEBHOOK_TOKEN set?)");
            }
            let body: serde_json::Value = response.json().await?;
            for job in body["jobs"].as_array().into_iter().flatten() {
                if let Some(source) = job["query_source"].as_str() {
                    keys.insert(longtx_core::query_source::canonical(source));
                }
            }
            match body["next_before"].as_i64() {
                Some(next) => before = Some(next),
                None => return Ok(keys),
            }
        }
        Ok(keys)
    })
}
