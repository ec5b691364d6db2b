//! NodePorts (PreFilter, Filter): a pod's host ports must be free on the node. A host port
//! (`hostPort` of a container, or of a sidecar init container with `restartPolicy: Always`) is
//! taken when a pod on the node holds the same protocol and port on the same host IP, where
//! `0.0.0.0` (or no `hostIP`) overlaps every IP, as upstream's HostPortInfo.CheckConflict.

use k8s_openapi::api::core::v1::Pod;

use crate::framework::ports::{fits, host_ports, HostPort};
use crate::framework::{CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "NodePorts";
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

pub struct NodePorts;

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Skip when the pod wants no host port, as upstream.
    fn pre_filter(
        &self,
        pod: &Pod,
        _nodes: &[std::sync::Arc<NodeInfo>],
        state: &mut CycleState,
    ) -> Status {
        let want = host_ports(pod);
        if want.is_empty() {
            return Status::Skip;
        }
        state.put(NAME, want);
        Status::Success
    }

    fn filter(&self, pod: &Pod, node: &NodeInfo, state: &CycleState) -> Status {
        let computed;
        let want = match state.get::<Vec<HostPort>>(NAME) {
            Some(w) => w,
            None => {
                computed = host_ports(pod);
                &computed
            }
        };
        if want.is_empty() || fits(want, &node.used_ports) {
            Status::Success
        } else {
            Status::unschedulable(REASON)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::node;
    use serde_json::{json, Value};
    use std::sync::Arc;

    fn with_ports(ports: Value) -> Pod {
        crate::plugins::testing::pod(
            json!({"containers": [{"name": "c", "image": "i", "ports": ports}]}),
        )
    }

    #[test]
    fn host_ports_must_be_free() {
        let cases = [
            (
                "no ports wanted",
                json!([]),
                json!([{"hostPort": 8080}]),
                true,
            ),
            (
                "a container port alone takes no host port",
                json!([{"containerPort": 80}]),
                json!([{"containerPort": 80}]),
                true,
            ),
            (
                "the same TCP port",
                json!([{"hostPort": 8080}]),
                json!([{"hostPort": 8080, "protocol": "TCP"}]),
                false,
            ),
            (
                "another port",
                json!([{"hostPort": 8080}]),
                json!([{"hostPort": 8081}]),
                true,
            ),
            (
                "UDP next to TCP",
                json!([{"hostPort": 53, "protocol": "UDP"}]),
                json!([{"hostPort": 53}]),
                true,
            ),
            (
                "two distinct host IPs",
                json!([{"hostPort": 80, "hostIP": "127.0.0.1"}]),
                json!([{"hostPort": 80, "hostIP": "127.0.0.2"}]),
                true,
            ),
            (
                "0.0.0.0 wanted, one IP held",
                json!([{"hostPort": 80}]),
                json!([{"hostPort": 80, "hostIP": "127.0.0.1"}]),
                false,
            ),
            (
                "one IP wanted, 0.0.0.0 held",
                json!([{"hostPort": 80, "hostIP": "10.0.0.1"}]),
                json!([{"hostPort": 80, "hostIP": "0.0.0.0"}]),
                false,
            ),
            (
                "one of several collides",
                json!([{"hostPort": 80}, {"hostPort": 443}]),
                json!([{"hostPort": 443}]),
                false,
            ),
        ];
        for (what, want, held, fits) in cases {
            let n = node("w0", json!({}), json!({}));
            let n = NodeInfo::new(n.node, vec![Arc::new(with_ports(held))]);
            let pod = with_ports(want);
            let mut state = CycleState::default();
            NodePorts.pre_filter(&pod, &[], &mut state);
            let got = NodePorts.filter(&pod, &n, &state);
            let want = if fits {
                Status::Success
            } else {
                Status::unschedulable(REASON)
            };
            assert_eq!(got, want, "{what}");
        }
    }
}
