//! tinykube-clock: the one source of time of every component. A [`Clock`] is the real clock (what
//! the binaries use) or a manual one that only moves when a test calls [`Clock::advance`], as
//! upstream's `FakeClock` does for its controllers' tests: node leases expire, taint evictions,
//! crash-loop back-offs, grace periods and CronJobs fire when the test says, not after real
//! minutes.
//!
//! What goes through the clock is the time Kubernetes defines: timestamps written into objects,
//! periods, grace periods, back-offs and deadlines of the API. Plumbing (a retry after a failed
//! request, an HTTP timeout, a poll for a component's own state) stays on tokio's clock, so a
//! frozen manual clock never stalls a cluster that is only waiting for itself.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use tokio::sync::watch;
use tokio::time::Instant;

/// A cheap-to-clone handle on the time of one cluster. The default is the real clock.
#[derive(Clone, Default)]
pub struct Clock(Option<Arc<Manual>>);

/// A manual clock: fixed readings at its creation, plus how far it has been advanced.
struct Manual {
    wall: SystemTime,
    mono: Instant,
    advanced: watch::Sender<Duration>,
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("Clock::Real"),
            Some(m) => write!(f, "Clock::Manual(+{:?})", *m.advanced.borrow()),
        }
    }
}

impl Clock {
    /// The machine's clock.
    pub fn real() -> Self {
        Clock(None)
    }

    /// A clock that reads `start` until it is advanced, and never moves by itself.
    pub fn manual(start: SystemTime) -> Self {
        Clock(Some(Arc::new(Manual {
            wall: start,
            mono: Instant::now(),
            advanced: watch::channel(Duration::ZERO).0,
        })))
    }

    pub fn is_manual(&self) -> bool {
        self.0.is_some()
    }

    /// Move a manual clock forward by `by`, waking every sleep and interval now due.
    ///
    /// # Panics
    /// On the real clock, which cannot be moved (a test's mistake, as tokio's `advance`
    /// outside paused time).
    pub fn advance(&self, by: Duration) {
        let m = self
            .0
            .as_ref()
            .expect("Clock::advance needs a manual clock (Clock::manual)");
        m.advanced.send_modify(|d| *d += by);
    }

    fn advanced(m: &Manual) -> Duration {
        *m.advanced.borrow()
    }

    /// Wall-clock time.
    pub fn now(&self) -> SystemTime {
        match &self.0 {
            None => SystemTime::now(),
            Some(m) => m.wall + Self::advanced(m),
        }
    }

    /// Wall-clock time as chrono's UTC time.
    pub fn utc(&self) -> chrono::DateTime<chrono::Utc> {
        self.now().into()
    }

    /// Wall-clock time as the API types hold it.
    pub fn timestamp(&self) -> k8s_openapi::jiff::Timestamp {
        let d = self.now().duration_since(UNIX_EPOCH).unwrap_or_default();
        k8s_openapi::jiff::Timestamp::new(d.as_secs() as i64, d.subsec_nanos() as i32)
            .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
    }

    /// A `metav1.Time` of now (the API keeps whole seconds of it).
    pub fn time(&self) -> Time {
        Time(self.timestamp())
    }

    /// A `metav1.MicroTime` of now (events, leases).
    pub fn micro_time(&self) -> MicroTime {
        MicroTime(self.timestamp())
    }

    /// Monotonic time, for measuring how long since something happened.
    pub fn instant(&self) -> Instant {
        match &self.0 {
            None => Instant::now(),
            Some(m) => m.mono + Self::advanced(m),
        }
    }

    /// Wait until this clock has moved on by `d`.
    pub fn sleep(&self, d: Duration) -> impl Future<Output = ()> + Send + 'static {
        self.sleep_until(self.instant() + d)
    }

    /// Wait until this clock's [`instant`](Self::instant) reaches `deadline`.
    pub fn sleep_until(&self, deadline: Instant) -> impl Future<Output = ()> + Send + 'static {
        let manual = self.0.clone();
        async move {
            let Some(m) = manual else {
                return tokio::time::sleep_until(deadline).await;
            };
            let mut rx = m.advanced.subscribe();
            while m.mono + *rx.borrow_and_update() < deadline {
                // The sender lives in `m`, which this future holds: `changed` cannot fail.
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }

    /// Run `fut` for at most `d` of this clock.
    pub async fn timeout<F: Future>(&self, d: Duration, fut: F) -> Result<F::Output, Elapsed> {
        tokio::select! {
            biased;
            out = fut => Ok(out),
            _ = self.sleep(d) => Err(Elapsed),
        }
    }

    /// A ticker: the first tick at once, then one every `period`; ticks missed while nobody
    /// waited (or skipped by an advance) are dropped, not bunched.
    pub fn interval(&self, period: Duration) -> Interval {
        Interval {
            clock: self.clone(),
            period: period.max(Duration::from_millis(1)),
            next: self.instant(),
        }
    }
}

