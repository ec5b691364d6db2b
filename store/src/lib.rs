//! sled-backed versioned key-value store: one global revision, compare-and-swap writes,
//! consistent lists, and watches that replay a bounded history before going live.
//!
//! Writes are serialized under one short lock that assigns the next revision and applies the
//! change to sled (one atomic batch: the value and the revision counter) and to the in-memory
//! index that serves every read. A single flusher task then makes batches of writes durable with
//! one flush (group commit), publishes their events in revision order, and only then
//! acknowledges the writers. The watch history lives in memory: after a restart, watches resume
//! from the revision the store reopened at (older revisions answer `Expired`, so clients
//! re-list, as upstream clients do on 410).

mod watch;

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{broadcast, oneshot, Notify};

pub use watch::Watch;

/// Settings of a store.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Most events kept for watch replay.
    pub history_max_events: usize,
    /// Oldest event kept for watch replay.
    pub history_max_age: Duration,
    /// Acknowledge writes only once flushed to disk.
    pub durable: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            history_max_events: 20_000,
            history_max_age: Duration::from_secs(300),
            durable: true,
        }
    }
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("key already exists")]
    AlreadyExists,
    #[error("key not found")]
    NotFound,
    #[error("revision conflict: the key is at revision {current}")]
    Conflict { current: u64 },
    #[error("revision {requested} is compacted; the oldest watchable revision is {oldest}")]
    Expired { requested: u64, oldest: u64 },
    #[error("the store is closed")]
    Closed,
    #[error("opening the database: {0}")]
    Open(#[source] sled::Error),
    #[error("writing: {0}")]
    Write(#[source] sled::Error),
    #[error("flushing to disk: {0}")]
    Flush(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

/// A value with the revision of its last modification.
#[derive(Debug, Clone)]
pub struct Revisioned {
    pub key: String,
    pub value: Bytes,
    pub revision: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One change, as watchers see it.
#[derive(Debug, Clone)]
pub struct Event {
    pub kind: EventType,
    pub key: String,
    /// The new value; for `Deleted`, the last value.
    pub value: Bytes,
    pub prev_value: Option<Bytes>,
    pub revision: u64,
}

/// A page of a list, consistent as of `revision`.
#[derive(Debug, Clone)]
pub struct ListResult {
    pub items: Vec<Revisioned>,
    pub revision: u64,
    /// Keys under the prefix after the last returned one.
    pub remaining: usize,
}

const REV_KEY: &[u8] = b"m/revision";
const OBJ_PREFIX: &str = "o";

/// What a write returns: its revision, the previous state, and the durability signal.
type Written = (
    u64,
    Option<(u64, Bytes)>,
    oneshot::Receiver<Result<(), String>>,
);

struct Index {
    revision: u64,
    objects: BTreeMap<String, (u64, Bytes)>,
}

struct Pending {
    events: Vec<Arc<Event>>,
    waiters: Vec<oneshot::Sender<Result<(), String>>>,
}

/// Published events, for replay, and the fan-out to live watchers.
pub(crate) struct History {
    pub(crate) events: VecDeque<(Instant, Arc<Event>)>,
    /// Watches may start from any revision >= this one.
    pub(crate) oldest: u64,
    pub(crate) tx: broadcast::Sender<Arc<Event>>,
}

struct Shared {
    db: sled::Db,
    tree: sled::Tree,
    cfg: StoreConfig,
    index: RwLock<Index>,
    pending: Mutex<Pending>,
    history: Mutex<History>,
    wake: Notify,
    closed: std::sync::atomic::AtomicBool,
}

/// Handle to a store; cheap to clone.
#[derive(Clone)]
pub struct Store(Arc<Shared>);

fn obj_key(key: &str) -> Vec<u8> {
    format!("{OBJ_PREFIX}{key}").into_bytes()
}

fn encode(rev: u64, value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 + value.len());
    v.extend_from_slice(&rev.to_be_bytes());
    v.extend_from_slice(value);
    v
}

fn decode(raw: &[u8]) -> Result<(u64, Bytes), StoreError> {
    if raw.len() < 8 {
        return Err(StoreError::Corrupt(
            "value shorter than its revision header".into(),
        ));
    }
    let mut rev = [0u8; 8];
    rev.copy_from_slice(&raw[..8]);
    Ok((u64::from_be_bytes(rev), Bytes::copy_from_slice(&raw[8..])))
}

impl Store {
    /// Open (or create) the store in `dir` and start its flusher on the current tokio runtime.
    pub fn open(dir: &Path, cfg: StoreConfig) -> Result<Store, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(32 * 1024 * 1024)
            .mode(sled::Mode::HighThroughput)
            .open()
            .map_err(StoreError::Open)?;
        let tree = db.open_tree("kv").map_err(StoreError::Open)?;
        let mut revision = match tree.get(REV_KEY).map_err(StoreError::Open)? {
            Some(raw) if raw.len() == 8 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&raw);
                u64::from_be_bytes(b)
            }
            Some(_) => return Err(StoreError::Corrupt("revision counter".into())),
            None => 0,
        };
        let mut objects = BTreeMap::new();
        for item in tree.scan_prefix(OBJ_PREFIX.as_bytes()) {
            let (k, v) = item.map_err(StoreError::Open)?;
            let key = std::str::from_utf8(&k[OBJ_PREFIX.len()..])
                .map_err(|_| StoreError::Corrupt("key is not UTF-8".into()))?
                .to_string();
            let (rev, value) = decode(&v)?;
            revision = revision.max(rev);
            objects.insert(key, (rev, value));
        }
        let (tx, _) = broadcast::channel(4096);
        let shared = Arc::new(Shared {
            db,
            tree,
            cfg,
            index: RwLock::new(Index { revision, objects }),
            pending: Mutex::new(Pending {
                events: Vec::new(),
                waiters: Vec::new(),
            }),
            history: Mutex::new(History {
                events: VecDeque::new(),
                oldest: revision,
                tx,
            }),
            wake: Notify::new(),
            closed: std::sync::atomic::AtomicBool::new(false),
        });
        tokio::spawn(flusher(shared.clone()));
        Ok(Store(shared))
    }

    /// The latest revision handed out.
    pub fn revision(&self) -> u64 {
        self.0.index.read().map(|i| i.revision).unwrap_or(0)
    }

    /// The lowest revision a watch can start from.
    pub fn oldest_revision(&self) -> u64 {
        self.0.history.lock().map(|h| h.oldest).unwrap_or(0)
    }

    pub fn get(&self, key: &str) -> Result<Option<Revisioned>, StoreError> {
        let index = self.0.index.read().map_err(|_| StoreError::Closed)?;
        Ok(index.objects.get(key).map(|(rev, value)| Revisioned {
            key: key.to_string(),
            value: value.clone(),
            revision: *rev,
        }))
    }

    /// Keys under `prefix` in order, after `start_after`, at most `limit`.
    pub fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> Result<ListResult, StoreError> {
        use std::ops::Bound;
        let index = self.0.index.read().map_err(|_| StoreError::Closed)?;
        let lower = match start_after {
            Some(k) if k >= prefix => Bound::Excluded(k.to_string()),
            _ => Bound::Included(prefix.to_string()),
        };
        let mut iter = index
            .objects
            .range::<String, _>((lower, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix));
        let mut items = Vec::new();
        let limit = limit.unwrap_or(usize::MAX);
        for (k, (rev, value)) in iter.by_ref() {
            items.push(Revisioned {
                key: k.clone(),
                value: value.clone(),
                revision: *rev,
            });
            if items.len() == limit {
                break;
            }
        }
        let remaining = iter.count();
        Ok(ListResult {
            items,
            revision: index.revision,
            remaining,
        })
    }

    /// Apply one change under the write lock; returns the new revision and a receiver that
    /// fires once the change is durable.
    fn write(
        &self,
        key: &str,
        decide: impl FnOnce(Option<&(u64, Bytes)>) -> Result<Option<Bytes>, StoreError>,
        kind_if_present: EventType,
    ) -> Result<Written, StoreError> {
        if self.0.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        let mut index = self.0.index.write().map_err(|_| StoreError::Closed)?;
        let current = index.objects.get(key).cloned();
        let new_value = decide(current.as_ref())?;
        let rev = index.revision + 1;
        let mut batch = sled::Batch::default();
        match &new_value {
            Some(v) => batch.insert(obj_key(key), encode(rev, v)),
            None => batch.remove(obj_key(key)),
        }
        batch.insert(REV_KEY, &rev.to_be_bytes());
        self.0.tree.apply_batch(batch).map_err(StoreError::Write)?;
        index.revision = rev;
        let event = match (&new_value, &current) {
            (Some(v), None) => Event {
                kind: EventType::Added,
                key: key.to_string(),
                value: v.clone(),
                prev_value: None,
                revision: rev,
            },
            (Some(v), Some((_, old))) => Event {
                kind: kind_if_present,
                key: key.to_string(),
                value: v.clone(),
                prev_value: Some(old.clone()),
                revision: rev,
            },
            (None, Some((_, old))) => Event {
                kind: EventType::Deleted,
                key: key.to_string(),
                value: old.clone(),
                prev_value: Some(old.clone()),
                revision: rev,
            },
            (None, None) => return Err(StoreError::NotFound),
        };
        match new_value {
            Some(v) => {
                index.objects.insert(key.to_string(), (rev, v));
            }
            None => {
                index.objects.remove(key);
            }
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.0.pending.lock().map_err(|_| StoreError::Closed)?;
            pending.events.push(Arc::new(event));
            pending.waiters.push(tx);
        }
        drop(index);
        self.0.wake.notify_one();
        Ok((rev, current, rx))
    }

    async fn durable(rx: oneshot::Receiver<Result<(), String>>) -> Result<(), StoreError> {
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(StoreError::Flush(e)),
            Err(_) => Err(StoreError::Closed),
        }
    }

    /// Store a new key; `AlreadyExists` if present.
    pub async fn create(&self, key: &str, value: Bytes) -> Result<u64, StoreError> {
        let (rev, _, rx) = self.write(
            key,
            |cur| match cur {
                Some(_) => Err(StoreError::AlreadyExists),
                None => Ok(Some(value)),
            },
            EventType::Modified,
        )?;
        Self::durable(rx).await?;
        Ok(rev)
    }

    /// Replace a key's value if it is still at `expected_revision`.
    pub async fn update(
        &self,
        key: &str,
        expected_revision: u64,
        value: Bytes,
    ) -> Result<u64, StoreError> {
        let (rev, _, rx) = self.write(
            key,
            |cur| match cur {
                None => Err(StoreError::NotFound),
                Some((r, _)) if *r != expected_revision => {
                    Err(StoreError::Conflict { current: *r })
                }
                Some(_) => Ok(Some(value)),
            },
            EventType::Modified,
        )?;
        Self::durable(rx).await?;
        Ok(rev)
    }

    /// Remove a key (if still at `expected_revision`, when given); returns its last state and
    /// the revision of the deletion.
    pub async fn delete(
        &self,
        key: &str,
        expected_revision: Option<u64>,
    ) -> Result<(Revisioned, u64), StoreError> {
        let (rev, last, rx) = self.write(
            key,
            |cur| match cur {
                None => Err(StoreError::NotFound),
                Some((r, _)) if expected_revision.is_some_and(|e| e != *r) => {
                    Err(StoreError::Conflict { current: *r })
                }
                Some(_) => Ok(None),
            },
            EventType::Deleted,
        )?;
        Self::durable(rx).await?;
        let (last_rev, value) = last.ok_or(StoreError::NotFound)?;
        Ok((
            Revisioned {
                key: key.to_string(),
                value,
                revision: last_rev,
            },
            rev,
        ))
    }

    /// Events for keys under `prefix` with revision > `after_revision`: retained history first,
    /// then live ones.
    pub fn watch(&self, prefix: &str, after_revision: u64) -> Result<Watch, StoreError> {
        let history = self.0.history.lock().map_err(|_| StoreError::Closed)?;
        Watch::start(self.clone(), &history, prefix, after_revision)
    }

    pub(crate) fn history(&self) -> &Mutex<History> {
        &self.0.history
    }

    /// Drop history beyond the configured count and age now.
    pub fn compact_now(&self) {
        compact(&self.0, Instant::now());
    }

    /// Drop all retained history up to the current revision (tests of 410 handling).
    pub fn compact_all(&self) {
        if let Ok(mut h) = self.0.history.lock() {
            if let Some((_, last)) = h.events.back() {
                h.oldest = h.oldest.max(last.revision);
            }
            h.events.clear();
        }
    }

    /// Flush everything and stop accepting writes.
    pub async fn close(&self) {
        self.0
            .closed
            .store(true, std::sync::atomic::Ordering::Release);
        self.0.wake.notify_one();
        let _ = self.0.db.flush_async().await;
    }
}

