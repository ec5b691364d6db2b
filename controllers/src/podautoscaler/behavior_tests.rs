//! Tables for stabilization windows, scaling policies and bounds, on a manual clock.

use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::{
    HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscalerBehavior,
};
use tinykube_clock::Clock;

use super::*;

fn policy(type_: &str, value: i32, period_seconds: i32) -> HPAScalingPolicy {
    HPAScalingPolicy {
        type_: type_.into(),
        value,
        period_seconds,
    }
}

fn rules(window: i32, select: &str, policies: Vec<HPAScalingPolicy>) -> HPAScalingRules {
    HPAScalingRules {
        stabilization_window_seconds: Some(window),
        select_policy: Some(select.into()),
        policies: Some(policies),
        ..Default::default()
    }
}

/// The API server's defaults, with a scale-down window of 300 s.
fn default_behavior() -> HorizontalPodAutoscalerBehavior {
    HorizontalPodAutoscalerBehavior {
        scale_up: Some(rules(
            0,
            "Max",
            vec![policy("Pods", 4, 15), policy("Percent", 100, 15)],
        )),
        scale_down: Some(rules(300, "Max", vec![policy("Percent", 100, 15)])),
    }
}

#[test]
fn the_downscale_window_keeps_the_highest_recent_recommendation() {
    let clock = Clock::manual(std::time::UNIX_EPOCH + Duration::from_secs(1_000_000));
    let mut h = History::default();
    h.record_initial(5, clock.timestamp());
    // (seconds advanced, new recommendation, what stabilization gives)
    let steps = [
        (15, 2, 5),
        (15, 3, 5),
        (200, 1, 5),
        // The initial 5 leaves the 300 s window; 3 (at +30 s) is still in it.
        (80, 1, 3),
        (300, 1, 1),
        (15, 4, 4),
    ];
    for (advance, desired, want) in steps {
        clock.advance(Duration::from_secs(advance));
        assert_eq!(
            h.stabilize(desired, 300, clock.timestamp()),
            want,
            "+{advance}s {desired}"
        );
    }
}

#[test]
fn bounds_without_behavior() {
    // (current, desired, min, max, replicas, reason)
    let rows = [
        (1, 10, 1, 10, 4, "ScaleUpLimit"),
        (3, 10, 1, 10, 6, "ScaleUpLimit"),
        (3, 5, 1, 4, 4, "TooManyReplicas"),
        (3, 0, 2, 10, 2, "TooFewReplicas"),
        (3, 4, 1, 10, 4, "DesiredWithinRange"),
    ];
    for (current, desired, min, max, replicas, reason) in rows {
        let got = limit(current, desired, min, max);
        assert_eq!(
            (got.replicas, got.reason),
            (replicas, reason),
            "{current}->{desired}"
        );
    }
}

#[test]
fn policies_limit_the_rate() {
    let clock = Clock::manual(std::time::UNIX_EPOCH + Duration::from_secs(1_000_000));
    let b = default_behavior();
    let mut h = History::default();
    // 1 -> 10: at most max(1 + 4 pods, 1 * 200%) = 5.
    let got = h.limit_with_behavior(1, 10, 1, 10, &b, clock.timestamp());
    assert_eq!((got.replicas, got.reason), (5, "ScaleUpLimit"));
    h.record_scale(&b, 1, 5, clock.timestamp());
    // Within the same 15 s period the period started at 1: still at most 5.
    clock.advance(Duration::from_secs(10));
    let got = h.limit_with_behavior(5, 10, 1, 10, &b, clock.timestamp());
    assert_eq!((got.replicas, got.reason), (5, "ScaleUpLimit"));
    // A new period: 5 + 100% = 10, which is the maximum.
    clock.advance(Duration::from_secs(6));
    let got = h.limit_with_behavior(5, 12, 1, 10, &b, clock.timestamp());
    assert_eq!((got.replicas, got.reason), (10, "TooManyReplicas"));
    // Scale down by 100% per 15 s: only the minimum holds it.
    let got = h.limit_with_behavior(10, 0, 2, 10, &b, clock.timestamp());
    assert_eq!((got.replicas, got.reason), (2, "TooFewReplicas"));

    // One pod per minute down, the smallest change of two policies (Min).
    let slow = HorizontalPodAutoscalerBehavior {
        scale_up: None,
        scale_down: Some(rules(
            0,
            "Min",
            vec![policy("Pods", 1, 60), policy("Percent", 50, 60)],
        )),
    };
    let mut h = History::default();
    let got = h.limit_with_behavior(8, 2, 1, 10, &slow, clock.timestamp());
    assert_eq!((got.replicas, got.reason), (7, "ScaleDownLimit"));
    h.record_scale(&slow, 8, 7, clock.timestamp());
    clock.advance(Duration::from_secs(30));
    let got = h.limit_with_behavior(7, 2, 1, 10, &slow, clock.timestamp());
    assert_eq!((got.replicas, got.reason), (7, "ScaleDownLimit"));
    clock.advance(Duration::from_secs(31));
    let got = h.limit_with_behavior(7, 2, 1, 10, &slow, clock.timestamp());
    assert_eq!((got.replicas, got.reason), (6, "ScaleDownLimit"));

    // Disabled: no scale down at all.
    let off = HorizontalPodAutoscalerBehavior {
        scale_up: None,
        scale_down: Some(rules(0, "Disabled", vec![policy("Percent", 100, 15)])),
    };
    let got = History::default().limit_with_behavior(4, 1, 1, 10, &off, clock.timestamp());
    assert_eq!((got.replicas, got.reason), (4, "ScaleDownLimit"));
}

#[test]
fn behavior_windows_hold_both_directions() {
    let clock = Clock::manual(std::time::UNIX_EPOCH + Duration::from_secs(1_000_000));
    let mut h = History::default();
    h.record_initial(4, clock.timestamp());
    // Scale-up window 60 s: a jump to 8 waits until every recent recommendation agrees.
    clock.advance(Duration::from_secs(15));
    let (r, why) = h.stabilize_with_behavior(4, 8, 60, 0, clock.timestamp());
    assert_eq!((r, why.0), (4, "ScaleUpStabilized"));
    clock.advance(Duration::from_secs(61));
    let (r, _) = h.stabilize_with_behavior(4, 8, 60, 0, clock.timestamp());
    assert_eq!(r, 8);
    // Scale-down window 120 s: a drop to 2 holds at the highest recent (8).
    clock.advance(Duration::from_secs(15));
    let (r, why) = h.stabilize_with_behavior(8, 2, 0, 120, clock.timestamp());
    assert_eq!((r, why.0), (8, "ScaleDownStabilized"));
    clock.advance(Duration::from_secs(121));
    let (r, _) = h.stabilize_with_behavior(8, 2, 0, 120, clock.timestamp());
    assert_eq!(r, 2);
}
