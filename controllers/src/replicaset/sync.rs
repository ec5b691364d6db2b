//! Reconcile one ReplicaSet: claim its pods (adopt matching orphans, release pods that no
//! longer match), create or delete pods towards `spec.replicas` when expectations allow, then
//! write `status` through the status subresource.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::join_all;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use tinykube_client::events::EventType;
use tinykube_client::reflector::key_of;
use tinykube_client::{Api, ClientError, Patch};
use tinykube_proto::labels::Selector;

use super::{ranking, Controller};
use crate::context::BY_NAMESPACE;
use crate::util::{
    adopt_patch, controller_ref, is_pod_active, is_pod_available, is_pod_ready, is_pod_terminal,
    new_controller_ref, object_ref, pod_from_template, release_patch, secs,
};

/// Upstream's burstReplicas: at most this many creates or deletes per sync.
pub const BURST_REPLICAS: usize = 500;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("creating pods: {0}")]
    Create(#[source] ClientError),
    #[error("deleting pods: {0}")]
    Delete(#[source] ClientError),
    #[error("adopting or releasing pods: {0}")]
    Claim(#[source] ClientError),
    #[error("updating status: {0}")]
    Status(#[source] ClientError),
}

impl Controller {
    /// Reconcile the ReplicaSet at `key`.
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some(rs) = self.replicasets.get(key) else {
            self.expectations.delete(key);
            return Ok(());
        };
        let needs_sync = self.expectations.satisfied(key);
        let Some(selector) = rs
            .spec
            .as_ref()
            .and_then(|s| Selector::from_label_selector(&s.selector).ok())
        else {
            tracing::warn!(key, "invalid selector; ignoring");
            return Ok(());
        };
        let ns = rs.metadata.namespace.clone().unwrap_or_default();
        let all = self.pods.by_index(BY_NAMESPACE, &ns);
        let uid = rs.metadata.uid.as_deref().unwrap_or_default();
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
        if needs_sync && rs.metadata.deletion_timestamp.is_none() {
            result = self.manage(key, &rs, &owned).await;
        }
        let mut status = calculate_status(&rs, &owned, result.as_ref().err());
        status.terminating_replicas = Some(terminating);
        let min_ready = rs
            .spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0);
        let (ready, available, replicas) = (
            status.ready_replicas.unwrap_or(0),
            status.available_replicas.unwrap_or(0),
            status.replicas,
        );
        self.update_status(&rs, status).await?;
        if result.is_ok() && min_ready > 0 && ready == replicas && available != replicas {
            self.queue
                .add_after(key, secs(i64::from(min_ready)) + secs(1));
        }
        result
    }

    /// Upstream's ClaimPods: the active pods this ReplicaSet owns after adopting and releasing.
    async fn claim(
        &self,
        rs: &ReplicaSet,
        selector: &Selector,
        pods: Vec<Arc<Pod>>,
    ) -> Result<Vec<Arc<Pod>>, SyncError> {
        let uid = rs.metadata.uid.clone().unwrap_or_default();
        let ns = rs.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &ns);
        let deleting = rs.metadata.deletion_timestamp.is_some();
        let mut can_adopt: Option<bool> = None;
        let mut owned = Vec::new();
        for pod in pods {
            let labels = pod.metadata.labels.clone().unwrap_or_default();
            let matches = selector.matches(&labels);
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            match controller_ref(&pod.metadata) {
                Some(r) if r.uid != uid => {}
                Some(_) if matches => owned.push(pod),
                Some(_) => {
                    if deleting {
                        continue;
                    }
                    let patch = release_patch(&pod.metadata, &uid);
                    match api.patch(&pod_name, &Patch::Merge(patch)).await {
                        Ok(_) => {}
                        Err(e) if e.is_not_found() || e.code() == Some(422) => {}
                        Err(e) => return Err(SyncError::Claim(e)),
                    }
                }
                None => {
                    if deleting || !matches || pod.metadata.deletion_timestamp.is_some() {
                        continue;
                    }
                    if can_adopt.is_none() {
                        can_adopt = Some(self.can_adopt(rs).await?);
                    }
                    if can_adopt != Some(true) {
                        continue;
                    }
                    let patch = adopt_patch(
                        &pod.metadata,
                        new_controller_ref::<ReplicaSet>(&rs.metadata),
                    );
                    match api.patch(&pod_name, &Patch::Strategic(patch)).await {
                        Ok(p) => owned.push(Arc::new(p)),
                        Err(e) if e.is_not_found() => {}
                        Err(e) => return Err(SyncError::Claim(e)),
                    }
                }
            }
        }
        Ok(owned)
    }

    /// Adopt only if the ReplicaSet, read fresh from the API, is still the same and alive.
    async fn can_adopt(&self, rs: &ReplicaSet) -> Result<bool, SyncError> {
        let ns = rs.metadata.namespace.clone().unwrap_or_default();
        let api: Api<ReplicaSet> = Api::namespaced(self.ctx.client.clone(), &ns);
        let name = rs.metadata.name.clone().unwrap_or_default();
        let fresh = api.get_opt(&name).await.map_err(SyncError::Claim)?;
        Ok(fresh.is_some_and(|f| {
            f.metadata.uid == rs.metadata.uid && f.metadata.deletion_timestamp.is_none()
        }))
    }

    /// Create or delete pods towards `spec.replicas` (upstream's manageReplicas).
    async fn manage(
        &self,
        key: &str,
        rs: &ReplicaSet,
        owned: &[Arc<Pod>],
    ) -> Result<(), SyncError> {
        let want = rs
            .spec
            .as_ref()
            .and_then(|s| s.replicas)
            .unwrap_or(1)
            .max(0) as usize;
        let ns = rs.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &ns);
        let regarding = object_ref::<ReplicaSet>(&rs.metadata);
        if owned.len() < want {
            let n = (want - owned.len()).min(BURST_REPLICAS);
            self.expectations.expect_creations(key, n);
            let Some(template) = rs.spec.as_ref().and_then(|s| s.template.clone()) else {
                return Ok(());
            };
            let pod = pod_from_template(
                &template,
                &ns,
                rs.metadata.name.as_deref().unwrap_or_default(),
                new_controller_ref::<ReplicaSet>(&rs.metadata),
            );
            let mut created = 0usize;
            let mut batch = 1usize;
            let mut failure = None;
            while created < n && failure.is_none() {
                let size = batch.min(n - created);
                let results = join_all((0..size).map(|_| api.create(&pod))).await;
                for r in results {
                    match r {
                        Ok(p) => {
                            created += 1;
                            let name = p.metadata.name.unwrap_or_default();
                            self.record(
                                &regarding,
                                EventType::Normal,
                                "SuccessfulCreate",
                                format!("Created pod: {name}"),
                            );
                        }
                        Err(e) if namespace_terminating(&e) => created += 1,
                        Err(e) => {
                            self.record(
                                &regarding,
                                EventType::Warning,
                                "FailedCreate",
                                format!("Error creating: {}", e_message(&e)),
                            );
                            failure = Some(e);
                        }
                    }
                }
                batch *= 2;
            }
            if let Some(e) = failure {
                // The creates that were skipped or failed will never be observed.
                for _ in created..n {
                    self.expectations.creation_observed(key);
                }
                return Err(SyncError::Create(e));
            }
        } else if owned.len() > want {
            let n = (owned.len() - want).min(BURST_REPLICAS);
            let victims = ranking::pods_to_delete(owned, n);
            self.expectations
                .expect_deletions(key, victims.iter().map(|p| key_of(p.as_ref())).collect());
            let results = join_all(victims.iter().map(|p| {
                let api = api.clone();
                async move {
                    let name = p.metadata.name.clone().unwrap_or_default();
                    (p, api.delete(&name, None).await)
                }
            }))
            .await;
            let mut failure = None;
            for (p, r) in results {
                let name = p.metadata.name.clone().unwrap_or_default();
                match r {
                    Ok(_) => self.record(
                        &regarding,
                        EventType::Normal,
                        "SuccessfulDelete",
                        format!("Deleted pod: {name}"),
                    ),
                    Err(e) => {
                        self.expectations
                            .deletion_observed(key, &key_of(p.as_ref()));
                        if !e.is_not_found() {
                            self.record(
                                &regarding,
                                EventType::Warning,
                                "FailedDelete",
                                format!("Error deleting: {}", e_message(&e)),
                            );
                            failure = Some(e);
                        }
                    }
                }
            }
            if let Some(e) = failure {
                return Err(SyncError::Delete(e));
            }
        }
        Ok(())
    }

    fn record(
        &self,
        regarding: &k8s_openapi::api::core::v1::ObjectReference,
        kind: EventType,
        reason: &'static str,
        message: String,
    ) {
        self.recorder.record(regarding, kind, reason, message);
    }

    async fn update_status(
        &self,
        rs: &ReplicaSet,
        status: ReplicaSetStatus,
    ) -> Result<(), SyncError> {
        let generation = rs.metadata.generation;
        if rs.status.as_ref() == Some(&status) && status.observed_generation == generation {
            return Ok(());
        }
        let ns = rs.metadata.namespace.clone().unwrap_or_default();
        let name = rs.metadata.name.clone().unwrap_or_default();
        let api: Api<ReplicaSet> = Api::namespaced(self.ctx.client.clone(), &ns);
        let mut next = rs.clone();
        next.status = Some(status.clone());
        match api.replace_status(&name, &next).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) if e.is_conflict() => {
                // One retry on a fresh copy, as upstream.
                let Some(mut fresh) = api.get_opt(&name).await.map_err(SyncError::Status)? else {
                    return Ok(());
                };
                fresh.status = Some(status);
                match api.replace_status(&name, &fresh).await {
                    Ok(_) => Ok(()),
                    Err(e) if e.is_not_found() => Ok(()),
                    Err(e) => Err(SyncError::Status(e)),
                }
            }
            Err(e) => Err(SyncError::Status(e)),
        }
    }
}

