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

/// A stream of watch events, as a source opens it.
pub type EventStream<T> = Pin<Box<dyn Stream<Item = Result<WatchEvent<T>, ClientError>> + Send>>;

/// A list, as a source reads it: the items and the list's resourceVersion.
pub struct Listed<T> {
    pub items: Vec<T>,
    pub resource_version: String,
}

/// What a watcher lists and watches: a typed [`Api`] or an untyped
/// [`DynamicApi`](crate::dynamic::DynamicApi). The state machine is the same for both.
/// Objects per page of an informer's list.
pub const LIST_PAGE: u32 = 500;

pub trait ListWatch: Send + 'static {
    type Item: Send + 'static;
    /// What the logs call it.
    fn describe(&self) -> String;
    fn list(
        &self,
        lp: &ListParams,
    ) -> impl std::future::Future<Output = Result<Listed<Self::Item>, ClientError>> + Send;
    fn watch(
        &self,
        lp: &ListParams,
        resource_version: &str,
    ) -> impl std::future::Future<Output = Result<EventStream<Self::Item>, ClientError>> + Send;
    /// An item's `metadata.resourceVersion`.
    fn resource_version(item: &Self::Item) -> Option<String>;
}

impl<K: Kind> ListWatch for Api<K>
where
    <K as Resource>::Scope: Scope,
{
    type Item = K;

    fn describe(&self) -> String {
        K::KIND.to_string()
    }

    /// In pages of [`LIST_PAGE`] (unless `lp` sets a limit), as upstream's reflectors list, so
    /// that a cache of 10 000 pods never holds one 10 000-pod answer; the watch starts from the
    /// first page's resourceVersion (later pages are read at the same snapshot, and events
    /// after it are replayed to the cache in any case).
    async fn list(&self, lp: &ListParams) -> Result<Listed<K>, ClientError> {
        let mut page = lp.clone();
        page.limit = Some(lp.limit.unwrap_or(LIST_PAGE));
        let mut items = Vec::new();
        let mut resource_version = None;
        loop {
            let list = Api::list(self, &page).await?;
            resource_version.get_or_insert(list.metadata.resource_version.unwrap_or_default());
            items.extend(list.items);
            match list.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) if lp.limit.is_none() => page.continue_token = Some(token),
                _ => break,
            }
        }
        Ok(Listed {
            resource_version: resource_version.unwrap_or_default(),
            items,
        })
    }

    async fn watch(
        &self,
        lp: &ListParams,
        resource_version: &str,
    ) -> Result<EventStream<K>, ClientError> {
        Ok(Box::pin(Api::watch(self, lp, resource_version).await?))
    }

    fn resource_version(item: &K) -> Option<String> {
        item.metadata().resource_version.clone()
    }
}

enum State<T> {
    /// Nothing known: list next.
    Empty,
    /// Listed or watched up to `resource_version`; no stream open.
    Idle { resource_version: String },
    Watching {
        resource_version: String,
        stream: EventStream<T>,
    },
}

struct Machine<S: ListWatch> {
    source: S,
    lp: ListParams,
    state: State<S::Item>,
    backoff: Duration,
}

const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

impl<S: ListWatch> Machine<S> {
    async fn pause(&mut self) {
        use rand::Rng;
        let jitter = rand::rng().random_range(0.8..1.2);
        tokio::time::sleep(self.backoff.mul_f64(jitter)).await;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
    }

    /// Advance until there is something to report: list, watch from the list's
    /// resourceVersion, re-watch a closed stream from the last one seen, re-list on 410.
    async fn step(&mut self) -> Result<Event<S::Item>, ClientError> {
        loop {
            match std::mem::replace(&mut self.state, State::Empty) {
                State::Empty => match self.source.list(&self.lp).await {
                    Ok(list) => {
                        self.backoff = BACKOFF_START;
                        self.state = State::Idle {
                            resource_version: list.resource_version,
                        };
                        return Ok(Event::Restarted(list.items));
                    }
                    Err(e) => {
                        self.pause().await;
                        return Err(e);
                    }
                },
                State::Idle { resource_version } => {
                    match self.source.watch(&self.lp, &resource_version).await {
                        Ok(stream) => {
                            self.state = State::Watching {
                                resource_version,
                                stream,
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
                    let out = match stream.next().await {
                        Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o))) => {
                            resource_version = S::resource_version(&o).unwrap_or(resource_version);
                            Some(Event::Applied(o))
                        }
                        Some(Ok(WatchEvent::Deleted(o))) => {
                            resource_version = S::resource_version(&o).unwrap_or(resource_version);
                            Some(Event::Deleted(o))
                        }
                        Some(Ok(WatchEvent::Bookmark(rv))) => {
                            resource_version = rv;
                            None
                        }
                        Some(Ok(WatchEvent::Error(status))) if status.code == 410 => {
                            tracing::debug!(
                                watched = %self.source.describe(),
                                "watch history expired: re-listing"
                            );
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
                        return Ok(out);
                    }
                }
            }
        }
    }
}

/// An endless stream of watcher events for `source` filtered by `lp`; errors are reported
/// and retried with backoff.
pub fn watch_source<S: ListWatch>(
    source: S,
    lp: ListParams,
) -> impl Stream<Item = Result<Event<S::Item>, ClientError>> + Send {
    let machine = Machine {
        source,
        lp,
        state: State::Empty,
        backoff: BACKOFF_START,
    };
    futures::stream::unfold(machine, |mut m| async move {
        let item = m.step().await;
        Some((item, m))
    })
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
    watch_source(api, lp)
}
