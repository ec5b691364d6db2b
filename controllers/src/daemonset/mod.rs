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
use tinykube_client::reflector::{Notification, Store};
use tokio::time::Instant;

use crate::context::{route, Context};
use crate::expectations::Expectations;
use crate::owned::{self, PodHandlers, Updates};
use crate::util::{node_ready_condition, run_workers};
use crate::workqueue::WorkQueue;
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
        queue: ctx.queue(),
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
    /// The pod handlers DaemonSets share with ReplicaSets, with creates and deletes awaited in
    /// separate sets.
    fn handlers(&self) -> PodHandlers<'_, DaemonSet> {
        PodHandlers {
            owners: &self.daemonsets,
            queue: &self.queue,
            creates: &self.creates,
            deletes: &self.deletes,
            updates: Updates::Every,
        }
    }

    fn enqueue_all(&self) {
        owned::enqueue_all(&self.daemonsets, &self.queue);
    }

    fn lagged(&self) {
        tracing::warn!("daemonset controller fell behind its informers; resyncing");
        self.handlers().lagged();
    }

    fn on_daemonset(&self, n: Notification<DaemonSet>) {
        self.handlers().on_owner(n);
    }

    fn on_pod(&self, n: Notification<Pod>) {
        self.handlers().on_pod(n);
    }

    /// Node additions, deletions and label, taint or schedulability changes can change where
    /// daemon pods belong; heartbeats and other status updates cannot.
    fn on_node(&self, n: Notification<Node>) {
        if let Notification::Update { old, new } = &n {
            let ready = |n: &Node| node_ready_condition(n).map(|c| c.status.clone());
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
        owned::enqueue_owners(&self.daemonsets, &self.queue, &h.metadata);
    }
}
