//! The garbage collector: deletes dependents whose owners are all gone (background), and
//! honours the `foregroundDeletion` finalizer (dependents that block go first, then the
//! finalizer) and the `orphan` finalizer (dependents lose the owner reference, then the
//! finalizer).
//!
//! The owner→dependent graph is the informer caches' `owner` (uid) index over the watched
//! kinds (workloads, pods, ConfigMaps, PodDisruptionBudgets, Leases, Nodes); owners of any
//! served kind are checked through the API by uid.
//! Handlers only enqueue `Kind|namespace/name` keys; [`sync`] processes one object.

pub mod sync;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::Resource;
use tinykube_client::dynamic::ApiResource;
use tinykube_client::reflector::{Notification, Store};
use tinykube_client::{Kind, Scope};

use crate::context::{forward, Context, Shared, BY_OWNER};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// The finalizers the collector acts on.
pub const FOREGROUND: &str = "foregroundDeletion";
pub const ORPHAN: &str = "orphan";

/// Metadata access to one informer cache, whatever its kind.
pub trait MetaStore: Send + Sync {
    fn meta(&self, key: &str) -> Option<ObjectMeta>;
    fn dependents_of(&self, uid: &str) -> Vec<ObjectMeta>;
    fn all(&self) -> Vec<ObjectMeta>;
}

impl<K: Kind> MetaStore for Store<K>
where
    <K as Resource>::Scope: Scope,
{
    fn meta(&self, key: &str) -> Option<ObjectMeta> {
        self.get(key).map(|o| o.metadata().clone())
    }

    fn dependents_of(&self, uid: &str) -> Vec<ObjectMeta> {
        self.by_index(BY_OWNER, uid)
            .iter()
            .map(|o| o.metadata().clone())
            .collect()
    }

    fn all(&self) -> Vec<ObjectMeta> {
        self.list().iter().map(|o| o.metadata().clone()).collect()
    }
}

/// One watched kind: its served resource and its cache.
pub struct Watched {
    pub kind: &'static str,
    pub resource: ApiResource,
    pub store: Box<dyn MetaStore>,
}

/// Shared state of the collector.
pub struct Collector {
    pub ctx: Arc<Context>,
    /// Every kind whose objects may be owners or dependents.
    pub watched: Vec<Watched>,
    pub queue: WorkQueue,
    /// Owner uids confirmed absent through the API (upstream's absentOwnerCache).
    pub absent: Mutex<HashSet<String>>,
}

/// `Kind|namespace/name` (or `Kind|name`).
pub fn item(kind: &str, meta: &ObjectMeta) -> String {
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{kind}|{ns}/{name}"),
        _ => format!("{kind}|{name}"),
    }
}

pub fn is_deleting(meta: &ObjectMeta) -> bool {
    meta.deletion_timestamp.is_some()
}

pub fn has_finalizer(meta: &ObjectMeta, f: &str) -> bool {
    meta.finalizers.iter().flatten().any(|x| x == f)
}

type Handler = Box<dyn FnOnce(Arc<Collector>) -> BoxFuture<'static, ()> + Send>;

/// What `start` gathers from each watched kind before the collector exists.
#[derive(Default)]
struct Parts {
    watched: Vec<Watched>,
    ready: Vec<BoxFuture<'static, ()>>,
    handlers: Vec<Handler>,
    late: bool,
}

impl Parts {
    fn watch<K: Kind>(&mut self, shared: &Shared<K>)
    where
        <K as Resource>::Scope: Scope,
    {
        let Some(resource) = sync::resource_of(K::API_VERSION, K::KIND) else {
            return;
        };
        let store = shared.store();
        let Some(rx) = shared.subscribe() else {
            self.late = true;
            return;
        };
        let mut ready = store.clone();
        self.ready
            .push(Box::pin(async move { ready.wait_ready().await }));
        self.watched.push(Watched {
            kind: K::KIND,
            resource,
            store: Box::new(store),
        });
        self.handlers.push(Box::new(move |c: Arc<Collector>| {
            Box::pin(c.handle::<K>(K::KIND, rx))
        }));
    }
}

