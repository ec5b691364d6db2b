//! The namespace lifecycle controller: a namespace being deleted has every namespaced object of
//! every served kind deleted, its deletion conditions kept as upstream's, and then the
//! `kubernetes` finalizer removed through `namespaces/NAME/finalize`, so it disappears.
//!
//! Wiring only: the handler enqueues terminating namespaces; [`sync`] does one pass.

pub mod sync;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Namespace;
use tinykube_client::reflector::{Notification, Store};

use crate::context::{route, Context};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// The finalizer this controller owns.
pub const FINALIZER: &str = "kubernetes";
/// Upstream's ConcurrentNamespaceSyncs default.
const WORKERS: usize = 10;

/// Shared state of the controller.
pub struct Controller {
    pub ctx: Arc<Context>,
    pub namespaces: Store<Namespace>,
    pub queue: WorkQueue,
}

/// Subscribe to namespaces and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let events = ctx.namespaces.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        namespaces: ctx.namespaces.store(),
        queue: ctx.queue(),
    });
    Box::pin(async move {
        let Some(events) = events else {
            tracing::error!("namespace controller started after the informers");
            return;
        };
        let handler = route(
            events,
            &c,
            Controller::on_namespace,
            Controller::enqueue_all,
        );
        let run = {
            let c = c.clone();
            async move {
                c.namespaces.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("namespace", c.queue.clone(), WORKERS, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(handler, run);
    })
}

impl Controller {
    fn on_namespace(&self, n: Notification<Namespace>) {
        if let Notification::Add(ns) | Notification::Update { new: ns, .. } = n {
            self.consider(&ns);
        }
    }

    fn consider(&self, ns: &Namespace) {
        if ns.metadata.deletion_timestamp.is_some() {
            if let Some(name) = &ns.metadata.name {
                self.queue.add(name);
            }
        }
    }

    fn enqueue_all(&self) {
        for ns in self.namespaces.list() {
            self.consider(&ns);
        }
    }
}
