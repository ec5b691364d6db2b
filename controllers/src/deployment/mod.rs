//! The Deployment controller: one ReplicaSet per pod template (`NAME-<pod-template-hash>`),
//! rolled out by RollingUpdate or Recreate, with revisions, history cleanup, proportional
//! scaling, pausing, and the Available/Progressing conditions `kubectl rollout status` reads.
//!
//! Wiring only: handlers turn Deployment, ReplicaSet and pod notifications into Deployment
//! keys. [`sync`] reconciles one Deployment, [`rollout`] holds the two strategies, [`util`]
//! the pure arithmetic.

pub mod rollout;
pub mod sync;
pub mod util;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use tinykube_client::reflector::{key_of, Notification, Store};

use crate::context::{route, Context};
use crate::owned;
use crate::util::{controller_ref, run_workers};
use crate::workqueue::WorkQueue;

/// The event source, as upstream.
pub const COMPONENT: &str = "deployment-controller";

/// Shared state of the controller.
pub struct Controller {
    pub ctx: Arc<Context>,
    pub deployments: Store<Deployment>,
    pub replicasets: Store<ReplicaSet>,
    pub pods: Store<Pod>,
    pub queue: WorkQueue,
    pub recorder: Arc<crate::events::EventRecorder>,
}

/// Subscribe to Deployments, ReplicaSets and pods and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let d_events = ctx.deployments.subscribe();
    let rs_events = ctx.replicasets.subscribe();
    let pod_events = ctx.pods.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        deployments: ctx.deployments.store(),
        replicasets: ctx.replicasets.store(),
        pods: ctx.pods.store(),
        queue: ctx.queue(),
        recorder: ctx.recorder(COMPONENT),
    });
    let workers = ctx.options.concurrent_deployment_syncs;
    Box::pin(async move {
        let (Some(d_events), Some(rs_events), Some(pod_events)) = (d_events, rs_events, pod_events)
        else {
            tracing::error!("deployment controller started after the informers");
            return;
        };
        let on_d = route(
            d_events,
            &c,
            Controller::on_deployment,
            Controller::enqueue_all,
        );
        let on_rs = route(
            rs_events,
            &c,
            Controller::on_replicaset,
            Controller::enqueue_all,
        );
        let on_pod = route(pod_events, &c, Controller::on_pod, Controller::enqueue_all);
        let run = {
            let c = c.clone();
            async move {
                c.deployments.clone().wait_ready().await;
                c.replicasets.clone().wait_ready().await;
                c.pods.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("deployment", c.queue.clone(), workers, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_d, on_rs, on_pod, run);
    })
}

impl Controller {
    fn enqueue_all(&self) {
        owned::enqueue_all(&self.deployments, &self.queue);
    }

    fn on_deployment(&self, n: Notification<Deployment>) {
        match n {
            Notification::Add(d)
            | Notification::Update { new: d, .. }
            | Notification::Delete(d) => self.queue.add(&key_of(d.as_ref())),
        }
    }

    /// The Deployment a ReplicaSet's controller reference points to, if cached.
    fn owner_of(&self, rs: &ReplicaSet) -> Option<Arc<Deployment>> {
        owned::resolve(&self.deployments, &rs.metadata)
    }

    /// Queue the ReplicaSet's Deployment, or for an orphan every Deployment that may adopt it.
    fn enqueue_for(&self, rs: &ReplicaSet) {
        owned::enqueue_owners(&self.deployments, &self.queue, &rs.metadata);
    }

    fn on_replicaset(&self, n: Notification<ReplicaSet>) {
        match n {
            Notification::Add(rs) | Notification::Delete(rs) => self.enqueue_for(&rs),
            Notification::Update { old, new } => {
                if old.metadata.resource_version == new.metadata.resource_version {
                    return;
                }
                if controller_ref(&old.metadata) != controller_ref(&new.metadata) {
                    self.enqueue_for(&old);
                }
                self.enqueue_for(&new);
            }
        }
    }

    /// A deleted pod may let a Recreate rollout proceed.
    fn on_pod(&self, n: Notification<Pod>) {
        let Notification::Delete(pod) = n else {
            return;
        };
        let Some(r) = controller_ref(&pod.metadata) else {
            return;
        };
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        if let Some(rs) = self.replicasets.get(&format!("{ns}/{}", r.name)) {
            if let Some(d) = self.owner_of(&rs) {
                if !util::is_rolling(&d) {
                    self.queue.add(&key_of(d.as_ref()));
                }
            }
        }
    }
}
