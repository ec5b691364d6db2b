//! The store under the API server: one interface over two backends, keys and bytes with one
//! global revision, compare-and-swap writes, lists, and watches from a revision.
//!
//! - `sled` (the default): embedded, one directory, group commit; see its module.
//! - `etcd`: an etcd v3 cluster through the `etcd-client` crate, the engine upstream's API server
//!   uses. The revision is etcd's; an in-memory cache fed by one etcd watch serves reads and
//!   every watcher; writes are transactions comparing the mod revision.
//!
//! Both backends give the same guarantees, which `tests/conformance.rs` checks on each: a
//! write returns once reads through this handle see it; a refused write (`AlreadyExists`,
//! `Conflict`, `NotFound`) returns once this handle sees the state it lost to; a watch from a
//! revision delivers every later change under its prefix once, in revision order, or ends with
//! `Expired` when that history is gone. Only this crate talks to sled or etcd; it knows keys and
//! bytes, never Kubernetes objects.

pub mod etcd;
mod index;
mod sled;

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use std::path::Path;
use std::sync::Arc;

pub use etcd::{free_port, EtcdConfig, LocalEtcd, Member};

/// Settings of a store.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Most events kept for watch replay.
    pub history_max_events: usize,
    /// Oldest event kept for watch replay (measured from when it was committed, or from when the
    /// store was opened for events written before).
    pub history_max_age: Duration,
    /// Acknowledge writes only once flushed to disk.
    pub durable: bool,
    /// Events buffered in the live fan-out; a watcher further behind refills from the history.
    pub fanout_capacity: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            history_max_events: 100_000,
            history_max_age: Duration::from_secs(300),
            durable: true,
            fanout_capacity: 1024,
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
    #[error("the store must be opened inside a tokio runtime")]
    NoRuntime,
    #[error("opening the database: {0}")]
    Open(#[source] ::sled::Error),
    #[error("opening the database log file to sync it: {0}")]
    OpenLog(#[source] std::io::Error),
    #[error("writing: {0}")]
    Write(#[source] ::sled::Error),
    #[error("flushing to disk: {0}")]
    Flush(String),
    #[error("reading the history: {0}")]
    History(#[source] ::sled::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("connecting to etcd at {servers}: {message}")]
    Connect { servers: String, message: String },
    #[error("etcd: {0}")]
    Etcd(String),
    #[error("the store did not catch up with revision {revision} within {waited:?}")]
    Timeout {
        revision: u64,
        waited: std::time::Duration,
    },
}

/// A value with the revision of its last modification.
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: EventType,
    pub key: String,
    /// The new value; for `Deleted`, the last value.
    pub value: Bytes,
    /// The value before this change (for `Deleted`, the same as `value`).
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

/// Counters since the store was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Writes committed.
    pub writes: u64,
    /// Group commits: one flush each when durable.
    pub commits: u64,
}

/// The store's locks guard plain state that a panic cannot leave half-updated, so a poisoned
/// lock is used as is.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn read_lock<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn write_lock<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

/// Handle to a store; cheap to clone. The store closes when the last handle goes away.
#[derive(Clone)]
pub struct Store(Backend);

#[derive(Clone)]
enum Backend {
    Sled(sled::SledStore),
    Etcd(etcd::EtcdStore),
}

impl Store {
    /// Open (or create) a sled store in `dir` and start its flusher and compactor on the current
    /// tokio runtime. Reopening a directory in the same process needs the previous store closed
    /// first (`close().await`), since sled holds a lock on its files until then.
    pub fn open(dir: &Path, cfg: StoreConfig) -> Result<Store, StoreError> {
        sled::SledStore::open(dir, cfg).map(|s| Store(Backend::Sled(s)))
    }

    /// Connect to etcd, load every key under the configured prefix into the cache and follow
    /// its changes; `Connect` if no server answers.
    pub async fn connect(cfg: EtcdConfig) -> Result<Store, StoreError> {
        etcd::EtcdStore::connect(cfg)
            .await
            .map(|s| Store(Backend::Etcd(s)))
    }

    /// `sled` or `etcd`.
    pub fn backend(&self) -> &'static str {
        match &self.0 {
            Backend::Sled(_) => "sled",
            Backend::Etcd(_) => "etcd",
        }
    }

    /// The latest revision this handle has seen committed (0 on an empty sled store).
    pub fn revision(&self) -> u64 {
        match &self.0 {
            Backend::Sled(s) => s.revision(),
            Backend::Etcd(s) => s.revision(),
        }
    }

    /// Writes and commits since the store was opened (on sled, writes per commit is the
    /// batching that group commit achieved; on etcd every write is its own transaction).
    pub fn stats(&self) -> StoreStats {
        match &self.0 {
            Backend::Sled(s) => s.stats(),
            Backend::Etcd(s) => s.stats(),
        }
    }

    /// The lowest revision a watch can start from: events after it are all retained.
    pub fn oldest_revision(&self) -> u64 {
        match &self.0 {
            Backend::Sled(s) => s.oldest_revision(),
            Backend::Etcd(s) => s.oldest_revision(),
        }
    }

    pub fn get(&self, key: &str) -> Result<Option<Revisioned>, StoreError> {
        match &self.0 {
            Backend::Sled(s) => s.get(key),
            Backend::Etcd(s) => s.get(key),
        }
    }

    /// Keys under `prefix` in order, after `start_after`, at most `limit` of them (`None`: all),
    /// all as of the revision reported.
    pub fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> Result<ListResult, StoreError> {
        match &self.0 {
            Backend::Sled(s) => s.list(prefix, start_after, limit),
            Backend::Etcd(s) => s.list(prefix, start_after, limit),
        }
    }

    /// Wait until reads through this handle reflect every write committed anywhere before the
    /// call (a consistent read, as upstream's from its watch cache: ask etcd for its current
    /// revision, wait for the cache to reach it). Immediate on sled, where this handle is the
    /// only writer.
    pub async fn sync(&self) -> Result<u64, StoreError> {
        match &self.0 {
            Backend::Sled(s) => Ok(s.revision()),
            Backend::Etcd(s) => s.sync().await,
        }
    }

    /// Store a new key; `AlreadyExists` if present. Returns the write's revision.
    pub async fn create(&self, key: &str, value: Bytes) -> Result<u64, StoreError> {
        match &self.0 {
            Backend::Sled(s) => s.create(key, value).await,
            Backend::Etcd(s) => s.create(key, value).await,
        }
    }

    /// Replace a key's value if it is still at `expected_revision`; `NotFound`, or `Conflict`
    /// with the key's current revision.
    pub async fn update(
        &self,
        key: &str,
        expected_revision: u64,
        value: Bytes,
    ) -> Result<u64, StoreError> {
        match &self.0 {
            Backend::Sled(s) => s.update(key, expected_revision, value).await,
            Backend::Etcd(s) => s.update(key, expected_revision, value).await,
        }
    }

    /// Remove a key (if still at `expected_revision`, when given); returns its last state and
    /// the revision of the deletion.
    pub async fn delete(
        &self,
        key: &str,
        expected_revision: Option<u64>,
    ) -> Result<(Revisioned, u64), StoreError> {
        match &self.0 {
            Backend::Sled(s) => s.delete(key, expected_revision).await,
            Backend::Etcd(s) => s.delete(key, expected_revision).await,
        }
    }

    /// Events for keys under `prefix` with revision > `after_revision`: the retained history
    /// first, then live ones. `Expired` when events after `after_revision` were compacted.
    pub fn watch(&self, prefix: &str, after_revision: u64) -> Result<Watch, StoreError> {
        match &self.0 {
            Backend::Sled(s) => s
                .watch(prefix, after_revision)
                .map(|w| Watch(WatchInner::Sled(w))),
            Backend::Etcd(s) => s
                .watch(prefix, after_revision)
                .map(|w| Watch(WatchInner::Etcd(Box::new(w)))),
        }
    }

    /// Drop history beyond the configured count and age now (sled's compactor does it every
    /// second; on etcd, the cache's replay window, not etcd's own history).
    pub fn compact_now(&self) {
        match &self.0 {
            Backend::Sled(s) => s.compact_now(),
            Backend::Etcd(s) => s.compact_now(),
        }
    }

    /// Finish pending writes and stop the background tasks; later writes fail with `Closed` and
    /// watches end once they have delivered every committed event.
    pub async fn close(&self) {
        match &self.0 {
            Backend::Sled(s) => s.close().await,
            Backend::Etcd(s) => s.close().await,
        }
    }
}

/// A watch on a prefix, from either backend.
pub struct Watch(WatchInner);

enum WatchInner {
    Sled(sled::watch::Watch),
    Etcd(Box<etcd::watch::Watch>),
}

impl Watch {
    /// The next event under the prefix, in revision order. `Some(Err(_))` once if the watch cannot
    /// continue (`Expired`: re-list), then `None`; `None` also when the store closes.
    pub async fn next(&mut self) -> Option<Result<Arc<Event>, StoreError>> {
        match &mut self.0 {
            WatchInner::Sled(w) => w.next().await,
            WatchInner::Etcd(w) => w.next().await,
        }
    }

    /// The revision up to which every change under the prefix has been delivered (events of
    /// other prefixes move it too): a safe BOOKMARK's resourceVersion.
    pub fn progress(&self) -> u64 {
        match &self.0 {
            WatchInner::Sled(w) => w.progress(),
            WatchInner::Etcd(w) => w.progress(),
        }
    }

    /// The watch as a stream of the same items as `next`.
    pub fn into_stream(self) -> impl Stream<Item = Result<Arc<Event>, StoreError>> + Send {
        futures::stream::unfold(self, |mut w| async move { w.next().await.map(|x| (x, w)) })
    }
}
