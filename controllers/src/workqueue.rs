//! The rate-limited work queue every controller drains: keys are deduplicated, a key being
//! processed is never handed to a second worker (re-added meanwhile, it comes back once `done`),
//! and failures back off per item exponentially (5 ms doubling to 1000 s) until `forget`.
//!
//! Two kinds of delayed add, on two clocks: [`WorkQueue::add_after_clock`] waits on the
//! cluster's [`Clock`] (time Kubernetes defines: a deadline, minReadySeconds, a back-off of the
//! API, a schedule), so a test's manual clock decides when it fires;
//! [`WorkQueue::add_after_real`] waits on tokio's real time (plumbing: a retry after an error,
//! a re-check of a lagging cache), so a frozen manual clock never stalls it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tinykube_clock::Clock;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Upstream's per-item exponential limiter: base 5 ms, cap 1000 s.
const BASE_DELAY: Duration = Duration::from_millis(5);
const MAX_DELAY: Duration = Duration::from_secs(1000);

#[derive(Default)]
struct State {
    queue: VecDeque<String>,
    /// Keys waiting to be processed (in `queue`, or re-added while processing).
    dirty: HashSet<String>,
    processing: HashSet<String>,
    failures: HashMap<String, u32>,
    /// Keys waiting for a delayed add on the real clock, with the time they are due (the
    /// earliest one wins).
    delayed_real: HashMap<String, Instant>,
    /// The same for delayed adds on the cluster's clock (its [`Clock::instant`]s).
    delayed_clock: HashMap<String, Instant>,
    shut_down: bool,
}

struct Inner {
    state: Mutex<State>,
    ready: Notify,
    clock: Clock,
}

/// Which clock a delayed add waits on.
#[derive(Clone, Copy)]
enum On {
    Real,
    Clock,
}

/// A work queue of object keys; cheap to clone.
#[derive(Clone)]
pub struct WorkQueue(Arc<Inner>);

impl Default for WorkQueue {
    /// A queue on the real clock.
    fn default() -> Self {
        Self::new(Clock::real())
    }
}

impl WorkQueue {
    /// A queue whose [`add_after_clock`](Self::add_after_clock) waits on `clock`.
    pub fn new(clock: Clock) -> Self {
        WorkQueue(Arc::new(Inner {
            state: Mutex::new(State::default()),
            ready: Notify::new(),
            clock,
        }))
    }

    /// Queue `key` unless it is already waiting; a key being processed is queued again once
    /// its worker calls [`WorkQueue::done`].
    pub fn add(&self, key: &str) {
        let Ok(mut s) = self.0.state.lock() else {
            return;
        };
        if s.shut_down || !s.dirty.insert(key.to_string()) {
            return;
        }
        if !s.processing.contains(key) {
            s.queue.push_back(key.to_string());
            drop(s);
            self.0.ready.notify_one();
        }
    }

    /// Queue `key` once the cluster's clock has moved on by `delay`: for time Kubernetes
    /// defines (a deadline, minReadySeconds, tolerationSeconds, a back-off of the API, the next
    /// schedule). With a manual clock it fires when a test advances the clock past it.
    /// A key already due earlier on this clock is left as it is, so repeated delayed adds of
    /// one key keep one timer (upstream's delaying queue).
    pub fn add_after_clock(&self, key: &str, delay: Duration) {
        self.add_delayed(key, delay, On::Clock);
    }

    /// Queue `key` after `delay` of tokio's real time: for plumbing (a retry after an error, a
    /// re-check of a cache that lags a write, the rate limiter), which must go on while a
    /// manual clock stands still. Deduplicated as [`add_after_clock`](Self::add_after_clock).
    pub fn add_after_real(&self, key: &str, delay: Duration) {
        self.add_delayed(key, delay, On::Real);
    }

