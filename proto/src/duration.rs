//! Go-style durations as upstream flags take them: `500ms`, `20s`, `5m`, `1h30m`, `1.5s`.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {0:?}: use a number with a unit (ns, us, ms, s, m, h), e.g. 500ms, 20s, 5m"
)]
pub struct DurationError(pub String);

/// Parse a Go duration string.
pub fn parse(s: &str) -> Result<Duration, DurationError> {
    let err = || DurationError(s.to_string());
    let text = s.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() || text.starts_with('-') {
        return Err(err());
    }
    let mut total = 0f64;
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(err)?;
        let (num, tail) = rest.split_at(num_end);
        let value: f64 = num.parse().map_err(|_| err())?;
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(err()),
        };
        total += value * seconds;
        rest = tail;
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        for (text, ms) in [
            ("500ms", 500),
            ("20s", 20_000),
            ("5m", 300_000),
            ("1h30m", 5_400_000),
            ("1.5s", 1_500),
            ("0", 0),
        ] {
            assert_eq!(parse(text).unwrap(), Duration::from_millis(ms), "{text}");
        }
        for bad in ["", "5", "-1s", "5x", "ms", "1..5s"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
