//! The shared `Context` every controller starts from: the client, the cluster's clock, one
//! informer per resource (started once, after every controller subscribed, and only if some
//! controller uses it) and event recorders named as upstream's components.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ConfigMap, Endpoints, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod,
    ReplicationController, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::Resource;
use tinykube_client::reflector::{Informer, Notification, Store};
use tinykube_client::{Api, Client, Kind, ListParams, Scope};
use tinykube_clock::Clock;
use tokio::sync::broadcast;

use crate::events::EventRecorder;
use crate::workqueue::WorkQueue;

/// Index of namespaced objects by namespace.
pub const BY_NAMESPACE: &str = "namespace";
/// Index of objects by the uid of each owner in their ownerReferences.
pub const BY_OWNER: &str = "owner";

/// One informer shared by all controllers: subscribe before [`Context::start_informers`].
pub struct Shared<K> {
    informer: Mutex<Option<Informer<K>>>,
    store: Store<K>,
    used: AtomicBool,
}

impl<K: Kind> Shared<K>
where
    <K as Resource>::Scope: Scope,
{
    fn new(client: &Client) -> Self {
        let informer = Informer::new(Api::<K>::all(client.clone()), ListParams::default())
            .with_index(BY_NAMESPACE, |o: &K| {
                o.metadata().namespace.clone().into_iter().collect()
            })
            .with_index(BY_OWNER, |o: &K| {
                o.metadata()
                    .owner_references
                    .iter()
                    .flatten()
                    .map(|r| r.uid.clone())
                    .collect()
            });
        Shared {
            store: informer.store(),
            informer: Mutex::new(Some(informer)),
            used: AtomicBool::new(false),
        }
    }

    /// The cache; marks the informer as needed.
    pub fn store(&self) -> Store<K> {
        self.used.store(true, Ordering::Relaxed);
        self.store.clone()
    }

    /// Notifications from the informer; only before the informers start.
    pub fn subscribe(&self) -> Option<broadcast::Receiver<Notification<K>>> {
        self.used.store(true, Ordering::Relaxed);
        let guard = self.informer.lock().ok()?;
        guard.as_ref().map(Informer::subscribe)
    }

    fn take_if_used(&self) -> Option<BoxFuture<'static, ()>> {
        if !self.used.load(Ordering::Relaxed) {
            return None;
        }
        let informer = self.informer.lock().ok()?.take()?;
        Some(Box::pin(informer.run()))
    }
}

/// What every controller is built from; cheap to share behind an `Arc`.
pub struct Context {
    pub client: Client,
    /// The time Kubernetes defines (timestamps written, periods, grace periods, back-offs,
    /// deadlines, schedules); plumbing stays on tokio's real time.
    pub clock: Clock,
    pub pods: Shared<Pod>,
    pub replicasets: Shared<ReplicaSet>,
    pub deployments: Shared<Deployment>,
    pub daemonsets: Shared<DaemonSet>,
    pub controllerrevisions: Shared<ControllerRevision>,
    pub nodes: Shared<Node>,
    pub leases: Shared<Lease>,
    pub namespaces: Shared<Namespace>,
    pub configmaps: Shared<ConfigMap>,
    pub poddisruptionbudgets: Shared<PodDisruptionBudget>,
    pub serviceaccounts: Shared<ServiceAccount>,
    pub secrets: Shared<Secret>,
    pub services: Shared<Service>,
    pub endpoints: Shared<Endpoints>,
    pub endpointslices: Shared<EndpointSlice>,
    pub clusterroles: Shared<ClusterRole>,
    pub jobs: Shared<Job>,
    pub cronjobs: Shared<CronJob>,
    pub statefulsets: Shared<StatefulSet>,
    pub replicationcontrollers: Shared<ReplicationController>,
    pub persistentvolumeclaims: Shared<PersistentVolumeClaim>,
    pub persistentvolumes: Shared<PersistentVolume>,
    pub storageclasses: Shared<StorageClass>,
    pub horizontalpodautoscalers: Shared<HorizontalPodAutoscaler>,
    /// Host name for event sources.
    pub host: String,
    recorders: Mutex<HashMap<String, Arc<EventRecorder>>>,
    pub options: Options,
}

/// Tunables of the controllers, from the command line.
#[derive(Debug, Clone)]
pub struct Options {
    pub concurrent_replicaset_syncs: usize,
    pub concurrent_deployment_syncs: usize,
    pub concurrent_gc_syncs: usize,
    pub node_monitor_period: std::time::Duration,
    pub node_monitor_grace_period: std::time::Duration,
    /// Terminated pods kept before the pod garbage collector deletes the oldest (0: never).
    pub terminated_pod_gc_threshold: usize,
    /// How often the pod garbage collector looks (its quarantine of missing nodes is twice
    /// this).
    pub pod_gc_check_period: std::time::Duration,
    /// How often the garbage collector compares its monitors with discovery (custom
    /// resources appear and disappear with their CRDs); upstream's is a fixed 30s.
    pub gc_resync_period: std::time::Duration,
    /// The CA certificate the root CA publisher puts in every namespace (`--root-ca-file`),
    /// also the `ca.crt` of ServiceAccount token Secrets.
    pub root_ca_file: Option<std::path::PathBuf>,
    /// The PEM private key the tokens controller signs legacy ServiceAccount tokens with
    /// (`--service-account-private-key-file`: the API server's `DATA_DIR/ca.key`).
    pub service_account_private_key_file: Option<std::path::PathBuf>,
    pub concurrent_job_syncs: usize,
    /// The first delay before a Job replaces a failed pod, doubled per failure up to 6
    /// minutes (upstream's fixed 10 s; tinykube's `--job-pod-failure-backoff`, for tests).
    pub job_pod_failure_backoff: std::time::Duration,
    /// The horizontal pod autoscaler's flags (sync period, downscale stabilization,
    /// tolerance, CPU initialization period, initial readiness delay).
    pub hpa: crate::podautoscaler::Settings,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            concurrent_replicaset_syncs: 5,
            concurrent_deployment_syncs: 5,
            concurrent_gc_syncs: 20,
            node_monitor_period: std::time::Duration::from_secs(5),
            node_monitor_grace_period: std::time::Duration::from_secs(40),
            terminated_pod_gc_threshold: 12500,
            pod_gc_check_period: std::time::Duration::from_secs(20),
            gc_resync_period: std::time::Duration::from_secs(30),
            root_ca_file: None,
            service_account_private_key_file: None,
            concurrent_job_syncs: 5,
            job_pod_failure_backoff: std::time::Duration::from_secs(10),
            hpa: crate::podautoscaler::Settings::default(),
        }
    }
}