    fn add_delayed(&self, key: &str, delay: Duration, on: On) {
        if delay.is_zero() {
            self.add(key);
            return;
        }
        let clock = match on {
            On::Real => Clock::real(),
            On::Clock => self.0.clock.clone(),
        };
        let due = clock.instant() + delay;
        {
            let Ok(mut s) = self.0.state.lock() else {
                return;
            };
            if s.shut_down {
                return;
            }
            let delayed = s.delayed(on);
            if delayed.get(key).is_some_and(|t| *t <= due) {
                return;
            }
            delayed.insert(key.to_string(), due);
        }
        let queue = self.clone();
        let key = key.to_string();
        tokio::spawn(async move {
            clock.sleep_until(due).await;
            let fire = match queue.0.state.lock() {
                Ok(mut s) => {
                    let delayed = s.delayed(on);
                    let mine = delayed.get(&key) == Some(&due);
                    if mine {
                        delayed.remove(&key);
                    }
                    mine
                }
                Err(_) => false,
            };
            if fire {
                queue.add(&key);
            }
        });
    }

    /// Queue `key` after its next backoff delay (a failed sync).
    pub fn add_rate_limited(&self, key: &str) {
        let delay = {
            let Ok(mut s) = self.0.state.lock() else {
                return;
            };
            let n = s.failures.entry(key.to_string()).or_insert(0);
            let delay = backoff(*n);
            *n = n.saturating_add(1);
            delay
        };
        self.add_after_real(key, delay);
    }

    /// Forget the failures of `key` (a successful sync).
    pub fn forget(&self, key: &str) {
        if let Ok(mut s) = self.0.state.lock() {
            s.failures.remove(key);
        }
    }

