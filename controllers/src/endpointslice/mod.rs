//! The endpointslice controller: keeps a Service's discovery.k8s.io/v1 EndpointSlices (labels
//! `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
//! endpointslice-controller.k8s.io`, owned by the Service) listing its selected pods, one
//! endpoint per pod with `ready`, `serving` and `terminating` conditions, node name, zone and
//! `targetRef`, at most 100 endpoints per slice, one address family per slice; an empty
//! placeholder slice when no pod is selected. Services without a selector and ExternalName
//! ones are left alone; a deleted Service's slices go with it through the garbage collector.
//!
//! Wiring only: service, pod and managed slice notifications queue service keys; [`sync`]
//! reconciles one (with a tracker of its own writes, so that a cache that has not seen them
//! yet never makes it create twice); [`plan`] decides without I/O.

pub mod plan;
pub mod sync;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use tinykube_client::reflector::{key_of, Notification, Store};

use crate::context::{route, Context};
use crate::podaddress::services_of;
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// The managed-by label and this controller's value of it.
pub const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
pub const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
/// The label naming a slice's service.
pub const SERVICE_NAME: &str = "kubernetes.io/service-name";
/// Upstream's default `--concurrent-service-endpoint-syncs`.
const WORKERS: usize = 5;

pub struct Controller {
    pub ctx: Arc<Context>,
    pub pods: Store<Pod>,
    pub services: Store<Service>,
    pub slices: Store<EndpointSlice>,
    pub nodes: Store<Node>,
    /// Service keys to sync.
    pub queue: WorkQueue,
    /// Per service, the slice writes the cache has yet to show.
    pub tracker: Mutex<HashMap<String, sync::Pending>>,
}

/// Subscribe to services, pods and slices and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let svc_events = ctx.services.subscribe();
    let pod_events = ctx.pods.subscribe();
    let slice_events = ctx.endpointslices.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        pods: ctx.pods.store(),
        services: ctx.services.store(),
        slices: ctx.endpointslices.store(),
        nodes: ctx.nodes.store(),
        queue: ctx.queue(),
        tracker: Mutex::new(HashMap::new()),
    });
    Box::pin(async move {
        let (Some(svc_events), Some(pod_events), Some(slice_events)) =
            (svc_events, pod_events, slice_events)
        else {
            tracing::error!("endpointslice controller started after the informers");
            return;
        };
        let on_svc = route(
            svc_events,
            &c,
            Controller::on_service,
            Controller::enqueue_all,
        );
        let on_pod = route(pod_events, &c, Controller::on_pod, Controller::enqueue_all);
        let on_slice = route(
            slice_events,
            &c,
            Controller::on_slice,
            Controller::enqueue_all,
        );
        let run = {
            let c = c.clone();
            async move {
                c.pods.clone().wait_ready().await;
                c.services.clone().wait_ready().await;
                c.slices.clone().wait_ready().await;
                c.nodes.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("endpointslice", c.queue.clone(), WORKERS, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_svc, on_pod, on_slice, run);
    })
}

/// The key of the service a slice this controller manages belongs to.
pub fn service_key(slice: &EndpointSlice) -> Option<String> {
    let labels = slice.metadata.labels.as_ref()?;
    if labels.get(MANAGED_BY).map(String::as_str) != Some(CONTROLLER_NAME) {
        return None;
    }
    let svc = labels.get(SERVICE_NAME)?;
    let ns = slice.metadata.namespace.as_deref().unwrap_or_default();
    Some(format!("{ns}/{svc}"))
}

impl Controller {
    fn enqueue_all(&self) {
        for svc in self.services.list() {
            self.queue.add(&key_of(svc.as_ref()));
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

    /// A managed slice changed or went (by our hand or someone else's): its service again.
    fn on_slice(&self, n: Notification<EndpointSlice>) {
        let (Notification::Add(s) | Notification::Update { new: s, .. } | Notification::Delete(s)) =
            n;
        if let Some(key) = service_key(&s) {
            self.queue.add(&key);
        }
    }
}
