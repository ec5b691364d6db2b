//! The ReplicaSet controller: keeps `spec.replicas` pods matching the selector, adopting
//! orphans and releasing pods that stopped matching, and reports status through `/status`.
//!
//! Wiring only: informer handlers turn notifications into keys (and settle expectations);
//! [`sync`] reconciles one ReplicaSet, [`ranking`] orders pods for deletion.

pub mod ranking;
pub mod sync;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use tinykube_client::reflector::{key_of, Notification, Store};
use tinykube_proto::labels::Selector;

use crate::context::{route, Context, BY_NAMESPACE};
use crate::expectations::Expectations;
use crate::util::{controller_ref, is_pod_ready, run_workers, secs};
use crate::workqueue::WorkQueue;

/// How long expectations survive after notifications were lost.
const LAG_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The event source, as upstream.
pub const COMPONENT: &str = "replicaset-controller";

/// Shared state of the controller.
pub struct Controller {
    pub ctx: Arc<Context>,
    pub pods: Store<Pod>,
    pub replicasets: Store<ReplicaSet>,
    pub queue: WorkQueue,
    pub expectations: Expectations,
    pub recorder: Arc<crate::events::EventRecorder>,
}

/// Subscribe to pods and ReplicaSets and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let rs_events = ctx.replicasets.subscribe();
    let pod_events = ctx.pods.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        pods: ctx.pods.store(),
        replicasets: ctx.replicasets.store(),
        queue: WorkQueue::new(),
        expectations: Expectations::new(),
        recorder: ctx.recorder(COMPONENT),
    });
    let workers = ctx.options.concurrent_replicaset_syncs;
    Box::pin(async move {
        let (Some(rs_events), Some(pod_events)) = (rs_events, pod_events) else {
            tracing::error!("replicaset controller started after the informers");
            return;
        };
        let on_rs = route(rs_events, &c, Controller::on_replicaset, Controller::lagged);
        let on_pod = route(pod_events, &c, Controller::on_pod, Controller::lagged);
        let run = {
            let c = c.clone();
            async move {
                c.pods.clone().wait_ready().await;
                c.replicasets.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("replicaset", c.queue.clone(), workers, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_rs, on_pod, run);
    })
}

impl Controller {
    fn enqueue_all(&self) {
        for rs in self.replicasets.list() {
            self.queue.add(&key_of(rs.as_ref()));
        }
    }

    /// Notifications were dropped: observations may be lost, so expectations expire soon
    /// and every ReplicaSet is looked at now and once they have.
    fn lagged(&self) {
        tracing::warn!("replicaset controller fell behind its informers; resyncing");
        self.expectations.expire_within(LAG_GRACE);
        self.enqueue_all();
        for rs in self.replicasets.list() {
            self.queue
                .add_after(&key_of(rs.as_ref()), LAG_GRACE + secs(1));
        }
    }

    fn on_replicaset(&self, n: Notification<ReplicaSet>) {
        match n {
            Notification::Add(rs) | Notification::Update { new: rs, .. } => {
                self.queue.add(&key_of(rs.as_ref()))
            }
            Notification::Delete(rs) => {
                let key = key_of(rs.as_ref());
                self.expectations.delete(&key);
                self.queue.add(&key);
            }
        }
    }

    /// The ReplicaSet a controller reference points to, if it is in the cache.
    fn resolve(&self, pod: &Pod) -> Option<Arc<ReplicaSet>> {
        let r = controller_ref(&pod.metadata)?;
        if r.kind != "ReplicaSet" {
            return None;
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let rs = self.replicasets.get(&format!("{ns}/{}", r.name))?;
        (rs.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(rs)
    }

    /// ReplicaSets of the pod's namespace whose selector matches it (orphan adoption).
    fn matching(&self, pod: &Pod) -> Vec<Arc<ReplicaSet>> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        self.replicasets
            .by_index(BY_NAMESPACE, ns)
            .into_iter()
            .filter(|rs| {
                rs.spec
                    .as_ref()
                    .and_then(|s| Selector::from_label_selector(&s.selector).ok())
                    .is_some_and(|sel| !sel.is_everything() && sel.matches(&labels))
            })
            .collect()
    }

    fn on_pod(&self, n: Notification<Pod>) {
        match n {
            Notification::Add(pod) => {
                if pod.metadata.deletion_timestamp.is_some() {
                    return self.pod_gone(&pod);
                }
                if let Some(rs) = self.resolve(&pod) {
                    let key = key_of(rs.as_ref());
                    self.expectations.creation_observed(&key);
                    self.queue.add(&key);
                    return;
                }
                if controller_ref(&pod.metadata).is_none() {
                    for rs in self.matching(&pod) {
                        self.queue.add(&key_of(rs.as_ref()));
                    }
                }
            }
            Notification::Update { old, new } => {
                if old.metadata.resource_version == new.metadata.resource_version {
                    return;
                }
                let labels_changed = old.metadata.labels != new.metadata.labels;
                if new.metadata.deletion_timestamp.is_some() {
                    self.pod_gone(&new);
                    if labels_changed {
                        self.pod_gone(&old);
                    }
                    return;
                }
                let old_ref = controller_ref(&old.metadata);
                let new_ref = controller_ref(&new.metadata);
                let ref_changed = old_ref != new_ref;
                if ref_changed {
                    if let Some(rs) = self.resolve(&old) {
                        self.queue.add(&key_of(rs.as_ref()));
                    }
                }
                if let Some(rs) = self.resolve(&new) {
                    let key = key_of(rs.as_ref());
                    self.queue.add(&key);
                    let min_ready = rs
                        .spec
                        .as_ref()
                        .and_then(|s| s.min_ready_seconds)
                        .unwrap_or(0);
                    if min_ready > 0 && !is_pod_ready(&old) && is_pod_ready(&new) {
                        // Check availability again once minReadySeconds have passed.
                        self.queue
                            .add_after(&key, secs(i64::from(min_ready)) + secs(1));
                    }
                    return;
                }
                if new_ref.is_none() && (labels_changed || ref_changed) {
                    for rs in self.matching(&new) {
                        self.queue.add(&key_of(rs.as_ref()));
                    }
                }
            }
            Notification::Delete(pod) => self.pod_gone(&pod),
        }
    }

    /// A pod went away (or started terminating): settle its owner's expectations.
    fn pod_gone(&self, pod: &Pod) {
        if let Some(rs) = self.resolve(pod) {
            let key = key_of(rs.as_ref());
            self.expectations.deletion_observed(&key, &key_of(pod));
            self.queue.add(&key);
        }
    }
}
