//! The reflector: an in-memory cache of one kind fed by a watcher, with named indexes (e.g.
//! pods by node) and add/update/delete notifications. One writer (the informer task), many cheap
//! readers; nothing should reconcile before [`Store::ready`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{Metadata, Resource};
use tokio::sync::{broadcast, watch};

use crate::api::{Api, Kind, ListParams, Scope};
use crate::watcher::{watcher, Event};

/// `namespace/name` or `name`.
pub fn key_of<K: Kind>(obj: &K) -> String
where
    <K as Resource>::Scope: Scope,
{
    let meta = obj.metadata();
    let name = meta.name.clone().unwrap_or_default();
    match &meta.namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name,
    }
}

/// The object as the cache keeps it: without `metadata.managedFields`, which no controller
/// reads and which would double a cached pod's size (upstream's informers drop them with
/// `TransformStripManagedFields` for the same reason).
fn without_managed_fields<K: Metadata<Ty = ObjectMeta>>(mut obj: K) -> K {
    obj.metadata_mut().managed_fields = None;
    obj
}

/// A change to the cache.
#[derive(Debug, Clone)]
pub enum Notification<K> {
    Add(Arc<K>),
    Update { old: Arc<K>, new: Arc<K> },
    Delete(Arc<K>),
}

type IndexFn<K> = Box<dyn Fn(&K) -> Vec<String> + Send + Sync>;
type TransformFn<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

struct Inner<K> {
    objects: BTreeMap<String, Arc<K>>,
    index_fns: HashMap<&'static str, IndexFn<K>>,
    indexes: HashMap<&'static str, HashMap<String, BTreeSet<String>>>,
    /// Per index value, a stamp that changes whenever an object under it is added, changed or
    /// removed (stamps are never reused), so readers can tell cheaply that nothing moved.
    stamps: HashMap<&'static str, HashMap<String, u64>>,
    next_stamp: u64,
}

impl<K> Inner<K> {
    fn stamp(&self, name: &str, value: &str) -> u64 {
        self.stamps
            .get(name)
            .and_then(|s| s.get(value))
            .copied()
            .unwrap_or(0)
    }

    fn unindex(&mut self, key: &str, obj: &K) {
        for (name, f) in &self.index_fns {
            if let Some(idx) = self.indexes.get_mut(name) {
                let stamps = self.stamps.entry(name).or_default();
                for value in f(obj) {
                    if let Some(set) = idx.get_mut(&value) {
                        set.remove(key);
                        if set.is_empty() {
                            idx.remove(&value);
                            stamps.remove(&value);
                        } else {
                            self.next_stamp += 1;
                            stamps.insert(value, self.next_stamp);
                        }
                    }
                }
            }
        }
    }

    fn index(&mut self, key: &str, obj: &K) {
        for (name, f) in &self.index_fns {
            let idx = self.indexes.entry(name).or_default();
            let stamps = self.stamps.entry(name).or_default();
            for value in f(obj) {
                self.next_stamp += 1;
                stamps.insert(value.clone(), self.next_stamp);
                idx.entry(value).or_default().insert(key.to_string());
            }
        }
    }
}

/// The read side of the cache; cheap to clone.
pub struct Store<K> {
    inner: Arc<RwLock<Inner<K>>>,
    ready: watch::Receiver<bool>,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Store {
            inner: self.inner.clone(),
            ready: self.ready.clone(),
        }
    }
}

impl<K: Kind> Store<K>
where
    <K as Resource>::Scope: Scope,
{
    /// The object at `namespace/name` (or `name` for cluster-scoped kinds).
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.inner.read().ok()?.objects.get(key).cloned()
    }

    /// How many objects the cache holds.
    pub fn len(&self) -> usize {
        self.inner.read().map(|i| i.objects.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner
            .read()
            .map(|i| i.objects.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Objects whose index `name` yields `value`.
    pub fn by_index(&self, name: &str, value: &str) -> Vec<Arc<K>> {
        self.by_index_stamped(name, value).0
    }

    /// The stamp [`Store::by_index_stamped`] would return now, without collecting the objects.
    pub fn index_stamp(&self, name: &str, value: &str) -> u64 {
        self.inner.read().map(|i| i.stamp(name, value)).unwrap_or(0)
    }

    /// [`Store::by_index`] with a stamp of those objects: the same stamp later means the very
    /// same objects (stamps are never reused); 0 when there are none.
    pub fn by_index_stamped(&self, name: &str, value: &str) -> (Vec<Arc<K>>, u64) {
        let Ok(inner) = self.inner.read() else {
            return (Vec::new(), 0);
        };
        let stamp = inner.stamp(name, value);
        let objects = inner
            .indexes
            .get(name)
            .and_then(|idx| idx.get(value))
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| inner.objects.get(k).cloned())
                    .collect()
            })
            .unwrap_or_default();
        (objects, stamp)
    }

    /// Whether the first list has landed.
    pub fn ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Wait for the first list.
    pub async fn wait_ready(&mut self) {
        let _ = self.ready.wait_for(|r| *r).await;
    }
}

