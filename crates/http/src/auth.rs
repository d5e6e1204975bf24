//! Webhook and API authentication: `Authorization: Bearer <token>`, or
//! Basic auth with the token as the password for reads (a browser's
//! dashboard session); writes take Bearer only (`cross_site.rs`).

use crate::error::ApiError;
use axum::http::HeaderMap;
use base64::Engine;
use subtle::ConstantTimeEq;

#[derive(Debug, Clone, Default)]
pub struct WebhookAuth {
    token: Option<String>,
}

impl WebhookAuth {
    /// `None` means no token is configured: the binary only allows that
    /// while it listens on loopback.
    pub fn new(token: Option<String>) -> Self {
        WebhookAuth {
            token: token.filter(|t| !t.is_empty()),
        }
    }

    pub(crate) fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    pub fn is_configured(&self) -> bool {
        self.token.is_some()
    }

    pub fn check(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let Some(expected) = &self.token else {
            return Ok(());
        };
        let presented = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(presented_secret);
        match presented {
            Some(secret) if bool::from(secret.as_bytes().ct_eq(expected.as_bytes())) => Ok(()),
            Some(_) => Err(ApiError::unauthorized("the token does not match")),
            None => Err(ApiError::unauthorized(
                "send Authorization: Bearer <LONGTX_WEBHOOK_TOKEN> (or Basic auth with the token as password)",
            )),
        }
    }
}

/// The dashboard's auth: the API token or `LONGTX_DASHBOARD_TOKEN`, as
/// Bearer or as the Basic-auth password (what a browser sends after the
/// `WWW-Authenticate: Basic` prompt). The dashboard token opens only the
/// pages, so it can be shared with people who must not post alerts.
#[derive(Debug, Clone, Default)]
pub struct DashboardAuth {
    tokens: Vec<String>,
}

impl DashboardAuth {
    pub fn new(api_token: Option<String>, dashboard_token: Option<String>) -> Self {
        DashboardAuth {
            tokens: [api_token, dashboard_token]
                .into_iter()
                .flatten()
                .filter(|t| !t.is_empty())
                .collect(),
        }
    }

    /// True when the request may see the pages.
    pub fn allows(&self, headers: &HeaderMap) -> bool {
        if self.tokens.is_empty() {
            return true;
        }
        let Some(secret) = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(presented_secret)
        else {
            return false;
        };
        // Compare with every token, so the time taken does not say which.
        self.tokens.iter().fold(false, |ok, t| {
            ok | bool::from(secret.as_bytes().ct_eq(t.as_bytes()))
        })
    }
}

/// True when the request carries `Authorization: Bearer <expected>`.
pub(crate) fn bearer_matches(headers: &HeaderMap, expected: &str) -> bool {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(presented_secret)
        .is_some_and(|secret| {
            !expected.is_empty() && bool::from(secret.as_bytes().ct_eq(expected.as_bytes()))
        })
}

/// The secret carried by an Authorization header value, if it has one.
fn presented_secret(value: &str) -> Option<String> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(rest.to_owned());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest)
            .ok()?;
        let decoded = String::from_utf8(decoded).ok()?;
        let (_user, password) = decoded.split_once(':')?;
        return Some(password.to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(auth: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_str(auth).unwrap());
        h
    }

    #[test]
    fn bearer_and_basic_are_accepted() {
        let auth = WebhookAuth::new(Some("s3cret".into()));
        assert!(auth.check(&headers("Bearer s3cret")).is_ok());
        // "alertmanager:s3cret"
        assert!(auth
            .check(&headers("Basic YWxlcnRtYW5hZ2VyOnMzY3JldA=="))
            .is_ok());
        assert!(auth.check(&headers("Bearer s3cre")).is_err());
        assert!(auth.check(&headers("Token s3cret")).is_err());
        assert!(auth.check(&HeaderMap::new()).is_err());
    }

    #[test]
    fn the_dashboard_takes_either_token() {
        let auth = DashboardAuth::new(Some("api".into()), Some("view".into()));
        assert!(auth.allows(&headers("Bearer api")));
        // "me:view"
        assert!(auth.allows(&headers("Basic bWU6dmlldw==")));
        assert!(!auth.allows(&headers("Bearer vie")));
        assert!(!auth.allows(&HeaderMap::new()));
        assert!(DashboardAuth::new(None, Some(String::new())).allows(&HeaderMap::new()));
    }

    #[test]
    fn no_token_means_open() {
        assert!(WebhookAuth::new(Some(String::new()))
            .check(&HeaderMap::new())
            .is_ok());
    }
}