impl Context {
    pub fn new(client: Client, clock: Clock, host: String, options: Options) -> Self {
        Context {
            pods: Shared::new(&client),
            replicasets: Shared::new(&client),
            deployments: Shared::new(&client),
            daemonsets: Shared::new(&client),
            controllerrevisions: Shared::new(&client),
            nodes: Shared::new(&client),
            leases: Shared::new(&client),
            namespaces: Shared::new(&client),
            configmaps: Shared::new(&client),
            poddisruptionbudgets: Shared::new(&client),
            serviceaccounts: Shared::new(&client),
            secrets: Shared::new(&client),
            services: Shared::new(&client),
            endpoints: Shared::new(&client),
            endpointslices: Shared::new(&client),
            clusterroles: Shared::new(&client),
            jobs: Shared::new(&client),
            cronjobs: Shared::new(&client),
            statefulsets: Shared::new(&client),
            replicationcontrollers: Shared::new(&client),
            persistentvolumeclaims: Shared::new(&client),
            persistentvolumes: Shared::new(&client),
            storageclasses: Shared::new(&client),
            horizontalpodautoscalers: Shared::new(&client),
            client,
            clock,
            host,
            recorders: Mutex::new(HashMap::new()),
            options,
        }
    }

    /// The event recorder of `component` (e.g. `replicaset-controller`), one per component.
    pub fn recorder(&self, component: &str) -> Arc<EventRecorder> {
        let mut map = match self.recorders.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        map.entry(component.to_string())
            .or_insert_with(|| {
                Arc::new(EventRecorder::new(
                    self.client.clone(),
                    component,
                    self.clock.clone(),
                ))
            })
            .clone()
    }

    /// A work queue whose policy delays wait on the cluster's clock.
    pub fn queue(&self) -> WorkQueue {
        WorkQueue::new(self.clock.clone())
    }

    /// Run every informer some controller asked for, until the future is dropped.
    pub fn start_informers(&self) -> BoxFuture<'static, ()> {
        let runs: Vec<BoxFuture<'static, ()>> = [
            self.pods.take_if_used(),
            self.replicasets.take_if_used(),
            self.deployments.take_if_used(),
            self.daemonsets.take_if_used(),
            self.controllerrevisions.take_if_used(),
            self.nodes.take_if_used(),
            self.leases.take_if_used(),
            self.namespaces.take_if_used(),
            self.configmaps.take_if_used(),
            self.poddisruptionbudgets.take_if_used(),
            self.serviceaccounts.take_if_used(),
            self.secrets.take_if_used(),
            self.services.take_if_used(),
            self.endpoints.take_if_used(),
            self.endpointslices.take_if_used(),
            self.clusterroles.take_if_used(),
            self.jobs.take_if_used(),
            self.cronjobs.take_if_used(),
            self.statefulsets.take_if_used(),
            self.replicationcontrollers.take_if_used(),
            self.persistentvolumeclaims.take_if_used(),
            self.persistentvolumes.take_if_used(),
            self.storageclasses.take_if_used(),
            self.horizontalpodautoscalers.take_if_used(),
        ]
        .into_iter()
        .flatten()
        .collect();
        Box::pin(async move {
            futures::future::join_all(runs).await;
        })
    }
}

/// Route `rx` to one of `controller`'s handlers; a lagging receiver calls `lagged` (which
/// re-enqueues everything). The usual wiring of a controller to a shared informer.
pub fn route<C, K>(
    rx: broadcast::Receiver<Notification<K>>,
    controller: &Arc<C>,
    on: fn(&C, Notification<K>),
    lagged: fn(&C),
) -> impl std::future::Future<Output = ()>
where
    K: Clone,
{
    let (c, r) = (controller.clone(), controller.clone());
    forward(rx, move |n| on(&c, n), move || lagged(&r))
}

/// Drain `rx` into `handle`; a lagging receiver calls `resync` (re-enqueue everything).
pub async fn forward<K: Clone>(
    mut rx: broadcast::Receiver<Notification<K>>,
    mut handle: impl FnMut(Notification<K>),
    resync: impl Fn(),
) {
    loop {
        match rx.recv().await {
            Ok(n) => handle(n),
            Err(broadcast::error::RecvError::Lagged(_)) => resync(),
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
