//! Expectations, as upstream's ControllerExpectations: how many creates and deletes a controller
//! key still waits to see in its informer. A key syncs again only once they are all observed,
//! or after a 5-minute TTL (a lost watch event must not wedge a controller forever), so a
//! controller never creates twice while its own creates are still in flight.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Upstream's ExpectationsTimeout.
pub const TTL: Duration = Duration::from_secs(5 * 60);

#[derive(Debug, Clone)]
struct Record {
    adds: i64,
    dels: i64,
    /// Keys of the objects whose deletion is awaited (each observed at most once).
    deleting: HashSet<String>,
    at: Instant,
}

/// Expected creates and deletes per controller key.
#[derive(Default)]
pub struct Expectations {
    records: Mutex<HashMap<String, Record>>,
}

impl Expectations {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `key` may act: nothing is awaited, or the record expired.
    pub fn satisfied(&self, key: &str) -> bool {
        let Ok(records) = self.records.lock() else {
            return true;
        };
        match records.get(key) {
            None => true,
            Some(r) => (r.adds <= 0 && r.dels <= 0) || r.at.elapsed() > TTL,
        }
    }

    /// Expect `n` creates for `key` (replacing whatever was expected).
    pub fn expect_creations(&self, key: &str, n: usize) {
        self.set(key, n as i64, HashSet::new());
    }

    /// Expect the deletion of the objects `deleting` (their `namespace/name` keys).
    pub fn expect_deletions(&self, key: &str, deleting: Vec<String>) {
        let set: HashSet<String> = deleting.into_iter().collect();
        self.set(key, 0, set);
    }

    fn set(&self, key: &str, adds: i64, deleting: HashSet<String>) {
        if let Ok(mut records) = self.records.lock() {
            records.insert(
                key.to_string(),
                Record {
                    adds,
                    dels: deleting.len() as i64,
                    deleting,
                    at: Instant::now(),
                },
            );
        }
    }

    /// One create for `key` was seen (or will never happen: a failed create).
    pub fn creation_observed(&self, key: &str) {
        if let Ok(mut records) = self.records.lock() {
            if let Some(r) = records.get_mut(key) {
                r.adds -= 1;
            }
        }
    }

    /// The deletion of `object` for `key` was seen (or will never happen); counted once.
    pub fn deletion_observed(&self, key: &str, object: &str) {
        if let Ok(mut records) = self.records.lock() {
            if let Some(r) = records.get_mut(key) {
                if r.deleting.remove(object) {
                    r.dels -= 1;
                }
            }
        }
    }

    /// Forget `key` (its object is gone).
    pub fn delete(&self, key: &str) {
        if let Ok(mut records) = self.records.lock() {
            records.remove(key);
        }
    }

    /// Let every record expire within `grace`: notifications were lost (a lagging
    /// subscriber), so what is still awaited may never be observed. The grace leaves time for
    /// creates that already returned to reach the cache.
    pub fn expire_within(&self, grace: Duration) {
        let Some(cutoff) = Instant::now().checked_sub(TTL.saturating_sub(grace)) else {
            return;
        };
        if let Ok(mut records) = self.records.lock() {
            for r in records.values_mut() {
                if r.at > cutoff {
                    r.at = cutoff;
                }
            }
        }
    }

    /// Creates and deletes still awaited for `key`.
    pub fn pending(&self, key: &str) -> Option<(i64, i64)> {
        let records = self.records.lock().ok()?;
        records.get(key).map(|r| (r.adds, r.dels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn unknown_keys_are_satisfied() {
        assert!(Expectations::new().satisfied("ns/rs"));
    }

    #[tokio::test(start_paused = true)]
    async fn creations_are_satisfied_once_all_are_observed() {
        let e = Expectations::new();
        e.expect_creations("ns/rs", 3);
        for left in [2, 1] {
            e.creation_observed("ns/rs");
            assert!(!e.satisfied("ns/rs"), "{left} creates outstanding");
        }
        e.creation_observed("ns/rs");
        assert!(e.satisfied("ns/rs"));
        assert_eq!(e.pending("ns/rs"), Some((0, 0)));
    }

    #[tokio::test(start_paused = true)]
    async fn each_deletion_counts_once() {
        let e = Expectations::new();
        e.expect_deletions("ns/rs", vec!["ns/a".into(), "ns/b".into()]);
        e.deletion_observed("ns/rs", "ns/a");
        e.deletion_observed("ns/rs", "ns/a");
        e.deletion_observed("ns/rs", "ns/other");
        assert!(!e.satisfied("ns/rs"));
        e.deletion_observed("ns/rs", "ns/b");
        assert!(e.satisfied("ns/rs"));
    }

    #[tokio::test(start_paused = true)]
    async fn expectations_expire_after_five_minutes() {
        let e = Expectations::new();
        e.expect_creations("ns/rs", 1);
        tokio::time::advance(TTL - Duration::from_secs(1)).await;
        assert!(!e.satisfied("ns/rs"));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(e.satisfied("ns/rs"));
    }

    #[tokio::test(start_paused = true)]
    async fn lost_notifications_shorten_the_wait_to_the_grace() {
        tokio::time::advance(TTL).await;
        let e = Expectations::new();
        e.expect_creations("ns/rs", 3);
        e.expire_within(Duration::from_secs(2));
        assert!(!e.satisfied("ns/rs"), "not before the grace");
        tokio::time::advance(Duration::from_secs(3)).await;
        assert!(e.satisfied("ns/rs"));
    }

    #[tokio::test(start_paused = true)]
    async fn delete_forgets_and_new_expectations_replace_old_ones() {
        let e = Expectations::new();
        e.expect_creations("ns/rs", 2);
        e.expect_creations("ns/rs", 1);
        e.creation_observed("ns/rs");
        assert!(e.satisfied("ns/rs"));
        e.expect_creations("ns/rs", 5);
        e.delete("ns/rs");
        assert!(e.satisfied("ns/rs"));
        assert_eq!(e.pending("ns/rs"), None);
    }
}