/// Subscribe to every watched kind and return the collector's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let mut parts = Parts::default();
    parts.watch(&ctx.pods);
    parts.watch(&ctx.replicasets);
    parts.watch(&ctx.deployments);
    parts.watch(&ctx.daemonsets);
    parts.watch(&ctx.controllerrevisions);
    parts.watch(&ctx.configmaps);
    parts.watch(&ctx.poddisruptionbudgets);
    parts.watch(&ctx.leases);
    parts.watch(&ctx.nodes);
    let workers = ctx.options.concurrent_gc_syncs;
    let ctx = ctx.clone();
    Box::pin(async move {
        if parts.late {
            tracing::error!("garbage collector started after the informers");
            return;
        }
        let c = Arc::new(Collector {
            ctx,
            watched: parts.watched,
            queue: WorkQueue::new(),
            absent: Mutex::new(HashSet::new()),
        });
        let handlers = futures::future::join_all(parts.handlers.into_iter().map(|h| h(c.clone())));
        let ready = parts.ready;
        let run = {
            let c = c.clone();
            async move {
                futures::future::join_all(ready).await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("garbagecollector", c.queue.clone(), workers, move |key| {
                    let s = s.clone();
                    async move { s.process(&key).await }
                })
                .await;
            }
        };
        tokio::join!(handlers, run);
    })
}

impl Collector {
    pub fn watched(&self, kind: &str) -> Option<&Watched> {
        self.watched.iter().find(|w| w.kind == kind)
    }

    pub fn store(&self, kind: &str) -> Option<&dyn MetaStore> {
        self.watched(kind).map(|w| w.store.as_ref())
    }

    /// Every object that needs a look: with owners, or held by a collector finalizer.
    fn enqueue_all(&self) {
        for w in &self.watched {
            for meta in w.store.all() {
                self.consider(w.kind, &meta);
            }
        }
    }

    fn consider(&self, kind: &str, meta: &ObjectMeta) {
        let held =
            is_deleting(meta) && (has_finalizer(meta, FOREGROUND) || has_finalizer(meta, ORPHAN));
        if held
            || meta
                .owner_references
                .as_ref()
                .is_some_and(|o| !o.is_empty())
        {
            self.queue.add(&item(kind, meta));
        }
    }

    /// Enqueue the (watched) owners of `meta`: a foreground deletion may be able to finish.
    fn enqueue_owners(&self, meta: &ObjectMeta) {
        for r in meta.owner_references.iter().flatten() {
            if let Some(w) = self.watched(&r.kind) {
                let owner = ObjectMeta {
                    name: Some(r.name.clone()),
                    namespace: meta.namespace.clone().filter(|_| w.resource.namespaced),
                    ..Default::default()
                };
                self.queue.add(&item(w.kind, &owner));
            }
        }
    }

    /// Enqueue every dependent of the object with `uid`.
    fn enqueue_dependents(&self, uid: &str) {
        for w in &self.watched {
            for dep in w.store.dependents_of(uid) {
                self.queue.add(&item(w.kind, &dep));
            }
        }
    }

    async fn handle<K: Kind>(
        self: Arc<Self>,
        kind: &'static str,
        rx: tokio::sync::broadcast::Receiver<Notification<K>>,
    ) where
        <K as Resource>::Scope: Scope,
    {
        let resync = self.clone();
        forward(
            rx,
            |n| match n {
                Notification::Add(o) => self.consider(kind, o.metadata()),
                Notification::Update { old, new } => {
                    let (o, n) = (old.metadata(), new.metadata());
                    if o.owner_references != n.owner_references
                        || o.deletion_timestamp != n.deletion_timestamp
                        || o.finalizers != n.finalizers
                    {
                        self.consider(kind, n);
                    }
                    if is_deleting(n) {
                        self.enqueue_owners(n);
                    }
                }
                Notification::Delete(o) => {
                    let meta = o.metadata();
                    if let Some(uid) = &meta.uid {
                        self.enqueue_dependents(uid);
                    }
                    self.enqueue_owners(meta);
                }
            },
            move || resync.enqueue_all(),
        )
        .await;
    }
}
