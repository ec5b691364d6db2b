//! The endpoints controller: keeps one core/v1 Endpoints per Service with a selector, named as
//! the Service, listing the selected pods' IPs (ready ones in `addresses`, the others in
//! `notReadyAddresses`) with the service ports resolved on each pod; deletes it when the
//! Service goes. Services without a selector are left to whoever manages their endpoints.
//!
//! Wiring only: service, pod and endpoints notifications queue service keys; [`sync`]
//! reconciles one, [`subsets`] decides without I/O.

pub mod subsets;
pub mod sync;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use tinykube_client::reflector::{key_of, Notification, Store};

use crate::context::{route, Context};
use crate::podaddress::services_of;
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// Upstream's default `--concurrent-endpoint-syncs`.
const WORKERS: usize = 5;

pub struct Controller {
    pub ctx: Arc<Context>,
    pub pods: Store<Pod>,
    pub services: Store<Service>,
    pub endpoints: Store<Endpoints>,
    /// Service keys to sync.
    pub queue: WorkQueue,
}

/// Subscribe to services, pods and endpoints and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let svc_events = ctx.services.subscribe();
    let pod_events = ctx.pods.subscribe();
    let ep_events = ctx.endpoints.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        pods: ctx.pods.store(),
        services: ctx.services.store(),
        endpoints: ctx.endpoints.store(),
        queue: ctx.queue(),
    });
    Box::pin(async move {
        let (Some(svc_events), Some(pod_events), Some(ep_events)) =
            (svc_events, pod_events, ep_events)
        else {
            tracing::error!("endpoint controller started after the informers");
            return;
        };
        let on_svc = route(
            svc_events,
            &c,
            Controller::on_service,
            Controller::enqueue_all,
        );
        let on_pod = route(pod_events, &c, Controller::on_pod, Controller::enqueue_all);
        let on_ep = route(
            ep_events,
            &c,
            Controller::on_endpoints,
            Controller::enqueue_all,
        );
        let run = {
            let c = c.clone();
            async move {
                c.pods.clone().wait_ready().await;
                c.services.clone().wait_ready().await;
                c.endpoints.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("endpoint", c.queue.clone(), WORKERS, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_svc, on_pod, on_ep, run);
    })
}

impl Controller {
    /// Every service, and every endpoints object: one whose service went while the controller
    /// was away is deleted (upstream's checkLeftoverEndpoints).
    fn enqueue_all(&self) {
        for svc in self.services.list() {
            self.queue.add(&key_of(svc.as_ref()));
        }
        for ep in self.endpoints.list() {
            self.queue.add(&key_of(ep.as_ref()));
        }
    }

    fn on_service(&self, n: Notification<Service>) {
        let (Notification::Add(s) | Notification::Update { new: s, .. } | Notification::Delete(s)) =
            n;
        self.queue.add(&key_of(s.as_ref()));
    }

    fn on_pod(&self, n: Notification<Pod>) {
        let mut keys = Vec::new();
        match &n {
            Notification::Add(p) | Notification::Delete(p) => {
                keys.extend(services_of(&self.services, p))
            }
            Notification::Update { old, new } => {
                keys.extend(services_of(&self.services, new));
                keys.extend(services_of(&self.services, old));
            }
        }
        for k in keys {
            self.queue.add(&k);
        }
    }

    /// A deleted endpoints object is written again if its service still selects pods (as
    /// upstream, only deletions are watched; other edits are undone at the next change).
    fn on_endpoints(&self, n: Notification<Endpoints>) {
        if let Notification::Delete(e) = n {
            self.queue.add(&key_of(e.as_ref()));
        }
    }
}
