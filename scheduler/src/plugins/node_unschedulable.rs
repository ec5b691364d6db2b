//! NodeUnschedulable: cordoned nodes (`spec.unschedulable`) take only pods that tolerate
//! `node.kubernetes.io/unschedulable:NoSchedule`.

use k8s_openapi::api::core::v1::Pod;

use super::taint_toleration::tolerates;
use crate::framework::{CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "NodeUnschedulable";
pub const REASON: &str = "node(s) were unschedulable";

pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        NAME
    }

    fn filter(&self, pod: &Pod, node: &NodeInfo, _state: &CycleState) -> Status {
        let cordoned = node.node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
        let tolerations = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_deref())
            .unwrap_or(&[]);
        if cordoned
            && !tolerations
                .iter()
                .any(|t| tolerates(t, "node.kubernetes.io/unschedulable", "", "NoSchedule"))
        {
            Status::unresolvable(REASON)
        } else {
            Status::Success
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{node, pod};
    use serde_json::json;

    #[test]
    fn cordoned_nodes_need_a_toleration() {
        let cordoned = node("w", json!({}), json!({"unschedulable": true}));
        let plain = pod(json!({"containers": []}));
        assert_eq!(
            NodeUnschedulable.filter(&plain, &cordoned, &CycleState::default()),
            Status::unresolvable(REASON)
        );
        let tolerant = pod(
            json!({"containers": [], "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}),
        );
        assert!(NodeUnschedulable
            .filter(&tolerant, &cordoned, &CycleState::default())
            .is_success());
        assert!(NodeUnschedulable
            .filter(
                &plain,
                &node("w", json!({}), json!({})),
                &CycleState::default()
            )
            .is_success());
    }
}
