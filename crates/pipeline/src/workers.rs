//! Every background worker of the pipeline, supervised. A worker that
//! panics is started again after a backoff, its restart counted in
//! `/metrics` (`longtx_worker_restarts_total{worker}`) and logged with the
//! panic's message (the job it was working on is in the log line's span);
//! one that keeps dying makes `/readyz` say so. Once a PR opener died on
//! one hostile patch and never came back while readiness stayed green.
//!
//! The handles are kept so that `serve` can stop every worker before it
//! closes the database pool: a worker cut off mid-transaction is rolled
//! back cleanly, while one left running would fail against a closed pool
//! and log errors for work it then redoes at the next start.

use futures_util::FutureExt;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

static WORKERS: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());
static HEALTH: Mutex<BTreeMap<&'static str, Health>> = Mutex::new(BTreeMap::new());

/// The first wait before a restart, doubled after each restart up to
/// [`MAX_BACKOFF`]; a worker that then ran [`HEALTHY_RUN`] starts over.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
const HEALTHY_RUN: Duration = Duration::from_secs(60);
/// A worker restarted this many times within [`DYING_WINDOW`] keeps dying:
/// readiness fails until it has run that long without one.
pub const DYING_RESTARTS: usize = 3;
pub const DYING_WINDOW: Duration = Duration::from_secs(600);

#[derive(Default)]
struct Health {
    restarts: u64,
    recent: VecDeque<Instant>,
    last_error: String,
}

/// A worker that keeps dying, as readiness reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Dying {
    pub worker: &'static str,
    pub restarts: usize,
    pub last_error: String,
}

/// Runs `make()`'s worker under supervision on the current runtime and
/// keeps the handle: after a panic a new worker is made and started, after
/// a backoff. A worker that returns has finished (its queue closed) and is
/// not restarted.
pub fn spawn<F, Fut>(name: &'static str, make: F) -> tokio::task::AbortHandle
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let handle = tokio::spawn(supervise(name, make));
    let abort = handle.abort_handle();
    let mut workers = WORKERS.lock().unwrap_or_else(|p| p.into_inner());
    workers.retain(|w| !w.is_finished());
    workers.push(handle);
    abort
}

async fn supervise<F, Fut>(name: &'static str, make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut backoff = FIRST_BACKOFF;
    loop {
        let started = Instant::now();
        // The worker runs inside this task, so aborting the supervisor
        // (stop_workers) drops the worker with it.
        let ended = AssertUnwindSafe(make()).catch_unwind().await;
        let Err(panic) = ended else {
            tracing::info!(worker = name, "worker finished");
            return;
        };
        let why = longtx_core::text::panic_text(panic.as_ref());
        let restarts = record_restart(name, &why);
        longtx_metrics::inc(
            "longtx_worker_restarts_total",
            "Background workers restarted after a panic, by worker.",
            &[("worker", name)],
        );
        if started.elapsed() >= HEALTHY_RUN {
            backoff = FIRST_BACKOFF;
        }
        tracing::error!(worker = name, error = %why, restarts, wait_ms = backoff.as_millis() as u64,
            "a worker panicked; it is restarted after a backoff");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Counts a restart of `name`; its restarts so far.
fn record_restart(name: &'static str, why: &str) -> u64 {
    let mut health = HEALTH.lock().unwrap_or_else(|p| p.into_inner());
    let entry = health.entry(name).or_default();
    entry.restarts += 1;
    entry.recent.push_back(Instant::now());
    while entry.recent.len() > DYING_RESTARTS {
        entry.recent.pop_front();
    }
    entry.last_error = why.to_owned();
    entry.restarts
}

impl std::fmt::Display for Dying {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the {} worker was restarted {} times in {} minutes; the last panic: {}",
            self.worker,
            self.restarts,
            DYING_WINDOW.as_secs() / 60,
            self.last_error
        )
    }
}

/// The workers restarted [`DYING_RESTARTS`] times within [`DYING_WINDOW`].
pub fn dying_workers() -> Vec<Dying> {
    let health = HEALTH.lock().unwrap_or_else(|p| p.into_inner());
    health
        .iter()
        .filter(|(_, h)| {
            h.recent.len() >= DYING_RESTARTS
                && h.recent.front().is_some_and(|t| t.elapsed() < DYING_WINDOW)
        })
        .map(|(name, h)| Dying {
            worker: name,
            restarts: h.recent.len(),
            last_error: h.last_error.clone(),
        })
        .collect()
}

/// Stops every worker spawned so far and waits until each has stopped.
pub async fn stop_workers() {
    let workers: Vec<JoinHandle<()>> =
        std::mem::take(&mut *WORKERS.lock().unwrap_or_else(|p| p.into_inner()));
    for worker in &workers {
        worker.abort();
    }
    for worker in workers {
        let _ = worker.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    #[tokio::test]
    async fn a_worker_that_panics_is_restarted_counted_and_reported_until_it_runs() {
        let starts = Arc::new(AtomicU32::new(0));
        let (done, mut finished) = tokio::sync::mpsc::channel::<u32>(1);
        let counted = starts.clone();
        spawn("test_flaky", move || {
            let (starts, done) = (counted.clone(), done.clone());
            async move {
                let n = starts.fetch_add(1, Ordering::SeqCst) + 1;
                if n <= 3 {
                    panic!("hostile input number {n}");
                }
                // The fourth start lives: it tells the test, then waits.
                let _ = done.send(n).await;
                std::future::pending::<()>().await;
            }
        });
        let lived = tokio::time::timeout(Duration::from_secs(10), finished.recv())
            .await
            .expect("the worker came back");
        assert_eq!(lived, Some(4));
        let dying = dying_workers();
        let flaky = dying
            .iter()
            .find(|d| d.worker == "test_flaky")
            .expect("reported");
        assert_eq!(flaky.restarts, 3);
        assert!(
            flaky.last_error.contains("hostile input number 3"),
            "{flaky:?}"
        );
        let metrics = longtx_metrics::render(&[]);
        assert!(
            metrics.contains("longtx_worker_restarts_total{worker=\"test_flaky\"} 3"),
            "{metrics}"
        );
    }
}