fn compact(shared: &Shared, now: Instant) {
    let Ok(mut h) = shared.history.lock() else {
        return;
    };
    while let Some((at, ev)) = h.events.front() {
        let too_many = h.events.len() > shared.cfg.history_max_events;
        let too_old = now.duration_since(*at) > shared.cfg.history_max_age;
        if !(too_many || too_old) {
            break;
        }
        let rev = ev.revision;
        h.events.pop_front();
        h.oldest = rev;
    }
}

/// Group commit: one flush for every write pending when it starts, then publish their events in
/// revision order and acknowledge them.
async fn flusher(shared: Arc<Shared>) {
    let mut last_compaction = Instant::now();
    loop {
        let batch = {
            let mut p = match shared.pending.lock() {
                Ok(p) => p,
                Err(_) => return,
            };
            Pending {
                events: std::mem::take(&mut p.events),
                waiters: std::mem::take(&mut p.waiters),
            }
        };
        if batch.waiters.is_empty() {
            if shared.closed.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            tokio::select! {
                _ = shared.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            if last_compaction.elapsed() > Duration::from_secs(1) {
                compact(&shared, Instant::now());
                last_compaction = Instant::now();
            }
            continue;
        }
        let result = if shared.cfg.durable {
            shared
                .db
                .flush_async()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        } else {
            Ok(())
        };
        if result.is_ok() {
            if let Ok(mut h) = shared.history.lock() {
                let now = Instant::now();
                for ev in batch.events {
                    let _ = h.tx.send(ev.clone());
                    h.events.push_back((now, ev));
                }
            }
        } else {
            tracing::error!(error = ?result, "flush failed");
        }
        for w in batch.waiters {
            let _ = w.send(result.clone());
        }
        if shared
            .history
            .lock()
            .map(|h| h.events.len() > shared.cfg.history_max_events)
            .unwrap_or(false)
        {
            compact(&shared, Instant::now());
        }
    }
}
