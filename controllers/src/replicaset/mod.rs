//! The ReplicaSet controller: keeps `spec.replicas` pods matching the selector, adopting
//! orphans and releasing pods that stopped matching, and reports status through `/status`.
//! As upstream, the same controller runs for ReplicationControllers ([`kind`]).
//!
//! Wiring only: informer handlers turn notifications into keys (and settle expectations);
//! [`sync`] reconciles one ReplicaSet, [`ranking`] orders pods for deletion.

pub mod kind;
pub mod ranking;
pub mod sync;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use tinykube_client::reflector::{Notification, Store};

use crate::context::{route, Context};
use crate::expectations::Expectations;
use crate::owned::{self, PodHandlers, Updates};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

use kind::Replicated;

/// The event source of the ReplicaSet controller, as upstream.
pub const COMPONENT: &str = ReplicaSet::COMPONENT;

/// Shared state of the controller for ReplicaSets or ReplicationControllers (`K`).
pub struct Controller<K> {
    pub ctx: Arc<Context>,
    pub pods: Store<Pod>,
    pub replicasets: Store<K>,
    pub queue: WorkQueue,
    pub expectations: Expectations,
    pub recorder: Arc<crate::events::EventRecorder>,
}

/// Subscribe to pods and ReplicaSets and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    start_for::<ReplicaSet>(ctx, ctx.options.concurrent_replicaset_syncs)
}

/// The `replicationcontroller` controller: the same, for ReplicationControllers (upstream's
/// `--concurrent-rc-syncs` defaults to 5 too).
pub fn start_rc(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    start_for::<ReplicationController>(ctx, ctx.options.concurrent_replicaset_syncs)
}

fn start_for<K: Replicated>(ctx: &Arc<Context>, workers: usize) -> BoxFuture<'static, ()> {
    let rs_events = K::shared(ctx).subscribe();
    let pod_events = ctx.pods.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        pods: ctx.pods.store(),
        replicasets: K::shared(ctx).store(),
        queue: ctx.queue(),
        expectations: Expectations::new(),
        recorder: ctx.recorder(K::COMPONENT),
    });
    Box::pin(async move {
        let (Some(rs_events), Some(pod_events)) = (rs_events, pod_events) else {
            tracing::error!("{} controller started after the informers", K::NAME);
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
                run_workers(K::NAME, c.queue.clone(), workers, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_rs, on_pod, run);
    })
}

impl<K: Replicated> Controller<K> {
    /// The pod handlers ReplicaSets share with DaemonSets; one set of expectations serves
    /// creates and deletes.
    fn handlers(&self) -> PodHandlers<'_, K> {
        PodHandlers {
            owners: &self.replicasets,
            queue: &self.queue,
            creates: &self.expectations,
            deletes: &self.expectations,
            updates: Updates::LabelAware,
        }
    }

    fn enqueue_all(&self) {
        owned::enqueue_all(&self.replicasets, &self.queue);
    }

    fn lagged(&self) {
        tracing::warn!(
            "{} controller fell behind its informers; resyncing",
            K::NAME
        );
        self.handlers().lagged();
    }

    fn on_replicaset(&self, n: Notification<K>) {
        self.handlers().on_owner(n);
    }

    fn on_pod(&self, n: Notification<Pod>) {
        self.handlers().on_pod(n);
    }
}
