//! Serving the router with the limits `axum::serve` leaves unset, so that
//! no client, least of all one without a token, can hold the door:
//!
//! - one deadline per request, headers and body together, from its first
//!   byte (408), and a minimum body rate after a short grace (408);
//! - a connection table that, when full, closes the connection that has
//!   waited longest for its own client instead of turning newcomers away
//!   (`connections`), so slow clients cannot starve fast ones;
//! - a budget of body bytes held at once, and small per-connection read
//!   buffers, so a burst of large bodies does not grow memory with the
//!   number of connections (`crate::body`).

mod connections;
mod request_body;
mod watched_io;

pub use request_body::BodyCut;
pub(crate) use request_body::RequestDeadline;

use crate::body::BodyBudget;
use axum::Router;
use connections::Connections;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use request_body::{Pace, PacedBody};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::ServiceExt;
use watched_io::WatchedIo;

#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    /// From a request's first byte to its last (headers and body), and
    /// for an idle kept-alive connection to start its next request.
    pub request_timeout: Duration,
    /// Bytes per second a body must keep up once `rate_grace` has passed.
    pub min_body_rate: u64,
    pub rate_grace: Duration,
    /// Connections held at once; when full, the one waiting longest for
    /// its client is closed to admit a newcomer.
    pub max_connections: usize,
    /// Bytes of request bodies held at once, across all connections.
    pub body_budget: usize,
}

impl Default for ServerLimits {
    /// Webhook senders send a whole request at once, within milliseconds;
    /// ten seconds and 4 KiB/s leave room for a slow link. 4096 connections
    /// (an idle one costs hyper's 8 KiB buffer and a task) hold a thousand
    /// slow clients without turning anyone away; beyond, the table evicts. The body budget
    /// holds a dozen GitHub deliveries at their 5 MiB cap.
    fn default() -> Self {
        ServerLimits {
            request_timeout: Duration::from_secs(10),
            min_body_rate: 4096,
            rate_grace: Duration::from_secs(2),
            max_connections: 4096,
            body_budget: 64 * 1024 * 1024,
        }
    }
}

/// hyper's read buffer per connection (its minimum is 8 KiB). Headers of
/// the senders longtx serves take a few hundred bytes; keeping this small
/// bounds what a thousand idle or slow connections cost.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// An accept error, logged at most once every ten seconds with how many
/// there were since: at the descriptor limit they come by the hundred.
fn log_accept_error(err: &std::io::Error, shed: bool) {
    if let Some(count) = crate::refusal_log::due("accept_error") {
        tracing::warn!(error = %err, count, shed, "accepting connections failed (count: since the last such line)");
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets the
/// requests in flight finish (at most 30 s).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let connections = Arc::new(Connections::new(limits.max_connections));
    let budget = BodyBudget::new(limits.body_budget);
    let pace = Pace {
        deadline: limits.request_timeout,
        min_rate: limits.min_body_rate,
        grace: limits.rate_grace,
    };
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.request_timeout)
        .max_buf_size(READ_BUFFER_BYTES)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors: the connection that waited
                    // longest for its client gives way, as when the table is
                    // full; with none to give up, wait rather than spin.
                    let out_of_descriptors = matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
                    let shed = out_of_descriptors && connections.shed_one();
                    longtx_metrics::inc(
                        "longtx_accept_errors_total",
                        "Connections the kernel could not hand over, by why.",
                        &[("reason", if out_of_descriptors { "out_of_descriptors" } else { "other" })],
                    );
                    log_accept_error(&err, shed);
                    tokio::time::sleep(Duration::from_millis(if shed { 5 } else { 100 })).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let connection = tokio::select! {
            admitted = connections.admit() => admitted,
            _ = &mut shutdown => break,
        };
        let service = {
            let (connection, answered) = (connection.clone(), connection.clone());
            let budget = budget.clone();
            router
                .clone()
                .map_request(move |request: axum::http::Request<hyper::body::Incoming>| {
                    let (mut parts, body) = request.into_parts();
                    let body = PacedBody::new(body, connection.clone(), pace);
                    parts.extensions.insert(body.deadline());
                    parts.extensions.insert(budget.clone());
                    connection.request_is_write(parts.method == axum::http::Method::POST);
                    axum::http::Request::from_parts(parts, axum::body::Body::new(body))
                })
                .map_response(move |response: axum::response::Response| {
                    // Every POST route needs the token or GitHub's
                    // signature (or runs on loopback without one), so a
                    // 2xx to a POST marks a sender longtx knows.
                    answered.answered(response.status().is_success());
                    response
                })
        };
        let io = TokioIo::new(WatchedIo::new(stream, connection.clone()));
        let served =
            graceful.watch(builder.serve_connection(io, TowerToHyperService::new(service)));
        let connections = connections.clone();
        tokio::spawn(async move {
            tokio::select! {
                result = served => if let Err(err) = result {
                    tracing::debug!(error = %err, "connection ended with an error");
                },
                _ = connection.evicted() => {}
            }
            connections.release(&connection);
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(Duration::from_secs(30)) => {
            tracing::warn!("requests still in flight after 30 s; stopping anyway");
        }
    }
    Ok(())
}
