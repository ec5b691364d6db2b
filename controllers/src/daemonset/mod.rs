//! The DaemonSet controller: one pod on every node the pod template allows, rolled out by
//! RollingUpdate or OnDelete with the template history in ControllerRevisions.
//!
//! Wiring only: informer handlers turn pod, node, revision and DaemonSet notifications into
//! keys (and settle expectations); [`sync`] reconciles one DaemonSet, [`placement`] decides
//! which nodes should run a pod, [`history`] keeps the revisions, [`update`] plans rollouts and
//! [`status`] holds the status arithmetic.

pub mod history;
pub mod placement;
pub mod status;
pub mod sync;
pub mod update;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tinykube_client::reflector::{key_of, Notification, Store};
use tinykube_proto::labels::Selector;
use tokio::time::Instant;

use crate::context::{route, Context, BY_NAMESPACE};
use crate::expectations::Expectations;
use crate::util::{controller_ref, is_pod_ready, run_workers, secs};
use crate::workqueue::WorkQueue;

/// How long expectations survive after notifications were lost.
const LAG_GRACE: std::time::Duration = std::time::Duration::from_secs(2);
/// Upstream's concurrent DaemonSet syncs default.
const WORKERS: usize = 2;

/// The event source, as upstream.
pub const COMPONENT: &str = "daemonset-controller";

/// Shared state of the controller.
pub struct Controller {
    pub ctx: Arc<Context>,
    pub pods: Store<Pod>,
    pub daemonsets: Store<DaemonSet>,
    pub nodes: Store<Node>,
    pub revisions: Store<ControllerRevision>,
    pub queue: WorkQueue,
    /// Creates awaited per DaemonSet key.
    pub creates: Expectations,
    /// Deletes awaited per DaemonSet key.
    pub deletes: Expectations,
    /// Backoff of failed-pod replacement per DaemonSet and node: (last kill, delay).
    pub failed_backoff: Mutex<HashMap<String, (Instant, std::time::Duration)>>,
    pub recorder: Arc<crate::events::EventRecorder>,
}

