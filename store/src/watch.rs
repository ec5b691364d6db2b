//! A watch: replays retained history newer than its start, then follows the live fan-out; a
//! watcher that falls behind the fan-out refills from history instead of losing events.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::broadcast;

use crate::{Event, History, Store, StoreError};

pub struct Watch {
    store: Store,
    prefix: String,
    replay: VecDeque<Arc<Event>>,
    rx: broadcast::Receiver<Arc<Event>>,
    /// Revision of the last event delivered (or skipped as not ours).
    last: u64,
    failed: Option<StoreError>,
}

impl Watch {
    pub(crate) fn start(
        store: Store,
        history: &History,
        prefix: &str,
        after: u64,
    ) -> Result<Watch, StoreError> {
        if after < history.oldest {
            return Err(StoreError::Expired {
                requested: after,
                oldest: history.oldest,
            });
        }
        let replay = history
            .events
            .iter()
            .filter(|(_, e)| e.revision > after && e.key.starts_with(prefix))
            .map(|(_, e)| e.clone())
            .collect();
        Ok(Watch {
            rx: history.tx.subscribe(),
            store,
            prefix: prefix.to_string(),
            replay,
            last: after,
            failed: None,
        })
    }

    /// Refill from history after falling behind the live fan-out.
    fn refill(&mut self) -> Result<(), StoreError> {
        let history = self
            .store
            .history()
            .lock()
            .map_err(|_| StoreError::Closed)?;
        if self.last < history.oldest {
            return Err(StoreError::Expired {
                requested: self.last,
                oldest: history.oldest,
            });
        }
        self.replay = history
            .events
            .iter()
            .filter(|(_, e)| e.revision > self.last && e.key.starts_with(&self.prefix))
            .map(|(_, e)| e.clone())
            .collect();
        self.rx = history.tx.subscribe();
        Ok(())
    }

    /// The next event, `Err` once (then `None`) if the watch cannot continue.
    pub async fn next(&mut self) -> Option<Result<Arc<Event>, StoreError>> {
        if let Some(e) = self.failed.take() {
            return Some(Err(e));
        }
        loop {
            if let Some(ev) = self.replay.pop_front() {
                if ev.revision > self.last {
                    self.last = ev.revision;
                    return Some(Ok(ev));
                }
                continue;
            }
            match self.rx.recv().await {
                Ok(ev) => {
                    if ev.revision <= self.last {
                        continue;
                    }
                    self.last = ev.revision;
                    if ev.key.starts_with(&self.prefix) {
                        return Some(Ok(ev));
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if let Err(e) = self.refill() {
                        return Some(Err(e));
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}
