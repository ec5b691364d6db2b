//! The collector's monitors, one per kind whose objects may be owners or dependents: the
//! shared typed informers, plus a dynamic (untyped) list+watch of the object metadata of every
//! other resource discovery lists with list, watch and delete, kept in step with discovery by a
//! periodic resync as upstream's graph builder (custom resources come and go with their CRDs).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use tinykube_client::dynamic::{ApiResource, DynamicApi};
use tinykube_client::watcher::Event;
use tinykube_client::ListParams;
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};

use super::mapper::group_kind;
use super::{Change, Collector, MetaStore};

/// Resources the collector never monitors (upstream's DefaultIgnoredResources): events are
/// many, short-lived and never owners.
const IGNORED: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];

/// One monitored kind.
pub struct Monitor {
    pub resource: ApiResource,
    pub store: Arc<dyn MetaStore>,
    /// Stops a dynamic monitor; `None` for a shared typed informer, which is never stopped.
    stop: Option<AbortHandle>,
}

impl Monitor {
    pub fn typed(resource: ApiResource, store: Arc<dyn MetaStore>) -> Self {
        Monitor {
            resource,
            store,
            stop: None,
        }
    }

    fn is_dynamic(&self) -> bool {
        self.stop.is_some()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if let Some(stop) = &self.stop {
            stop.abort();
        }
    }
}

/// What a resync changes: monitors to start (by group-kind) and dynamic ones to stop.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub start: Vec<ApiResource>,
    pub stop: Vec<String>,
}

fn monitorable(r: &ApiResource) -> bool {
    let has = |verb: &str| r.verbs.iter().any(|v| v == verb);
    has("list")
        && has("watch")
        && has("delete")
        && !IGNORED.contains(&(r.group.as_str(), r.plural.as_str()))
}

/// Compare discovery with the running monitors (group-kind → resource, dynamic or not):
/// start a monitor for every monitorable resource without one, stop the dynamic monitors of
/// resources gone from discovery, restart those whose resource changed (e.g. its version).
pub fn plan(discovered: &[ApiResource], running: &BTreeMap<String, (ApiResource, bool)>) -> Plan {
    let mut wanted: BTreeMap<String, &ApiResource> = BTreeMap::new();
    for r in discovered.iter().filter(|r| monitorable(r)) {
        wanted.entry(group_kind(&r.group, &r.kind)).or_insert(r);
    }
    let mut plan = Plan::default();
    for (gk, (resource, dynamic)) in running {
        match wanted.get(gk) {
            Some(r) if *dynamic && *r != resource => plan.stop.push(gk.clone()),
            None if *dynamic => plan.stop.push(gk.clone()),
            _ => {}
        }
    }
    for (gk, r) in wanted {
        if !running.contains_key(&gk) || plan.stop.contains(&gk) {
            plan.start.push(r.clone());
        }
    }
    plan
}

#[derive(Default)]
struct Objects {
    /// `namespace/name` (or `name`) → metadata.
    by_key: HashMap<String, ObjectMeta>,
    /// Owner uid → keys of its dependents.
    by_owner: HashMap<String, BTreeSet<String>>,
}

impl Objects {
    fn insert(&mut self, key: String, meta: ObjectMeta) -> Option<ObjectMeta> {
        let old = self.remove(&key);
        for r in meta.owner_references.iter().flatten() {
            self.by_owner
                .entry(r.uid.clone())
                .or_default()
                .insert(key.clone());
        }
        self.by_key.insert(key, meta);
        old
    }

    fn remove(&mut self, key: &str) -> Option<ObjectMeta> {
        let old = self.by_key.remove(key)?;
        for r in old.owner_references.iter().flatten() {
            if let Some(keys) = self.by_owner.get_mut(&r.uid) {
                keys.remove(key);
                if keys.is_empty() {
                    self.by_owner.remove(&r.uid);
                }
            }
        }
        Some(old)
    }
}

/// A change with owned metadata, as a dynamic monitor reports it.
pub enum Owned {
    Add(ObjectMeta),
    /// The old metadata, then the new.
    Update(Box<ObjectMeta>, ObjectMeta),
    Delete(ObjectMeta),
}

impl Owned {
    pub fn as_change(&self) -> Change<'_> {
        match self {
            Owned::Add(m) => Change::Add(m),
            Owned::Update(old, new) => Change::Update { old, new },
            Owned::Delete(m) => Change::Delete(m),
        }
    }
}

/// The metadata cache of a dynamic monitor, indexed by owner uid.
pub struct MetaCache {
    objects: RwLock<Objects>,
    ready: watch::Sender<bool>,
}

