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

/// A duration as Go's `Duration.String()` prints it (`15.002s`, `1m0.5s`, `250ms`), which is how
/// `metav1.Duration` fields travel (a PodMetrics' `window`).
pub fn format(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000_000_000 {
        let (unit, div) = match nanos {
            n if n < 1_000 => ("ns", 1u128),
            n if n < 1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{}{unit}", decimal(nanos, div));
    }
    let secs = nanos / 1_000_000_000;
    let (h, m) = (secs / 3600, (secs / 60) % 60);
    let s = decimal(nanos % 60_000_000_000, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

/// `n / div` with its fraction, trailing zeros dropped.
fn decimal(n: u128, div: u128) -> String {
    let (int, frac) = (n / div, n % div);
    if frac == 0 {
        return int.to_string();
    }
    let width = div.to_string().len() - 1;
    let f = format!("{frac:0width$}");
    format!("{int}.{}", f.trim_end_matches('0'))
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

    #[test]
    fn formats_as_go_prints() {
        let cases = [
            (Duration::from_millis(15_002), "15.002s"),
            (Duration::from_millis(60_500), "1m0.5s"),
            (Duration::from_millis(250), "250ms"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::ZERO, "0s"),
        ];
        for (d, want) in cases {
            assert_eq!(format(d), want);
        }
    }
}
