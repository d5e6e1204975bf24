//! How long to wait before trying GitHub again.

use crate::GitHubError;
use std::time::Duration;

/// At most this many tries of one call.
pub const MAX_ATTEMPTS: u32 = 5;
const BASE: Duration = Duration::from_millis(500);
const CAP: Duration = Duration::from_secs(60);
/// GitHub: after a secondary rate limit with no `Retry-After`, "wait at
/// least one minute before retrying", then longer each time.
pub const SECONDARY_FLOOR: Duration = Duration::from_secs(60);
const SECONDARY_CAP: Duration = Duration::from_secs(15 * 60);

/// The wait before try number `attempt + 1` (attempt counts from 1), or
/// `None` when the error is final or the tries are used up. Rate limits wait
/// as GitHub says; server errors back off exponentially with full jitter
/// so that many workers do not retry in step.
pub fn delay(error: &GitHubError, attempt: u32, jitter: f64) -> Option<Duration> {
    delay_with_floor(error, attempt, jitter, SECONDARY_FLOOR)
}

/// As [`delay`], with the secondary-limit floor given (tests shrink it).
/// A secondary limit is never final: its delay is always `Some`, from
/// `floor` doubling per try up to 15 minutes, plus up to 50% jitter.
pub fn delay_with_floor(
    error: &GitHubError,
    attempt: u32,
    jitter: f64,
    floor: Duration,
) -> Option<Duration> {
    if let GitHubError::SecondaryRateLimited = error {
        let exponential = floor
            .saturating_mul(1 << (attempt.max(1) - 1).min(16))
            .min(SECONDARY_CAP.max(floor));
        return Some(exponential + exponential.mul_f64(jitter.clamp(0.0, 1.0) / 2.0));
    }
    if attempt >= MAX_ATTEMPTS {
        return None;
    }
    match error {
        GitHubError::SecondaryRateLimited => unreachable!("handled above"),
        GitHubError::RateLimited(wait) => Some((*wait).min(Duration::from_secs(15 * 60))),
        GitHubError::Unavailable(_) => {
            let exponential = BASE.saturating_mul(1 << (attempt - 1).min(16)).min(CAP);
            Some(
                exponential
                    .mul_f64(jitter.clamp(0.0, 1.0))
                    .max(Duration::from_millis(50)),
            )
        }
        GitHubError::Refused { .. } | GitHubError::Credentials(_) => None,
    }
}

/// A number in [0, 1) from the OS, for jitter.
pub fn jitter() -> f64 {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_err()
    {
        return 0.5;
    }
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// Reads the wait GitHub asks for: `Retry-After` seconds, else the
/// `x-ratelimit-reset` epoch when `x-ratelimit-remaining` is 0.
pub fn rate_limit_wait(
    retry_after: Option<&str>,
    remaining: Option<&str>,
    reset: Option<&str>,
    now_epoch: i64,
) -> Option<Duration> {
    if let Some(seconds) = retry_after.and_then(|v| v.trim().parse::<u64>().ok()) {
        return Some(Duration::from_secs(seconds));
    }
    if remaining.map(str::trim) == Some("0") {
        let reset: i64 = reset?.trim().parse().ok()?;
        return Some(Duration::from_secs((reset - now_epoch).max(1) as u64));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_wait_as_told_and_refusals_do_not_retry() {
        let limited = GitHubError::RateLimited(Duration::from_secs(3));
        assert_eq!(delay(&limited, 1, 0.9), Some(Duration::from_secs(3)));
        let refused = GitHubError::Refused {
            status: 422,
            message: "bad".into(),
        };
        assert_eq!(delay(&refused, 1, 0.5), None);
        let down = GitHubError::Unavailable("502".into());
        assert_eq!(delay(&down, MAX_ATTEMPTS, 0.5), None);
    }

    #[test]
    fn a_secondary_limit_waits_a_minute_then_longer_and_is_never_final() {
        let limited = GitHubError::SecondaryRateLimited;
        assert_eq!(delay(&limited, 1, 0.0), Some(Duration::from_secs(60)));
        assert_eq!(delay(&limited, 2, 0.0), Some(Duration::from_secs(120)));
        assert_eq!(delay(&limited, 3, 1.0), Some(Duration::from_secs(360)));
        let late = delay(&limited, MAX_ATTEMPTS + 10, 0.99).unwrap();
        assert!(
            late >= Duration::from_secs(15 * 60) && late < Duration::from_secs(23 * 60),
            "{late:?}"
        );
        assert!(limited.is_retryable() && limited.is_rate_limit());
    }

    #[test]
    fn server_errors_back_off_exponentially_within_jitter() {
        let down = GitHubError::Unavailable("502".into());
        assert_eq!(delay(&down, 1, 1.0), Some(Duration::from_millis(500)));
        assert_eq!(delay(&down, 3, 1.0), Some(Duration::from_secs(2)));
        assert_eq!(delay(&down, 3, 0.5), Some(Duration::from_secs(1)));
        assert!(jitter() < 1.0);
    }

    #[test]
    fn headers_are_read() {
        assert_eq!(
            rate_limit_wait(Some("7"), None, None, 0),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            rate_limit_wait(None, Some("0"), Some("1010"), 1000),
            Some(Duration::from_secs(10))
        );
        assert_eq!(rate_limit_wait(None, Some("12"), Some("1010"), 1000), None);
    }
}
