//! The write path: revision assignment and the atomic sled batch under one short lock, then
//! group commit: one flusher task flushes every pending write at once, commits the batch to the
//! read index, publishes its events and acknowledges the writers.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::codec;
use super::Shared;
use crate::{lock, write_lock, Event, EventType, StoreError};

/// A key's value and the revision that wrote it.
pub(crate) type State = Option<(u64, Bytes)>;

/// Writers' side of the store, behind one mutex.
pub(crate) struct Writer {
    /// The last revision handed out (committed or not).
    pub(crate) revision: u64,
    /// Keys with a write not committed yet, and their state after it.
    pub(crate) in_flight: HashMap<String, InFlight>,
    /// Written to sled, waiting for the next flush, in revision order.
    pub(crate) pending: Vec<Arc<Event>>,
    pub(crate) waiters: Vec<oneshot::Sender<Result<(), StoreError>>>,
    pub(crate) closed: bool,
    /// Set once a flush failed: what is on disk is then unknown, so no write is accepted.
    pub(crate) failed: Option<String>,
}

pub(crate) struct InFlight {
    pub(crate) revision: u64,
    /// `None` for a deletion.
    pub(crate) value: Option<Bytes>,
}

/// What the flusher has committed so far.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Commit {
    pub(crate) revision: u64,
    /// No further commit will come (a flush failed).
    pub(crate) broken: bool,
}

type Submitted = (u64, State, oneshot::Receiver<Result<(), StoreError>>);

