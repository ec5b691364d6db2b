//! The root CA publisher (upstream's `root-ca-cert-publisher`): every active namespace has the
//! ConfigMap `kube-root-ca.crt` whose `ca.crt` is the cluster CA (`--root-ca-file`, the
//! certificate the API server keeps in its data dir), with upstream's description annotation;
//! edits to it are put back.
//!
//! Wiring only: namespace notifications and changes of a `kube-root-ca.crt` enqueue the
//! namespace; [`sync`] does one pass.

pub mod sync;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use tinykube_client::reflector::{Notification, Store};

use crate::context::{forward, route, Context};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

pub const CONFIG_MAP: &str = "kube-root-ca.crt";
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

pub struct Controller {
    pub ctx: Arc<Context>,
    pub namespaces: Store<Namespace>,
    pub configmaps: Store<ConfigMap>,
    pub queue: WorkQueue,
    /// PEM of the CA certificate.
    pub root_ca: String,
}

/// Subscribe to namespaces and ConfigMaps and return the controller's run future. Without a
/// `--root-ca-file` there is nothing to publish: the controller logs so and stays idle.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let root_ca = match &ctx.options.root_ca_file {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(pem) => pem,
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "root-ca-cert-publisher: cannot read the root CA");
                return Box::pin(async {});
            }
        },
        None => {
            tracing::info!("root-ca-cert-publisher: no --root-ca-file, nothing to publish");
            return Box::pin(async {});
        }
    };
    let namespace_events = ctx.namespaces.subscribe();
    let configmap_events = ctx.configmaps.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        namespaces: ctx.namespaces.store(),
        configmaps: ctx.configmaps.store(),
        queue: ctx.queue(),
        root_ca,
    });
    Box::pin(async move {
        let (Some(namespace_events), Some(configmap_events)) = (namespace_events, configmap_events)
        else {
            tracing::error!("root-ca-cert-publisher started after the informers");
            return;
        };
        let on_namespaces = route(
            namespace_events,
            &c,
            Controller::on_namespace,
            Controller::enqueue_all,
        );
        let on_configmaps = {
            let (c, r) = (c.clone(), c.clone());
            forward(
                configmap_events,
                move |n| c.on_configmap(n),
                move || r.enqueue_all(),
            )
        };
        let run = {
            let c = c.clone();
            async move {
                c.namespaces.clone().wait_ready().await;
                c.configmaps.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("root-ca-cert-publisher", c.queue.clone(), 1, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_namespaces, on_configmaps, run);
    })
}

impl Controller {
    fn on_namespace(&self, n: Notification<Namespace>) {
        if let Notification::Add(ns) | Notification::Update { new: ns, .. } = n {
            if let Some(name) = &ns.metadata.name {
                self.queue.add(name);
            }
        }
    }

    fn on_configmap(&self, n: Notification<ConfigMap>) {
        let cm = match n {
            Notification::Update { new, .. } => new,
            Notification::Delete(old) => old,
            _ => return,
        };
        if cm.metadata.name.as_deref() == Some(CONFIG_MAP) {
            if let Some(ns) = &cm.metadata.namespace {
                self.queue.add(ns);
            }
        }
    }

    fn enqueue_all(&self) {
        for ns in self.namespaces.list() {
            if let Some(name) = &ns.metadata.name {
                self.queue.add(name);
            }
        }
    }
}
