//! One node's reconcile: heartbeat check, condition taints, then taint-based eviction.

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use tinykube_client::events::EventType;
use tinykube_client::{Api, ClientError, Patch};

use super::eviction::{eviction, Eviction};
use super::taints::{ready_status, reconciled_taints, silenced};
use super::{node_ref, Controller};
use crate::util::{is_pod_ready, node_name, node_ready_condition, object_ref};

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("marking the node Unknown: {0}")]
    Status(#[source] ClientError),
    #[error("updating the node's taints: {0}")]
    Taints(#[source] ClientError),
    #[error("evicting pods: {0}")]
    Evict(#[source] ClientError),
}

/// What the heartbeat of a node is made of: its Lease's renewTime and its Ready condition.
fn heartbeat(node: &Node, lease: Option<&k8s_openapi::api::coordination::v1::Lease>) -> String {
    let ready = node_ready_condition(node);
    let renewed = lease
        .and_then(|l| l.spec.as_ref())
        .and_then(|s| s.renew_time.as_ref());
    format!(
        "{:?}|{:?}|{:?}",
        renewed.map(|t| t.0),
        ready.map(|c| &c.status),
        ready
            .and_then(|c| c.last_heartbeat_time.as_ref())
            .map(|t| t.0)
    )
}

fn on_node<'a>(pods: &'a [std::sync::Arc<Pod>], node: &'a str) -> impl Iterator<Item = &'a Pod> {
    pods.iter()
        .map(|p| p.as_ref())
        .filter(move |p| node_name(p) == node)
        .filter(|p| p.metadata.deletion_timestamp.is_none())
}

impl Controller {
    pub async fn sync(&self, name: &str) -> Result<(), SyncError> {
        let Some(cached) = self.nodes.get(name) else {
            return Ok(());
        };
        self.register(&cached);
        let mut node = (*cached).clone();
        let lease = self.leases.get(&format!("kube-node-lease/{name}"));
        let silent = self.silent_for(name, heartbeat(&node, lease.as_deref()));
        let grace = self.ctx.options.node_monitor_grace_period;
        let now = self.ctx.clock.timestamp();
        let nodes: Api<Node> = Api::all(self.ctx.client.clone());

        if silent > grace {
            if let Some(conditions) = silenced(&node, now) {
                let was_ready = ready_status(&node) == Some("True");
                node.status.get_or_insert_default().conditions = Some(conditions);
                node = nodes
                    .replace_status(name, &node)
                    .await
                    .map_err(SyncError::Status)?;
                tracing::info!(node = name, "kubelet stopped posting node status");
                if was_ready {
                    self.recorder.record(
                        &node_ref(&node),
                        EventType::Normal,
                        "NodeNotReady",
                        format!("Node {name} status is now: NodeNotReady"),
                    );
                    self.mark_pods_not_ready(name, now).await;
                }
            }
        }

        if let Some(taints) = reconciled_taints(&node, now) {
            // No taints left is no `taints` field, as upstream's (omitempty) writes it.
            node.spec.get_or_insert_default().taints = (!taints.is_empty()).then_some(taints);
            node = nodes
                .replace(name, &node)
                .await
                .map_err(SyncError::Taints)?;
        }
        self.evict(&node, now).await
    }

    /// Upstream's MarkPodsNotReady: the pods of a node that went silent are not Ready.
    async fn mark_pods_not_ready(&self, node: &str, now: Timestamp) {
        let pods = self.pods.list();
        for pod in on_node(&pods, node) {
            if !is_pod_ready(pod) {
                continue;
            }
            let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            let patch = json!({"status": {"conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": Time(now)}]}});
            let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), ns);
            match api.patch_status(name, &Patch::Strategic(patch)).await {
                Ok(_) => self.recorder.record(
                    &object_ref::<Pod>(&pod.metadata),
                    EventType::Warning,
                    "NodeNotReady",
                    "Node is not ready".into(),
                ),
                Err(e) => {
                    tracing::debug!(pod = name, error = %e, "could not mark the pod not ready")
                }
            }
        }
    }

    /// Taint-based eviction of the pods on `node`; schedules the next look when a toleration
    /// is still running.
    async fn evict(&self, node: &Node, now: Timestamp) -> Result<(), SyncError> {
        let taints = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or(&[]);
        if !taints.iter().any(|t| t.effect == "NoExecute") {
            return Ok(());
        }
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let pods = self.pods.list();
        let mut next: Option<Timestamp> = None;
        for pod in on_node(&pods, name) {
            match eviction(pod, taints, now) {
                Eviction::Never => {}
                Eviction::At(at) => next = Some(next.map_or(at, |n| n.min(at))),
                Eviction::Now => self.evict_pod(pod, now).await?,
            }
        }
        if let Some(at) = next {
            // Exactly when the toleration runs out, as upstream's timed workers: a look a
            // little early finds the pod still tolerated and comes back for the rest.
            let wait = now.duration_until(at).unsigned_abs();
            self.queue.add_after_clock(name, wait);
        }
        Ok(())
    }

    /// Mark the pod with the DisruptionTarget condition, delete it, and say so, as upstream.
    async fn evict_pod(&self, pod: &Pod, now: Timestamp) -> Result<(), SyncError> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), ns);
        let condition = json!({"status": {"conditions": [{
            "type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
            "lastTransitionTime": Time(now)}]}});
        match api.patch_status(name, &Patch::Strategic(condition)).await {
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(SyncError::Evict(e)),
            Ok(_) => {}
        }
        self.eviction_recorder.record(
            &object_ref::<Pod>(&pod.metadata),
            EventType::Normal,
            "TaintManagerEviction",
            format!("Marking for deletion Pod {ns}/{name}"),
        );
        match api.delete(name, None).await {
            Ok(_) => {
                tracing::info!(pod = %format!("{ns}/{name}"), "evicted for a NoExecute taint");
                Ok(())
            }
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(SyncError::Evict(e)),
        }
    }
}