fn key_of(meta: &ObjectMeta) -> String {
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

/// An object's metadata as the cache keeps it (without managedFields).
fn meta_of(object: &Value) -> Option<ObjectMeta> {
    let mut meta: ObjectMeta = serde_json::from_value(object.get("metadata")?.clone()).ok()?;
    meta.managed_fields = None;
    Some(meta)
}

impl Default for MetaCache {
    fn default() -> Self {
        MetaCache {
            objects: RwLock::new(Objects::default()),
            ready: watch::channel(false).0,
        }
    }
}

impl MetaCache {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Objects> {
        match self.objects.read() {
            Ok(o) => o,
            Err(p) => p.into_inner(),
        }
    }

    /// Apply one watcher event; return the changes it made, as the typed informers notify.
    pub fn apply(&self, event: Event<Value>) -> Vec<Owned> {
        let mut objects = match self.objects.write() {
            Ok(o) => o,
            Err(p) => p.into_inner(),
        };
        let mut out = Vec::new();
        match event {
            Event::Restarted(items) => {
                let fresh: HashMap<String, ObjectMeta> = items
                    .iter()
                    .filter_map(meta_of)
                    .map(|m| (key_of(&m), m))
                    .collect();
                let gone: Vec<String> = objects
                    .by_key
                    .keys()
                    .filter(|k| !fresh.contains_key(*k))
                    .cloned()
                    .collect();
                for key in gone {
                    out.extend(objects.remove(&key).map(Owned::Delete));
                }
                for (key, new) in fresh {
                    match objects.insert(key, new.clone()) {
                        Some(old) if old.resource_version == new.resource_version => {}
                        Some(old) => out.push(Owned::Update(Box::new(old), new)),
                        None => out.push(Owned::Add(new)),
                    }
                }
                drop(objects);
                self.ready.send_replace(true);
            }
            Event::Applied(o) => {
                if let Some(new) = meta_of(&o) {
                    match objects.insert(key_of(&new), new.clone()) {
                        Some(old) => out.push(Owned::Update(Box::new(old), new)),
                        None => out.push(Owned::Add(new)),
                    }
                }
            }
            Event::Deleted(o) => {
                if let Some(meta) = meta_of(&o) {
                    objects.remove(&key_of(&meta));
                    out.push(Owned::Delete(meta));
                }
            }
        }
        out
    }

    /// Wait for the first list.
    pub async fn wait_ready(&self) {
        let mut rx = self.ready.subscribe();
        let _ = rx.wait_for(|r| *r).await;
    }
}

impl MetaStore for MetaCache {
    fn meta(&self, key: &str) -> Option<ObjectMeta> {
        self.read().by_key.get(key).cloned()
    }

    fn dependents_of(&self, uid: &str) -> Vec<ObjectMeta> {
        let objects = self.read();
        objects
            .by_owner
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|k| objects.by_key.get(k).cloned())
            .collect()
    }

    fn all(&self) -> Vec<ObjectMeta> {
        self.read().by_key.values().cloned().collect()
    }
}

/// Feed `cache` from a list+watch of `api`, handing every change to the collector.
async fn run_monitor(c: Arc<Collector>, gk: String, cache: Arc<MetaCache>, api: DynamicApi) {
    let mut events = Box::pin(tinykube_client::dynamic::watcher(
        api,
        ListParams::default(),
    ));
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => {
                for change in cache.apply(event) {
                    c.on_change(&gk, change.as_change());
                }
            }
            Err(e) => {
                tracing::warn!(resource = %gk, error = %e, "garbage collector watch failed; retrying")
            }
        }
    }
}

