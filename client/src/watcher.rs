//! The watcher: list, then watch from the list's resourceVersion; a closed stream is watched
//! again from the last resourceVersion seen; 410 Gone (history compacted) re-lists; failures back
//! off. An explicit state machine with one `step`, as kube-rs' watcher.

use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::Resource;

use crate::api::{Api, Kind, ListParams, Scope};
use crate::error::ClientError;
use crate::watch::WatchEvent;

/// What a watcher reports.
#[derive(Debug, Clone)]
pub enum Event<K> {
    /// A full list: the complete current state (first list, or re-list after 410).
    Restarted(Vec<K>),
    /// An object was added or modified.
    Applied(K),
    Deleted(K),
}

type EventStream<K> = Pin<Box<dyn Stream<Item = Result<WatchEvent<K>, ClientError>> + Send>>;

enum State<K> {
    /// Nothing known: list next.
    Empty,
    /// Listed or watched up to `resource_version`; no stream open.
    Idle { resource_version: String },
    Watching {
        resource_version: String,
        stream: EventStream<K>,
    },
}

struct Machine<K> {
    api: Api<K>,
    lp: ListParams,
    state: State<K>,
    backoff: Duration,
}

const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

impl<K: Kind> Machine<K>
where
    <K as Resource>::Scope: Scope,
{
    async fn pause(&mut self) {
        use rand::Rng;
        let jitter = rand::rng().random_range(0.8..1.2);
        tokio::time::sleep(self.backoff.mul_f64(jitter)).await;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
    }

    /// Advance until there is something to report.
    async fn step(&mut self) -> Result<Event<K>, ClientError> {
        loop {
            match std::mem::replace(&mut self.state, State::Empty) {
                State::Empty => match self.api.list(&self.lp).await {
                    Ok(list) => {
                        self.backoff = BACKOFF_START;
                        let resource_version = list.metadata.resource_version.unwrap_or_default();
                        self.state = State::Idle { resource_version };
                        return Ok(Event::Restarted(list.items));
                    }
                    Err(e) => {
                        self.pause().await;
                        return Err(e);
                    }
                },
                State::Idle { resource_version } => {
                    match self.api.watch(&self.lp, &resource_version).await {
                        Ok(stream) => {
                            self.state = State::Watching {
                                resource_version,
                                stream: Box::pin(stream),
                            };
                        }
                        Err(e) if e.is_gone() => self.state = State::Empty,
                        Err(e) => {
                            self.state = State::Idle { resource_version };
                            self.pause().await;
                            return Err(e);
                        }
                    }
                }
                State::Watching {
                    mut resource_version,
                    mut stream,
                } => {
                    let next = stream.next().await;
                    let rv_of = |o: &K| o.metadata().resource_version.clone().unwrap_or_default();
                    let out = match next {
                        Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o))) => {
                            resource_version = rv_of(&o);
                            Some(Ok(Event::Applied(o)))
                        }
                        Some(Ok(WatchEvent::Deleted(o))) => {
                            resource_version = rv_of(&o);
                            Some(Ok(Event::Deleted(o)))
                        }
                        Some(Ok(WatchEvent::Bookmark(rv))) => {
                            resource_version = rv;
                            None
                        }
                        Some(Ok(WatchEvent::Error(status))) if status.code == 410 => {
                            tracing::debug!(kind = K::KIND, "watch history expired: re-listing");
                            self.state = State::Empty;
                            continue;
                        }
                        Some(Ok(WatchEvent::Error(status))) => {
                            self.state = State::Idle { resource_version };
                            self.pause().await;
                            return Err(ClientError::Api(status));
                        }
                        Some(Err(e)) => {
                            self.state = State::Idle { resource_version };
                            self.pause().await;
                            return Err(e);
                        }
                        None => {
                            self.state = State::Idle { resource_version };
                            continue;
                        }
                    };
                    self.backoff = BACKOFF_START;
                    self.state = State::Watching {
                        resource_version,
                        stream,
                    };
                    if let Some(out) = out {
                        return out;
                    }
                }
            }
        }
    }
}

/// An endless stream of watcher events for `api` filtered by `lp`; errors are reported and
/// retried with backoff.
pub fn watcher<K: Kind>(
    api: Api<K>,
    lp: ListParams,
) -> impl Stream<Item = Result<Event<K>, ClientError>> + Send
where
    <K as Resource>::Scope: Scope,
{
    let machine = Machine {
        api,
        lp,
        state: State::Empty,
        backoff: BACKOFF_START,
    };
    futures::stream::unfold(machine, |mut m| async move {
        let item = m.step().await;
        Some((item, m))
    })
}
