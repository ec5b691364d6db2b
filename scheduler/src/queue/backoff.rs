//! The backoff queue: pods that failed, waiting 1 s doubling to 10 s per attempt. Pods that
//! were unschedulable (moved back by a cluster change) may leave early when nothing else is
//! waiting, as upstream's SchedulerPopFromBackoffQ (on by default since v1.33); pods that
//! failed with an error always wait their time out (upstream's error backoff queue).

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

pub const INITIAL: Duration = Duration::from_secs(1);
pub const MAX: Duration = Duration::from_secs(10);

/// Backoff after `attempts` failed attempts.
pub fn delay(attempts: u32) -> Duration {
    INITIAL
        .saturating_mul(1 << attempts.saturating_sub(1).min(4))
        .min(MAX)
}

#[derive(Default)]
pub struct Backoff {
    /// Ready time, priority, and whether the pod failed with an error.
    waiting: HashMap<String, (Instant, i32, bool)>,
}

impl Backoff {
    /// A pod that was unschedulable.
    pub fn push(&mut self, key: &str, priority: i32, ready_at: Instant) {
        self.waiting
            .insert(key.to_string(), (ready_at, priority, false));
    }

    /// A pod whose attempt failed with an error (binding, a plugin's error).
    pub fn push_error(&mut self, key: &str, priority: i32, ready_at: Instant) {
        self.waiting
            .insert(key.to_string(), (ready_at, priority, true));
    }

    /// The unschedulable pod whose backoff ends first, taken before its time (for an idle
    /// scheduler).
    pub fn pop_early(&mut self) -> Option<(String, i32)> {
        let key = self
            .waiting
            .iter()
            .filter(|(_, (_, _, error))| !error)
            .min_by(|(ka, (ta, _, _)), (kb, (tb, _, _))| ta.cmp(tb).then_with(|| ka.cmp(kb)))
            .map(|(k, _)| k.clone())?;
        self.waiting.remove(&key).map(|(_, p, _)| (key, p))
    }

    /// Pods whose backoff is over.
    pub fn ready(&mut self, now: Instant) -> Vec<(String, i32)> {
        let keys: Vec<String> = self
            .waiting
            .iter()
            .filter(|(_, (t, _, _))| *t <= now)
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|k| self.waiting.remove(&k).map(|(_, p, _)| (k, p)))
            .collect()
    }

    pub fn next_ready(&self) -> Option<Instant> {
        self.waiting.values().map(|(t, _, _)| *t).min()
    }

    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    pub fn remove(&mut self, key: &str) {
        self.waiting.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_to_the_cap() {
        let d: Vec<u64> = (1..=6).map(|a| delay(a).as_secs()).collect();
        assert_eq!(d, [1, 2, 4, 8, 10, 10]);
    }
}
