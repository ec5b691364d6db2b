//! NodeName: a pod that names its node fits only that node.

use k8s_openapi::api::core::v1::Pod;

use crate::framework::{CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "NodeName";
pub const REASON: &str = "node(s) didn't match the requested node name";

pub struct NodeName;

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }

    fn filter(&self, pod: &Pod, node: &NodeInfo, _state: &CycleState) -> Status {
        match pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
            Some(wanted) if !wanted.is_empty() && wanted != node.name() => {
                Status::unresolvable(REASON)
            }
            _ => Status::Success,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{node, pod};
    use serde_json::json;

    #[test]
    fn only_the_named_node_fits() {
        let cases = [
            (json!({}), true),
            (json!({"nodeName": "w0"}), true),
            (json!({"nodeName": "w1"}), false),
        ];
        for (spec, fits) in cases {
            let p = pod(json!({"containers": [], "nodeName": spec.get("nodeName")}));
            assert_eq!(
                NodeName
                    .filter(
                        &p,
                        &node("w0", json!({}), json!({})),
                        &CycleState::default()
                    )
                    .is_success(),
                fits,
                "{spec}"
            );
        }
    }
}
