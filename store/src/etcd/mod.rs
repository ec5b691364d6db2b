//! The etcd v3 backend, as upstream's etcd3 storage with its watch cache in front:
//!
//! - Keys are the store's keys under `EtcdConfig::prefix` (`/registry/pods/default/nginx`), values
//!   the stored bytes; a key's revision is etcd's mod revision, the store's revision etcd's.
//! - `cache`: every key under the prefix in memory, loaded by one range read and kept by ONE etcd
//!   watch, which also feeds every watcher of this handle (a replay window in memory, then the
//!   live fan-out). Reads are served from it.
//! - Writes are transactions comparing the key's create or mod revision (create: absent; update
//!   and delete: still at the expected revision) and return once the cache has seen their
//!   revision, so a read after a write sees it; a refused write returns once the cache has seen
//!   what it lost to.
//! - `watch`: watchers start from the cache's replay window, or, for an older revision, from an
//!   etcd watch of their own, which answers `Expired` once etcd has compacted that revision.
//! - `compact`: upstream's compactor: every `compaction_interval`, the revision seen one
//!   interval earlier is compacted, once across every API server on the same etcd.
//! - `server`: starting local `etcd` processes for `tinykube up --etcd` and the tests.

mod cache;
mod compact;
mod server;
pub(crate) mod watch;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, Txn, TxnOp, TxnOpResponse};
use tokio::sync::{broadcast, Notify};

pub use server::{free_port, LocalEtcd, Member};

use crate::{lock, read_lock, Event, ListResult, Revisioned, StoreError, StoreStats};

/// Where and how the etcd backend stores.
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    /// Client URLs of the etcd members (`http://127.0.0.1:2379`).
    pub servers: Vec<String>,
    /// Key prefix of every object (`--etcd-prefix`, `/registry` as upstream).
    pub prefix: String,
    /// How often to compact etcd's history (`--etcd-compaction-interval`, 5 min as upstream);
    /// zero never compacts.
    pub compaction_interval: Duration,
    /// Most events the cache keeps for watchers to start from (older starts read etcd).
    pub cache_events: usize,
    /// Oldest event the cache keeps for watchers to start from.
    pub cache_age: Duration,
    /// How long one etcd request, or the cache catching up with a write, may take.
    pub request_timeout: Duration,
}

