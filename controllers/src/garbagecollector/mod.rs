//! The garbage collector: deletes dependents whose owners are all gone (background), and
//! honours the `foregroundDeletion` finalizer (dependents that block go first, then the
//! finalizer) and the `orphan` finalizer (dependents lose the owner reference, then the
//! finalizer).
//!
//! The owner→dependent graph is the informer caches' `owner` (uid) index over the watched
//! kinds ([`WATCHED`]); owners of any served kind are checked through the API by uid.
//! Handlers only enqueue `Kind|namespace/name` keys; [`sync`] processes one object.

pub mod sync;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::Resource;
use tinykube_client::reflector::{Notification, Store};
use tinykube_client::{Kind, Scope};

use crate::context::{forward, Context, Shared, BY_OWNER};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// The finalizers the collector acts on.
pub const FOREGROUND: &str = "foregroundDeletion";
pub const ORPHAN: &str = "orphan";

/// The kinds whose objects the collector watches as dependents (and as owners).
pub const WATCHED: &[&str] = &[
    "Pod",
    "ReplicaSet",
    "Deployment",
    "DaemonSet",
    "ControllerRevision",
];

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

/// Shared state of the collector.
pub struct Collector {
    pub ctx: Arc<Context>,
    /// Caches by kind, in [`WATCHED`] order.
    pub stores: Vec<(&'static str, Box<dyn MetaStore>)>,
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

fn subscribe<K: Kind>(
    shared: &Shared<K>,
) -> Option<(Store<K>, tokio::sync::broadcast::Receiver<Notification<K>>)>
where
    <K as Resource>::Scope: Scope,
{
    Some((shared.store(), shared.subscribe()?))
}

/// Subscribe to every watched kind and return the collector's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let pods = subscribe(&ctx.pods);
    let rss = subscribe(&ctx.replicasets);
    let deps = subscribe(&ctx.deployments);
    let dss = subscribe(&ctx.daemonsets);
    let crs = subscribe(&ctx.controllerrevisions);
    let workers = ctx.options.concurrent_gc_syncs;
    let ctx = ctx.clone();
    Box::pin(async move {
        let (Some(pods), Some(rss), Some(deps), Some(dss), Some(crs)) = (pods, rss, deps, dss, crs)
        else {
            tracing::error!("garbage collector started after the informers");
            return;
        };
        let mut waits: Vec<BoxFuture<'static, ()>> = Vec::new();
        macro_rules! ready {
            ($s:expr) => {{
                let mut s = $s.clone();
                waits.push(Box::pin(async move { s.wait_ready().await }));
            }};
        }
        ready!(pods.0);
        ready!(rss.0);
        ready!(deps.0);
        ready!(dss.0);
        ready!(crs.0);
        let c = Arc::new(Collector {
            ctx,
            stores: vec![
                ("Pod", Box::new(pods.0) as Box<dyn MetaStore>),
                ("ReplicaSet", Box::new(rss.0)),
                ("Deployment", Box::new(deps.0)),
                ("DaemonSet", Box::new(dss.0)),
                ("ControllerRevision", Box::new(crs.0)),
            ],
            queue: WorkQueue::new(),
            absent: Mutex::new(HashSet::new()),
        });
        let handlers = futures::future::join5(
            c.clone().handle("Pod", pods.1),
            c.clone().handle("ReplicaSet", rss.1),
            c.clone().handle("Deployment", deps.1),
            c.clone().handle("DaemonSet", dss.1),
            c.clone().handle("ControllerRevision", crs.1),
        );
        let run = {
            let c = c.clone();
            async move {
                futures::future::join_all(waits).await;
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
    pub fn store(&self, kind: &str) -> Option<&dyn MetaStore> {
        self.stores
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, s)| s.as_ref())
    }

    /// Every object that needs a look: with owners, or held by a collector finalizer.
    fn enqueue_all(&self) {
        for (kind, store) in &self.stores {
            for meta in store.all() {
                self.consider(kind, &meta);
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
            if WATCHED.contains(&r.kind.as_str()) {
                let owner = ObjectMeta {
                    name: Some(r.name.clone()),
                    namespace: meta.namespace.clone(),
                    ..Default::default()
                };
                self.queue.add(&item(&r.kind, &owner));
            }
        }
    }

    /// Enqueue every dependent of the object with `uid`.
    fn enqueue_dependents(&self, uid: &str) {
        for (kind, store) in &self.stores {
            for dep in store.dependents_of(uid) {
                self.queue.add(&item(kind, &dep));
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