    /// How many times `key` failed in a row.
    pub fn num_requeues(&self, key: &str) -> u32 {
        self.0
            .state
            .lock()
            .map(|s| s.failures.get(key).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    /// The next key to process; `None` once shut down.
    pub async fn get(&self) -> Option<String> {
        loop {
            let notified = self.0.ready.notified();
            {
                let Ok(mut s) = self.0.state.lock() else {
                    return None;
                };
                if s.shut_down {
                    return None;
                }
                if let Some(key) = s.queue.pop_front() {
                    s.dirty.remove(&key);
                    s.processing.insert(key.clone());
                    if !s.queue.is_empty() {
                        // Let another idle worker take the next key.
                        self.0.ready.notify_one();
                    }
                    return Some(key);
                }
            }
            notified.await;
        }
    }

    /// The worker finished `key`; if it was re-added meanwhile it is queued again.
    pub fn done(&self, key: &str) {
        let Ok(mut s) = self.0.state.lock() else {
            return;
        };
        s.processing.remove(key);
        if s.dirty.contains(key) {
            s.queue.push_back(key.to_string());
            drop(s);
            self.0.ready.notify_one();
        }
    }

    /// Keys waiting (not counting those being processed).
    pub fn len(&self) -> usize {
        self.0.state.lock().map(|s| s.queue.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stop handing out keys; every waiting `get` returns `None`.
    pub fn shut_down(&self) {
        if let Ok(mut s) = self.0.state.lock() {
            s.shut_down = true;
        }
        self.0.ready.notify_waiters();
    }
}

impl State {
    fn delayed(&mut self, on: On) -> &mut HashMap<String, Instant> {
        match on {
            On::Real => &mut self.delayed_real,
            On::Clock => &mut self.delayed_clock,
        }
    }
}

/// The delay after `failures` failures in a row: 5 ms · 2^failures, at most 1000 s.
pub fn backoff(failures: u32) -> Duration {
    if failures >= 32 {
        return MAX_DELAY;
    }
    BASE_DELAY
        .checked_mul(1u32 << failures)
        .map_or(MAX_DELAY, |d| d.min(MAX_DELAY))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn next(q: &WorkQueue) -> Option<String> {
        tokio::time::timeout(Duration::from_millis(1), q.get())
            .await
            .ok()
            .flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn deduplicates_waiting_keys() {
        let q = WorkQueue::default();
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2);
        assert_eq!(next(&q).await.as_deref(), Some("a"));
        assert_eq!(next(&q).await.as_deref(), Some("b"));
        assert_eq!(next(&q).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_in_progress_is_not_handed_out_twice_and_comes_back_after_done() {
        let q = WorkQueue::default();
        q.add("a");
        let key = next(&q).await.unwrap();
        q.add("a");
        q.add("a");
        assert_eq!(next(&q).await, None, "a is being processed");
        q.done(&key);
        assert_eq!(next(&q).await.as_deref(), Some("a"));
        q.done("a");
        assert_eq!(next(&q).await, None, "processed once more, not twice");
    }

    #[tokio::test(start_paused = true)]
    async fn done_without_re_add_does_not_requeue() {
        let q = WorkQueue::default();
        q.add("a");
        let key = next(&q).await.unwrap();
        q.done(&key);
        assert!(q.is_empty());
    }

    #[test]
    fn backoff_doubles_from_5ms_to_1000s() {
        let table = [
            (0, Duration::from_millis(5)),
            (1, Duration::from_millis(10)),
            (2, Duration::from_millis(20)),
            (10, Duration::from_millis(5120)),
            (17, Duration::from_millis(655_360)),
            (18, MAX_DELAY),
            (40, MAX_DELAY),
        ];
        for (n, want) in table {
            assert_eq!(backoff(n), want, "after {n} failures");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_adds_wait_their_backoff_and_forget_resets() {
        let q = WorkQueue::default();
        q.add_rate_limited("a");
        q.add_rate_limited("a");
        assert_eq!(q.num_requeues("a"), 2);
        tokio::task::yield_now().await;
        assert!(q.is_empty(), "not before 5ms");
        tokio::time::sleep(Duration::from_millis(6)).await;
        assert_eq!(next(&q).await.as_deref(), Some("a"));
        q.done("a");
        // The second (10ms) add was folded into the earlier timer; a third failure waits 20ms.
        q.add_rate_limited("a");
        tokio::time::sleep(Duration::from_millis(15)).await;
        assert_eq!(next(&q).await, None, "not before 20ms");
        tokio::time::sleep(Duration::from_millis(6)).await;
        assert_eq!(next(&q).await.as_deref(), Some("a"), "the 20ms retry");
        q.done("a");
        q.forget("a");
        assert_eq!(q.num_requeues("a"), 0);
        q.add_rate_limited("a");
        tokio::time::sleep(Duration::from_millis(6)).await;
        assert_eq!(next(&q).await.as_deref(), Some("a"), "back to 5ms");
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_adds_of_one_key_keep_the_earliest() {
        let q = WorkQueue::default();
        q.add_after_real("a", Duration::from_secs(10));
        q.add_after_real("a", Duration::from_secs(1));
        q.add_after_real("a", Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert_eq!(next(&q).await.as_deref(), Some("a"));
        q.done("a");
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(next(&q).await, None, "the later timers were dropped");
    }

    #[tokio::test]
    async fn clock_adds_wait_for_the_clock_and_real_adds_do_not() {
        let clock = Clock::manual(std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let q = WorkQueue::new(clock.clone());
        q.add_after_clock("deadline", Duration::from_secs(300));
        q.add_after_real("retry", Duration::from_millis(5));
        // A real-time add of the same key is a timer of its own, not folded into the clock's.
        q.add_after_real("deadline", Duration::from_secs(3600));
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(next(&q).await.as_deref(), Some("retry"), "plumbing goes on");
        q.done("retry");
        assert_eq!(next(&q).await, None, "the clock stands still");
        clock.advance(Duration::from_secs(299));
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(next(&q).await, None, "not before 300s of the clock");
        clock.advance(Duration::from_secs(1));
        let got = tokio::time::timeout(Duration::from_secs(1), q.get()).await;
        assert_eq!(got.ok().flatten().as_deref(), Some("deadline"));
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_retries_ignore_a_frozen_clock() {
        let clock = Clock::manual(std::time::UNIX_EPOCH);
        let q = WorkQueue::new(clock);
        q.add_rate_limited("a");
        tokio::time::sleep(Duration::from_millis(6)).await;
        assert_eq!(next(&q).await.as_deref(), Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_wakes_waiting_workers() {
        let q = WorkQueue::default();
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::task::yield_now().await;
        q.shut_down();
        assert_eq!(waiter.await.unwrap(), None);
    }
}
