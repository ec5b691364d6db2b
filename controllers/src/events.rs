//! Event correlation as upstream's recorder does it in front of the API, for the controllers:
//! a spam filter (per object, type and reason: a burst of 25, then one event per 5 minutes)
//! and aggregation (from the 10th distinct message of the same object, type and reason within
//! 10 minutes, one "(combined from similar events): …" event whose count grows). Identical
//! events are counted by the client's [`Recorder`]. Both windows, like the events' times, go by
//! the cluster's [`Clock`] (upstream's correlator takes a clock too).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use tinykube_client::events::{EventType, Recorder};
use tinykube_client::{Client, ClientError};
use tinykube_clock::Clock;
use tokio::time::Instant;

/// Upstream's defaults (client-go tools/record).
const SPAM_BURST: f64 = 25.0;
const SPAM_REFILL: Duration = Duration::from_secs(300);
const SIMILAR_MAX: usize = 10;
const SIMILAR_WINDOW: Duration = Duration::from_secs(600);
pub const COMBINED_PREFIX: &str = "(combined from similar events): ";

struct Bucket {
    tokens: f64,
    at: Instant,
}

struct Similar {
    messages: HashSet<String>,
    since: Instant,
    /// The combined event: name, namespace, count.
    combined: Option<(String, String, i32)>,
}

#[derive(Default)]
struct State {
    buckets: HashMap<String, Bucket>,
    similar: HashMap<String, Similar>,
}

/// What the correlator decided for one event.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Over the spam limit: not written.
    Drop,
    /// Written as it is.
    Plain,
    /// Written as (or counted into) the combined event.
    Combined,
}

/// The decisions only, without I/O (so they can be tested with a manual clock).
#[derive(Default)]
pub struct Correlator {
    state: Mutex<State>,
    clock: Clock,
}

impl Correlator {
    pub fn new(clock: Clock) -> Self {
        Correlator {
            state: Mutex::default(),
            clock,
        }
    }

    /// Decide for an event whose object/type/reason key is `key` and message `message`.
    pub fn decide(&self, key: &str, message: &str) -> Verdict {
        let Ok(mut s) = self.state.lock() else {
            return Verdict::Plain;
        };
        let now = self.clock.instant();
        let similar = s.similar.entry(key.to_string()).or_insert_with(|| Similar {
            messages: HashSet::new(),
            since: now,
            combined: None,
        });
        if now.duration_since(similar.since) > SIMILAR_WINDOW {
            *similar = Similar {
                messages: HashSet::new(),
                since: now,
                combined: None,
            };
        }
        similar.messages.insert(message.to_string());
        let verdict = if similar.messages.len() < SIMILAR_MAX {
            Verdict::Plain
        } else {
            Verdict::Combined
        };
        let bucket = s.buckets.entry(key.to_string()).or_insert(Bucket {
            tokens: SPAM_BURST,
            at: now,
        });
        let refill = now.duration_since(bucket.at).as_secs_f64() / SPAM_REFILL.as_secs_f64();
        bucket.tokens = (bucket.tokens + refill).min(SPAM_BURST);
        bucket.at = now;
        if bucket.tokens < 1.0 {
            return Verdict::Drop;
        }
        bucket.tokens -= 1.0;
        verdict
    }

    fn combined(&self, key: &str) -> Option<(String, String, i32)> {
        let s = self.state.lock().ok()?;
        s.similar.get(key)?.combined.clone()
    }

    fn set_combined(&self, key: &str, value: (String, String, i32)) {
        if let Ok(mut s) = self.state.lock() {
            if let Some(similar) = s.similar.get_mut(key) {
                similar.combined = Some(value);
            }
        }
    }
}

/// A controller's event recorder: correlation, then the client's [`Recorder`].
pub struct EventRecorder {
    component: String,
    inner: Recorder,
    correlator: Correlator,
    /// Writes go one at a time, so a repeat always finds the event it bumps.
    writing: tokio::sync::Mutex<()>,
}

