//! A watch: replays the persisted history newer than its start, then follows the live fan-out.
//! It subscribes before reading the history, so nothing falls between the two, and skips live
//! events it already replayed. A watcher that falls behind the fan-out refills from the
//! history; if that history was compacted meanwhile, it ends with `Expired` rather than skip.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::broadcast;

use super::codec;
use super::Shared;
use crate::{lock, Event, StoreError};

/// History records read per refill.
const CHUNK: u64 = 256;

pub struct Watch {
    shared: Arc<Shared>,
    prefix: String,
    /// `None` once the store closed.
    rx: Option<broadcast::Receiver<Arc<Event>>>,
    /// Events under the prefix read from the history, not delivered yet.
    buf: VecDeque<Arc<Event>>,
    /// The next history revision to read, and the last to read before following the fan-out.
    next: u64,
    until: u64,
    /// The highest revision consumed, from the history or the fan-out, delivered or not ours.
    seen: u64,
    /// Why the watch ends, delivered after what was read before the failure.
    ending: Option<StoreError>,
    done: bool,
}

impl Watch {
    pub(crate) fn start(
        shared: Arc<Shared>,
        prefix: &str,
        after: u64,
    ) -> Result<Watch, StoreError> {
        let (rx, until) = {
            let feed = lock(&shared.feed);
            if after < feed.oldest() {
                return Err(StoreError::Expired {
                    requested: after,
                    oldest: feed.oldest(),
                });
            }
            let tx = feed.tx.as_ref().ok_or(StoreError::Closed)?;
            (tx.subscribe(), feed.published)
        };
        Ok(Watch {
            shared,
            prefix: prefix.to_string(),
            rx: Some(rx),
            buf: VecDeque::new(),
            next: after.saturating_add(1),
            until,
            seen: after,
            ending: None,
            done: false,
        })
    }

    /// The next event under the prefix, in revision order. `Some(Err(_))` once if the watch cannot
    /// continue (`Expired`: re-list), then `None`; `None` also when the store closes.
    pub async fn next(&mut self) -> Option<Result<Arc<Event>, StoreError>> {
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
            if self.next <= self.until {
                self.fill();
                continue;
            }
            let Some(rx) = self.rx.as_mut() else {
                self.done = true;
                continue;
            };
            match rx.recv().await {
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
                    self.resume();
                }
                Err(broadcast::error::RecvError::Closed) => self.done = true,
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

    /// After falling behind the fan-out: subscribe again and read what was missed from the
    /// history.
    fn resume(&mut self) {
        let feed = lock(&self.shared.feed);
        if self.seen < feed.oldest() {
            self.ending = Some(StoreError::Expired {
                requested: self.seen,
                oldest: feed.oldest(),
            });
            return;
        }
        self.rx = feed.tx.as_ref().map(|tx| tx.subscribe());
        self.next = self.seen.saturating_add(1);
        self.until = feed.published;
    }

    /// Read the next chunk of history into `buf`, or set `ending` if it cannot be read.
    fn fill(&mut self) {
        let to = self.until.min(self.next + CHUNK - 1);
        let range = codec::hist_key(self.next)..=codec::hist_key(to);
        for item in self.shared.tree.range(range) {
            let read = item.map_err(StoreError::History).and_then(|(k, v)| {
                let rev = codec::hist_revision(&k)?;
                Ok((rev, v))
            });
            let (rev, raw) = match read {
                Ok(r) => r,
                Err(e) => return self.fail(e),
            };
            if rev != self.next {
                break;
            }
            match codec::decode_event(rev, &raw, &self.prefix) {
                Ok(Some(ev)) => self.buf.push_back(Arc::new(ev)),
                Ok(None) => {}
                Err(e) => return self.fail(e),
            }
            self.seen = rev;
            self.next = rev + 1;
        }
        if self.next <= to {
            // Revisions are contiguous: a missing one was compacted while we read.
            let oldest = lock(&self.shared.feed).oldest();
            self.fail(StoreError::Expired {
                requested: self.seen,
                oldest,
            });
        }
    }

    fn fail(&mut self, e: StoreError) {
        tracing::warn!(error = %e, prefix = %self.prefix, "watch ends");
        self.ending = Some(e);
        self.next = self.until + 1;
    }
}
