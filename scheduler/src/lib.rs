//! tinykube-scheduler: watches pending pods of its scheduler names, runs them through the
//! filter/score plugins and binds each to the best node.
//!
//! One entry, [`run`]. Informers of pods (indexed by node) and nodes feed a [`queue::Queue`];
//! each popped pod goes through [`schedule_one`] against a [`cache::Cache`] snapshot. Informers
//! of PodDisruptionBudgets, ReplicaSets, Namespaces, PersistentVolumeClaims, PersistentVolumes
//! and StorageClasses serve the plugins through the
//! [`framework::Handle`].

pub mod binding;
pub mod cache;
pub mod config;
pub mod framework;
pub mod metrics;
pub mod plugins;
pub mod queue;
pub mod schedule_one;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Event, Namespace, Node, ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod,
    ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::json;
pub(crate) use tinykube_client::reflector::key_of;
use tinykube_client::reflector::{Informer, Notification};
use tinykube_client::{Api, Client, ListParams, Patch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cache::{node_of, nominated_node, Cache, BY_NODE, BY_NOMINATED};
use crate::queue::Queue;

/// Settings of one scheduler process.
pub struct Config {
    pub client: tinykube_client::Config,
    /// The profiles this process serves, one per scheduler name.
    pub profiles: Vec<config::Profile>,
    /// Seed for tie-breaks between equally scored nodes (random when unset).
    pub seed: Option<u64>,
    /// Host name for `reportingInstance` (`<scheduler-name>-<host>`).
    pub host: String,
    /// Campaign on this Lease and schedule only while leading.
    pub leader_election: Option<tinykube_client::leader::LeaseConfig>,
    /// Where to serve `/healthz` and `/metrics` (`None`: not served).
    pub health_addr: Option<std::net::SocketAddr>,
    /// The time of what the scheduler writes (PodScheduled and DisruptionTarget conditions,
    /// events and their series), of preemption's ranking and of VolumeBinding's bind timeout;
    /// the queue's back-off, metrics and leader election stay on tokio's clock.
    pub clock: tinykube_clock::Clock,
}

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error("connecting to the API server: {0}")]
    Client(#[from] tinykube_client::ClientError),
    #[error("leaderelection lost")]
    LeadershipLost,
    #[error("serving /healthz and /metrics on {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Shared state of a running scheduler.
pub struct Scheduler {
    pub client: Client,
    pub cache: Cache,
    pub queue: Queue,
    /// Each profile's framework, by scheduler name.
    pub profiles: HashMap<String, Arc<framework::Framework>>,
    /// What plugins reach beyond the pod and the nodes (listers, the waiting pods).
    pub handle: framework::Handle,
    pub rng: Mutex<StdRng>,
    pub host: String,
    pub metrics: metrics::Metrics,
    /// Bounds the binding cycles in flight (each runs beside the next scheduling cycle).
    pub binding_slots: Arc<tokio::sync::Semaphore>,
    /// Where the next cycle's filtering starts (see [`schedule_one::feasible_nodes_to_find`]).
    pub next_start_node: std::sync::atomic::AtomicUsize,
    /// Events recorded lately, so that a repeat becomes a series on the first one.
    pub recent_events: Mutex<RecentEvents>,
}

/// What makes two events the same (upstream's isomorphic events): namespace, pod, related pod,
/// reporting scheduler, reason, action and message.
type EventKey = (String, String, String, String, String, String, String);

/// An event already written: its name, how often it happened, and since when (by the
/// scheduler's clock).
struct RecentEvent {
    name: String,
    count: i32,
    first: Instant,
}

/// How long a repeat joins the earlier event's series (upstream's 6 minutes).
const EVENT_SERIES_WINDOW: std::time::Duration = std::time::Duration::from_secs(360);
/// How often expired entries are swept (not on every event: one per scheduled pod).
const EVENT_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// The events of the last [`EVENT_SERIES_WINDOW`], by what makes them the same.
pub struct RecentEvents {
    by_key: HashMap<EventKey, RecentEvent>,
    swept: Instant,
}

impl RecentEvents {
    /// None yet, as of `now` (the scheduler's clock).
    fn new(now: Instant) -> Self {
        RecentEvents {
            by_key: HashMap::new(),
            swept: now,
        }
    }

    /// A repeat, `now`, of a recent event: its name and the new count.
    fn repeat(&mut self, key: &EventKey, now: Instant) -> Option<(String, i32)> {
        if now - self.swept > EVENT_SWEEP_EVERY {
            self.by_key
                .retain(|_, e| now - e.first < EVENT_SERIES_WINDOW);
            self.swept = now;
        }
        let e = self.by_key.get_mut(key)?;
        if now - e.first >= EVENT_SERIES_WINDOW {
            self.by_key.remove(key);
            return None;
        }
        e.count += 1;
        Some((e.name.clone(), e.count))
    }

    fn remember(&mut self, key: EventKey, name: String, now: Instant) {
        self.by_key.insert(
            key,
            RecentEvent {
                name,
                count: 1,
                first: now,
            },
        );
    }
}

impl Scheduler {
    fn responsible_for(&self, pod: &Pod) -> bool {
        let name = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .unwrap_or("default-scheduler");
        self.profiles.contains_key(name)
            && node_of(pod).is_none()
            && pod.metadata.deletion_timestamp.is_none()
    }

    /// Record an event the way upstream's events.k8s.io recorder does: `eventTime`, `action`,
    /// reporting controller and instance, no legacy counters; `related` names a second pod
    /// (the preemptor of a `Preempted` victim).
    #[allow(clippy::too_many_arguments)]
    pub async fn record(
        &self,
        pod: &Pod,
        related: Option<&Pod>,
        scheduler: &str,
        kind: &str,
        reason: &str,
        action: &str,
        message: &str,
    ) {
        let ns = pod
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let clock = &self.handle.clock;
        let now = clock.timestamp();
        let key: EventKey = (
            ns.clone(),
            pod.metadata.uid.clone().unwrap_or_default(),
            related
                .and_then(|r| r.metadata.uid.clone())
                .unwrap_or_default(),
            scheduler.to_string(),
            reason.to_string(),
            action.to_string(),
            message.to_string(),
        );
        let events = Api::<Event>::namespaced(self.client.clone(), &ns);
        // A repeat within the window counts on the first event (`series`), as upstream's
        // events.k8s.io recorder does; kubectl shows it as "(x2 over 10s)".
        let repeat = self
            .recent_events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .repeat(&key, clock.instant());
        if let Some((name, count)) = repeat {
            let series = json!({"series": {"count": count, "lastObservedTime": MicroTime(now)}});
            match events.patch(&name, &Patch::Merge(series)).await {
                Ok(_) => return,
                Err(e) if e.is_not_found() => {}
                Err(e) => {
                    tracing::warn!(error = %e, reason, "could not update the event series");
                    return;
                }
            }
        }
        let name = format!(
            "{}.{:x}",
            pod.metadata.name.as_deref().unwrap_or("pod"),
            now.as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ns.clone()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: pod.metadata.name.clone(),
                namespace: Some(ns.clone()),
                uid: pod.metadata.uid.clone(),
                resource_version: pod.metadata.resource_version.clone(),
                ..Default::default()
            },
            related: related.map(|r| ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: r.metadata.name.clone(),
                namespace: r.metadata.namespace.clone(),
                uid: r.metadata.uid.clone(),
                ..Default::default()
            }),
            reason: Some(reason.into()),
            message: Some(message.into()),
            type_: Some(kind.into()),
            event_time: Some(MicroTime(now)),
            action: Some(action.into()),
            reporting_component: Some(scheduler.into()),
            reporting_instance: Some(format!("{scheduler}-{}", self.host)),
            source: Some(Default::default()),
            ..Default::default()
        };
        match events.create(&event).await {
            Ok(_) => self
                .recent_events
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remember(key, name, clock.instant()),
            Err(e) => tracing::warn!(error = %e, reason, "could not record event"),
        }
    }
}