impl EtcdConfig {
    pub fn new(servers: Vec<String>) -> Self {
        EtcdConfig {
            servers,
            prefix: "/registry".into(),
            compaction_interval: Duration::from_secs(300),
            cache_events: 10_000,
            cache_age: Duration::from_secs(75),
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// The cache: every key under the prefix as of its revision, the latest etcd revision it knows
/// complete.
pub(crate) type Cache = crate::index::Index;

/// The replay window and the live fan-out.
pub(crate) struct Ring {
    /// Every event under the prefix with a revision above `from` is in `events`.
    pub(crate) from: u64,
    pub(crate) events: VecDeque<(tokio::time::Instant, Arc<Event>)>,
    /// `None` once the store is closed.
    pub(crate) tx: Option<broadcast::Sender<Arc<Event>>>,
}

pub(crate) struct Shared {
    pub(crate) client: etcd_client::Client,
    pub(crate) cfg: EtcdConfig,
    pub(crate) cache: RwLock<Cache>,
    pub(crate) ring: Mutex<Ring>,
    /// The cache's revision, for `sync` and refused writes waiting on it (moved by events and
    /// by progress notifications).
    pub(crate) seen: tokio::sync::watch::Sender<u64>,
    /// The revision of the last event the cache applied (or of its last load): what a write
    /// waits for. A progress notification does not move it: etcd before 3.4.25 / 3.5.8 may send
    /// one with a revision ahead of events still on their way (etcd issue 15220), which would
    /// let a write answer before the cache and the watchers have it.
    pub(crate) applied: tokio::sync::watch::Sender<u64>,
    /// Asks the cache's watch for a progress notification (the cache's revision moves to
    /// etcd's even when nothing under the prefix changed).
    pub(crate) progress: Notify,
    pub(crate) shutdown: tokio::sync::watch::Sender<bool>,
    pub(crate) tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// The highest revision known compacted in etcd.
    pub(crate) compacted: AtomicU64,
    pub(crate) writes: AtomicU64,
}

impl Shared {
    /// The etcd key of a store key.
    pub(crate) fn full_key(&self, key: &str) -> String {
        format!("{}{key}", self.cfg.prefix)
    }

    pub(crate) fn closed(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Run one etcd request with the configured timeout.
    pub(crate) async fn request<T>(
        &self,
        what: &str,
        fut: impl std::future::Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, StoreError> {
        if self.closed() {
            return Err(StoreError::Closed);
        }
        match tokio::time::timeout(self.cfg.request_timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(StoreError::Etcd(format!("{what}: {e}"))),
            Err(_) => Err(StoreError::Etcd(format!(
                "{what}: no answer within {:?}",
                self.cfg.request_timeout
            ))),
        }
    }

    /// Wait until the cache has applied the event of `revision`, a write under the prefix.
    pub(crate) async fn applied(&self, revision: u64) -> Result<(), StoreError> {
        let mut applied = self.applied.subscribe();
        let reached = tokio::time::timeout(
            self.cfg.request_timeout,
            applied.wait_for(|a| *a >= revision),
        )
        .await
        .map(|r| r.is_ok());
        match reached {
            Ok(true) => Ok(()),
            Ok(false) => Err(StoreError::Closed),
            Err(_) => Err(StoreError::Timeout {
                revision,
                waited: self.cfg.request_timeout,
            }),
        }
    }

    /// Wait until the cache has seen `revision`, asking etcd for progress when no event under
    /// the prefix brings it there.
    pub(crate) async fn caught_up(&self, revision: u64) -> Result<(), StoreError> {
        let mut seen = self.seen.subscribe();
        let deadline = tokio::time::Instant::now() + self.cfg.request_timeout;
        let mut asked = false;
        loop {
            if *seen.borrow_and_update() >= revision {
                return Ok(());
            }
            let wait = if asked {
                Duration::from_millis(200)
            } else {
                Duration::from_millis(5)
            };
            tokio::select! {
                changed = seen.changed() => {
                    if changed.is_err() {
                        return Err(StoreError::Closed);
                    }
                }
                _ = tokio::time::sleep(wait) => {
                    self.progress.notify_one();
                    asked = true;
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(StoreError::Timeout {
                    revision,
                    waited: self.cfg.request_timeout,
                });
            }
        }
    }
}

/// Resolves once the store closes (for `select!`: the guard `wait_for` returns is not `Send`).
pub(crate) async fn stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|closed| *closed).await;
}

/// Closes the store when the last handle goes away.
struct Handle(Arc<Shared>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.shutdown.send_replace(true);
    }
}

#[derive(Clone)]
pub(crate) struct EtcdStore(Arc<Handle>);

fn revision_of(header: Option<&etcd_client::ResponseHeader>) -> u64 {
    header.map_or(0, |h| h.revision().max(0) as u64)
}

fn first_kv(responses: Vec<TxnOpResponse>) -> Option<etcd_client::KeyValue> {
    responses.into_iter().find_map(|r| match r {
        TxnOpResponse::Get(mut g) => g.take_kvs().into_iter().next(),
        TxnOpResponse::Delete(mut d) => d.take_prev_kvs().into_iter().next(),
        _ => None,
    })
}

impl EtcdStore {
    pub(crate) async fn connect(cfg: EtcdConfig) -> Result<EtcdStore, StoreError> {
        let servers = cfg.servers.join(",");
        let connect_err = |message: String| StoreError::Connect {
            servers: servers.clone(),
            message,
        };
        if cfg.servers.is_empty() {
            return Err(connect_err("no server given".into()));
        }
        if !cfg.prefix.starts_with('/') || cfg.prefix.ends_with('/') {
            return Err(connect_err(format!(
                "the prefix {:?} must start with / and not end with one",
                cfg.prefix
            )));
        }
        let options = etcd_client::ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(3))
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5));
        let client = tokio::time::timeout(
            cfg.request_timeout,
            etcd_client::Client::connect(&cfg.servers, Some(options)),
        )
        .await
        .map_err(|_| connect_err("no answer".into()))?
        .map_err(|e| connect_err(e.to_string()))?;
        let (objects, revision) = cache::load(&client, &cfg)
            .await
            .map_err(|e| connect_err(e.to_string()))?;
        tracing::info!(%servers, prefix = %cfg.prefix, revision, objects = objects.len(), "etcd store connected");
        let shared = Arc::new(Shared {
            client,
            cache: RwLock::new(Cache { revision, objects }),
            ring: Mutex::new(Ring {
                from: revision,
                events: VecDeque::new(),
                tx: Some(broadcast::channel(1024).0),
            }),
            seen: tokio::sync::watch::Sender::new(revision),
            applied: tokio::sync::watch::Sender::new(revision),
            progress: Notify::new(),
            shutdown: tokio::sync::watch::Sender::new(false),
            tasks: Mutex::new(Vec::new()),
            compacted: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            cfg,
        });
        let mut tasks = vec![tokio::spawn(cache::follow(shared.clone()))];
        if !shared.cfg.compaction_interval.is_zero() {
            tasks.push(tokio::spawn(compact::compactor(shared.clone())));
        }
        lock(&shared.tasks).extend(tasks);
        Ok(EtcdStore(Arc::new(Handle(shared))))
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &(self.0).0
    }

    pub(crate) fn revision(&self) -> u64 {
        read_lock(&self.shared().cache).revision
    }

    pub(crate) fn stats(&self) -> StoreStats {
        let writes = self.shared().writes.load(Ordering::Relaxed);
        StoreStats {
            writes,
            commits: writes,
        }
    }

    pub(crate) fn oldest_revision(&self) -> u64 {
        self.shared().compacted.load(Ordering::Relaxed)
    }

