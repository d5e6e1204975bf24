//! Refusals, logged so that a flood cannot fill the disk: every refusal
//! is counted in `/metrics` (`longtx_http_refusals_total{reason}`), and a
//! log line is written at most once per reason every ten seconds, with how
//! many were refused for that reason since the last line. Floods once wrote
//! 80 MB of log, and 200,000 pipelined requests 38 MiB in 2 seconds. What
//! the line quotes of the sender's input is cut short.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const EVERY: Duration = Duration::from_secs(10);

struct Seen {
    last_logged: Instant,
    since: u64,
}

static SEEN: Mutex<Option<HashMap<&'static str, Seen>>> = Mutex::new(None);

/// Counts one refusal for `reason`; logs it when no line for that reason
/// was written in the last ten seconds.
pub(crate) fn refused(status: u16, reason: &'static str, detail: &str, max_chars: usize) {
    longtx_metrics::inc(
        "longtx_http_refusals_total",
        "Requests refused with a 4xx (and alerts of a batch rejected), by reason.",
        &[("reason", reason)],
    );
    let count = {
        let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
        let seen = seen.get_or_insert_with(HashMap::new);
        match seen.get_mut(reason) {
            Some(entry) if entry.last_logged.elapsed() < EVERY => {
                entry.since += 1;
                return;
            }
            Some(entry) => {
                let count = entry.since + 1;
                *entry = Seen {
                    last_logged: Instant::now(),
                    since: 0,
                };
                count
            }
            None => {
                seen.insert(
                    reason,
                    Seen {
                        last_logged: Instant::now(),
                        since: 0,
                    },
                );
                1
            }
        }
    };
    let mut shown: String = detail.chars().take(max_chars).collect();
    if shown.len() < detail.len() {
        shown.push_str(" ...");
    }
    tracing::warn!(status, error = reason, count, detail = %shown,
        "request refused (count: refusals for this reason since the last such line)");
}
