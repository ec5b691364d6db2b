//! The delay before a Job replaces failed pods, as upstream's pod failure backoff: the base
//! delay (10 s, or `--job-pod-failure-backoff`) doubled for each failure since the last
//! success, at most 6 minutes, counted from the last failure.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

/// Upstream's MaxJobPodFailureBackOff.
pub const MAX: Duration = Duration::from_secs(360);

/// How long to wait still before creating pods, after `failures` failures since the last
/// success, the last one at `last_failure`; `None` when creating may go ahead.
pub fn remaining(
    failures: usize,
    last_failure: Option<Timestamp>,
    now: Timestamp,
    base: Duration,
) -> Option<Duration> {
    let last = last_failure?;
    if failures == 0 {
        return None;
    }
    let shift = (failures - 1).min(31) as u32;
    let delay = base.saturating_mul(1u32 << shift).min(MAX.max(base));
    let elapsed = now.duration_since(last);
    let elapsed = Duration::try_from(elapsed).unwrap_or(Duration::ZERO);
    delay.checked_sub(elapsed).filter(|d| !d.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_six_minutes() {
        let t0: Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
        let at = |s: i64| t0 + k8s_openapi::jiff::SignedDuration::from_secs(s);
        let ten = Duration::from_secs(10);
        let cases: &[(usize, i64, Option<u64>)] = &[
            (0, 0, None),
            (1, 0, Some(10)),
            (1, 4, Some(6)),
            (1, 10, None),
            (2, 0, Some(20)),
            (3, 5, Some(35)),
            (6, 0, Some(320)),
            (7, 0, Some(360)),
            (30, 100, Some(260)),
        ];
        for &(failures, since, want) in cases {
            let got = remaining(failures, Some(t0), at(since), ten);
            assert_eq!(got, want.map(Duration::from_secs), "{failures} {since}");
        }
        assert_eq!(remaining(3, None, t0, ten), None);
        // A shortened base (tests) keeps doubling from it.
        let ms = Duration::from_millis(100);
        assert_eq!(
            remaining(2, Some(t0), t0, ms),
            Some(Duration::from_millis(200))
        );
    }
}