    pub(crate) fn get(&self, key: &str) -> Result<Option<Revisioned>, StoreError> {
        Ok(read_lock(&self.shared().cache).get(key))
    }

    pub(crate) fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> Result<ListResult, StoreError> {
        Ok(read_lock(&self.shared().cache).list(prefix, start_after, limit))
    }

    pub(crate) async fn sync(&self) -> Result<u64, StoreError> {
        let s = self.shared();
        let mut kv = s.client.kv_client();
        // Any read answers with etcd's current revision; this one reads no key.
        let probe = s.full_key("/");
        let options = GetOptions::new().with_count_only();
        let resp = s
            .request("reading the revision", kv.get(probe, Some(options)))
            .await?;
        let revision = revision_of(resp.header());
        s.caught_up(revision).await?;
        Ok(revision)
    }

    async fn txn(&self, what: &str, txn: Txn) -> Result<etcd_client::TxnResponse, StoreError> {
        let s = self.shared();
        let mut kv = s.client.kv_client();
        s.request(what, kv.txn(txn)).await
    }

    /// The outcome of a write: wait for the cache to have it, count it.
    async fn written(&self, revision: u64) -> Result<u64, StoreError> {
        self.shared().applied(revision).await?;
        self.shared().writes.fetch_add(1, Ordering::Relaxed);
        Ok(revision)
    }

    /// A refused write: wait for the cache to have what it lost to, then answer `err`.
    async fn refused<T>(&self, revision: u64, err: StoreError) -> Result<T, StoreError> {
        self.shared().caught_up(revision).await?;
        Err(err)
    }

    pub(crate) async fn create(&self, key: &str, value: Bytes) -> Result<u64, StoreError> {
        let k = self.shared().full_key(key);
        let txn = Txn::new()
            .when([Compare::create_revision(k.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(k.clone(), value.to_vec(), None)])
            .or_else([TxnOp::get(k, None)]);
        let resp = self.txn("creating", txn).await?;
        let revision = revision_of(resp.header());
        if resp.succeeded() {
            return self.written(revision).await;
        }
        let current = first_kv(resp.op_responses()).map_or(revision, |kv| kv.mod_revision() as u64);
        self.refused(current, StoreError::AlreadyExists).await
    }

    pub(crate) async fn update(
        &self,
        key: &str,
        expected: u64,
        value: Bytes,
    ) -> Result<u64, StoreError> {
        let k = self.shared().full_key(key);
        let txn = Txn::new()
            .when([Compare::mod_revision(
                k.clone(),
                CompareOp::Equal,
                expected as i64,
            )])
            .and_then([TxnOp::put(k.clone(), value.to_vec(), None)])
            .or_else([TxnOp::get(k, None)]);
        let resp = self.txn("updating", txn).await?;
        let revision = revision_of(resp.header());
        if resp.succeeded() {
            return self.written(revision).await;
        }
        match first_kv(resp.op_responses()) {
            None => self.refused(revision, StoreError::NotFound).await,
            Some(kv) => {
                let current = kv.mod_revision() as u64;
                self.refused(current, StoreError::Conflict { current })
                    .await
            }
        }
    }

    pub(crate) async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(Revisioned, u64), StoreError> {
        let k = self.shared().full_key(key);
        let guard = match expected {
            Some(rev) => Compare::mod_revision(k.clone(), CompareOp::Equal, rev as i64),
            None => Compare::create_revision(k.clone(), CompareOp::Greater, 0),
        };
        let txn = Txn::new()
            .when([guard])
            .and_then([TxnOp::delete(
                k.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(k, None)]);
        let resp = self.txn("deleting", txn).await?;
        let revision = revision_of(resp.header());
        let succeeded = resp.succeeded();
        let kv = first_kv(resp.op_responses());
        match (succeeded, kv) {
            (true, Some(prev)) => {
                let last = Revisioned {
                    key: key.to_string(),
                    value: Bytes::copy_from_slice(prev.value()),
                    revision: prev.mod_revision() as u64,
                };
                self.written(revision).await?;
                Ok((last, revision))
            }
            // Deleted meanwhile by someone else (between the compare and the delete nothing can
            // run, so this only happens with a racing non-transactional client).
            (true, None) | (false, None) => self.refused(revision, StoreError::NotFound).await,
            (false, Some(kv)) => {
                let current = kv.mod_revision() as u64;
                self.refused(current, StoreError::Conflict { current })
                    .await
            }
        }
    }

    pub(crate) fn watch(&self, prefix: &str, after: u64) -> Result<watch::Watch, StoreError> {
        watch::Watch::start(self.shared().clone(), prefix, after)
    }

    pub(crate) fn compact_now(&self) {
        cache::trim(self.shared(), tokio::time::Instant::now());
    }

    pub(crate) async fn close(&self) {
        let s = self.shared();
        s.shutdown.send_replace(true);
        let tasks = std::mem::take(&mut *lock(&s.tasks));
        for task in tasks {
            if let Err(e) = task.await {
                tracing::error!(error = %e, "etcd store task failed");
            }
        }
        lock(&s.ring).tx = None;
    }
}
