//! DNS rebinding. A page the operator visits can point a name it controls
//! at 127.0.0.1 and make the browser send requests there: to the browser,
//! longtx is then that page's own origin (`Origin` matches, `Sec-Fetch-Site`
//! says same-origin), so the cross-site checks pass, and without a token
//! nothing else stands in the way. Only a name can be rebound, never an
//! address, so without a token longtx answers only a `Host` that is an IP
//! address, `localhost`, or the configured public URL's host, and any other
//! gets 421 with one line saying why. With a token, the same check guards
//! the dashboard's state-changing routes as a second line of defence.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Routes the dashboard changes state through.
const STATE_CHANGING: [&str; 2] = ["/api/pause", "/api/resume"];

pub async fn refuse_foreign_hosts(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let guarded = !state.auth.is_configured() || STATE_CHANGING.contains(&path);
    if !guarded {
        return next.run(request).await;
    }
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    match host {
        Some(host) if !is_allowed(host, state.public_host.as_deref()) => {
            // Counted and logged, at most once every 10 s, as it is answered.
            ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                "misdirected_request",
                format!(
                    "longtx answers requests for an IP address, localhost or its public URL's host, not {:?}: set LONGTX_PUBLIC_URL to the name you reach it by",
                    crate::intake::printable(host, 100)
                ),
            )
            .into_response()
        }
        // An HTTP/1.0 client may send no Host at all: nothing to rebind.
        _ => next.run(request).await,
    }
}

/// True for an IP address, `localhost`, or `public_host`, with any port.
pub fn is_allowed(host: &str, public_host: Option<&str>) -> bool {
    let name = host_name(host);
    name.parse::<std::net::IpAddr>().is_ok()
        || name.eq_ignore_ascii_case("localhost")
        || public_host.is_some_and(|p| host_name(p).eq_ignore_ascii_case(name))
}

/// The host part of a `Host` value: `[::1]:8080` is `::1`, `a.b:80` is
/// `a.b`; a trailing dot (`localhost.`) is dropped.
fn host_name(host: &str) -> &str {
    let host = host.trim();
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    };
    name.strip_suffix('.').unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::is_allowed;

    #[test]
    fn addresses_localhost_and_the_public_host_pass_and_other_names_do_not() {
        for host in [
            "127.0.0.1:8080",
            "[::1]:8080",
            "10.0.0.5",
            "localhost:8080",
            "LOCALHOST.",
            "longtx.internal:8080",
        ] {
            assert!(is_allowed(host, Some("longtx.internal")), "{host}");
        }
        for host in [
            "evil.example:8080",
            "evil.example",
            "127.0.0.1.evil.example",
            "localhost.evil.example:80",
            "longtx.internal.evil:8080",
        ] {
            assert!(!is_allowed(host, Some("longtx.internal")), "{host}");
        }
        assert!(!is_allowed("longtx.internal", None));
    }
}
