//! The garbage collector: deletes dependents whose owners are all gone (background), and
//! honours the `foregroundDeletion` finalizer (dependents that block go first, then the
//! finalizer) and the `orphan` finalizer (dependents lose the owner reference, then the
//! finalizer).
//!
//! The owner→dependent graph is the monitors' `owner` (uid) indexes ([`monitors`]: the shared
//! typed informers plus a dynamic metadata watch of every other deletable resource discovery
//! lists, custom resources included, resynced from discovery every
//! `Options::gc_resync_period`). An owner reference's kind is resolved through discovery
//! ([`mapper`]); owners are checked in the monitors' caches, then through the API by uid.
//! Handlers only enqueue `Kind.group|namespace/name` keys; [`sync`] processes one object.

pub mod mapper;
pub mod monitors;
pub mod sync;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::Resource;
use tinykube_client::dynamic::ApiResource;
use tinykube_client::reflector::{Notification, Store};
use tinykube_client::{Kind, Scope};
use tokio::task::JoinSet;

use crate::context::{forward, Context, Shared, BY_OWNER};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;
use mapper::{group_kind, group_of, Mapper};
use monitors::Monitor;

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

/// One change an informer or a dynamic monitor reports, by its metadata.
pub enum Change<'a> {
    Add(&'a ObjectMeta),
    Update {
        old: &'a ObjectMeta,
        new: &'a ObjectMeta,
    },
    Delete(&'a ObjectMeta),
}

/// Shared state of the collector.
pub struct Collector {
    pub ctx: Arc<Context>,
    /// Every monitored kind, by group-kind (`Pod`, `ReplicaSet.apps`, `CronTab.example.com`).
    monitors: RwLock<BTreeMap<String, Arc<Monitor>>>,
    /// Owner references' kinds → served resources, from discovery.
    pub mapper: Mapper,
    pub queue: WorkQueue,
    /// Owners (group-kind, key and uid) confirmed absent through the API (upstream's
    /// absentOwnerCache).
    pub absent: Mutex<HashSet<String>>,
}

/// `Kind.group|namespace/name` (or `Kind.group|name`; the core group is left out).
pub fn item(gk: &str, meta: &ObjectMeta) -> String {
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{gk}|{ns}/{name}"),
        _ => format!("{gk}|{name}"),
    }
}

pub fn is_deleting(meta: &ObjectMeta) -> bool {
    meta.deletion_timestamp.is_some()
}

pub fn has_finalizer(meta: &ObjectMeta, f: &str) -> bool {
    meta.finalizers.iter().flatten().any(|x| x == f)
}

/// The served resource of a typed kind, from its `k8s-openapi` facts.
fn typed_resource<K: Kind>() -> ApiResource
where
    <K as Resource>::Scope: Scope,
{
    ApiResource {
        group: K::GROUP.to_string(),
        version: K::VERSION.to_string(),
        kind: K::KIND.to_string(),
        plural: K::URL_PATH_SEGMENT.to_string(),
        namespaced: <K::Scope as Scope>::NAMESPACED,
        verbs: Vec::new(),
    }
}

type Handler = Box<dyn FnOnce(Arc<Collector>) -> BoxFuture<'static, ()> + Send>;

/// What `start` gathers from each shared typed informer before the collector exists.
#[derive(Default)]
struct Parts {
    monitors: BTreeMap<String, Arc<Monitor>>,
    ready: Vec<BoxFuture<'static, ()>>,
    handlers: Vec<Handler>,
    late: bool,
}

impl Parts {
    fn watch<K: Kind>(&mut self, shared: &Shared<K>)
    where
        <K as Resource>::Scope: Scope,
    {
        let store = shared.store();
        let Some(rx) = shared.subscribe() else {
            self.late = true;
            return;
        };
        let gk = group_kind(K::GROUP, K::KIND);
        let mut ready = store.clone();
        self.ready
            .push(Box::pin(async move { ready.wait_ready().await }));
        let monitor = Monitor::typed(typed_resource::<K>(), Arc::new(store));
        self.monitors.insert(gk.clone(), Arc::new(monitor));
        self.handlers.push(Box::new(move |c: Arc<Collector>| {
            Box::pin(c.handle::<K>(gk, rx))
        }));
    }
}

