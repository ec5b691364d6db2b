//! The scheduling queue: active (priority, then arrival), backoff (1 s doubling to 10 s) and
//! unschedulable (moved back when the cluster changes). A pod is in at most one of them.

mod active;
mod backoff;
mod unschedulable;

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::Notify;
use tokio::time::Instant;

use active::Active;
use backoff::Backoff;
use unschedulable::Unschedulable;

#[derive(Default)]
struct Parts {
    active: Active,
    backoff: Backoff,
    unschedulable: Unschedulable,
    /// Failed attempts per pod, for the backoff.
    attempts: HashMap<String, u32>,
}

#[derive(Default)]
pub struct Queue {
    parts: Mutex<Parts>,
    wake: Notify,
}

impl Queue {
    fn with<R>(&self, f: impl FnOnce(&mut Parts) -> R) -> R {
        let mut p = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut p)
    }

    /// A new or changed pending pod: schedule it (unless it is backing off).
    pub fn add(&self, key: &str, priority: i32) {
        self.with(|p| {
            p.unschedulable.remove(key);
            if p.attempts.contains_key(key) {
                let ready = Instant::now() + backoff::delay(p.attempts[key]);
                p.backoff.push(key, priority, ready);
            } else {
                p.active.push(key, priority);
            }
        });
        self.wake.notify_one();
    }

    /// The pod left (deleted, or bound by someone).
    pub fn remove(&self, key: &str) {
        self.with(|p| {
            p.active.remove(key);
            p.backoff.remove(key);
            p.unschedulable.remove(key);
            p.attempts.remove(key);
        });
    }

    /// The pod fits nowhere now: park it until the cluster changes (or, when
    /// `waits_for_pods`, until a pod is bound too).
    pub fn unschedulable(&self, key: &str, priority: i32, waits_for_pods: bool) {
        self.with(|p| {
            *p.attempts.entry(key.to_string()).or_default() += 1;
            if !p.active.contains(key) {
                p.unschedulable
                    .park(key, priority, Instant::now(), waits_for_pods);
            }
        });
    }

    /// Binding failed or an error occurred: retry after backoff.
    pub fn retry(&self, key: &str, priority: i32) {
        self.with(|p| {
            let n = p.attempts.entry(key.to_string()).or_default();
            *n += 1;
            let ready = Instant::now() + backoff::delay(*n);
            p.backoff.push_error(key, priority, ready);
        });
        self.wake.notify_one();
    }

    /// Something changed that may make parked pods fit: move them back (through backoff).
    pub fn cluster_changed(&self) {
        self.move_back(Unschedulable::drain);
    }

    /// A pod was bound (or a bound pod's labels changed), as upstream's AssignedPodAdd and
    /// AssignedPodUpdate: move back only the pods that pod affinity or spreading turned down;
    /// one that lacked cpu still lacks it.
    pub fn pod_bound(&self) {
        self.move_back(Unschedulable::drain_waiting_for_pods);
    }

    /// Move the pods `take` picks to backoff; the popper is woken only when some moved (every
    /// binding calls this, nearly always with nothing parked).
    fn move_back(&self, take: fn(&mut Unschedulable) -> Vec<(String, i32)>) {
        let moved = self.with(|p| {
            let now = Instant::now();
            let moved = take(&mut p.unschedulable);
            for (key, priority) in &moved {
                let n = p.attempts.get(key).copied().unwrap_or(1);
                p.backoff.push(
                    key,
                    *priority,
                    now + backoff::delay(n).min(backoff::INITIAL),
                );
            }
            !moved.is_empty()
        });
        if moved {
            self.wake.notify_one();
        }
    }

    /// The next pod to schedule; waits until one is ready.
    pub async fn pop(&self) -> String {
        loop {
            let (next, wait_until) = self.with(|p| {
                let now = Instant::now();
                for (k, prio) in p
                    .backoff
                    .ready(now)
                    .into_iter()
                    .chain(p.unschedulable.expired(now))
                {
                    p.active.push(&k, prio);
                }
                // An idle scheduler does not wait out the backoff of a pod that was only
                // unschedulable (upstream's SchedulerPopFromBackoffQ).
                let next = p
                    .active
                    .pop()
                    .or_else(|| p.backoff.pop_early().map(|(k, _)| k));
                (next, p.backoff.next_ready())
            });
            if let Some(key) = next {
                return key;
            }
            let sleep_until =
                wait_until.unwrap_or_else(|| Instant::now() + unschedulable::MAX_PARKED);
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep_until(sleep_until) => {}
            }
        }
    }

    /// Pods waiting in (active, backoff, unschedulable).
    pub fn lengths(&self) -> (usize, usize, usize) {
        self.with(|p| (p.active.len(), p.backoff.len(), p.unschedulable.len()))
    }

    /// Forget the pod's failures (it was scheduled).
    pub fn done(&self, key: &str) {
        self.with(|p| {
            p.attempts.remove(key);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn priority_backoff_and_parking() {
        let q = Queue::default();
        q.add("low", 0);
        q.add("high", 100);
        q.add("low2", 0);
        assert_eq!(q.pop().await, "high");
        assert_eq!(q.pop().await, "low");
        assert_eq!(q.pop().await, "low2");

        q.unschedulable("low", 0, false);
        let waited = tokio::time::timeout(Duration::from_secs(60), q.pop()).await;
        assert!(waited.is_err(), "a parked pod waits for a cluster change");
        q.pod_bound();
        let waited = tokio::time::timeout(Duration::from_secs(60), q.pop()).await;
        assert!(
            waited.is_err(),
            "a bound pod does not help one short of cpu"
        );
        // Moved back through backoff, but nothing else waits: it goes at once.
        q.cluster_changed();
        let start = Instant::now();
        assert_eq!(q.pop().await, "low");
        assert_eq!(Instant::now(), start, "an idle scheduler pops from backoff");
        // While other pods are active, it waits its backoff out behind them.
        q.unschedulable("low", 0, false);
        q.cluster_changed();
        q.add("busy", 0);
        assert_eq!(q.pop().await, "busy");
        assert_eq!(q.pop().await, "low");

        // A pod that failed with an error always waits its backoff (2 s after two errors).
        q.retry("low2", 0);
        q.retry("low2", 0);
        let start = Instant::now();
        assert_eq!(q.pop().await, "low2");
        assert_eq!((Instant::now() - start).as_secs(), 2);
        q.add("affine", 0);
        assert_eq!(q.pop().await, "affine");
        q.unschedulable("affine", 0, true);
        q.pod_bound();
        assert_eq!(
            q.pop().await,
            "affine",
            "a bound pod may satisfy its affinity"
        );
        q.add("gone", 0);
        q.remove("gone");
        assert!(tokio::time::timeout(Duration::from_secs(1), q.pop())
            .await
            .is_err());
    }
}