impl Collector {
    /// Bring the monitors in line with discovery (which also refreshes the owner mapper); wait
    /// up to `timeout` for new monitors' first lists. Monitor tasks live in `tasks`.
    pub async fn resync(self: &Arc<Self>, tasks: &mut JoinSet<()>, timeout: Duration) {
        while tasks.try_join_next().is_some() {}
        let discovered = match self.mapper.refresh().await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "garbage collector: discovery failed; monitors kept");
                return;
            }
        };
        let running: BTreeMap<String, (ApiResource, bool)> = self
            .monitors()
            .into_iter()
            .map(|(gk, m)| (gk, (m.resource.clone(), m.is_dynamic())))
            .collect();
        let plan = plan(&discovered, &running);
        if plan.start.is_empty() && plan.stop.is_empty() {
            return;
        }
        tracing::info!(
            start = ?plan.start.iter().map(|r| group_kind(&r.group, &r.kind)).collect::<Vec<_>>(),
            stop = ?plan.stop,
            "garbage collector: resyncing monitors with discovery"
        );
        let mut waits = Vec::new();
        {
            let mut monitors = self.monitors_mut();
            for gk in &plan.stop {
                // Dropping the monitor aborts its task.
                monitors.remove(gk);
            }
            for resource in plan.start {
                let gk = group_kind(&resource.group, &resource.kind);
                let cache = Arc::new(MetaCache::default());
                let api = DynamicApi::new(self.ctx.client.clone(), resource.clone(), None);
                let stop = tasks.spawn(run_monitor(self.clone(), gk.clone(), cache.clone(), api));
                let ready = cache.clone();
                waits.push(async move { ready.wait_ready().await });
                let monitor = Monitor {
                    resource,
                    store: cache,
                    stop: Some(stop),
                };
                monitors.insert(gk, Arc::new(monitor));
            }
        }
        if waits.is_empty() {
            return;
        }
        if tokio::time::timeout(timeout, futures::future::join_all(waits))
            .await
            .is_err()
        {
            tracing::warn!("garbage collector: timed out waiting for new monitors' first lists");
        }
        // Owners of the new kinds may have gone while nothing watched them: look again.
        self.enqueue_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res(group: &str, version: &str, kind: &str, plural: &str, verbs: &[&str]) -> ApiResource {
        ApiResource {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced: true,
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
        }
    }

    const ALL: &[&str] = &[
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "watch",
    ];

    fn running(list: &[(&ApiResource, bool)]) -> BTreeMap<String, (ApiResource, bool)> {
        list.iter()
            .map(|(r, d)| (group_kind(&r.group, &r.kind), ((*r).clone(), *d)))
            .collect()
    }

    #[test]
    fn plans_follow_discovery() {
        let pods = res("", "v1", "Pod", "pods", ALL);
        let events = res("", "v1", "Event", "events", ALL);
        let new_events = res("events.k8s.io", "v1", "Event", "events", ALL);
        let reviews = res(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectReview",
            "selfsubjectreviews",
            &["create"],
        );
        let status = res(
            "",
            "v1",
            "ComponentStatus",
            "componentstatuses",
            &["get", "list"],
        );
        let pcs = res(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            ALL,
        );
        let ct1 = res("stable.example.com", "v1", "CronTab", "crontabs", ALL);
        let ct2 = res("stable.example.com", "v2", "CronTab", "crontabs", ALL);
        let base = vec![
            pods.clone(),
            events,
            new_events,
            reviews,
            status,
            pcs.clone(),
        ];
        let with = |extra: &ApiResource| {
            let mut all = base.clone();
            all.push(extra.clone());
            all
        };

        // First sync: every list+watch+delete resource without a (typed) monitor, events aside.
        let p = plan(&base, &running(&[(&pods, false)]));
        assert_eq!(
            p,
            Plan {
                start: vec![pcs.clone()],
                stop: vec![]
            }
        );

        // A CRD appears, then nothing changes.
        let now = running(&[(&pods, false), (&pcs, true)]);
        assert_eq!(plan(&with(&ct1), &now).start, vec![ct1.clone()]);
        let now = running(&[(&pods, false), (&pcs, true), (&ct1, true)]);
        assert_eq!(plan(&with(&ct1), &now), Plan::default());

        // Its preferred version changes: restart on the new one.
        let p = plan(&with(&ct2), &now);
        assert_eq!(
            p,
            Plan {
                start: vec![ct2.clone()],
                stop: vec!["CronTab.stable.example.com".into()]
            }
        );

        // The CRD is deleted: its monitor stops; typed monitors never do.
        let p = plan(&[], &now);
        assert_eq!(p.start, vec![]);
        assert_eq!(
            p.stop,
            vec![
                "CronTab.stable.example.com".to_string(),
                "PriorityClass.scheduling.k8s.io".into()
            ]
        );
    }

    fn obj(name: &str, rv: &str, owners: &[&str]) -> Value {
        let refs: Vec<Value> = owners
            .iter()
            .map(|u| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": u}))
            .collect();
        json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
            "resourceVersion": rv, "ownerReferences": refs, "managedFields": [{"manager": "x"}]}})
    }

    /// The changes, sorted (a re-list reports in no particular order).
    fn names(changes: &[Owned]) -> Vec<String> {
        let mut out: Vec<String> = changes
            .iter()
            .map(|c| match c.as_change() {
                Change::Add(m) => format!("add {}", m.name.clone().unwrap_or_default()),
                Change::Update { new, .. } => {
                    format!("update {}", new.name.clone().unwrap_or_default())
                }
                Change::Delete(m) => format!("delete {}", m.name.clone().unwrap_or_default()),
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_cache_indexes_dependents_by_owner_uid() {
        let cache = MetaCache::default();
        let added = cache.apply(Event::Restarted(vec![
            obj("a", "1", &["o1"]),
            obj("b", "1", &["o1", "o2"]),
        ]));
        assert_eq!(names(&added), ["add a", "add b"]);
        assert_eq!(cache.dependents_of("o1").len(), 2);
        assert_eq!(cache.meta("ns/a").unwrap().managed_fields, None);

        // b drops owner o1; a is deleted; re-listing drops what vanished and reports updates.
        assert_eq!(
            names(&cache.apply(Event::Applied(obj("b", "2", &["o2"])))),
            ["update b"]
        );
        assert_eq!(cache.dependents_of("o1").len(), 1);
        assert_eq!(
            names(&cache.apply(Event::Deleted(obj("a", "3", &["o1"])))),
            ["delete a"]
        );
        assert!(cache.dependents_of("o1").is_empty());
        let relist = cache.apply(Event::Restarted(vec![
            obj("b", "2", &["o2"]),
            obj("c", "4", &[]),
        ]));
        assert_eq!(names(&relist), ["add c"]);
        let relist = cache.apply(Event::Restarted(vec![obj("c", "5", &[])]));
        assert_eq!(names(&relist), ["delete b", "update c"]);
        assert!(cache.dependents_of("o2").is_empty());
        assert_eq!(cache.all().len(), 1);
    }
}