/// Whether an update could change where a pod fits: its spec, labels or annotations.
fn scheduling_relevant_change(old: &Pod, new: &Pod) -> bool {
    old.spec != new.spec
        || old.metadata.labels != new.metadata.labels
        || old.metadata.annotations != new.metadata.annotations
}

/// Upstream's AssignedPodAdd/AssignedPodUpdate: a pod was bound, or a bound pod's labels
/// changed, which may let a pending pod's pod affinity (or spreading) be satisfied.
fn assigned_pod_changed(old: &Pod, new: &Pod) -> bool {
    node_of(new).is_some() && (node_of(old).is_none() || old.metadata.labels != new.metadata.labels)
}

fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// Run until `shutdown` is cancelled.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), SchedulerError> {
    let client = Client::new(config.client)?;
    // The index functions run under the stores' write locks: they mark the nodes whose
    // NodeInfo a change touches before any reader can see it.
    let changes = cache::Changes::default();
    let marks = changes.clone();
    let pods = Informer::new(Api::<Pod>::all(client.clone()), ListParams::default())
        .with_index(BY_NODE, move |p: &Pod| {
            let node = node_of(p);
            if let Some(n) = node {
                marks.node(n);
            }
            node.map(str::to_string).into_iter().collect()
        })
        .with_index(BY_NOMINATED, |p: &Pod| {
            nominated_node(p)
                .map(|_| cache::NOMINATED.to_string())
                .into_iter()
                .collect()
        });
    let marks = changes.clone();
    let nodes = Informer::new(Api::<Node>::all(client.clone()), ListParams::default()).with_index(
        cache::CHANGES,
        move |n: &Node| {
            marks.node(n.metadata.name.as_deref().unwrap_or_default());
            Vec::new()
        },
    );
    let pdbs = Informer::new(
        Api::<PodDisruptionBudget>::all(client.clone()),
        ListParams::default(),
    );
    let mut pdb_store = pdbs.store();
    let replica_sets = Informer::new(
        Api::<ReplicaSet>::all(client.clone()),
        ListParams::default(),
    );
    let mut rs_store = replica_sets.store();
    let services = Informer::new(Api::<Service>::all(client.clone()), ListParams::default());
    let rcs = Informer::new(
        Api::<ReplicationController>::all(client.clone()),
        ListParams::default(),
    );
    let stateful_sets = Informer::new(
        Api::<StatefulSet>::all(client.clone()),
        ListParams::default(),
    );
    let (mut svc_store, mut rc_store, mut sts_store) =
        (services.store(), rcs.store(), stateful_sets.store());
    let namespaces = Informer::new(Api::<Namespace>::all(client.clone()), ListParams::default());
    let mut ns_store = namespaces.store();
    let claims = Informer::new(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        ListParams::default(),
    );
    let volumes = Informer::new(
        Api::<PersistentVolume>::all(client.clone()),
        ListParams::default(),
    );
    let classes = Informer::new(
        Api::<StorageClass>::all(client.clone()),
        ListParams::default(),
    );
    let (mut claim_store, mut volume_store, mut class_store) =
        (claims.store(), volumes.store(), classes.store());
    let (mut claim_events, mut volume_events) = (claims.subscribe(), volumes.subscribe());
    let (mut pod_store, mut node_store) = (pods.store(), nodes.store());
    let (mut pod_events, mut node_events) = (pods.subscribe(), nodes.subscribe());
    let rng = match config.seed {
        Some(s) => StdRng::seed_from_u64(s),
        None => StdRng::from_os_rng(),
    };
    let handle = framework::Handle {
        client: client.clone(),
        selectors: plugins::pod_topology_spread::Selectors {
            services: Arc::new(svc_store.clone()),
            replication_controllers: Arc::new(rc_store.clone()),
            replica_sets: Arc::new(rs_store.clone()),
            stateful_sets: Arc::new(sts_store.clone()),
        },
        pdbs: Arc::new(pdb_store.clone()),
        namespaces: Arc::new(ns_store.clone()),
        claims: Arc::new(claim_store.clone()),
        volumes: Arc::new(volume_store.clone()),
        classes: Arc::new(class_store.clone()),
        waiting: Default::default(),
        clock: config.clock.clone(),
    };
    let sched = Arc::new(Scheduler {
        client,
        cache: Cache::new(node_store.clone(), pod_store.clone(), changes),
        queue: Queue::default(),
        profiles: config
            .profiles
            .iter()
            .map(|p| {
                let fw = p.framework(&handle);
                (p.scheduler_name.clone(), Arc::new(fw))
            })
            .collect(),
        handle,
        rng: Mutex::new(rng),
        host: config.host,
        metrics: metrics::Metrics::default(),
        next_start_node: Default::default(),
        recent_events: Mutex::new(RecentEvents::new(config.clock.instant())),
        binding_slots: Arc::new(tokio::sync::Semaphore::new(binding::MAX_BINDINGS_IN_FLIGHT)),
    });
    if let Some(addr) = config.health_addr {
        let listener = metrics::bind(addr)
            .await
            .map_err(|source| SchedulerError::Bind { addr, source })?;
        if let Ok(local) = listener.local_addr() {
            tracing::info!(addr = %local, "serving /healthz and /metrics");
        }
        let s = sched.clone();
        let mut names: Vec<String> = s.profiles.keys().cloned().collect();
        names.sort();
        let profile = names.join(",");
        let render: Arc<dyn Fn() -> String + Send + Sync> =
            Arc::new(move || s.metrics.render(&profile, s.queue.lengths()));
        tokio::spawn(metrics::serve(listener, render, shutdown.clone()));
    }
    let informers = tokio::spawn(async move {
        tokio::join!(
            pods.run(),
            nodes.run(),
            pdbs.run(),
            replica_sets.run(),
            services.run(),
            rcs.run(),
            stateful_sets.run(),
            namespaces.run(),
            claims.run(),
            volumes.run(),
            classes.run()
        );
    });

    // Informer notifications only feed the queue.
    let feeder = {
        let sched = sched.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    n = pod_events.recv() => match n {
                        Ok(Notification::Add(p)) => {
                            if sched.responsible_for(&p) {
                                sched.queue.add(&key_of(p.as_ref()), priority(&p));
                            }
                            if node_of(&p).is_some() {
                                // An assigned pod may be what a pending pod's affinity waits for.
                                sched.queue.pod_bound();
                            }
                        }
                        Ok(Notification::Update { old, new }) => {
                            if assigned_pod_changed(&old, &new) {
                                sched.queue.pod_bound();
                            }
                            let key = key_of(new.as_ref());
                            if !sched.responsible_for(&new) {
                                sched.queue.remove(&key);
                            } else if scheduling_relevant_change(&old, &new) {
                                // A status-only update (such as our own PodScheduled condition)
                                // must not send an unschedulable pod round again.
                                sched.queue.add(&key, priority(&new));
                            }
                        }
                        Ok(Notification::Delete(p)) => {
                            sched.queue.remove(&key_of(p.as_ref()));
                            // A pod held at Permit that is deleted is let go, as upstream's.
                            sched.handle.waiting.reject(&framework::waiting::pod_key(&p), "removed");
                            if node_of(&p).is_some() {
                                sched.queue.cluster_changed();
                            }
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            for p in sched.cache.pods.list() {
                                if sched.responsible_for(&p) {
                                    sched.queue.add(&key_of(p.as_ref()), priority(&p));
                                }
                            }
                        }
                        Err(_) => return,
                    },
                    n = node_events.recv() => match n {
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => sched.queue.cluster_changed(),
                        Err(_) => return,
                    },
                    // A claim or volume that appears or binds may be what a pod waits for.
                    n = claim_events.recv() => match n {
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => sched.queue.cluster_changed(),
                        Err(_) => return,
                    },
                    n = volume_events.recv() => match n {
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => sched.queue.cluster_changed(),
                        Err(_) => return,
                    },
                }
            }
        })
    };

    pod_store.wait_ready().await;
    node_store.wait_ready().await;
    pdb_store.wait_ready().await;
    rs_store.wait_ready().await;
    svc_store.wait_ready().await;
    rc_store.wait_ready().await;
    sts_store.wait_ready().await;
    ns_store.wait_ready().await;
    claim_store.wait_ready().await;
    volume_store.wait_ready().await;
    class_store.wait_ready().await;
    for p in sched.cache.pods.list() {
        if sched.responsible_for(&p) {
            sched.queue.add(&key_of(p.as_ref()), priority(&p));
        }
    }
    // With leader election, schedule only while holding the lease; losing it ends the process,
    // as upstream's scheduler does.
    let mut leading = None;
    let mut elector_task = None;
    if let Some(lease) = config.leader_election {
        let elector = Arc::new(tinykube_client::leader::LeaderElector::new(
            sched.client.clone(),
            lease,
        ));
        let mut rx = elector.leading();
        let stop = shutdown.clone();
        elector_task = Some(tokio::spawn(async move {
            elector.run(stop.cancelled_owned()).await
        }));
        tokio::select! {
            _ = rx.wait_for(|l| *l) => {}
            _ = shutdown.cancelled() => {}
        }
        leading = Some(rx);
    }
    tracing::info!(profiles = ?sched.profiles.keys().collect::<Vec<_>>(), "scheduler started");
    let mut result = Ok(());
    loop {
        let lost = async {
            match leading.as_mut() {
                Some(rx) => {
                    let _ = rx.wait_for(|l| !*l).await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = lost, if !shutdown.is_cancelled() => {
                result = Err(SchedulerError::LeadershipLost);
                break;
            }
            key = sched.queue.pop() => schedule_one::schedule_one(&sched, &key).await,
        }
    }
    feeder.abort();
    informers.abort();
    if let Some(t) = elector_task {
        // Let a graceful stop release the lease.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), t).await;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_count_on_the_first_event() {
        let key = |msg: &str| -> EventKey {
            let s = |v: &str| v.to_string();
            (
                s("default"),
                s("uid-1"),
                s(""),
                s("default-scheduler"),
                s("FailedScheduling"),
                s("Scheduling"),
                s(msg),
            )
        };
        let clock = tinykube_clock::Clock::manual(std::time::SystemTime::UNIX_EPOCH);
        let mut recent = RecentEvents::new(clock.instant());
        assert_eq!(recent.repeat(&key("no room"), clock.instant()), None);
        recent.remember(key("no room"), "big.1".into(), clock.instant());
        // (minutes the clock moves on, the event repeated, the series it joins)
        type Series<'a> = Option<(&'a str, i32)>;
        let steps: &[(u64, &str, Series)] = &[
            (0, "no room", Some(("big.1", 2))),
            (3, "no room", Some(("big.1", 3))),
            (0, "another reason", None),
            // The window counts from the first event: six minutes on, a repeat starts anew.
            (3, "no room", None),
            (0, "no room", None),
        ];
        for (minutes, message, want) in steps {
            clock.advance(std::time::Duration::from_secs(minutes * 60));
            let got = recent.repeat(&key(message), clock.instant());
            let want = want.map(|(name, count)| (name.to_string(), count));
            assert_eq!(got, want, "{message} after {minutes}m more");
        }
    }
}
