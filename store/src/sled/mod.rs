//! The sled backend: one global revision, compare-and-swap writes, consistent lists, and
//! watches that replay a persisted, bounded history before going live.
//!
//! - `codec`: the records in sled (objects, history events, the revision counter).
//! - `write`: the write path. One short lock assigns the next revision and applies, in one
//!   atomic sled batch, the object, its history event and the counter. One flusher task makes
//!   every write pending at that moment durable with one flush (group commit), then commits the
//!   batch to the in-memory index that serves every read, publishes its events and acknowledges
//!   the writers.
//! - `history`: the retained window of history (by count and age) and its compaction. The
//!   history is persisted with each write, so a watcher that falls behind the live fan-out
//!   refills from disk instead of the store keeping events in memory; history from before a
//!   restart is not served (as upstream's watch cache), so watches from then get `Expired`.
//! - `watch`: replay from the persisted history, then the live fan-out, with no gap or duplicate.
//!
//! Reads (`get`, `list`, `revision`) only ever see durable, committed writes, all as of one
//! revision.

mod codec;
mod history;
pub(crate) mod watch;
mod write;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::index::Index;
use crate::{lock, read_lock, ListResult, Revisioned, StoreConfig, StoreError, StoreStats};
use history::Feed;
use write::{Commit, Writer};

pub(crate) struct Shared {
    pub(crate) db: sled::Db,
    /// sled's log file, to `fdatasync` after each flush.
    pub(crate) db_file: Arc<std::fs::File>,
    pub(crate) tree: sled::Tree,
    pub(crate) cfg: StoreConfig,
    pub(crate) index: RwLock<Index>,
    pub(crate) writer: Mutex<Writer>,
    pub(crate) feed: Mutex<Feed>,
    /// Wakes the flusher when a write is pending or the store closes.
    pub(crate) wake: Notify,
    /// The last committed revision, for writers waiting on an earlier in-flight write.
    pub(crate) commit: tokio::sync::watch::Sender<Commit>,
    pub(crate) shutdown: tokio::sync::watch::Sender<bool>,
    pub(crate) tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Committed writes and the group commits (flushes, when durable) they took.
    pub(crate) writes: AtomicU64,
    pub(crate) commits: AtomicU64,
}

/// Closes the store when the last `Store` handle goes away (watches alone keep it readable).
struct Handle(Arc<Shared>);

impl Drop for Handle {
    fn drop(&mut self) {
        write::begin_close(&self.0);
    }
}

/// Handle to a sled store; cheap to clone.
#[derive(Clone)]
pub(crate) struct SledStore(Arc<Handle>);

