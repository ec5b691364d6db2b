//! What the controller does with a metric's recommendation, as upstream: without `behavior`,
//! the highest recommendation of the downscale stabilization window, then the bounds and the
//! scale-up limit (twice the replicas, at least 4); with `behavior`, the scale-up and
//! scale-down stabilization windows, then the bounds and the rate the policies allow over
//! their periods (Pods or Percent, the Max or Min of them, or Disabled). Each decision comes
//! with the condition reason and message upstream sets. The history (recommendations and
//! scale events per HPA) is kept by the caller; time is passed in.

use k8s_openapi::api::autoscaling::v2::{HPAScalingRules, HorizontalPodAutoscalerBehavior};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// One past recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recommendation {
    pub replicas: i32,
    pub at: Timestamp,
}

/// One past rescale, by how many replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleEvent {
    pub change: i32,
    pub at: Timestamp,
    pub outdated: bool,
}

/// The memory of one HPA.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub recommendations: Vec<Recommendation>,
    pub scale_up: Vec<ScaleEvent>,
    pub scale_down: Vec<ScaleEvent>,
}

/// A decision and why: the ScalingLimited reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limited {
    pub replicas: i32,
    pub reason: &'static str,
    pub message: &'static str,
}

pub const WITHIN_RANGE: (&str, &str) = (
    "DesiredWithinRange",
    "the desired count is within the acceptable range",
);
const TOO_FEW: (&str, &str) = (
    "TooFewReplicas",
    "the desired replica count is less than the minimum replica count",
);
const TOO_MANY: (&str, &str) = (
    "TooManyReplicas",
    "the desired replica count is more than the maximum replica count",
);
const SCALE_UP_LIMIT: (&str, &str) = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
);
const SCALE_DOWN_LIMIT: (&str, &str) = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
);
pub const SCALE_DOWN_STABILIZED: (&str, &str) = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
);
pub const SCALE_UP_STABILIZED: (&str, &str) = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
);

fn limited(replicas: i32, (reason, message): (&'static str, &'static str)) -> Limited {
    Limited {
        replicas,
        reason,
        message,
    }
}

fn before(now: Timestamp, secs: i64) -> Timestamp {
    now.checked_sub(SignedDuration::from_secs(secs))
        .unwrap_or(now)
}

impl History {
    /// The first recommendation of a new HPA is its current size.
    pub fn record_initial(&mut self, current: i32, now: Timestamp) {
        if self.recommendations.is_empty() {
            self.recommendations.push(Recommendation {
                replicas: current,
                at: now,
            });
        }
    }

    /// Store `replicas` as the latest recommendation, over a sample older than `cutoff` if
    /// there is one (upstream reuses one slot rather than growing the list).
    fn remember(&mut self, replicas: i32, old: Option<usize>, now: Timestamp) {
        let rec = Recommendation { replicas, at: now };
        match old {
            Some(i) => self.recommendations[i] = rec,
            None => self.recommendations.push(rec),
        }
    }

    /// Without behavior: the highest recommendation within `window` seconds.
    pub fn stabilize(&mut self, desired: i32, window: i64, now: Timestamp) -> i32 {
        let cutoff = before(now, window);
        let mut highest = desired;
        let mut old = None;
        for (i, r) in self.recommendations.iter().enumerate() {
            if r.at < cutoff {
                old = Some(i);
            } else {
                highest = highest.max(r.replicas);
            }
        }
        self.remember(desired, old, now);
        highest
    }

    /// With behavior: `desired` held between the lowest recommendation of the scale-up
    /// window and the highest of the scale-down window (starting from `current`).
    pub fn stabilize_with_behavior(
        &mut self,
        current: i32,
        desired: i32,
        up_window: i64,
        down_window: i64,
        now: Timestamp,
    ) -> (i32, (&'static str, &'static str)) {
        let (up_cutoff, down_cutoff) = (before(now, up_window), before(now, down_window));
        let (mut up, mut down) = (desired, desired);
        let mut old = None;
        for (i, r) in self.recommendations.iter().enumerate() {
            if r.at > up_cutoff {
                up = up.min(r.replicas);
            }
            if r.at > down_cutoff {
                down = down.max(r.replicas);
            }
            if r.at < up_cutoff && r.at < down_cutoff {
                old = Some(i);
            }
        }
        let recommendation = current.max(up).min(down);
        self.remember(desired, old, now);
        let why = if desired >= current {
            SCALE_UP_STABILIZED
        } else {
            SCALE_DOWN_STABILIZED
        };
        (recommendation, why)
    }

    /// Replicas added (or removed) within the last `period` seconds.
    fn change_within(events: &[ScaleEvent], period: i64, now: Timestamp) -> i32 {
        let cutoff = before(now, period);
        events
            .iter()
            .filter(|e| e.at > cutoff)
            .map(|e| e.change)
            .sum()
    }