/// The server refused because the namespace is terminating: not worth retrying.
fn namespace_terminating(e: &ClientError) -> bool {
    matches!(e, ClientError::Api(s) if s.code == 403 && s.message.contains("because it is being terminated"))
}

/// The server's message of an API error, or the error itself.
pub fn e_message(e: &ClientError) -> String {
    match e {
        ClientError::Api(s) if !s.message.is_empty() => s.message.clone(),
        other => other.to_string(),
    }
}

/// Upstream's calculateStatus.
pub fn calculate_status(
    rs: &ReplicaSet,
    owned: &[Arc<Pod>],
    failure: Option<&SyncError>,
) -> ReplicaSetStatus {
    let template_labels: BTreeMap<String, String> = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let min_ready = rs
        .spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0);
    let now = tinykube_client::now();
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
    let mut status = rs.status.clone().unwrap_or_default();
    let mut conditions: Vec<ReplicaSetCondition> = status.conditions.take().unwrap_or_default();
    let failed = conditions.iter().any(|c| c.type_ == "ReplicaFailure");
    let reason = match failure {
        Some(SyncError::Create(e)) => Some(("FailedCreate", e)),
        Some(SyncError::Delete(e)) => Some(("FailedDelete", e)),
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
    status.observed_generation = rs.metadata.generation;
    status.conditions = (!conditions.is_empty()).then_some(conditions);
    status
}
