//! The retained history window: which revisions are published and still watchable, the live
//! fan-out of new events, and compaction of the persisted history by count and age.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::time::Instant;

use super::codec;
use super::Shared;
use crate::{lock, Event, StoreError};

/// How often the compactor runs.
const COMPACT_EVERY: Duration = Duration::from_secs(1);
/// History records removed per sled batch.
const REMOVE_CHUNK: u64 = 4096;

/// Published history and the fan-out to live watchers.
pub(crate) struct Feed {
    /// The last published revision: the history up to it is durable and replayable.
    pub(crate) published: u64,
    /// The first revision still in the history; watches may start at `first - 1` or later.
    pub(crate) first: u64,
    /// When each published batch, up to its last revision, was committed (for compaction by age).
    marks: VecDeque<(Instant, u64)>,
    /// `None` once the store is closed.
    pub(crate) tx: Option<broadcast::Sender<Arc<Event>>>,
}

impl Feed {
    /// The feed of a store opened at `revision`: watchable from there on.
    pub(crate) fn new(revision: u64, capacity: usize) -> Feed {
        let (tx, _) = broadcast::channel(capacity.max(1));
        Feed {
            published: revision,
            first: revision + 1,
            marks: VecDeque::new(),
            tx: Some(tx),
        }
    }

    /// The lowest revision a watch can start from.
    pub(crate) fn oldest(&self) -> u64 {
        self.first.saturating_sub(1)
    }

    /// Hand committed events, in revision order, to the live watchers.
    pub(crate) fn publish(&mut self, events: Vec<Arc<Event>>, now: Instant) {
        let Some(last) = events.last().map(|e| e.revision) else {
            return;
        };
        if let Some(tx) = &self.tx {
            for ev in events {
                // No receiver is not an error: nobody is watching.
                let _ = tx.send(ev);
            }
        }
        self.published = last;
        self.marks.push_back((now, last));
    }

    /// Advance `first` past what the limits no longer allow; returns the dropped revisions.
    fn trim(&mut self, max_events: usize, max_age: Duration, now: Instant) -> Option<(u64, u64)> {
        let mut first = self.first;
        let retained = (self.published + 1).saturating_sub(first);
        if retained > max_events as u64 {
            first = self.published + 1 - max_events as u64;
        }
        while let Some(&(at, last)) = self.marks.front() {
            if last < first {
                self.marks.pop_front();
            } else if now.saturating_duration_since(at) > max_age {
                first = last + 1;
                self.marks.pop_front();
            } else {
                break;
            }
        }
        if first <= self.first {
            return None;
        }
        let dropped = (self.first, first);
        self.first = first;
        Some(dropped)
    }
}

/// Drop the history the configured count and age no longer retain, as of `now`.
pub(crate) fn compact(shared: &Shared, now: Instant) -> Result<(), StoreError> {
    let dropped = lock(&shared.feed).trim(
        shared.cfg.history_max_events,
        shared.cfg.history_max_age,
        now,
    );
    let Some((from, to)) = dropped else {
        return Ok(());
    };
    tracing::debug!(from, to, "compacting the store history");
    remove(shared, from, to)
}

/// Remove the history records of revisions `from..to`.
fn remove(shared: &Shared, from: u64, to: u64) -> Result<(), StoreError> {
    let mut rev = from;
    while rev < to {
        let end = to.min(rev.saturating_add(REMOVE_CHUNK));
        let mut batch = sled::Batch::default();
        for r in rev..end {
            batch.remove(&codec::hist_key(r)[..]);
        }
        shared.tree.apply_batch(batch).map_err(StoreError::Write)?;
        rev = end;
    }
    Ok(())
}

/// Remove the `stale` history left from before the store was opened, then compact every second
/// until the store closes. The sled work runs on the blocking pool: removing a large window takes
/// a while.
pub(crate) async fn compactor(shared: Arc<Shared>, stale: Option<(u64, u64)>) {
    if let Some((from, to)) = stale {
        let s = shared.clone();
        let removed = tokio::task::spawn_blocking(move || remove(&s, from, to)).await;
        if let Err(e) = removed
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
        {
            tracing::warn!(error = %e, from, to, "removing the history from before the restart failed");
        }
    }
    let mut stop = shared.shutdown.subscribe();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(COMPACT_EVERY) => {}
            _ = stop.wait_for(|closed| *closed) => return,
        }
        let s = shared.clone();
        let now = Instant::now();
        let compacted = tokio::task::spawn_blocking(move || compact(&s, now)).await;
        if let Err(e) = compacted
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
        {
            tracing::warn!(error = %e, "compacting the store history failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    fn feed_with_batches(start: Instant, batches: &[(u64, u64)]) -> Feed {
        let mut f = Feed::new(0, 4);
        for &(secs, last) in batches {
            f.published = last;
            f.marks.push_back((start + Duration::from_secs(secs), last));
        }
        f
    }

    #[test]
    fn trim_by_count_and_age() {
        let start = Instant::now();
        // Batches committed at 0 s (revisions 1..=3), 100 s (4..=5) and 200 s (6..=10).
        let batches = [(0, 3), (100, 5), (200, 10)];
        struct Case {
            max_events: usize,
            max_age: Duration,
            now_secs: u64,
            dropped: Option<(u64, u64)>,
        }
        let cases = [
            // Within both limits: nothing dropped.
            Case {
                max_events: 100,
                max_age: 5 * MIN,
                now_secs: 200,
                dropped: None,
            },
            // Count: keep the newest 4 (7..=10).
            Case {
                max_events: 4,
                max_age: 5 * MIN,
                now_secs: 200,
                dropped: Some((1, 7)),
            },
            // Age: at 130 s with a 60 s window, the first batch is too old, the second is not.
            Case {
                max_events: 100,
                max_age: MIN,
                now_secs: 130,
                dropped: Some((1, 4)),
            },
            // Age: everything old: nothing retained, watches start from the newest revision.
            Case {
                max_events: 100,
                max_age: MIN,
                now_secs: 1000,
                dropped: Some((1, 11)),
            },
            // Zero events kept.
            Case {
                max_events: 0,
                max_age: 5 * MIN,
                now_secs: 200,
                dropped: Some((1, 11)),
            },
        ];
        for (i, c) in cases.iter().enumerate() {
            let mut f = feed_with_batches(start, &batches);
            let got = f.trim(
                c.max_events,
                c.max_age,
                start + Duration::from_secs(c.now_secs),
            );
            assert_eq!(got, c.dropped, "case {i}");
            let first = c.dropped.map_or(1, |(_, to)| to);
            assert_eq!(f.oldest(), first - 1, "case {i}");
            assert_eq!(
                f.trim(c.max_events, c.max_age, start),
                None,
                "case {i}: idempotent"
            );
        }
    }
}
