//! Reconcile one StatefulSet, as upstream's syncStatefulSet: claim its pods and revisions,
//! find the current and update revisions, execute one [`plan`] step (claims before pods,
//! upstream's events), write `status` through the status subresource and prune the history.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use serde_json::{json, Value};
use tinykube_client::events::EventType;
use tinykube_client::{Api, ClientError, Patch};

use super::identity::{self, claims_for, ordinal_of};
use super::plan::{self, Action, PodState, Strategy, Which, Why};
use super::revisions::{template, Revisions};
use super::Controller;
use crate::context::BY_NAMESPACE;
use crate::history::{self, HASH_LABEL};
use crate::owned::{self, e_message, Owner};
use crate::util::{is_pod_available, is_pod_ready, object_ref, secs};

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("claiming pods: {0}")]
    Claim(#[source] ClientError),
    #[error("maintaining controller revisions: {0}")]
    History(#[source] ClientError),
    #[error("creating claims: {0}")]
    Claims(String),
    #[error("creating pod: {0}")]
    Create(#[source] ClientError),
    #[error("deleting pod: {0}")]
    Delete(#[source] ClientError),
    #[error("updating pod: {0}")]
    Update(#[source] ClientError),
    #[error("updating claim owners: {0}")]
    ClaimOwners(#[source] ClientError),
    #[error("updating status: {0}")]
    Status(#[source] ClientError),
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

impl Controller {
    /// Reconcile the StatefulSet at `key`.
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some(set) = self.sets.get(key) else {
            return Ok(());
        };
        let Some(selector) = set.selector() else {
            tracing::warn!(key, "invalid selector; ignoring");
            return Ok(());
        };
        if selector.is_everything() {
            return Ok(());
        }
        let ns = set.metadata.namespace.clone().unwrap_or_default();
        let members: Vec<Arc<Pod>> = self
            .pods
            .by_index(BY_NAMESPACE, &ns)
            .into_iter()
            .filter(|p| identity::is_member_of(&set, p))
            .collect();
        let pods = owned::claim(&self.ctx.client, set.as_ref(), &selector, members)
            .await
            .map_err(SyncError::Claim)?;
        let claimed = history::claim(&self.ctx.client, &self.revisions, set.as_ref(), &selector)
            .await
            .map_err(SyncError::History)?;
        let revs = self
            .revisions(&set, claimed)
            .await
            .map_err(SyncError::History)?;
        let states: Vec<PodState> = pods.iter().filter_map(|p| self.state(&set, p)).collect();
        let input = self.input(&set, &revs, states.clone());
        let mut updated_away = 0;
        let mut result = Ok(());
        for action in plan::plan(&input) {
            match self.execute(&set, &revs, &pods, action).await {
                Ok(()) => {
                    if matches!(
                        action,
                        Action::Delete {
                            why: Why::Update,
                            ..
                        }
                    ) {
                        updated_away += 1;
                    }
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.update_status(&set, &revs, &states, updated_away)
            .await?;
        if result.is_ok() {
            result = self
                .truncate_history(&set, &pods, &revs)
                .await
                .map_err(SyncError::History);
        }
        let min_ready = set.min_ready_seconds();
        if min_ready > 0 && states.iter().any(|s| s.ready && !s.available) {
            self.queue
                .add_after_clock(key, secs(i64::from(min_ready)) + secs(1));
        }
        result
    }

    /// What the planner needs to know of a pod; `None` for a pod without an ordinal.
    fn state(&self, set: &StatefulSet, pod: &Pod) -> Option<PodState> {
        let ordinal = ordinal_of(pod)?;
        let ph = phase(pod);
        let running_ready = ph == "Running" && is_pod_ready(pod);
        let claims_ok = self.claims_ok(set, pod);
        Some(PodState {
            ordinal,
            revision: pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(HASH_LABEL))
                .cloned()
                .unwrap_or_default(),
            created: !ph.is_empty(),
            finished: ph == "Failed" || ph == "Succeeded",
            pending: ph == "Pending",
            terminating: pod.metadata.deletion_timestamp.is_some(),
            ready: running_ready,
            available: running_ready
                && is_pod_available(pod, set.min_ready_seconds(), self.ctx.clock.timestamp()),
            consistent: identity::identity_matches(set, pod) && claims_ok,
        })
    }

    /// Whether the pod's existing claims have the owners the retention policy asks for.
    fn claims_ok(&self, set: &StatefulSet, pod: &Pod) -> bool {
        let Some(ordinal) = ordinal_of(pod) else {
            return true;
        };
        claims_for(set, ordinal).values().all(|c| {
            let key = format!(
                "{}/{}",
                c.metadata.namespace.as_deref().unwrap_or_default(),
                c.metadata.name.as_deref().unwrap_or_default()
            );
            self.claims
                .get(&key)
                .is_none_or(|live| identity::claim_owners(set, pod, &live.metadata).is_none())
        })
    }

    fn input(&self, set: &StatefulSet, revs: &Revisions, pods: Vec<PodState>) -> plan::Input {
        let spec = set.spec.clone().unwrap_or_default();
        let replicas = identity::replicas(set);
        let strategy = spec.update_strategy.unwrap_or_default();
        let strategy = if strategy.type_.as_deref() == Some("OnDelete") {
            Strategy::OnDelete
        } else {
            let ru = strategy.rolling_update;
            Strategy::RollingUpdate {
                rolling_update: ru.is_some(),
                partition: ru.as_ref().and_then(|r| r.partition).unwrap_or(0),
                max_unavailable: ru
                    .and_then(|r| r.max_unavailable)
                    .map(|m| scaled(&m, replicas)),
            }
        };
        plan::Input {
            replicas,
            start: identity::start_ordinal(set),
            parallel: spec.pod_management_policy.as_deref() == Some("Parallel"),
            strategy,
            current_revision: revs.current.metadata.name.clone().unwrap_or_default(),
            update_revision: revs.update.metadata.name.clone().unwrap_or_default(),
            current_replicas: set
                .status
                .as_ref()
                .and_then(|s| s.current_replicas)
                .unwrap_or(0),
            deleting: set.metadata.deletion_timestamp.is_some(),
            pods,
        }
    }

    /// An event `Successful<Verb>` or `Failed<Verb>` on the set.
    fn event(&self, set: &StatefulSet, ok: bool, verb: &str, message: String) {
        let (kind, reason) = match (ok, verb) {
            (true, "create") => (EventType::Normal, "SuccessfulCreate"),
            (true, "delete") => (EventType::Normal, "SuccessfulDelete"),
            (true, _) => (EventType::Normal, "SuccessfulUpdate"),
            (false, "create") => (EventType::Warning, "FailedCreate"),
            (false, "delete") => (EventType::Warning, "FailedDelete"),
            (false, _) => (EventType::Warning, "FailedUpdate"),
        };
        self.recorder.record(
            &object_ref::<StatefulSet>(&set.metadata),
            kind,
            reason,
            message,
        );
    }

    /// Upstream's recordPodEvent: "create Pod web-0 in StatefulSet web successful".
    fn pod_event(&self, set: &StatefulSet, verb: &str, pod: &str, err: Option<&ClientError>) {
        let name = identity::set_name(set);
        match err {
            None => self.event(
                set,
                true,
                verb,
                format!("{verb} Pod {pod} in StatefulSet {name} successful"),
            ),
            Some(e) => self.event(
                set,
                false,
                verb,
                format!(
                    "{verb} Pod {pod} in StatefulSet {name} failed error: {}",
                    e_message(e)
                ),
            ),
        }
    }

    async fn execute(
        &self,
        set: &StatefulSet,
        revs: &Revisions,
        pods: &[Arc<Pod>],
        action: Action,
    ) -> Result<(), SyncError> {
        let ns = set.metadata.namespace.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &ns);
        let find = |o: i32| pods.iter().find(|p| ordinal_of(p) == Some(o));
        match action {
            Action::Create { ordinal, from } => {
                let (revision, tpl) = match from {
                    Which::Current => (
                        &revs.current,
                        history::template_of(&revs.current).unwrap_or_else(|| template(set)),
                    ),
                    Which::Update => (&revs.update, template(set)),
                };
                let name = revision.metadata.name.clone().unwrap_or_default();
                let pod = identity::new_pod(set, &tpl, ordinal, &name);
                let pod_name = pod.metadata.name.clone().unwrap_or_default();
                if let Err(e) = self.create_claims(set, &pod).await {
                    self.event(
                        set,
                        false,
                        "create",
                        format!(
                            "create Pod {pod_name} in StatefulSet {} failed error: {e}",
                            identity::set_name(set)
                        ),
                    );
                    return Err(SyncError::Claims(e));
                }
                match api.create(&pod).await {
                    Ok(created) => {
                        self.pod_event(set, "create", &pod_name, None);
                        self.fix_claim_owners(set, &created).await
                    }
                    Err(e) if e.code() == Some(409) => Err(SyncError::Create(e)),
                    Err(e) => {
                        self.pod_event(set, "create", &pod_name, Some(&e));
                        Err(SyncError::Create(e))
                    }
                }
            }
            Action::EnsureClaims { ordinal } => match find(ordinal) {
                Some(pod) => self
                    .create_claims(set, pod)
                    .await
                    .map_err(SyncError::Claims),
                None => Ok(()),
            },
            Action::FixClaims { ordinal } => match find(ordinal) {
                Some(pod) => self.fix_claim_owners(set, pod).await,
                None => Ok(()),
            },
            Action::Repair { ordinal } => {
                let Some(pod) = find(ordinal) else {
                    return Ok(());
                };
                if !identity::identity_matches(set, pod) {
                    if let Some(fixed) = identity::with_identity(set, pod) {
                        let name = pod.metadata.name.clone().unwrap_or_default();
                        let r = api.replace(&name, &fixed).await;
                        self.pod_event(set, "update", &name, r.as_ref().err());
                        r.map_err(SyncError::Update)?;
                    }
                }
                self.create_claims(set, pod)
                    .await
                    .map_err(SyncError::Claims)?;
                self.fix_claim_owners(set, pod).await
            }
            Action::Delete { ordinal, why } => {
                let Some(pod) = find(ordinal) else {
                    return Ok(());
                };
                let name = pod.metadata.name.clone().unwrap_or_default();
                tracing::info!(
                    set = identity::set_name(set),
                    pod = name,
                    ?why,
                    "deleting pod"
                );
                match api.delete(&name, None).await {
                    Ok(_) => {
                        self.pod_event(set, "delete", &name, None);
                        Ok(())
                    }
                    Err(e) if e.is_not_found() => Ok(()),
                    Err(e) => {
                        self.pod_event(set, "delete", &name, Some(&e));
                        Err(SyncError::Delete(e))
                    }
                }
            }
        }
    }

    /// Create the pod's missing claims (upstream's createPersistentVolumeClaims), each with
    /// its event; a claim being deleted holds the pod back.
    async fn create_claims(&self, set: &StatefulSet, pod: &Pod) -> Result<(), String> {
        let Some(ordinal) = ordinal_of(pod) else {
            return Ok(());
        };
        let ns = set.metadata.namespace.clone().unwrap_or_default();
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.ctx.client.clone(), &ns);
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let set_name = identity::set_name(set);
        let mut errors = Vec::new();
        for claim in claims_for(set, ordinal).into_values() {
            let name = claim.metadata.name.clone().unwrap_or_default();
            if let Some(live) = self.claims.get(&format!("{ns}/{name}")) {
                if live.metadata.deletion_timestamp.is_some() {
                    errors.push(format!("pvc {name} is being deleted"));
                }
                continue;
            }
            match api.create(&claim).await {
                Ok(_) => self.event(
                    set,
                    true,
                    "create",
                    format!("create Claim {name} Pod {pod_name} in StatefulSet {set_name} success"),
                ),
                // Created before, not yet in the cache.
                Err(e) if e.code() == Some(409) => {}
                Err(e) => {
                    let message = e_message(&e);
                    self.event(
                        set,
                        false,
                        "create",
                        format!(
                            "create Claim {name} for Pod {pod_name} in StatefulSet {set_name} failed error: {message}"
                        ),
                    );
                    errors.push(format!("failed to create PVC {name}: {message}"));
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join(", "))
        }
    }

    /// Give the pod's existing claims the owners the retention policy asks for.
    async fn fix_claim_owners(&self, set: &StatefulSet, pod: &Pod) -> Result<(), SyncError> {
        let Some(ordinal) = ordinal_of(pod) else {
            return Ok(());
        };
        let ns = set.metadata.namespace.clone().unwrap_or_default();
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.ctx.client.clone(), &ns);
        for claim in claims_for(set, ordinal).into_values() {
            let name = claim.metadata.name.clone().unwrap_or_default();
            let live = match self.claims.get(&format!("{ns}/{name}")) {
                Some(live) => live.as_ref().clone(),
                None => match api.get_opt(&name).await.map_err(SyncError::ClaimOwners)? {
                    Some(live) => live,
                    None => continue,
                },
            };
            let Some(owners) = identity::claim_owners(set, pod, &live.metadata) else {
                continue;
            };
            let refs = if owners.is_empty() {
                Value::Null
            } else {
                json!(owners)
            };
            let patch = json!({"metadata": {"ownerReferences": refs,
                "resourceVersion": live.metadata.resource_version}});
            match api.patch(&name, &Patch::Merge(patch)).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(SyncError::ClaimOwners(e)),
            }
        }
        Ok(())
    }

    async fn update_status(
        &self,
        set: &StatefulSet,
        revs: &Revisions,
        pods: &[PodState],
        updated_away: i32,
    ) -> Result<(), SyncError> {
        let current = revs.current.metadata.name.clone().unwrap_or_default();
        let update = revs.update.metadata.name.clone().unwrap_or_default();
        let c = plan::counts(pods, &current, &update);
        let mut status = StatefulSetStatus {
            observed_generation: set.metadata.generation,
            replicas: c.replicas,
            ready_replicas: Some(c.ready),
            available_replicas: Some(c.available),
            current_replicas: Some((c.current - updated_away).max(0)),
            updated_replicas: Some(c.updated),
            current_revision: Some(current),
            update_revision: Some(update),
            collision_count: Some(revs.collision_count),
            conditions: set.status.as_ref().and_then(|s| s.conditions.clone()),
        };
        // Upstream's completeRollingUpdate.
        let rolling = set
            .spec
            .as_ref()
            .and_then(|s| s.update_strategy.as_ref())
            .and_then(|s| s.type_.as_deref())
            != Some("OnDelete");
        if rolling && c.updated == c.replicas && c.ready == c.replicas {
            status.current_replicas = status.updated_replicas;
            status.current_revision = status.update_revision.clone();
        }
        if set.status.as_ref() == Some(&status) {
            return Ok(());
        }
        owned::replace_status(&self.ctx.client, set, |next| {
            next.status = Some(status.clone());
        })
        .await
        .map_err(SyncError::Status)
    }
}

/// A scaled maxUnavailable: a percentage of `replicas` rounded down, at least 1 (upstream's
/// getStatefulSetMaxUnavailable).
fn scaled(v: &k8s_openapi::apimachinery::pkg::util::intstr::IntOrString, replicas: i32) -> i32 {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let n = match v {
        IntOrString::Int(n) => *n,
        IntOrString::String(s) => {
            let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            (pct * i64::from(replicas) / 100) as i32
        }
    };
    n.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    #[test]
    fn max_unavailable_scales_down_to_at_least_one() {
        let table = [
            (IntOrString::Int(2), 5, 2),
            (IntOrString::Int(0), 5, 1),
            (IntOrString::String("50%".into()), 5, 2),
            (IntOrString::String("10%".into()), 5, 1),
            (IntOrString::String("100%".into()), 4, 4),
        ];
        for (v, replicas, want) in table {
            assert_eq!(scaled(&v, replicas), want, "{v:?} of {replicas}");
        }
    }
}