/// Apply a change decided from the key's latest state (`decide` returns the new value, or `None`
/// to delete) and wait until it is committed. Returns its revision and the key's previous state.
pub(crate) async fn write(
    shared: &Arc<Shared>,
    key: &str,
    decide: impl FnOnce(Option<&(u64, Bytes)>) -> Result<Option<Bytes>, StoreError>,
) -> Result<(u64, State), StoreError> {
    match submit(shared, key, decide) {
        Ok((revision, previous, done)) => match done.await {
            Ok(Ok(())) => Ok((revision, previous)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(StoreError::Closed),
        },
        Err((e, None)) => Err(e),
        Err((e, Some(in_flight))) => {
            // The refusal was decided against a write not committed yet: answer once it is, so
            // the caller's next read already sees the state it lost to.
            let mut commits = shared.commit.subscribe();
            let _ = commits
                .wait_for(|c| c.revision >= in_flight || c.broken)
                .await;
            Err(e)
        }
    }
}

/// Decide and apply the change under the writer lock. A refusal carries the revision of the
/// in-flight write it was decided against, if any.
fn submit(
    shared: &Shared,
    key: &str,
    decide: impl FnOnce(Option<&(u64, Bytes)>) -> Result<Option<Bytes>, StoreError>,
) -> Result<Submitted, (StoreError, Option<u64>)> {
    let mut w = lock(&shared.writer);
    if w.closed {
        return Err((StoreError::Closed, None));
    }
    if let Some(msg) = &w.failed {
        return Err((StoreError::Flush(msg.clone()), None));
    }
    let (current, in_flight) = match w.in_flight.get(key) {
        Some(f) => (f.value.clone().map(|v| (f.revision, v)), Some(f.revision)),
        None => (
            crate::read_lock(&shared.index).objects.get(key).cloned(),
            None,
        ),
    };
    let new_value = decide(current.as_ref()).map_err(|e| (e, in_flight))?;
    let revision = w.revision + 1;
    let previous = current.as_ref().map(|(_, v)| v.clone());
    let (kind, value) = match (new_value, previous.clone()) {
        (Some(v), None) => (EventType::Added, v),
        (Some(v), Some(_)) => (EventType::Modified, v),
        (None, Some(old)) => (EventType::Deleted, old),
        (None, None) => return Err((StoreError::NotFound, in_flight)),
    };
    let event = Event {
        kind,
        key: key.to_string(),
        value,
        prev_value: previous,
        revision,
    };
    let mut batch = sled::Batch::default();
    match kind {
        EventType::Deleted => batch.remove(codec::obj_key(key)),
        _ => batch.insert(
            codec::obj_key(key),
            codec::encode_object(revision, &event.value),
        ),
    }
    batch.insert(&codec::hist_key(revision)[..], codec::encode_event(&event));
    batch.insert(codec::REV_KEY, &codec::encode_revision(revision)[..]);
    shared
        .tree
        .apply_batch(batch)
        .map_err(|e| (StoreError::Write(e), None))?;
    w.revision = revision;
    let value = (kind != EventType::Deleted).then(|| event.value.clone());
    w.in_flight
        .insert(key.to_string(), InFlight { revision, value });
    let (tx, rx) = oneshot::channel();
    w.pending.push(Arc::new(event));
    w.waiters.push(tx);
    drop(w);
    shared.wake.notify_one();
    Ok((revision, current, rx))
}

/// Refuse new writes and tell the background tasks to finish.
pub(crate) fn begin_close(shared: &Shared) {
    lock(&shared.writer).closed = true;
    shared.shutdown.send_replace(true);
    shared.wake.notify_one();
}

/// Group commit: one flush for every write pending when it starts; then commit them to the read
/// index, publish their events in revision order and acknowledge their writers.
pub(crate) async fn flusher(shared: Arc<Shared>) {
    // After a failed flush, what is on disk is unknown: no later batch is committed either.
    let mut failed: Option<String> = None;
    loop {
        let (events, waiters, closed) = {
            let mut w = lock(&shared.writer);
            (
                std::mem::take(&mut w.pending),
                std::mem::take(&mut w.waiters),
                w.closed,
            )
        };
        if events.is_empty() {
            if closed {
                break;
            }
            // A notification sent since the take above is kept as a permit, so none is lost.
            shared.wake.notified().await;
            continue;
        }
        let flushed = match &failed {
            Some(msg) => Err(msg.clone()),
            None if shared.cfg.durable => flush(&shared).await,
            None => Ok(()),
        };
        match flushed {
            Ok(()) => {
                shared
                    .writes
                    .fetch_add(events.len() as u64, Ordering::Relaxed);
                shared.commits.fetch_add(1, Ordering::Relaxed);
                commit(&shared, events);
                for w in waiters {
                    let _ = w.send(Ok(()));
                }
            }
            Err(msg) => {
                if failed.is_none() {
                    tracing::error!(error = %msg, writes = events.len(), "flushing the store failed");
                    lock(&shared.writer).failed = Some(msg.clone());
                    shared.commit.send_modify(|c| c.broken = true);
                    failed = Some(msg.clone());
                }
                for w in waiters {
                    let _ = w.send(Err(StoreError::Flush(msg.clone())));
                }
            }
        }
    }
    // Every committed event is published: end the watches once they have read them.
    lock(&shared.feed).tx = None;
}

/// Make everything written so far durable: sled's flush writes its log buffers and waits for
/// them with `sync_file_range`, which neither flushes the device's write cache nor the file's
/// size, so an `fdatasync` of the log file follows. Both run on one blocking thread: sled's
/// `flush_async` would hand the flush to sled's own thread pool, whose every job wakes all of its
/// idle threads.
async fn flush(shared: &Shared) -> Result<(), String> {
    let db = shared.db.clone();
    let file = shared.db_file.clone();
    tokio::task::spawn_blocking(move || {
        db.flush().map_err(|e| format!("flushing sled: {e}"))?;
        file.sync_data()
            .map_err(|e| format!("syncing the database file: {e}"))
    })
    .await
    .map_err(|e| format!("flushing the store: {e}"))?
}

/// Make a flushed batch visible: the read index, then the writers' view, then the watchers.
fn commit(shared: &Shared, events: Vec<Arc<Event>>) {
    let Some(last) = events.last().map(|e| e.revision) else {
        return;
    };
    {
        let mut index = write_lock(&shared.index);
        for ev in &events {
            match ev.kind {
                EventType::Deleted => {
                    index.objects.remove(&ev.key);
                }
                _ => {
                    let state = (ev.revision, ev.value.clone());
                    match index.objects.get_mut(&ev.key) {
                        Some(slot) => *slot = state,
                        None => {
                            index.objects.insert(ev.key.clone(), state);
                        }
                    }
                }
            }
        }
        index.revision = last;
    }
    {
        let mut w = lock(&shared.writer);
        for ev in &events {
            if w.in_flight
                .get(&ev.key)
                .is_some_and(|f| f.revision == ev.revision)
            {
                w.in_flight.remove(&ev.key);
            }
        }
    }
    shared.commit.send_replace(super::write::Commit {
        revision: last,
        broken: false,
    });
    lock(&shared.feed).publish(events, tokio::time::Instant::now());
}
