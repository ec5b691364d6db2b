//! The PVC protection controller (upstream's `persistentvolumeclaim-protection`): a claim being
//! deleted keeps its `kubernetes.io/pvc-protection` finalizer while a scheduled pod that has
//! not finished uses it, and loses it (so the deletion completes) once none does. A claim not
//! being deleted gets the finalizer if it lacks it.
//!
//! Claim notifications enqueue the claim; a pod that goes, finishes or is scheduled enqueues
//! the claims its volumes name.

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use serde_json::json;
use tinykube_client::reflector::{key_of, Notification, Store};
use tinykube_client::{Api, ClientError, Patch};
use tinykube_proto::storage::PVC_PROTECTION;

use crate::context::{forward, Context, BY_NAMESPACE};
use crate::util::{is_pod_terminal, node_name, run_workers};
use crate::workqueue::WorkQueue;

const WORKERS: usize = 2;

pub struct Controller {
    pub ctx: Arc<Context>,
    pub claims: Store<PersistentVolumeClaim>,
    pub pods: Store<Pod>,
    pub queue: WorkQueue,
}

#[derive(Debug, thiserror::Error)]
#[error("updating the finalizers of claim {claim}: {source}")]
pub struct SyncError {
    claim: String,
    #[source]
    source: ClientError,
}

/// The claims a pod's volumes name.
pub fn claims_of(pod: &Pod) -> Vec<String> {
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| {
            v.persistent_volume_claim
                .as_ref()
                .map(|c| c.claim_name.clone())
        })
        .collect()
}

/// Whether the pod holds the claim: scheduled, not finished, naming it.
pub fn uses(pod: &Pod, claim: &str) -> bool {
    !node_name(pod).is_empty() && !is_pod_terminal(pod) && claims_of(pod).iter().any(|c| c == claim)
}

pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let claim_events = ctx.persistentvolumeclaims.subscribe();
    let pod_events = ctx.pods.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        claims: ctx.persistentvolumeclaims.store(),
        pods: ctx.pods.store(),
        queue: ctx.queue(),
    });
    Box::pin(async move {
        let (Some(claim_events), Some(pod_events)) = (claim_events, pod_events) else {
            tracing::error!("persistentvolumeclaim-protection started after the informers");
            return;
        };
        let on_claims = {
            let (c, r) = (c.clone(), c.clone());
            forward(
                claim_events,
                move |n| {
                    if let Notification::Add(x) | Notification::Update { new: x, .. } = n {
                        c.queue.add(&key_of(&*x));
                    }
                },
                move || r.enqueue_all(),
            )
        };
        let on_pods = {
            let (c, r) = (c.clone(), c.clone());
            forward(pod_events, move |n| c.on_pod(n), move || r.enqueue_all())
        };
        let run = {
            let c = c.clone();
            async move {
                c.claims.clone().wait_ready().await;
                c.pods.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers(
                    "persistentvolumeclaim-protection",
                    c.queue.clone(),
                    WORKERS,
                    move |key| {
                        let s = s.clone();
                        async move { s.sync(&key).await }
                    },
                )
                .await;
            }
        };
        tokio::join!(on_claims, on_pods, run);
    })
}

impl Controller {
    fn enqueue_all(&self) {
        for c in self.claims.list() {
            self.queue.add(&key_of(&*c));
        }
    }

    fn on_pod(&self, n: Notification<Pod>) {
        let pod = match n {
            Notification::Add(p)
            | Notification::Update { new: p, .. }
            | Notification::Delete(p) => p,
        };
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        for claim in claims_of(&pod) {
            self.queue.add(&format!("{ns}/{claim}"));
        }
    }

    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some(claim) = self.claims.get(key) else {
            return Ok(());
        };
        let finalizers = claim.metadata.finalizers.clone().unwrap_or_default();
        let has = finalizers.iter().any(|f| f == PVC_PROTECTION);
        let deleting = claim.metadata.deletion_timestamp.is_some();
        let (ns, name) = key.split_once('/').unwrap_or(("", key));
        let want: Vec<String> = if deleting {
            if !has {
                return Ok(());
            }
            let used = self
                .pods
                .by_index(BY_NAMESPACE, ns)
                .iter()
                .any(|p| uses(p, name));
            if used {
                return Ok(());
            }
            finalizers
                .into_iter()
                .filter(|f| f != PVC_PROTECTION)
                .collect()
        } else {
            if has {
                return Ok(());
            }
            finalizers
                .into_iter()
                .chain([PVC_PROTECTION.to_string()])
                .collect()
        };
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.ctx.client.clone(), ns);
        let patch = json!({"metadata": {"finalizers": want, "resourceVersion": claim.metadata.resource_version}});
        match api.patch(name, &Patch::Merge(patch)).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(source) => Err(SyncError {
                claim: key.to_string(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scheduled_unfinished_pods_hold_a_claim() {
        let pod = |node: &str, phase: &str| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"nodeName": node,
                "containers": [], "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]},
                "status": {"phase": phase}}))
            .unwrap()
        };
        assert!(uses(&pod("n1", "Running"), "c"));
        assert!(!uses(&pod("n1", "Running"), "other"));
        assert!(!uses(&pod("", "Pending"), "c"));
        assert!(!uses(&pod("n1", "Succeeded"), "c"));
    }
}
