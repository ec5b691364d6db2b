//! A watch on the etcd backend. From a revision the cache's replay window covers, it replays
//! the window and follows the cache's live fan-out (no etcd request per watcher, as upstream's
//! watch cache). From an older revision, or after falling behind the fan-out further than the
//! window reaches, it reads etcd with a watch of its own, which etcd answers with the history it
//! still has, or with the compaction that makes the watch `Expired`.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use etcd_client::{EventType as EtcdEvent, WatchOptions};
use tokio::sync::broadcast;

use super::cache::{range_end, store_key};
use super::Shared;
use crate::{lock, Event, EventType, StoreError};

pub(crate) struct Watch {
    shared: Arc<Shared>,
    prefix: String,
    source: Source,
    /// Events read, not delivered yet.
    buf: VecDeque<Arc<Event>>,
    /// The highest revision delivered or skipped.
    seen: u64,
    /// Why the watch ends, delivered after what was read before.
    ending: Option<StoreError>,
    done: bool,
}

enum Source {
    Cache(broadcast::Receiver<Arc<Event>>),
    /// An etcd watch of this watcher's own, started on the first `next`.
    Etcd(Option<Box<etcd_client::WatchStream>>),
}

impl Watch {
    pub(crate) fn start(
        shared: Arc<Shared>,
        prefix: &str,
        after: u64,
    ) -> Result<Watch, StoreError> {
        let mut w = Watch {
            shared,
            prefix: prefix.to_string(),
            source: Source::Etcd(None),
            buf: VecDeque::new(),
            seen: after,
            ending: None,
            done: false,
        };
        if w.shared.closed() {
            return Err(StoreError::Closed);
        }
        w.follow_cache();
        Ok(w)
    }

    /// Follow the cache if its window reaches back to `seen`: take the window's events after it
    /// and subscribe to the fan-out, both under the window's lock. Else read etcd.
    fn follow_cache(&mut self) {
        let ring = lock(&self.shared.ring);
        let (Some(tx), true) = (ring.tx.as_ref(), self.seen >= ring.from) else {
            self.source = Source::Etcd(None);
            return;
        };
        let rx = tx.subscribe();
        for (_, ev) in &ring.events {
            if ev.revision > self.seen {
                self.seen = ev.revision;
                if ev.key.starts_with(&self.prefix) {
                    self.buf.push_back(ev.clone());
                }
            }
        }
        self.source = Source::Cache(rx);
    }

    pub(crate) async fn next(&mut self) -> Option<Result<Arc<Event>, StoreError>> {
        loop {
            if let Some(ev) = self.buf.pop_front() {
                return Some(Ok(ev));
            }
            if let Some(e) = self.ending.take() {
                self.done = true;
                return Some(Err(e));
            }
            if self.done {
                return None;
            }
            match &mut self.source {
                Source::Cache(rx) => match rx.recv().await {
                    Ok(ev) => {
                        if ev.revision <= self.seen {
                            continue;
                        }
                        self.seen = ev.revision;
                        if ev.key.starts_with(&self.prefix) {
                            return Some(Ok(ev));
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, seen = self.seen, "watcher fell behind; refilling");
                        self.follow_cache();
                    }
                    Err(broadcast::error::RecvError::Closed) => {
                        if self.shared.closed() {
                            self.done = true;
                        } else {
                            // The cache loaded again after a compaction: what this watcher
                            // holds may be gone.
                            self.ending = Some(StoreError::Expired {
                                requested: self.seen,
                                oldest: self.shared.compacted.load(Ordering::Relaxed),
                            });
                        }
                    }
                },
                Source::Etcd(None) => match self.open().await {
                    Ok(s) => self.source = Source::Etcd(Some(Box::new(s))),
                    Err(e) => self.ending = Some(e),
                },
                Source::Etcd(Some(stream)) => {
                    let mut stop = self.shared.shutdown.subscribe();
                    let msg = tokio::select! {
                        m = stream.message() => m,
                        _ = super::stopped(&mut stop) => {
                            self.done = true;
                            continue;
                        }
                    };
                    match msg {
                        Ok(Some(resp)) => self.read(&resp),
                        Ok(None) => self.ending = Some(StoreError::Etcd("the watch ended".into())),
                        Err(e) => self.ending = Some(StoreError::Etcd(format!("watching: {e}"))),
                    }
                }
            }
        }
    }

    /// Take in one answer of this watcher's own etcd watch.
    fn read(&mut self, resp: &etcd_client::WatchResponse) {
        if resp.compact_revision() > 0 {
            let oldest = resp.compact_revision() as u64;
            self.shared.compacted.fetch_max(oldest, Ordering::Relaxed);
            self.ending = Some(StoreError::Expired {
                requested: self.seen,
                oldest,
            });
        } else if resp.canceled() {
            self.ending = Some(StoreError::Etcd(format!(
                "watch canceled: {}",
                resp.cancel_reason()
            )));
        } else {
            for ev in resp.events() {
                if let Some(ev) = self.convert(ev) {
                    self.seen = ev.revision;
                    self.buf.push_back(Arc::new(ev));
                }
            }
        }
    }

    /// Every change up to this revision was consumed; those under the prefix that are not
    /// delivered yet are buffered (so only once the buffer is empty is it a safe bookmark).
    pub(crate) fn progress(&self) -> u64 {
        match self.buf.front() {
            Some(next) => next.revision.saturating_sub(1),
            None => self.seen,
        }
    }

    /// Start this watcher's own etcd watch after `seen`.
    async fn open(&self) -> Result<etcd_client::WatchStream, StoreError> {
        let key = self.shared.full_key(&self.prefix);
        let options = WatchOptions::new()
            .with_range(range_end(key.as_bytes()))
            .with_start_revision(self.seen as i64 + 1)
            .with_prev_key();
        let mut client = self.shared.client.watch_client();
        self.shared
            .request("watching", client.watch(key, Some(options)))
            .await
    }

    /// An etcd event as the store's; `None` for what a watcher cannot be told (a key outside
    /// the store's, a deletion whose last value etcd no longer has).
    fn convert(&self, ev: &etcd_client::Event) -> Option<Event> {
        let kv = ev.kv()?;
        let key = store_key(&self.shared.cfg.prefix, kv.key())?;
        let revision = kv.mod_revision().max(0) as u64;
        let prev = ev.prev_kv().map(|p| Bytes::copy_from_slice(p.value()));
        Some(match ev.event_type() {
            EtcdEvent::Put => Event {
                kind: if kv.create_revision() == kv.mod_revision() {
                    EventType::Added
                } else {
                    EventType::Modified
                },
                key,
                value: Bytes::copy_from_slice(kv.value()),
                prev_value: prev,
                revision,
            },
            EtcdEvent::Delete => {
                let last = prev?;
                Event {
                    kind: EventType::Deleted,
                    key,
                    value: last.clone(),
                    prev_value: Some(last),
                    revision,
                }
            }
        })
    }
}