/// A cache of kind `K` kept current by a watcher, with notifications to any number of
/// subscribers.
pub struct Informer<K> {
    inner: Arc<RwLock<Inner<K>>>,
    ready_tx: watch::Sender<bool>,
    ready_rx: watch::Receiver<bool>,
    tx: broadcast::Sender<Notification<K>>,
    api: Api<K>,
    lp: ListParams,
    /// What an object is cut down to before it is cached (upstream's `SetTransform`).
    transform: Option<TransformFn<K>>,
}

impl<K: Kind> Informer<K>
where
    <K as Resource>::Scope: Scope,
{
    pub fn new(api: Api<K>, lp: ListParams) -> Self {
        let (ready_tx, ready_rx) = watch::channel(false);
        // Room for 1024 notifications per informer, the initial size of upstream's per-listener
        // ring: the slots are allocated up front (4096 of them held 196 KiB an informer at
        // rest); a subscriber that falls further behind gets `Lagged` and resyncs from the cache.
        let (tx, _) = broadcast::channel(1024);
        Informer {
            inner: Arc::new(RwLock::new(Inner {
                objects: BTreeMap::new(),
                index_fns: HashMap::new(),
                indexes: HashMap::new(),
                stamps: HashMap::new(),
                next_stamp: 0,
            })),
            ready_tx,
            ready_rx,
            tx,
            api,
            lp,
            transform: None,
        }
    }

    /// Cache each object as `f` leaves it (after dropping its managedFields), as upstream's
    /// informer transforms: a component that reads a few fields keeps only those.
    pub fn with_transform(mut self, f: impl Fn(K) -> K + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(f));
        self
    }

    fn cached(&self, obj: K) -> K {
        let obj = without_managed_fields(obj);
        match &self.transform {
            Some(f) => f(obj),
            None => obj,
        }
    }

    /// Add a named index before running (e.g. `"node"` → `spec.nodeName`).
    pub fn with_index(
        self,
        name: &'static str,
        f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        if let Ok(mut inner) = self.inner.write() {
            inner.index_fns.insert(name, Box::new(f));
            inner.indexes.insert(name, HashMap::new());
        }
        self
    }

    pub fn store(&self) -> Store<K> {
        Store {
            inner: self.inner.clone(),
            ready: self.ready_rx.clone(),
        }
    }

    /// Notifications from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Notification<K>> {
        self.tx.subscribe()
    }

    fn apply(&self, event: Event<K>) {
        let Ok(mut inner) = self.inner.write() else {
            return;
        };
        let mut out = Vec::new();
        match event {
            Event::Restarted(items) => {
                let fresh: BTreeMap<String, Arc<K>> = items
                    .into_iter()
                    .map(|o| (key_of(&o), Arc::new(self.cached(o))))
                    .collect();
                let gone: Vec<String> = inner
                    .objects
                    .keys()
                    .filter(|k| !fresh.contains_key(*k))
                    .cloned()
                    .collect();
                for key in gone {
                    if let Some(old) = inner.objects.remove(&key) {
                        inner.unindex(&key, &old);
                        out.push(Notification::Delete(old));
                    }
                }
                for (key, new) in fresh {
                    match inner.objects.insert(key.clone(), new.clone()) {
                        Some(old) => {
                            inner.unindex(&key, &old);
                            if old.metadata().resource_version != new.metadata().resource_version {
                                out.push(Notification::Update {
                                    old,
                                    new: new.clone(),
                                });
                            }
                        }
                        None => out.push(Notification::Add(new.clone())),
                    }
                    inner.index(&key, &new);
                }
            }
            Event::Applied(o) => {
                let key = key_of(&o);
                let new = Arc::new(self.cached(o));
                match inner.objects.insert(key.clone(), new.clone()) {
                    Some(old) => {
                        inner.unindex(&key, &old);
                        out.push(Notification::Update {
                            old,
                            new: new.clone(),
                        });
                    }
                    None => out.push(Notification::Add(new.clone())),
                }
                inner.index(&key, &new);
            }
            Event::Deleted(o) => {
                let key = key_of(&o);
                if let Some(old) = inner.objects.remove(&key) {
                    inner.unindex(&key, &old);
                }
                out.push(Notification::Delete(Arc::new(o)));
            }
        }
        drop(inner);
        for n in out {
            let _ = self.tx.send(n);
        }
    }

    /// Keep the cache current until the returned future is dropped.
    pub async fn run(self) {
        let mut events = Box::pin(watcher(self.api.clone(), self.lp.clone()));
        while let Some(ev) = events.next().await {
            match ev {
                Ok(ev) => {
                    let restarted = matches!(ev, Event::Restarted(_));
                    self.apply(ev);
                    if restarted {
                        let _ = self.ready_tx.send(true);
                    }
                }
                Err(e) => tracing::warn!(kind = K::KIND, error = %e, "watch failed; retrying"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn the_cache_keeps_no_managed_fields() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "labels": {"a": "b"}, "managedFields": [
                {"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}}}}}]},
        }))
        .unwrap();
        let cached = without_managed_fields(pod);
        assert_eq!(cached.metadata.managed_fields, None);
        assert_eq!(cached.metadata.labels.unwrap()["a"], "b");
    }
}
