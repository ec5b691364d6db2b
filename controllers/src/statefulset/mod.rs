//! The StatefulSet controller: pods `NAME-ORDINAL` with stable identity and storage, created
//! in order (OrderedReady) or all at once (Parallel), rolled out by RollingUpdate (partition,
//! maxUnavailable) or OnDelete with the template history in ControllerRevisions.
//!
//! Wiring only: informer handlers turn StatefulSet and pod notifications into keys;
//! [`sync`] reconciles one StatefulSet by executing the step [`plan`] computes, with
//! [`identity`] for names, labels and claims and [`revisions`] for the history.

pub mod identity;
pub mod plan;
pub mod revisions;
pub mod sync;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use tinykube_client::reflector::{Notification, Store};

use crate::context::{route, Context};
use crate::expectations::Expectations;
use crate::owned::{self, PodHandlers, Updates};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// The event source, as upstream.
pub const COMPONENT: &str = "statefulset-controller";

/// Upstream's `--concurrent-statefulset-syncs` default.
const WORKERS: usize = 5;

/// Shared state of the controller.
pub struct Controller {
    pub ctx: Arc<Context>,
    pub pods: Store<Pod>,
    pub sets: Store<StatefulSet>,
    pub revisions: Store<ControllerRevision>,
    pub claims: Store<PersistentVolumeClaim>,
    pub queue: WorkQueue,
    /// Never set: pod names are deterministic, so a stale cache cannot create a pod twice
    /// (the second create is refused). The pod handlers want one.
    pub unused: Expectations,
    pub recorder: Arc<crate::events::EventRecorder>,
}

/// Subscribe to StatefulSets and pods and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let set_events = ctx.statefulsets.subscribe();
    let pod_events = ctx.pods.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        pods: ctx.pods.store(),
        sets: ctx.statefulsets.store(),
        revisions: ctx.controllerrevisions.store(),
        claims: ctx.persistentvolumeclaims.store(),
        queue: ctx.queue(),
        unused: Expectations::new(),
        recorder: ctx.recorder(COMPONENT),
    });
    Box::pin(async move {
        let (Some(set_events), Some(pod_events)) = (set_events, pod_events) else {
            tracing::error!("statefulset controller started after the informers");
            return;
        };
        let on_set = route(set_events, &c, Controller::on_set, Controller::lagged);
        let on_pod = route(pod_events, &c, Controller::on_pod, Controller::lagged);
        let run = {
            let c = c.clone();
            async move {
                c.pods.clone().wait_ready().await;
                c.sets.clone().wait_ready().await;
                c.revisions.clone().wait_ready().await;
                c.claims.clone().wait_ready().await;
                owned::enqueue_all(&c.sets, &c.queue);
                let s = c.clone();
                run_workers("statefulset", c.queue.clone(), WORKERS, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_set, on_pod, run);
    })
}

impl Controller {
    fn handlers(&self) -> PodHandlers<'_, StatefulSet> {
        PodHandlers {
            owners: &self.sets,
            queue: &self.queue,
            creates: &self.unused,
            deletes: &self.unused,
            updates: Updates::Every,
        }
    }

    fn lagged(&self) {
        tracing::warn!("statefulset controller fell behind its informers; resyncing");
        self.handlers().lagged();
    }

    fn on_set(&self, n: Notification<StatefulSet>) {
        self.handlers().on_owner(n);
    }

    fn on_pod(&self, n: Notification<Pod>) {
        self.handlers().on_pod(n);
    }
}
