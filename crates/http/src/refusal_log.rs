//! Refusals, logged so that a flood cannot fill the disk: every refusal
//! is counted in `/metrics` (`longtx_http_refusals_total{reason}`), and a
//! log line is written at most once per reason every ten seconds, with how
//! many were refused for that reason since the last line. Floods once wrote
//! 80 MB of log, and 200,000 pipelined requests 38 MiB in 2 seconds. What
//! the line quotes of the sender's input is cut short. Accept errors at the
//! descriptor limit, which come by the hundred, share the same throttle.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const EVERY: Duration = Duration::from_secs(10);

struct Seen {
    last_logged: Instant,
    since: u64,
}

static SEEN: Mutex<Option<HashMap<&'static str, Seen>>> = Mutex::new(None);

/// Notes one event of kind `key`: how many there were since the last line
/// when a line is due (none for `key` in the last ten seconds), else `None`.
pub(crate) fn due(key: &'static str) -> Option<u64> {
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let seen = seen.get_or_insert_with(HashMap::new);
    match seen.get_mut(key) {
        Some(entry) if entry.last_logged.elapsed() < EVERY => {
            entry.since += 1;
            None
        }
        entry => {
            let count = entry.map_or(0, |e| e.since) + 1;
            seen.insert(
                key,
                Seen {
                    last_logged: Instant::now(),
                    since: 0,
                },
            );
            Some(count)
        }
    }
}

/// Counts one refusal for `reason`; logs it when no line for that reason
/// was written in the last ten seconds.
pub(crate) fn refused(status: u16, reason: &'static str, detail: &str, max_chars: usize) {
    longtx_metrics::inc(
        "longtx_http_refusals_total",
        "Requests refused with a 4xx (and alerts of a batch rejected), by reason.",
        &[("reason", reason)],
    );
    let Some(count) = due(reason) else {
        return;
    };
    let mut shown: String = detail.chars().take(max_chars).collect();
    if shown.len() < detail.len() {
        shown.push_str(" ...");
    }
    tracing::warn!(status, error = reason, count, detail = %shown,
        "request refused (count: refusals for this reason since the last such line)");
}
