//! A request body held to one deadline and a minimum rate.
//!
//! The deadline runs from the request's first byte, so headers and body
//! share it; it is not restarted by each chunk, so a byte every few
//! seconds does not keep a request alive. After a short grace the body
//! must also keep up a minimum rate, so a trickle is cut off in seconds
//! rather than at the deadline.

use super::connections::Connection;
use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Why the server stopped reading a body; `body::read_authorised` answers
/// 408 for either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyCut {
    #[error("the request did not arrive within its deadline")]
    Deadline,
    #[error("the body arrived more slowly than the minimum rate")]
    TooSlow,
}

/// The deadline and rate a body is held to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    pub deadline: Duration,
    /// Bytes per second, after `grace`.
    pub min_rate: u64,
    pub grace: Duration,
}

/// When the request began and when it must be in, for whoever waits on
/// its behalf (a handler waiting for the body budget).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestDeadline(pub Instant);

pub(crate) struct PacedBody<B> {
    inner: B,
    connection: Arc<Connection>,
    started: Instant,
    pace: Pace,
    received: u64,
    timer: Pin<Box<Sleep>>,
    done: bool,
}

impl<B: Body> PacedBody<B> {
    pub(crate) fn new(inner: B, connection: Arc<Connection>, pace: Pace) -> Self {
        let started = Instant::from_std(connection.request_started());
        if inner.is_end_stream() {
            connection.request_complete();
        }
        let mut body = PacedBody {
            inner,
            connection,
            started,
            pace,
            received: 0,
            timer: Box::pin(tokio::time::sleep_until(started + pace.deadline)),
            done: false,
        };
        body.rearm();
        body
    }

    pub(crate) fn deadline(&self) -> RequestDeadline {
        RequestDeadline(self.started + self.pace.deadline)
    }

    /// The moment the body falls below the rate with what it has now, or
    /// the deadline if that comes first.
    fn next_check(&self) -> Instant {
        let deadline = self.started + self.pace.deadline;
        if self.pace.min_rate == 0 {
            return deadline;
        }
        let covered = Duration::from_secs_f64(self.received as f64 / self.pace.min_rate as f64);
        // A millisecond past the point the rate is missed, so the check
        // that wakes there finds it missed.
        let behind = self.started + self.pace.grace + covered + Duration::from_millis(1);
        behind.min(deadline)
    }

    fn rearm(&mut self) {
        let at = self.next_check();
        self.timer.as_mut().reset(at);
    }

    fn verdict(&self, now: Instant) -> Option<BodyCut> {
        if now >= self.started + self.pace.deadline {
            return Some(BodyCut::Deadline);
        }
        let paced = now
            .saturating_duration_since(self.started)
            .saturating_sub(self.pace.grace);
        let owed = paced.as_secs_f64() * self.pace.min_rate as f64;
        ((self.received as f64) < owed).then_some(BodyCut::TooSlow)
    }
}

impl<B> Body for PacedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    self.received += data.len() as u64;
                }
                if self.inner.is_end_stream() {
                    self.done = true;
                    self.connection.request_complete();
                } else {
                    self.rearm();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => {
                self.done = true;
                self.connection.request_complete();
                Poll::Ready(None)
            }
            Poll::Pending => loop {
                if self.timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let now = Instant::now();
                if let Some(cut) = self.verdict(now) {
                    self.done = true;
                    return Poll::Ready(Some(Err(Box::new(cut))));
                }
                self.rearm();
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