impl EventRecorder {
    /// A recorder whose events, and their correlation windows, go by `clock`.
    pub fn new(client: Client, component: &str, clock: Clock) -> Self {
        EventRecorder {
            inner: Recorder::new(client, component, None).with_clock(clock.clone()),
            component: component.to_string(),
            correlator: Correlator::new(clock),
            writing: tokio::sync::Mutex::new(()),
        }
    }

    /// Record in the background (upstream's recorder never blocks the caller either).
    pub fn record(
        self: &Arc<Self>,
        regarding: &ObjectReference,
        kind: EventType,
        reason: &'static str,
        message: String,
    ) {
        let me = self.clone();
        let regarding = regarding.clone();
        tokio::spawn(async move {
            if let Err(e) = me.record_now(&regarding, kind, reason, &message).await {
                tracing::debug!(error = %e, reason, "could not record event");
            }
        });
    }

    /// Record and wait for the write.
    pub async fn record_now(
        &self,
        regarding: &ObjectReference,
        kind: EventType,
        reason: &str,
        message: &str,
    ) -> Result<(), ClientError> {
        let key = format!(
            "{}|{}|{}|{}|{}|{}|{:?}|{}",
            self.component,
            regarding.kind.as_deref().unwrap_or_default(),
            regarding.namespace.as_deref().unwrap_or_default(),
            regarding.name.as_deref().unwrap_or_default(),
            regarding.uid.as_deref().unwrap_or_default(),
            regarding.api_version.as_deref().unwrap_or_default(),
            kind,
            reason,
        );
        let _one_at_a_time = self.writing.lock().await;
        match self.correlator.decide(&key, message) {
            Verdict::Drop => Ok(()),
            Verdict::Plain => self.inner.record(regarding, kind, reason, message).await,
            Verdict::Combined => self.combined(&key, regarding, kind, reason, message).await,
        }
    }

    /// Create the combined event, or count this one into it.
    async fn combined(
        &self,
        key: &str,
        regarding: &ObjectReference,
        kind: EventType,
        reason: &str,
        message: &str,
    ) -> Result<(), ClientError> {
        let message = format!("{COMBINED_PREFIX}{message}");
        let previous = self.correlator.combined(key);
        let written = self
            .inner
            .write(regarding, kind, reason, &message, previous)
            .await?;
        self.correlator.set_combined(key, written);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manual() -> Clock {
        Clock::manual(std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000))
    }

    #[test]
    fn the_tenth_distinct_message_is_combined() {
        let clock = manual();
        let c = Correlator::new(clock.clone());
        for i in 1..SIMILAR_MAX {
            assert_eq!(
                c.decide("rs", &format!("Created pod: p{i}")),
                Verdict::Plain
            );
        }
        assert_eq!(c.decide("rs", "Created pod: p10"), Verdict::Combined);
        // The same message again is not a new distinct one, but the set is full.
        assert_eq!(c.decide("rs", "Created pod: p1"), Verdict::Combined);
        assert_eq!(c.decide("other", "Created pod: p1"), Verdict::Plain);
        // After the window the count starts again.
        clock.advance(SIMILAR_WINDOW + Duration::from_secs(1));
        assert_eq!(c.decide("rs", "Created pod: p11"), Verdict::Plain);
    }

    #[test]
    fn a_burst_of_25_then_one_per_five_minutes() {
        let clock = manual();
        let c = Correlator::new(clock.clone());
        for _ in 0..25 {
            assert_ne!(c.decide("rs", "same"), Verdict::Drop);
        }
        assert_eq!(c.decide("rs", "same"), Verdict::Drop);
        clock.advance(SPAM_REFILL);
        assert_ne!(c.decide("rs", "same"), Verdict::Drop);
        assert_eq!(c.decide("rs", "same"), Verdict::Drop);
    }
}