    /// Remember a rescale from `from` to `to` (only when the HPA has behavior).
    pub fn record_scale(
        &mut self,
        rules: &HorizontalPodAutoscalerBehavior,
        from: i32,
        to: i32,
        now: Timestamp,
    ) {
        let (events, scaling, change) = if to > from {
            (&mut self.scale_up, rules.scale_up.as_ref(), to - from)
        } else {
            (&mut self.scale_down, rules.scale_down.as_ref(), from - to)
        };
        let longest = scaling
            .and_then(|r| r.policies.as_ref())
            .into_iter()
            .flatten()
            .map(|p| i64::from(p.period_seconds))
            .max()
            .unwrap_or(0);
        let cutoff = before(now, longest);
        for e in events.iter_mut() {
            if e.at <= cutoff {
                e.outdated = true;
            }
        }
        let event = ScaleEvent {
            change,
            at: now,
            outdated: false,
        };
        match events.iter().position(|e| e.outdated) {
            Some(i) => events[i] = event,
            None => events.push(event),
        }
    }

    /// The most replicas the scale-up policies allow now.
    fn scale_up_limit(&self, current: i32, rules: &HPAScalingRules, now: Timestamp) -> i32 {
        let select = rules.select_policy.as_deref().unwrap_or("Max");
        if select == "Disabled" {
            return current;
        }
        let proposals = rules.policies.iter().flatten().map(|p| {
            let period = i64::from(p.period_seconds);
            let start = current - Self::change_within(&self.scale_up, period, now)
                + Self::change_within(&self.scale_down, period, now);
            if p.type_ == "Pods" {
                start.saturating_add(p.value)
            } else {
                (f64::from(start) * (1.0 + f64::from(p.value) / 100.0)).ceil() as i32
            }
        });
        if select == "Min" {
            proposals.min().unwrap_or(i32::MAX)
        } else {
            proposals.max().unwrap_or(i32::MIN)
        }
    }

    /// The fewest replicas the scale-down policies allow now.
    fn scale_down_limit(&self, current: i32, rules: &HPAScalingRules, now: Timestamp) -> i32 {
        let select = rules.select_policy.as_deref().unwrap_or("Max");
        if select == "Disabled" {
            return current;
        }
        let proposals = rules.policies.iter().flatten().map(|p| {
            let period = i64::from(p.period_seconds);
            let start = current - Self::change_within(&self.scale_up, period, now)
                + Self::change_within(&self.scale_down, period, now);
            if p.type_ == "Pods" {
                start - p.value
            } else {
                (f64::from(start) * (1.0 - f64::from(p.value) / 100.0)) as i32
            }
        });
        if select == "Min" {
            proposals.max().unwrap_or(i32::MIN)
        } else {
            proposals.min().unwrap_or(i32::MAX)
        }
    }

    /// With behavior: `desired` within the bounds and the rate the policies allow.
    pub fn limit_with_behavior(
        &self,
        current: i32,
        desired: i32,
        min: i32,
        max: i32,
        behavior: &HorizontalPodAutoscalerBehavior,
        now: Timestamp,
    ) -> Limited {
        let none = HPAScalingRules::default();
        if desired > current {
            let rules = behavior.scale_up.as_ref().unwrap_or(&none);
            let limit = self.scale_up_limit(current, rules, now).max(current);
            let (allowed, why) = if max > limit {
                (limit, SCALE_UP_LIMIT)
            } else {
                (max, TOO_MANY)
            };
            if desired > allowed {
                return limited(allowed, why);
            }
        } else if desired < current {
            let rules = behavior.scale_down.as_ref().unwrap_or(&none);
            let limit = self.scale_down_limit(current, rules, now).min(current);
            let (allowed, why) = if min < limit {
                (limit, SCALE_DOWN_LIMIT)
            } else {
                (min, TOO_FEW)
            };
            if desired < allowed {
                return limited(allowed, why);
            }
        }
        limited(desired, WITHIN_RANGE)
    }
}

/// Without behavior: `desired` within `[min, max]` and the scale-up limit (upstream's
/// convertDesiredReplicasWithRules).
pub fn limit(current: i32, desired: i32, min: i32, max: i32) -> Limited {
    let scale_up_limit = (2.0 * f64::from(current)).max(4.0) as i32;
    let (allowed, why) = if max > scale_up_limit {
        (scale_up_limit, SCALE_UP_LIMIT)
    } else {
        (max, TOO_MANY)
    };
    if desired < min {
        return limited(min, TOO_FEW);
    }
    if desired > allowed {
        return limited(allowed, why);
    }
    limited(desired, WITHIN_RANGE)
}

#[cfg(test)]
#[path = "behavior_tests.rs"]
mod tests;