/// A [`Clock::timeout`] ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// See [`Clock::interval`].
#[derive(Debug)]
pub struct Interval {
    clock: Clock,
    period: Duration,
    next: Instant,
}

impl Interval {
    /// Wait for the next tick; returns when it was due.
    pub async fn tick(&mut self) -> Instant {
        self.clock.sleep_until(self.next).await;
        let due = self.next;
        let now = self.clock.instant();
        self.next = due + self.period;
        if self.next <= now {
            self.next = now + self.period;
        }
        due
    }

    /// Start counting a whole period from now (the next tick is one period away).
    pub fn reset(&mut self) {
        self.next = self.clock.instant() + self.period;
    }

    pub fn period(&self) -> Duration {
        self.period
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    #[tokio::test]
    async fn a_manual_clock_stands_still_until_advanced() {
        let clock = Clock::manual(start());
        let t0 = clock.instant();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(clock.now(), start());
        assert_eq!(clock.instant(), t0);
        clock.advance(Duration::from_secs(300));
        assert_eq!(clock.now(), start() + Duration::from_secs(300));
        assert_eq!(clock.instant() - t0, Duration::from_secs(300));
        assert_eq!(clock.time().0.as_second(), 1_800_000_300);
    }

    #[tokio::test]
    async fn sleeps_wake_when_the_clock_passes_their_deadline() {
        let clock = Clock::manual(start());
        let short = tokio::spawn(clock.sleep(Duration::from_secs(10)));
        let long = tokio::spawn(clock.sleep(Duration::from_secs(60)));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!short.is_finished() && !long.is_finished());
        clock.advance(Duration::from_secs(9));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!short.is_finished());
        clock.advance(Duration::from_secs(1));
        short.await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!long.is_finished());
        clock.advance(Duration::from_secs(3600));
        long.await.unwrap();
    }

    #[tokio::test]
    async fn a_zero_sleep_does_not_wait_for_an_advance() {
        let clock = Clock::manual(start());
        tokio::time::timeout(Duration::from_secs(1), clock.sleep(Duration::ZERO))
            .await
            .expect("due at once");
    }

    #[tokio::test]
    async fn timeouts_run_out_on_the_clock() {
        let clock = Clock::manual(start());
        let c = clock.clone();
        let waiting = tokio::spawn(async move {
            c.timeout(Duration::from_secs(5), std::future::pending::<()>())
                .await
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished());
        clock.advance(Duration::from_secs(5));
        assert_eq!(waiting.await.unwrap(), Err(Elapsed));
    }

    #[tokio::test]
    async fn an_interval_ticks_at_once_then_once_per_advance_past_its_period() {
        let clock = Clock::manual(start());
        let mut every = clock.interval(Duration::from_secs(10));
        let t0 = every.tick().await;
        assert_eq!(t0, clock.instant());
        let c = clock.clone();
        let next = tokio::spawn(async move {
            let t = every.tick().await;
            (t, every)
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!next.is_finished());
        // A long jump is one tick, not thirty.
        c.advance(Duration::from_secs(300));
        let (t1, mut every) = next.await.unwrap();
        assert_eq!(t1 - t0, Duration::from_secs(10));
        let pending = tokio::time::timeout(Duration::from_millis(50), every.tick()).await;
        assert!(pending.is_err(), "the missed ticks are dropped");
    }

    #[tokio::test]
    async fn the_real_clock_reads_the_machine() {
        let clock = Clock::real();
        let before = SystemTime::now();
        let read = clock.now();
        assert!(read >= before && read <= SystemTime::now());
        let t = clock.instant();
        clock.sleep(Duration::from_millis(5)).await;
        assert!(clock.instant() - t >= Duration::from_millis(5));
    }

    #[test]
    #[should_panic(expected = "needs a manual clock")]
    fn the_real_clock_cannot_be_advanced() {
        Clock::real().advance(Duration::from_secs(1));
    }
}
