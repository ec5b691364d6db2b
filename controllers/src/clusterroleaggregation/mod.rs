//! The clusterrole-aggregation controller (upstream's `clusterrole-aggregation`): a ClusterRole
//! with an `aggregationRule` gets as `rules` the rules of every other ClusterRole its selectors
//! match (`admin`, `edit` and `view` are built this way from the `aggregate-to-*` roles).
//!
//! Wiring only: any ClusterRole change enqueues every aggregated ClusterRole (a change to a
//! selected role changes its aggregators); [`sync`] computes and writes one.

pub mod sync;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::rbac::v1::ClusterRole;
use tinykube_client::reflector::{Notification, Store};

use crate::context::{route, Context};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

pub const NAME: &str = "clusterrole-aggregation";

pub struct Controller {
    pub ctx: Arc<Context>,
    pub clusterroles: Store<ClusterRole>,
    pub queue: WorkQueue,
}

/// Subscribe to ClusterRoles and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let events = ctx.clusterroles.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        clusterroles: ctx.clusterroles.store(),
        queue: ctx.queue(),
    });
    Box::pin(async move {
        let Some(events) = events else {
            tracing::error!("{NAME} started after the informers");
            return;
        };
        let on_roles = route(events, &c, Controller::on_role, Controller::enqueue_all);
        let run = {
            let c = c.clone();
            async move {
                c.clusterroles.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers(NAME, c.queue.clone(), 1, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_roles, run);
    })
}

impl Controller {
    fn on_role(&self, _n: Notification<ClusterRole>) {
        self.enqueue_all();
    }

    fn enqueue_all(&self) {
        for role in self.clusterroles.list() {
            if role.aggregation_rule.is_some() {
                if let Some(name) = &role.metadata.name {
                    self.queue.add(name);
                }
            }
        }
    }
}
