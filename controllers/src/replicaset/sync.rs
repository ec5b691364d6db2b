//! Reconcile one ReplicaSet: claim its pods (adopt matching orphans, release pods that no
//! longer match), create or delete pods towards `spec.replicas` when expectations allow, then
//! write `status` through the status subresource. The same for a ReplicationController.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use tinykube_client::reflector::key_of;
use tinykube_client::ClientError;
use tinykube_proto::labels::Selector;

use super::kind::Replicated;
use super::{ranking, Controller};
use crate::context::BY_NAMESPACE;
use crate::owned::{self, e_message, PodError, PodWriter};
use crate::util::{
    controller_ref, is_pod_active, is_pod_available, is_pod_ready, is_pod_terminal,
    new_controller_ref, pod_from_template, secs,
};

/// Upstream's burstReplicas: at most this many creates or deletes per sync.
pub const BURST_REPLICAS: usize = 500;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Pods(#[from] PodError),
    #[error("updating status: {0}")]
    Status(#[source] ClientError),
}

impl<K: Replicated> Controller<K> {
    /// Reconcile the ReplicaSet (or ReplicationController) at `key`.
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some(rs) = self.replicasets.get(key) else {
            self.expectations.delete(key);
            return Ok(());
        };
        let needs_sync = self.expectations.satisfied(key);
        let Some(selector) = rs.selector() else {
            tracing::warn!(key, "invalid selector; ignoring");
            return Ok(());
        };
        let ns = rs.metadata().namespace.clone().unwrap_or_default();
        let all = self.pods.by_index(BY_NAMESPACE, &ns);
        let uid = rs.metadata().uid.as_deref().unwrap_or_default();
        // Pods of ours still shutting down (upstream's terminatingReplicas).
        let terminating = all
            .iter()
            .filter(|p| {
                p.metadata.deletion_timestamp.is_some()
                    && !is_pod_terminal(p)
                    && controller_ref(&p.metadata).is_some_and(|r| r.uid == uid)
                    && selector.matches(&p.metadata.labels.clone().unwrap_or_default())
            })
            .count() as i32;
        let active: Vec<Arc<Pod>> = all.into_iter().filter(|p| is_pod_active(p)).collect();
        let owned = self.claim(&rs, &selector, active).await?;
        let mut result = Ok(());
        if needs_sync && rs.metadata().deletion_timestamp.is_none() {
            result = self.manage(key, &rs, &owned).await;
        }
        let mut status = calculate_status(
            rs.as_ref(),
            &owned,
            result.as_ref().err(),
            self.ctx.clock.timestamp(),
        );
        if K::COUNTS_TERMINATING {
            status.terminating_replicas = Some(terminating);
        }
        let min_ready = rs.min_ready_seconds();
        let (ready, available, replicas) = (
            status.ready_replicas.unwrap_or(0),
            status.available_replicas.unwrap_or(0),
            status.replicas,
        );
        self.update_status(&rs, status).await?;
        if result.is_ok() && min_ready > 0 && ready == replicas && available != replicas {
            self.queue
                .add_after_clock(key, secs(i64::from(min_ready)) + secs(1));
        }
        result
    }

    /// Upstream's ClaimPods: the active pods this ReplicaSet owns after adopting and releasing.
    async fn claim(
        &self,
        rs: &K,
        selector: &Selector,
        pods: Vec<Arc<Pod>>,
    ) -> Result<Vec<Arc<Pod>>, SyncError> {
        let owned = owned::claim(&self.ctx.client, rs, selector, pods).await;
        Ok(owned.map_err(PodError::Claim)?)
    }

    /// Create or delete pods towards `spec.replicas` (upstream's manageReplicas).
    async fn manage(&self, key: &str, rs: &K, owned: &[Arc<Pod>]) -> Result<(), SyncError> {
        let want = rs.replicas().max(0) as usize;
        let meta = rs.metadata();
        let ns = meta.namespace.clone().unwrap_or_default();
        let writer = PodWriter::new(&self.ctx.client, &self.recorder, rs, key);
        if owned.len() < want {
            let n = (want - owned.len()).min(BURST_REPLICAS);
            self.expectations.expect_creations(key, n);
            let Some(template) = rs.template() else {
                return Ok(());
            };
            let pod = pod_from_template(
                template,
                &ns,
                meta.name.as_deref().unwrap_or_default(),
                new_controller_ref::<K>(meta),
            );
            // Creates the namespace refused count as done: the ReplicaSet keeps waiting for
            // them until the expectations expire, as upstream.
            let created = writer.create(&self.expectations, &vec![pod; n]).await;
            if let Some(e) = created.failure {
                return Err(e.into());
            }
        } else if owned.len() > want {
            let n = (owned.len() - want).min(BURST_REPLICAS);
            let victims = ranking::pods_to_delete(owned, n);
            self.expectations
                .expect_deletions(key, victims.iter().map(|p| key_of(p.as_ref())).collect());
            let names: Vec<String> = victims
                .iter()
                .map(|p| p.metadata.name.clone().unwrap_or_default())
                .collect();
            writer.delete(&self.expectations, &names).await?;
        }
        Ok(())
    }

    async fn update_status(&self, rs: &K, status: ReplicaSetStatus) -> Result<(), SyncError> {
        let generation = rs.metadata().generation;
        if rs.status().as_ref() == Some(&status) && status.observed_generation == generation {
            return Ok(());
        }
        owned::replace_status(&self.ctx.client, rs, |next| {
            next.set_status(status.clone());
        })
        .await
        .map_err(SyncError::Status)
    }
}

