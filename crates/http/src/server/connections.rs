//! The connections the server holds, and which one gives way when they are
//! all taken.
//!
//! A fixed cap on connections is a door a slow client can hold shut: open
//! the cap's worth of sockets, send a byte now and then, and every webhook
//! sender waits behind them. So a full table does not make the newcomer
//! wait; it closes the connection that has been waiting longest for its
//! own client (reading headers, reading a body, or idle between requests).
//! A connection whose request has arrived in full and is being handled
//! never gives way, and one that has had a write accepted (a POST answered
//! 2xx, which only an authorised or signed request gets) gives way only
//! after every connection that has not. So a sender with a token keeps its
//! kept-alive connection while clients without one take turns among
//! themselves; and as trickling clients are always the ones that waited
//! longest, they are the first to go.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::Notify;

/// What the server knows of one connection, shared by its socket (which
/// sees bytes come and go), its request's body (which sees the request
/// arrive in full) and the table.
#[derive(Debug)]
pub(crate) struct Connection {
    id: u64,
    /// When the connection last started to wait for its client: opened,
    /// first byte of a request read, or a response written.
    since: Mutex<Instant>,
    /// No byte of the next request has been read yet.
    awaiting_request: AtomicBool,
    /// The request arrived in full and its handler is running.
    handling: AtomicBool,
    /// The request in progress is a write (POST).
    writing: AtomicBool,
    /// A write on this connection was accepted (POST answered 2xx).
    proven: AtomicBool,
    evicted: Notify,
}

impl Connection {
    fn new(id: u64) -> Self {
        Connection {
            id,
            since: Mutex::new(Instant::now()),
            awaiting_request: AtomicBool::new(true),
            handling: AtomicBool::new(false),
            writing: AtomicBool::new(false),
            proven: AtomicBool::new(false),
            evicted: Notify::new(),
        }
    }

    fn since(&self) -> Instant {
        *self.since.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn restart_clock(&self) {
        *self.since.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    /// Bytes were read: the first of a request starts its deadline.
    pub(crate) fn bytes_read(&self) {
        if self.awaiting_request.swap(false, Ordering::AcqRel) {
            self.restart_clock();
        }
    }

    /// A response went out: the connection waits for its next request.
    pub(crate) fn bytes_written(&self) {
        self.handling.store(false, Ordering::Release);
        if !self.awaiting_request.swap(true, Ordering::AcqRel) {
            self.restart_clock();
        }
    }

    /// The request's body arrived in full (or it had none).
    pub(crate) fn request_complete(&self) {
        self.handling.store(true, Ordering::Release);
    }

    pub(crate) fn request_is_write(&self, write: bool) {
        self.writing.store(write, Ordering::Release);
    }

    /// The handler answered: a write accepted makes this a sender longtx
    /// knows, which gives way after every connection that is not.
    pub(crate) fn answered(&self, success: bool) {
        if success && self.writing.load(Ordering::Acquire) {
            self.proven.store(true, Ordering::Release);
        }
    }

    /// When the request in progress began (its first byte).
    pub(crate) fn request_started(&self) -> Instant {
        self.since()
    }

    /// Resolves when the table closes this connection to make room.
    pub(crate) async fn evicted(&self) {
        self.evicted.notified().await
    }
}

/// Every open connection, at most `cap`.
#[derive(Debug)]
pub(crate) struct Connections {
    cap: usize,
    open: Mutex<HashMap<u64, Arc<Connection>>>,
    next_id: std::sync::atomic::AtomicU64,
    freed: Notify,
}

impl Connections {
    pub(crate) fn new(cap: usize) -> Self {
        Connections {
            cap: cap.max(1),
            open: Mutex::new(HashMap::new()),
            next_id: Default::default(),
            freed: Notify::new(),
        }
    }

    /// A place for a newly accepted connection: at once while the table
    /// has room or a waiting connection can give way; otherwise once a
    /// handled one ends.
    pub(crate) async fn admit(&self) -> Arc<Connection> {
        loop {
            let freed = self.freed.notified();
            if let Some(admitted) = self.try_admit() {
                return admitted;
            }
            freed.await;
        }
    }

    /// Closes the connection that waited longest for its client (one not
    /// proven before proven ones; never one being handled). False when
    /// every connection is being handled.
    fn evict_longest_waiting(open: &mut HashMap<u64, Arc<Connection>>) -> bool {
        let Some(longest_waiting) = open
            .values()
            .filter(|c| !c.handling.load(Ordering::Acquire))
            .min_by_key(|c| (c.proven.load(Ordering::Acquire), c.since()))
            .map(|c| c.id)
        else {
            return false;
        };
        let Some(evicted) = open.remove(&longest_waiting) else {
            return false;
        };
        tracing::debug!(
            waited_ms = evicted.since().elapsed().as_millis() as u64,
            "closing the connection that waited longest for its client"
        );
        evicted.evicted.notify_one();
        true
    }

    /// Makes room when the process is out of descriptors (an accept
    /// failed with EMFILE): the same connection the full table would give
    /// up goes now. False when there is none to give up.
    pub(crate) fn shed_one(&self) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let shed = Self::evict_longest_waiting(&mut open);
        if shed {
            self.freed.notify_one();
        }
        shed
    }

    fn try_admit(&self) -> Option<Arc<Connection>> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.len() >= self.cap && !Self::evict_longest_waiting(&mut open) {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection::new(id));
        open.insert(id, connection.clone());
        Some(connection)
    }

    /// The connection closed (or was evicted).
    pub(crate) fn release(&self, connection: &Connection) {
        let removed = self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&connection.id)
            .is_some();
        if removed {
            self.freed.notify_one();
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.open.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_table_closes_the_connection_waiting_longest_and_spares_handled_ones() {
        let table = Connections::new(3);
        let handled = table.admit().await;
        handled.bytes_read();
        handled.request_complete();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let slow = table.admit().await;
        std::thread::sleep(std::time::Duration::from_millis(2));
        let newer = table.admit().await;
        assert_eq!(table.len(), 3);

        let newcomer = table.admit().await;
        assert_eq!(table.len(), 3);
        // The slow one was told to go; the handled one and the newer stay.
        tokio::time::timeout(std::time::Duration::from_millis(100), slow.evicted())
            .await
            .expect("the longest-waiting connection is evicted");
        for spared in [&handled, &newer, &newcomer] {
            assert!(
                tokio::time::timeout(std::time::Duration::from_millis(20), spared.evicted())
                    .await
                    .is_err()
            );
        }
    }

    #[tokio::test]
    async fn a_proven_sender_gives_way_only_after_every_unproven_connection() {
        let table = Connections::new(2);
        let sender = table.admit().await;
        sender.request_is_write(true);
        sender.answered(true);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let stranger = table.admit().await;
        let _newcomer = table.admit().await;
        tokio::time::timeout(std::time::Duration::from_millis(100), stranger.evicted())
            .await
            .expect("the stranger goes, though the sender waited longer");
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(20), sender.evicted())
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_table_full_of_handled_requests_makes_the_newcomer_wait_for_one_to_end() {
        let table = Arc::new(Connections::new(1));
        let handled = table.admit().await;
        handled.request_complete();
        let waiting = tokio::spawn({
            let table = table.clone();
            async move { table.admit().await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        table.release(&handled);
        tokio::time::timeout(std::time::Duration::from_secs(1), waiting)
            .await
            .expect("admitted once the handled connection ended")
            .unwrap();
    }
}