impl SledStore {
    /// Open (or create) the store in `dir` and start its flusher and compactor on the current
    /// tokio runtime. Reopening a directory in the same process needs the previous store closed
    /// first (`close().await`), since sled holds a lock on its files until then.
    pub(crate) fn open(dir: &Path, cfg: StoreConfig) -> Result<SledStore, StoreError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| StoreError::NoRuntime)?;
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(16 * 1024 * 1024)
            .mode(sled::Mode::HighThroughput)
            .open()
            .map_err(StoreError::Open)?;
        let tree = db.open_tree("kv").map_err(StoreError::Open)?;
        let db_file = std::fs::File::open(dir.join("db")).map_err(StoreError::OpenLog)?;
        let mut revision = match tree.get(codec::REV_KEY).map_err(StoreError::Open)? {
            Some(raw) => codec::decode_revision(&raw)?,
            None => 0,
        };
        let mut objects = BTreeMap::new();
        for item in tree.scan_prefix(codec::OBJ_PREFIX) {
            let (k, v) = item.map_err(StoreError::Open)?;
            let (key, rev, value) = codec::decode_object(&k, &v)?;
            revision = revision.max(rev);
            objects.insert(key, (rev, value));
        }
        if let Some(item) = tree.scan_prefix(codec::HIST_PREFIX).next_back() {
            revision = revision.max(codec::hist_revision(&item.map_err(StoreError::Open)?.0)?);
        }
        // History written before this open is not watchable, as with upstream's watch cache
        // after an API server restart: clients holding older revisions get `Expired` and
        // re-list. The compactor removes those records.
        let mut stale = None;
        if let Some(item) = tree.scan_prefix(codec::HIST_PREFIX).next() {
            let disk_first = codec::hist_revision(&item.map_err(StoreError::Open)?.0)?;
            stale = Some((disk_first, revision + 1));
        }
        tracing::info!(dir = %dir.display(), revision, objects = objects.len(), "store opened");
        let shared = Arc::new(Shared {
            db,
            db_file: Arc::new(db_file),
            tree,
            index: RwLock::new(Index { revision, objects }),
            writer: Mutex::new(Writer {
                revision,
                in_flight: HashMap::new(),
                pending: Vec::new(),
                waiters: Vec::new(),
                closed: false,
                failed: None,
            }),
            feed: Mutex::new(Feed::new(revision, cfg.fanout_capacity)),
            cfg,
            wake: Notify::new(),
            commit: tokio::sync::watch::Sender::new(Commit {
                revision,
                broken: false,
            }),
            shutdown: tokio::sync::watch::Sender::new(false),
            tasks: Mutex::new(Vec::new()),
            writes: AtomicU64::new(0),
            commits: AtomicU64::new(0),
        });
        let tasks = vec![
            runtime.spawn(write::flusher(shared.clone())),
            runtime.spawn(history::compactor(shared.clone(), stale)),
        ];
        lock(&shared.tasks).extend(tasks);
        Ok(SledStore(Arc::new(Handle(shared))))
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &(self.0).0
    }

    /// The latest committed revision (0 on an empty store).
    pub(crate) fn revision(&self) -> u64 {
        read_lock(&self.shared().index).revision
    }

    /// Writes and group commits since the store was opened (writes per commit is the batching
    /// that group commit achieved).
    pub(crate) fn stats(&self) -> StoreStats {
        StoreStats {
            writes: self.shared().writes.load(Ordering::Relaxed),
            commits: self.shared().commits.load(Ordering::Relaxed),
        }
    }

    /// The lowest revision a watch can start from: events after it are all retained.
    pub(crate) fn oldest_revision(&self) -> u64 {
        lock(&self.shared().feed).oldest()
    }

    pub(crate) fn get(&self, key: &str) -> Result<Option<Revisioned>, StoreError> {
        Ok(read_lock(&self.shared().index).get(key))
    }

    /// Keys under `prefix` in order, after `start_after`, at most `limit` of them (`None`: all),
    /// all as of the revision reported.
    pub(crate) fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> Result<ListResult, StoreError> {
        Ok(read_lock(&self.shared().index).list(prefix, start_after, limit))
    }

    /// Store a new key; `AlreadyExists` if present. Returns the write's revision.
    pub(crate) async fn create(&self, key: &str, value: Bytes) -> Result<u64, StoreError> {
        let (rev, _) = write::write(self.shared(), key, |cur| match cur {
            Some(_) => Err(StoreError::AlreadyExists),
            None => Ok(Some(value)),
        })
        .await?;
        Ok(rev)
    }

    /// Replace a key's value if it is still at `expected_revision`; `NotFound`, or `Conflict`
    /// with the key's current revision.
    pub(crate) async fn update(
        &self,
        key: &str,
        expected_revision: u64,
        value: Bytes,
    ) -> Result<u64, StoreError> {
        let (rev, _) = write::write(self.shared(), key, |cur| match cur {
            None => Err(StoreError::NotFound),
            Some((r, _)) if *r != expected_revision => Err(StoreError::Conflict { current: *r }),
            Some(_) => Ok(Some(value)),
        })
        .await?;
        Ok(rev)
    }

    /// Remove a key (if still at `expected_revision`, when given); returns its last state and
    /// the revision of the deletion.
    pub(crate) async fn delete(
        &self,
        key: &str,
        expected_revision: Option<u64>,
    ) -> Result<(Revisioned, u64), StoreError> {
        let (rev, last) = write::write(self.shared(), key, |cur| match cur {
            None => Err(StoreError::NotFound),
            Some((r, _)) if expected_revision.is_some_and(|e| e != *r) => {
                Err(StoreError::Conflict { current: *r })
            }
            Some(_) => Ok(None),
        })
        .await?;
        let (last_rev, value) = last.ok_or(StoreError::NotFound)?;
        let last = Revisioned {
            key: key.to_string(),
            value,
            revision: last_rev,
        };
        Ok((last, rev))
    }

    /// Events for keys under `prefix` with revision > `after_revision`: the retained history
    /// first, then live ones. `Expired` when events after `after_revision` were compacted.
    pub(crate) fn watch(
        &self,
        prefix: &str,
        after_revision: u64,
    ) -> Result<watch::Watch, StoreError> {
        watch::Watch::start(self.shared().clone(), prefix, after_revision)
    }

    /// Drop history beyond the configured count and age now (the compactor does it every
    /// second). A failure to remove the records on disk is logged; the window still moves.
    pub(crate) fn compact_now(&self) {
        if let Err(e) = history::compact(self.shared(), tokio::time::Instant::now()) {
            tracing::warn!(error = %e, "compacting the store history failed");
        }
    }

    /// Finish pending writes, flush, and stop the background tasks; later writes fail with
    /// `Closed` and watches end once they have delivered every committed event.
    pub(crate) async fn close(&self) {
        write::begin_close(self.shared());
        let tasks = std::mem::take(&mut *lock(&self.shared().tasks));
        for task in tasks {
            if let Err(e) = task.await {
                tracing::error!(error = %e, "store task failed");
            }
        }
        if let Err(e) = self.shared().db.flush_async().await {
            tracing::error!(error = %e, "final flush of the store failed");
        }
    }
}
