//! Every background worker of the pipeline, so that `serve` can stop them
//! all before it closes the database pool: a worker cut off mid-transaction
//! is rolled back cleanly, while one left running would fail against a
//! closed pool and log errors for work it then redoes at the next start.

use std::future::Future;
use std::sync::Mutex;
use tokio::task::JoinHandle;

static WORKERS: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// Spawns a worker on the current runtime and keeps its handle.
pub(crate) fn spawn<F>(worker: F) -> tokio::task::AbortHandle
where
    F: Future<Output = ()> + Send + 'static,
{
    let handle = tokio::spawn(worker);
    let abort = handle.abort_handle();
    let mut workers = WORKERS.lock().unwrap_or_else(|p| p.into_inner());
    workers.retain(|w| !w.is_finished());
    workers.push(handle);
    abort
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
