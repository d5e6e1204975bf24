//! No cross-site writes. A browser that has seen the dashboard keeps its
//! Basic credentials and attaches them to any request another site makes
//! it send, a form POST included. So a request that changes something:
//! - is refused (403) when the browser says it comes from another site
//!   (`Sec-Fetch-Site` other than `same-origin` or `none`, or an `Origin`
//!   that is not this service's own);
//! - authenticates only with `Authorization: Bearer` (which no other site
//!   can make a browser send without a CORS preflight longtx never
//!   grants); Basic stays for the dashboard's GET pages;
//! - carries `application/json` when it has a body (a form or `text/plain`
//!   body is what a cross-site form can send without a preflight).
//!
//! GitHub's webhook is signed (HMAC over the body) and sent by GitHub, not
//! a browser: it keeps its own checks. Every refusal is logged, with no
//! header values.

use crate::error::ApiError;
use axum::extract::Request;
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Routes that are signed rather than token-authenticated.
const SIGNED_ROUTES: [&str; 1] = ["/webhooks/github"];

pub async fn refuse_cross_site_writes(request: Request, next: Next) -> Response {
    let writes = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if !writes || SIGNED_ROUTES.contains(&request.uri().path()) {
        return next.run(request).await;
    }
    if let Err(refusal) = check(request.headers()) {
        // Counted and logged (at most once per reason every 10 s) as the
        // refusal is answered.
        return refusal.into_response();
    }
    next.run(request).await
}

fn check(headers: &HeaderMap) -> Result<(), ApiError> {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text(header::HeaderName::from_static("sec-fetch-site")) {
        if !matches!(site, "same-origin" | "none") {
            return Err(cross_site(
                "the browser says this request comes from another site",
            ));
        }
    }
    if let Some(origin) = text(header::ORIGIN) {
        let host = text(header::HOST).unwrap_or("");
        let own = origin
            .strip_prefix("https://")
            .or_else(|| origin.strip_prefix("http://"))
            .is_some_and(|o| !host.is_empty() && o.eq_ignore_ascii_case(host));
        if !own {
            return Err(cross_site("the request's Origin is not this service"));
        }
    }
    if text(header::AUTHORIZATION).is_some_and(|a| {
        a.trim_start()
            .get(..6)
            .is_some_and(|s| s.eq_ignore_ascii_case("basic "))
    }) {
        return Err(ApiError::unauthorized(
            "requests that change something take Authorization: Bearer <token>; Basic auth opens only the dashboard's pages",
        ));
    }
    let has_body = text(header::TRANSFER_ENCODING).is_some()
        || text(header::CONTENT_LENGTH).is_some_and(|l| l.trim() != "0");
    if has_body {
        crate::intake::require_json(headers)?;
    }
    Ok(())
}

fn cross_site(why: &str) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "cross_site", why)
}
