//! Human durations in configuration: `90s`, `15m`, `2h`, `7d`, `1w`, `1d12h`.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "invalid duration {input:?}: use a number with a unit s, m, h, d or w (for example 7d or 90s)"
)]
pub struct DurationError {
    input: String,
}

pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let err = || DurationError {
        input: input.to_owned(),
    };
    let s = input.trim();
    if s.is_empty() {
        return Err(err());
    }
    // A bare number means seconds.
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let n: u64 = digits.parse().map_err(|_| err())?;
        digits.clear();
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 604_800,
            _ => return Err(err()),
        };
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(err)?;
    }
    if !digits.is_empty() {
        return Err(err());
    }
    Ok(Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_combinations() {
        assert_eq!(parse_duration("7d").unwrap(), Duration::from_secs(604_800));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(
            parse_duration("1d12h").unwrap(),
            Duration::from_secs(129_600)
        );
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
    }

    #[test]
    fn garbage_is_refused() {
        for bad in ["", "d", "7x", "7d3", "soon"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }
}
