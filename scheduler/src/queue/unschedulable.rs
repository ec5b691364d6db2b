//! Pods that fit nowhere, parked until the cluster changes in a way that could help (a node
//! added or updated, a pod deleted; a pod bound, for those that wait for other pods), or until
//! they have waited 5 minutes.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// Longest a pod stays parked without a cluster change, as upstream.
pub const MAX_PARKED: Duration = Duration::from_secs(300);

#[derive(Default)]
pub struct Unschedulable {
    /// Key → (parked at, priority, waits for other pods).
    parked: HashMap<String, (Instant, i32, bool)>,
}

impl Unschedulable {
    /// Park a pod; `waits_for_pods`: it was turned down by pod affinity or spreading, which a
    /// pod bound elsewhere may satisfy.
    pub fn park(&mut self, key: &str, priority: i32, now: Instant, waits_for_pods: bool) {
        self.parked
            .insert(key.to_string(), (now, priority, waits_for_pods));
    }

    pub fn drain(&mut self) -> Vec<(String, i32)> {
        self.parked.drain().map(|(k, (_, p, _))| (k, p)).collect()
    }

    /// The pods that wait for other pods, taken out.
    pub fn drain_waiting_for_pods(&mut self) -> Vec<(String, i32)> {
        let keys: Vec<String> = self
            .parked
            .iter()
            .filter(|(_, (_, _, waits))| *waits)
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|k| self.parked.remove(&k).map(|(_, p, _)| (k, p)))
            .collect()
    }

    /// Pods parked longer than [`MAX_PARKED`].
    pub fn expired(&mut self, now: Instant) -> Vec<(String, i32)> {
        let keys: Vec<String> = self
            .parked
            .iter()
            .filter(|(_, (t, _, _))| now.duration_since(*t) >= MAX_PARKED)
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|k| self.parked.remove(&k).map(|(_, p, _)| (k, p)))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.parked.len()
    }

    pub fn remove(&mut self, key: &str) {
        self.parked.remove(key);
    }
}
