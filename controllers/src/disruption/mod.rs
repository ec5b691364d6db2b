//! The disruption controller: keeps every policy/v1 PodDisruptionBudget's status (expected,
//! desired and currently healthy pods, disruptions allowed, the evictions still pending in
//! `disruptedPods`, the `DisruptionAllowed` condition) so that the API server's eviction
//! subresource can spend one allowed disruption at a time; and resets `DisruptionTarget`
//! conditions left on pods that were never deleted.
//!
//! Wiring only: budget and pod notifications queue the budgets concerned; [`sync`] reconciles
//! one budget, [`stale`] one pod's condition; [`budget`] and [`finders`] decide without I/O.

pub mod budget;
pub mod finders;
pub mod stale;
pub mod sync;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use tinykube_client::reflector::{key_of, Notification, Store};
use tinykube_proto::labels::Selector;

use crate::context::{route, Context, BY_NAMESPACE};
use crate::events::EventRecorder;
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// The event source, as upstream's disruption controller names it.
pub const COMPONENT: &str = "controllermanager";

pub struct Controller {
    pub ctx: Arc<Context>,
    pub pods: Store<Pod>,
    pub pdbs: Store<PodDisruptionBudget>,
    pub replicasets: Store<ReplicaSet>,
    pub deployments: Store<Deployment>,
    pub statefulsets: Store<StatefulSet>,
    pub replicationcontrollers: Store<ReplicationController>,
    /// Budget keys to sync.
    pub queue: WorkQueue,
    /// Pod keys whose `DisruptionTarget` condition may have gone stale.
    pub stale_queue: WorkQueue,
    pub recorder: Arc<EventRecorder>,
}

/// Subscribe to budgets and pods and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let pdb_events = ctx.poddisruptionbudgets.subscribe();
    let pod_events = ctx.pods.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        pods: ctx.pods.store(),
        pdbs: ctx.poddisruptionbudgets.store(),
        replicasets: ctx.replicasets.store(),
        deployments: ctx.deployments.store(),
        statefulsets: ctx.statefulsets.store(),
        replicationcontrollers: ctx.replicationcontrollers.store(),
        queue: ctx.queue(),
        stale_queue: ctx.queue(),
        recorder: ctx.recorder(COMPONENT),
    });
    Box::pin(async move {
        let (Some(pdb_events), Some(pod_events)) = (pdb_events, pod_events) else {
            tracing::error!("disruption controller started after the informers");
            return;
        };
        let on_pdb = route(pdb_events, &c, Controller::on_pdb, Controller::enqueue_all);
        let on_pod = route(pod_events, &c, Controller::on_pod, Controller::enqueue_all);
        let run = {
            let c = c.clone();
            async move {
                c.pods.clone().wait_ready().await;
                c.pdbs.clone().wait_ready().await;
                c.replicasets.clone().wait_ready().await;
                c.deployments.clone().wait_ready().await;
                c.statefulsets.clone().wait_ready().await;
                c.replicationcontrollers.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                let budgets = run_workers("disruption", c.queue.clone(), 1, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                });
                let s = c.clone();
                let stale = run_workers("disruption-stale", c.stale_queue.clone(), 1, move |key| {
                    let s = s.clone();
                    async move { s.sync_stale(&key).await }
                });
                tokio::join!(budgets, stale);
            }
        };
        tokio::join!(on_pdb, on_pod, run);
    })
}

/// Whether a budget's selector covers the pod: a missing selector covers nothing, an empty one
/// every pod of the namespace (policy/v1).
pub fn selects(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    if pdb.metadata.namespace != pod.metadata.namespace {
        return false;
    }
    let Some(selector) = pdb.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return false;
    };
    Selector::from_label_selector(selector)
        .is_ok_and(|s| s.matches(pod.metadata.labels.as_ref().unwrap_or(&Default::default())))
}

impl Controller {
    fn enqueue_all(&self) {
        for pdb in self.pdbs.list() {
            self.queue.add(&key_of(pdb.as_ref()));
        }
        for pod in self.pods.list() {
            self.check_stale(&pod);
        }
    }

    fn on_pdb(&self, n: Notification<PodDisruptionBudget>) {
        match n {
            Notification::Add(pdb) | Notification::Update { new: pdb, .. } => {
                self.queue.add(&key_of(pdb.as_ref()))
            }
            Notification::Delete(pdb) => self.queue.add(&key_of(pdb.as_ref())),
        }
    }

    /// Queue every budget covering the pod (upstream picks one when several do; the eviction
    /// subresource refuses such pods anyway).
    fn enqueue_budgets_of(&self, pod: &Pod) {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        for pdb in self.pdbs.by_index(BY_NAMESPACE, ns) {
            if selects(&pdb, pod) {
                self.queue.add(&key_of(pdb.as_ref()));
            }
        }
    }

    fn check_stale(&self, pod: &Pod) {
        if let Some(wait) = stale::stale_wait(pod, self.ctx.clock.timestamp()) {
            self.stale_queue.add_after_clock(&key_of(pod), wait);
        }
    }

    fn on_pod(&self, n: Notification<Pod>) {
        match n {
            Notification::Add(pod) => {
                self.enqueue_budgets_of(&pod);
                self.check_stale(&pod);
            }
            Notification::Update { old, new } => {
                self.enqueue_budgets_of(&new);
                if old.metadata.labels != new.metadata.labels {
                    // Budgets the pod left must count it out.
                    self.enqueue_budgets_of(&old);
                }
                self.check_stale(&new);
            }
            Notification::Delete(pod) => self.enqueue_budgets_of(&pod),
        }
    }
}
