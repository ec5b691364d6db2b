//! The two kinds upstream's ReplicaSet controller runs for: apps/v1 ReplicaSets and core/v1
//! ReplicationControllers (equality-based selectors, their own status type, events from
//! `replication-controller`). What differs between them is here; the reconcile is shared.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{
    PodTemplateSpec, ReplicationController, ReplicationControllerCondition,
    ReplicationControllerStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use tinykube_proto::labels::Selector;

use crate::context::{Context, Shared};
use crate::owned::Owner;

/// A kind the ReplicaSet controller keeps replicas of. Status is handled in the ReplicaSet's
/// shape (the two statuses have the same fields).
pub trait Replicated: Owner {
    /// The controller's name in logs and `--controllers`.
    const NAME: &'static str;
    /// The event source, as upstream.
    const COMPONENT: &'static str;
    /// Whether its status has `terminatingReplicas`.
    const COUNTS_TERMINATING: bool;

    /// The kind's shared informer.
    fn shared(ctx: &Context) -> &Shared<Self>;

    /// `spec.replicas`, 1 when unset.
    fn replicas(&self) -> i32;

    fn template(&self) -> Option<&PodTemplateSpec>;

    /// The status as a ReplicaSet's.
    fn status(&self) -> Option<ReplicaSetStatus>;

    fn set_status(&mut self, status: ReplicaSetStatus);
}

impl Replicated for ReplicaSet {
    const NAME: &'static str = "replicaset";
    const COMPONENT: &'static str = "replicaset-controller";
    const COUNTS_TERMINATING: bool = true;

    fn shared(ctx: &Context) -> &Shared<Self> {
        &ctx.replicasets
    }

    fn replicas(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }

    fn template(&self) -> Option<&PodTemplateSpec> {
        self.spec.as_ref()?.template.as_ref()
    }

    fn status(&self) -> Option<ReplicaSetStatus> {
        self.status.clone()
    }

    fn set_status(&mut self, status: ReplicaSetStatus) {
        self.status = Some(status);
    }
}

impl Owner for ReplicationController {
    fn label_selector(&self) -> Option<&LabelSelector> {
        None
    }

    fn min_ready_seconds(&self) -> i32 {
        self.spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0)
    }

    /// The equality selector of `spec.selector`; an empty one selects nothing here, as the
    /// API server never stores one.
    fn selector(&self) -> Option<Selector> {
        let map = self.spec.as_ref()?.selector.clone()?;
        selector_of_map(map)
    }
}

/// The selector of a label map (upstream's `labels.SelectorFromSet`), `None` when empty or
/// invalid.
pub fn selector_of_map(map: BTreeMap<String, String>) -> Option<Selector> {
    if map.is_empty() {
        return None;
    }
    let sel = LabelSelector {
        match_labels: Some(map),
        match_expressions: None,
    };
    Selector::from_label_selector(&sel).ok()
}

impl Replicated for ReplicationController {
    const NAME: &'static str = "replicationcontroller";
    const COMPONENT: &'static str = "replication-controller";
    const COUNTS_TERMINATING: bool = false;

    fn shared(ctx: &Context) -> &Shared<Self> {
        &ctx.replicationcontrollers
    }

    fn replicas(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }

    fn template(&self) -> Option<&PodTemplateSpec> {
        self.spec.as_ref()?.template.as_ref()
    }

    fn status(&self) -> Option<ReplicaSetStatus> {
        let s = self.status.as_ref()?;
        Some(ReplicaSetStatus {
            available_replicas: s.available_replicas,
            conditions: s.conditions.as_ref().map(|cs| {
                cs.iter()
                    .map(|c| ReplicaSetCondition {
                        last_transition_time: c.last_transition_time.clone(),
                        message: c.message.clone(),
                        reason: c.reason.clone(),
                        status: c.status.clone(),
                        type_: c.type_.clone(),
                    })
                    .collect()
            }),
            fully_labeled_replicas: s.fully_labeled_replicas,
            observed_generation: s.observed_generation,
            ready_replicas: s.ready_replicas,
            replicas: s.replicas,
            terminating_replicas: None,
        })
    }

    /// `terminatingReplicas` has no place in an RC's status and is dropped.
    fn set_status(&mut self, s: ReplicaSetStatus) {
        self.status = Some(ReplicationControllerStatus {
            available_replicas: s.available_replicas,
            conditions: s.conditions.map(|cs| {
                cs.into_iter()
                    .map(|c| ReplicationControllerCondition {
                        last_transition_time: c.last_transition_time,
                        message: c.message,
                        reason: c.reason,
                        status: c.status,
                        type_: c.type_,
                    })
                    .collect()
            }),
            fully_labeled_replicas: s.fully_labeled_replicas,
            observed_generation: s.observed_generation,
            ready_replicas: s.ready_replicas,
            replicas: s.replicas,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rc_status_round_trips_through_the_replicaset_shape() {
        let mut rc = ReplicationController::default();
        assert!(Replicated::status(&rc).is_none());
        let status = ReplicaSetStatus {
            replicas: 3,
            ready_replicas: Some(2),
            available_replicas: Some(1),
            fully_labeled_replicas: Some(3),
            observed_generation: Some(4),
            conditions: Some(vec![ReplicaSetCondition {
                type_: "ReplicaFailure".into(),
                status: "True".into(),
                reason: Some("FailedCreate".into()),
                ..Default::default()
            }]),
            terminating_replicas: Some(1),
        };
        rc.set_status(status.clone());
        let back = Replicated::status(&rc).unwrap();
        assert_eq!(
            back,
            ReplicaSetStatus {
                terminating_replicas: None,
                ..status
            }
        );
    }

    #[test]
    fn rc_selectors_are_equality_selectors() {
        let rc: ReplicationController = serde_json::from_value(serde_json::json!({
            "spec": {"selector": {"app": "nginx", "tier": "web"}}
        }))
        .unwrap();
        let sel = rc.selector().unwrap();
        assert_eq!(sel.to_string(), "app=nginx,tier=web");
        let labels = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        assert!(sel.matches(&labels(&[("app", "nginx"), ("tier", "web"), ("x", "y")])));
        assert!(!sel.matches(&labels(&[("app", "nginx")])));
        assert!(ReplicationController::default().selector().is_none());
        assert!(selector_of_map(BTreeMap::new()).is_none());
    }
}