/// Upstream's calculateStatus: availability (minReadySeconds) and a new ReplicaFailure
/// condition as of `now`.
pub fn calculate_status<K: Replicated>(
    rs: &K,
    owned: &[Arc<Pod>],
    failure: Option<&SyncError>,
    now: Timestamp,
) -> ReplicaSetStatus {
    let template_labels: BTreeMap<String, String> = rs
        .template()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let min_ready = rs.min_ready_seconds();
    let fully_labeled = owned
        .iter()
        .filter(|p| {
            let labels = p.metadata.labels.clone().unwrap_or_default();
            template_labels
                .iter()
                .all(|(k, v)| labels.get(k) == Some(v))
        })
        .count() as i32;
    let ready = owned.iter().filter(|p| is_pod_ready(p)).count() as i32;
    let available = owned
        .iter()
        .filter(|p| is_pod_available(p, min_ready, now))
        .count() as i32;
    let mut status = rs.status().unwrap_or_default();
    let mut conditions: Vec<ReplicaSetCondition> = status.conditions.take().unwrap_or_default();
    let failed = conditions.iter().any(|c| c.type_ == "ReplicaFailure");
    let reason = match failure {
        Some(SyncError::Pods(PodError::Create(e))) => Some(("FailedCreate", e)),
        Some(SyncError::Pods(PodError::Delete(e))) => Some(("FailedDelete", e)),
        _ => None,
    };
    match reason {
        Some((reason, e)) if !failed => conditions.push(ReplicaSetCondition {
            type_: "ReplicaFailure".into(),
            status: "True".into(),
            reason: Some(reason.into()),
            message: Some(e_message(e)),
            last_transition_time: Some(Time(now)),
        }),
        None if failure.is_none() => conditions.retain(|c| c.type_ != "ReplicaFailure"),
        _ => {}
    }
    status.replicas = owned.len() as i32;
    // Zero counts are omitted, as upstream's omitempty fields.
    status.fully_labeled_replicas = (fully_labeled > 0).then_some(fully_labeled);
    status.ready_replicas = (ready > 0).then_some(ready);
    status.available_replicas = (available > 0).then_some(available);
    status.observed_generation = rs.metadata().generation;
    status.conditions = (!conditions.is_empty()).then_some(conditions);
    status
}
