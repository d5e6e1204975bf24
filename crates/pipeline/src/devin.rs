//! Devin's compute units, read by longtx itself from Devin's API v3
//! (`GET /v3/organizations/{org}/sessions/{devin_id}`, `acus_consumed`,
//! with a `cog_` service token that has ViewOrgSessions). A run's own
//! figures are never taken for Devin: the run only names its session.

use crate::results::ResultSettings;
use longtx_core::agent_run::RunCost;
use std::time::Duration;

/// `LONGTX_DEVIN_*`: where and how longtx reads a session's ACUs.
#[derive(Clone)]
pub struct DevinSettings {
    /// `https://api.devin.ai`, or a test server's.
    pub api_url: String,
    pub org_id: String,
    pub service_token: String,
    /// `LONGTX_USD_PER_ACU`: your contract's price (Devin publishes none).
    pub usd_per_acu: Option<f64>,
}

/// The token stays out of Debug output, and so out of logs.
impl std::fmt::Debug for DevinSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevinSettings")
            .field("api_url", &self.api_url)
            .field("org_id", &self.org_id)
            .field("service_token", &"<redacted>")
            .field("usd_per_acu", &self.usd_per_acu)
            .finish()
    }
}

/// Devin's session ids as the API v3 takes them: `devin-<hex>`.
fn devin_id(session: &str) -> Option<String> {
    let id = session.trim();
    let bare = id.strip_prefix("devin-").unwrap_or(id);
    (!bare.is_empty() && bare.len() <= 64 && bare.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| format!("devin-{bare}"))
}

/// A Devin run's cost: its session's ACUs from Devin's API, priced when
/// the price is set. Without Devin settings, or when the API does not
/// answer, no figure at all: the run's own numbers are not believed.
pub(crate) async fn devin_cost(settings: &ResultSettings, session: Option<&str>) -> RunCost {
    let mut cost = RunCost {
        agent: Some("devin".into()),
        ..RunCost::default()
    };
    let (Some(devin), Some(id)) = (&settings.devin, session.and_then(devin_id)) else {
        return cost;
    };
    let url = format!(
        "{}/v3/organizations/{}/sessions/{id}",
        devin.api_url.trim_end_matches('/'),
        devin.org_id
    );
    #[derive(serde::Deserialize)]
    struct Session {
        acus_consumed: Option<f64>,
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build();
    let answer = match client {
        Ok(client) => {
            client
                .get(&url)
                .bearer_auth(&devin.service_token)
                .send()
                .await
        }
        Err(e) => {
            return {
                tracing::warn!(error = %e, "no HTTP client for Devin's API");
                cost
            }
        }
    };
    match answer.map(|r| r.error_for_status()) {
        Ok(Ok(response)) => match response.json::<Session>().await {
            Ok(Session {
                acus_consumed: Some(acus),
            }) if acus.is_finite() && acus >= 0.0 => {
                cost.acus = Some(acus);
                cost.cost_usd = devin.usd_per_acu.map(|price| acus * price);
            }
            Ok(_) => tracing::warn!(session = %id, "Devin's API gave no ACU figure"),
            Err(e) => {
                tracing::warn!(error = %e.without_url(), "Devin's API answered something else")
            }
        },
        Ok(Err(e)) | Err(e) => {
            tracing::warn!(error = %e.without_url(), session = %id, "reading the session's ACUs failed; the run counts without a cost")
        }
    }
    cost
}
