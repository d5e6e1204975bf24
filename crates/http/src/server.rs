//! Serving the router with the limits `axum::serve` leaves unset, so that
//! no client can hold a socket for as long as it likes: request headers
//! (and the wait for the next request on a kept-alive connection) within
//! `header_timeout`, a request body within `body_timeout` (408), and at
//! most `max_connections` connections at once (further clients wait in the
//! kernel's accept queue).

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub max_connections: usize,
}

impl Default for ServerLimits {
    /// Webhook senders send a whole request at once: seconds are plenty.
    fn default() -> Self {
        ServerLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_connections: 512,
        }
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
    let router = router.layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
        limits.body_timeout,
    ));
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            _ = &mut shutdown => break,
        };
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors and the like: wait, do not spin.
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(error = %err, "connection ended with an error");
            }
            drop(permit);
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