/// Subscribe to the shared informers and return the collector's run future: discover and
/// start the dynamic monitors, wait for the first lists, then run the workers and resync the
/// monitors with discovery every `gc_resync_period`.
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
    parts.watch(&ctx.namespaces);
    let workers = ctx.options.concurrent_gc_syncs;
    let period = ctx.options.gc_resync_period;
    let ctx = ctx.clone();
    Box::pin(async move {
        if parts.late {
            tracing::error!("garbage collector started after the informers");
            return;
        }
        let client = ctx.client.clone();
        let discover: mapper::Discover = Arc::new(move || {
            let client = client.clone();
            Box::pin(async move { tinykube_client::dynamic::discover_partial(&client).await })
        });
        let c = Arc::new(Collector {
            queue: ctx.queue(),
            ctx,
            monitors: RwLock::new(parts.monitors),
            mapper: Mapper::new(discover, mapper::REFRESH_INTERVAL),
            absent: Mutex::new(HashSet::new()),
        });
        let handlers = futures::future::join_all(parts.handlers.into_iter().map(|h| h(c.clone())));
        let ready = parts.ready;
        let run = {
            let c = c.clone();
            async move {
                // Dropping this future drops `tasks`, which stops every dynamic monitor.
                let mut tasks = JoinSet::new();
                c.resync(&mut tasks, period).await;
                futures::future::join_all(ready).await;
                c.enqueue_all();
                let s = c.clone();
                let work = run_workers("garbagecollector", c.queue.clone(), workers, move |key| {
                    let s = s.clone();
                    async move { s.process(&key).await }
                });
                let resyncs = async {
                    loop {
                        tokio::time::sleep(period).await;
                        c.resync(&mut tasks, period).await;
                    }
                };
                tokio::join!(work, resyncs);
            }
        };
        tokio::join!(handlers, run);
    })
}

impl Collector {
    /// A snapshot of the monitors.
    pub fn monitors(&self) -> Vec<(String, Arc<Monitor>)> {
        let monitors = match self.monitors.read() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        monitors
            .iter()
            .map(|(gk, m)| (gk.clone(), m.clone()))
            .collect()
    }

    fn monitors_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<Monitor>>> {
        match self.monitors.write() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        }
    }

    /// The monitor of a group-kind.
    pub fn monitor(&self, gk: &str) -> Option<Arc<Monitor>> {
        match self.monitors.read() {
            Ok(m) => m.get(gk).cloned(),
            Err(p) => p.into_inner().get(gk).cloned(),
        }
    }

    /// Every object that needs a look: with owners, or held by a collector finalizer.
    fn enqueue_all(&self) {
        for (gk, m) in self.monitors() {
            for meta in m.store.all() {
                self.consider(&gk, &meta);
            }
        }
    }

    fn consider(&self, gk: &str, meta: &ObjectMeta) {
        let held =
            is_deleting(meta) && (has_finalizer(meta, FOREGROUND) || has_finalizer(meta, ORPHAN));
        if held
            || meta
                .owner_references
                .as_ref()
                .is_some_and(|o| !o.is_empty())
        {
            self.queue.add(&item(gk, meta));
        }
    }

    /// Enqueue the (monitored) owners of `meta`: a foreground deletion may be able to finish.
    fn enqueue_owners(&self, meta: &ObjectMeta) {
        for r in meta.owner_references.iter().flatten() {
            let gk = group_kind(group_of(&r.api_version), &r.kind);
            if let Some(m) = self.monitor(&gk) {
                let owner = ObjectMeta {
                    name: Some(r.name.clone()),
                    namespace: meta.namespace.clone().filter(|_| m.resource.namespaced),
                    ..Default::default()
                };
                self.queue.add(&item(&gk, &owner));
            }
        }
    }

    /// Enqueue every dependent of the object with `uid`.
    fn enqueue_dependents(&self, uid: &str) {
        for (gk, m) in self.monitors() {
            for dep in m.store.dependents_of(uid) {
                self.queue.add(&item(&gk, &dep));
            }
        }
    }

    /// What a monitor of `gk` saw change: enqueue the keys it concerns.
    pub fn on_change(&self, gk: &str, change: Change<'_>) {
        match change {
            Change::Add(meta) => self.consider(gk, meta),
            Change::Update { old, new } => {
                if old.owner_references != new.owner_references
                    || old.deletion_timestamp != new.deletion_timestamp
                    || old.finalizers != new.finalizers
                {
                    self.consider(gk, new);
                }
                if is_deleting(new) {
                    self.enqueue_owners(new);
                }
            }
            Change::Delete(meta) => {
                if let Some(uid) = &meta.uid {
                    self.enqueue_dependents(uid);
                }
                self.enqueue_owners(meta);
            }
        }
    }

    async fn handle<K: Kind>(
        self: Arc<Self>,
        gk: String,
        rx: tokio::sync::broadcast::Receiver<Notification<K>>,
    ) where
        <K as Resource>::Scope: Scope,
    {
        let resync = self.clone();
        forward(
            rx,
            |n| match n {
                Notification::Add(o) => self.on_change(&gk, Change::Add(o.metadata())),
                Notification::Update { old, new } => self.on_change(
                    &gk,
                    Change::Update {
                        old: old.metadata(),
                        new: new.metadata(),
                    },
                ),
                Notification::Delete(o) => self.on_change(&gk, Change::Delete(o.metadata())),
            },
            move || resync.enqueue_all(),
        )
        .await;
    }
}