/// Subscribe to DaemonSets, pods, nodes and ControllerRevisions and return the run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let ds_events = ctx.daemonsets.subscribe();
    let pod_events = ctx.pods.subscribe();
    let node_events = ctx.nodes.subscribe();
    let rev_events = ctx.controllerrevisions.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        pods: ctx.pods.store(),
        daemonsets: ctx.daemonsets.store(),
        nodes: ctx.nodes.store(),
        revisions: ctx.controllerrevisions.store(),
        queue: WorkQueue::new(),
        creates: Expectations::new(),
        deletes: Expectations::new(),
        failed_backoff: Mutex::new(HashMap::new()),
        recorder: ctx.recorder(COMPONENT),
    });
    Box::pin(async move {
        let (Some(ds_events), Some(pod_events), Some(node_events), Some(rev_events)) =
            (ds_events, pod_events, node_events, rev_events)
        else {
            tracing::error!("daemonset controller started after the informers");
            return;
        };
        let on_ds = route(ds_events, &c, Controller::on_daemonset, Controller::lagged);
        let on_pod = route(pod_events, &c, Controller::on_pod, Controller::lagged);
        let on_node = route(node_events, &c, Controller::on_node, Controller::lagged);
        let on_rev = route(rev_events, &c, Controller::on_revision, Controller::lagged);
        let run = {
            let c = c.clone();
            async move {
                c.pods.clone().wait_ready().await;
                c.daemonsets.clone().wait_ready().await;
                c.nodes.clone().wait_ready().await;
                c.revisions.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("daemonset", c.queue.clone(), WORKERS, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_ds, on_pod, on_node, on_rev, run);
    })
}

impl Controller {
    fn enqueue_all(&self) {
        for ds in self.daemonsets.list() {
            self.queue.add(&key_of(ds.as_ref()));
        }
    }

    /// Notifications were dropped: expectations expire soon and everything is looked at.
    fn lagged(&self) {
        tracing::warn!("daemonset controller fell behind its informers; resyncing");
        self.creates.expire_within(LAG_GRACE);
        self.deletes.expire_within(LAG_GRACE);
        self.enqueue_all();
        for ds in self.daemonsets.list() {
            self.queue
                .add_after(&key_of(ds.as_ref()), LAG_GRACE + secs(1));
        }
    }

    fn on_daemonset(&self, n: Notification<DaemonSet>) {
        match n {
            Notification::Add(ds) | Notification::Update { new: ds, .. } => {
                self.queue.add(&key_of(ds.as_ref()))
            }
            Notification::Delete(ds) => {
                let key = key_of(ds.as_ref());
                self.creates.delete(&key);
                self.deletes.delete(&key);
                self.queue.add(&key);
            }
        }
    }

    /// The DaemonSet a controller reference in `meta` points to, if cached.
    fn resolve(&self, meta: &ObjectMeta) -> Option<Arc<DaemonSet>> {
        let r = controller_ref(meta)?;
        if r.kind != "DaemonSet" {
            return None;
        }
        let ns = meta.namespace.as_deref().unwrap_or_default();
        let ds = self.daemonsets.get(&format!("{ns}/{}", r.name))?;
        (ds.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(ds)
    }

    /// DaemonSets of the namespace whose selector matches `meta` (orphan adoption).
    fn matching(&self, meta: &ObjectMeta) -> Vec<Arc<DaemonSet>> {
        let ns = meta.namespace.as_deref().unwrap_or_default();
        let labels = meta.labels.clone().unwrap_or_default();
        self.daemonsets
            .by_index(BY_NAMESPACE, ns)
            .into_iter()
            .filter(|ds| {
                ds.spec
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
                if let Some(ds) = self.resolve(&pod.metadata) {
                    let key = key_of(ds.as_ref());
                    self.creates.creation_observed(&key);
                    self.queue.add(&key);
                } else if controller_ref(&pod.metadata).is_none() {
                    for ds in self.matching(&pod.metadata) {
                        self.queue.add(&key_of(ds.as_ref()));
                    }
                }
            }
            Notification::Update { old, new } => {
                if old.metadata.resource_version == new.metadata.resource_version {
                    return;
                }
                if new.metadata.deletion_timestamp.is_some() {
                    self.pod_gone(&new);
                    return;
                }
                if controller_ref(&old.metadata) != controller_ref(&new.metadata) {
                    if let Some(ds) = self.resolve(&old.metadata) {
                        self.queue.add(&key_of(ds.as_ref()));
                    }
                }
                if let Some(ds) = self.resolve(&new.metadata) {
                    let key = key_of(ds.as_ref());
                    self.queue.add(&key);
                    let min_ready = ds
                        .spec
                        .as_ref()
                        .and_then(|s| s.min_ready_seconds)
                        .unwrap_or(0);
                    if min_ready > 0 && !is_pod_ready(&old) && is_pod_ready(&new) {
                        self.queue
                            .add_after(&key, secs(i64::from(min_ready)) + secs(1));
                    }
                } else if controller_ref(&new.metadata).is_none() {
                    for ds in self.matching(&new.metadata) {
                        self.queue.add(&key_of(ds.as_ref()));
                    }
                }
            }
            Notification::Delete(pod) => self.pod_gone(&pod),
        }
    }

    /// A pod went away (or started terminating): settle its owner's expectations.
    fn pod_gone(&self, pod: &Pod) {
        if let Some(ds) = self.resolve(&pod.metadata) {
            let key = key_of(ds.as_ref());
            self.deletes.deletion_observed(&key, &key_of(pod));
            self.queue.add(&key);
        }
    }

    /// Node additions, deletions and label, taint or schedulability changes can change where
    /// daemon pods belong; heartbeats and other status updates cannot.
    fn on_node(&self, n: Notification<Node>) {
        if let Notification::Update { old, new } = &n {
            let ready = |n: &Node| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                    .map(|c| c.status.clone())
            };
            if old.metadata.labels == new.metadata.labels
                && old.spec == new.spec
                && ready(old) == ready(new)
            {
                return;
            }
        }
        self.enqueue_all();
    }

    fn on_revision(&self, n: Notification<ControllerRevision>) {
        let h = match n {
            Notification::Add(h)
            | Notification::Update { new: h, .. }
            | Notification::Delete(h) => h,
        };
        if let Some(ds) = self.resolve(&h.metadata) {
            self.queue.add(&key_of(ds.as_ref()));
        } else if controller_ref(&h.metadata).is_none() {
            for ds in self.matching(&h.metadata) {
                self.queue.add(&key_of(ds.as_ref()));
            }
        }
    }
}
