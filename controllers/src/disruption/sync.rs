//! Reconcile one PodDisruptionBudget: its pods from the cache, the expected count through the
//! controller finders, pending evictions, the healthy count, then `status` through the status
//! subresource. When the status cannot be worked out, upstream's fail-safe: no disruptions
//! allowed, and the `DisruptionAllowed` condition says why (`SyncFailed`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use tinykube_client::events::EventType;
use tinykube_client::reflector::key_of;
use tinykube_client::{Api, ClientError};
use tinykube_proto::labels::Selector;

use super::budget::{self, BudgetError};
use super::{finders, Controller};
use crate::context::BY_NAMESPACE;
use crate::util::{is_conflict, object_ref};

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("{0}")]
    Selector(String),
    #[error("{0}")]
    Expected(#[source] BudgetError),
    #[error("updating status: {0}")]
    Status(#[source] ClientError),
}

impl Controller {
    /// Reconcile the budget at `key`.
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some(pdb) = self.pdbs.get(key) else {
            return Ok(());
        };
        match self.try_sync(key, &pdb).await {
            Ok(()) => Ok(()),
            // A stale cache: retried with a fresh view, not a failure of the budget.
            Err(e) if is_conflict(&e) => Err(e),
            Err(e) => {
                tracing::warn!(pdb = key, error = %e, "failed to sync PodDisruptionBudget");
                let status =
                    budget::fail_safe_status(&pdb, &e.to_string(), self.ctx.clock.timestamp());
                self.write_status(&pdb, status).await
            }
        }
    }

    fn event(
        &self,
        pdb: &PodDisruptionBudget,
        kind: EventType,
        reason: &'static str,
        message: String,
    ) {
        self.recorder.record(
            &object_ref::<PodDisruptionBudget>(&pdb.metadata),
            kind,
            reason,
            message,
        );
    }

    /// The pods of the budget's namespace its selector covers (upstream's getPodsForPdb).
    fn pods_for(&self, pdb: &PodDisruptionBudget) -> Result<Vec<Arc<Pod>>, SyncError> {
        let Some(selector) = pdb.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
            return Ok(Vec::new());
        };
        let selector = Selector::from_label_selector(selector)
            .map_err(|e| SyncError::Selector(e.to_string()))?;
        let ns = pdb.metadata.namespace.as_deref().unwrap_or_default();
        let empty = Default::default();
        Ok(self
            .pods
            .by_index(BY_NAMESPACE, ns)
            .into_iter()
            .filter(|p| selector.matches(p.metadata.labels.as_ref().unwrap_or(&empty)))
            .collect())
    }

    async fn try_sync(&self, key: &str, pdb: &PodDisruptionBudget) -> Result<(), SyncError> {
        let pods = match self.pods_for(pdb) {
            Ok(pods) => pods,
            Err(e) => {
                self.event(
                    pdb,
                    EventType::Warning,
                    "NoPods",
                    format!("Failed to get pods: {e}"),
                );
                return Err(e);
            }
        };
        if pods.is_empty() {
            self.event(
                pdb,
                EventType::Normal,
                "NoPods",
                "No matching pods found".into(),
            );
        }
        let spec = pdb.spec.clone().unwrap_or_default();
        let find = |owner: &OwnerReference, ns: &str| {
            finders::controller_scale(
                owner,
                |name| self.replicasets.get(&format!("{ns}/{name}")),
                |name| self.deployments.get(&format!("{ns}/{name}")),
                |kind, name| {
                    let key = format!("{ns}/{name}");
                    match kind {
                        "StatefulSet" => self.statefulsets.get(&key).map(|s| {
                            let replicas = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                            (s.metadata.uid.clone().unwrap_or_default(), replicas)
                        }),
                        _ => self.replicationcontrollers.get(&key).map(|r| {
                            let replicas = r.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                            (r.metadata.uid.clone().unwrap_or_default(), replicas)
                        }),
                    }
                },
            )
        };
        let expected = match budget::expected(&spec, &pods, find) {
            Ok(e) => e,
            Err(e) => {
                self.event(
                    pdb,
                    EventType::Warning,
                    "CalculateExpectedPodCountFailed",
                    format!("Failed to calculate the number of expected pods: {e}"),
                );
                return Err(SyncError::Expected(e));
            }
        };
        if !expected.unmanaged.is_empty() {
            tracing::debug!(pdb = key, pods = ?expected.unmanaged, "unmanaged pods");
            self.event(
                pdb,
                EventType::Warning,
                "UnmanagedPods",
                format!(
                    "Pods selected by this PodDisruptionBudget (selector: {}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.",
                    budget::selector_display(spec.selector.as_ref())
                ),
            );
        }

        let now = self.ctx.clock.timestamp();
        let recorded = pdb.status.as_ref().and_then(|s| s.disrupted_pods.as_ref());
        let (disrupted, recheck, not_deleted) = budget::disrupted_pods(&pods, recorded, now);
        let ns = pdb.metadata.namespace.as_deref().unwrap_or_default();
        for pod in &not_deleted {
            let pod_key = key_of(pod.as_ref());
            tracing::info!(
                pod = pod_key,
                pdb = key,
                "pod was expected to be deleted but it wasn't"
            );
            // Upstream's message names the budget's namespace twice.
            self.recorder.record(
                &object_ref::<Pod>(&pod.metadata),
                EventType::Warning,
                "NotDeleted",
                format!("Pod was expected by PDB {ns}/{ns} to be deleted but it wasn't"),
            );
        }
        let healthy = budget::count_healthy(&pods, &disrupted, now);
        if let Some(status) = budget::next_status(pdb, healthy, &expected, disrupted, now) {
            self.write_status(pdb, status).await?;
        }
        if let Some(at) = recheck {
            // Look again once the oldest pending eviction expires.
            self.queue
                .add_after_clock(key, now.duration_until(at).unsigned_abs());
        }
        Ok(())
    }

    /// PUT the status, guarded by the cached resourceVersion (a conflict retries the key).
    async fn write_status(
        &self,
        pdb: &PodDisruptionBudget,
        status: PodDisruptionBudgetStatus,
    ) -> Result<(), SyncError> {
        let ns = pdb.metadata.namespace.as_deref().unwrap_or_default();
        let name = pdb.metadata.name.as_deref().unwrap_or_default();
        let mut new = pdb.clone();
        new.status = Some(status);
        let api: Api<PodDisruptionBudget> = Api::namespaced(self.ctx.client.clone(), ns);
        match api.replace_status(name, &new).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(SyncError::Status(e)),
        }
    }
}
