//! NodePorts (PreFilter, Filter): a pod's host ports must be free on the node. A host port
//! (`hostPort` of a container, or of a sidecar init container with `restartPolicy: Always`) is
//! taken when a pod on the node holds the same protocol and port on the same host IP, where
//! `0.0.0.0` (or no `hostIP`) overlaps every IP, as upstream's HostPortInfo.CheckConflict.

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::framework::{CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "NodePorts";
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// The host IP that binds every address.
const ANY_IP: &str = "0.0.0.0";

/// One host port a pod holds, with upstream's defaults filled in (IP `0.0.0.0`, protocol TCP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    pub ip: String,
    pub protocol: String,
    pub port: i32,
}

impl HostPort {
    /// Whether `self`, wanted by a new pod, collides with `used`, held on the node.
    fn collides_with(&self, used: &HostPort) -> bool {
        self.port == used.port
            && self.protocol == used.protocol
            && (self.ip == ANY_IP || used.ip == ANY_IP || self.ip == used.ip)
    }
}

/// The host ports `pod` holds: its containers' and its sidecars' (init containers that run as
/// long as the pod), as upstream's GetHostPorts.
pub fn host_ports(pod: &Pod) -> Vec<HostPort> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    let all = sidecars.chain(spec.containers.iter());
    all.flat_map(|c: &Container| c.ports.iter().flatten())
        .filter(|p| p.host_port.is_some_and(|h| h > 0))
        .map(|p| HostPort {
            ip: p
                .host_ip
                .clone()
                .filter(|ip| !ip.is_empty())
                .unwrap_or_else(|| ANY_IP.into()),
            protocol: p
                .protocol
                .clone()
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| "TCP".into()),
            port: p.host_port.unwrap_or(0),
        })
        .collect()
}

/// Whether every port in `want` is free next to `used`.
pub fn fits(want: &[HostPort], used: &[HostPort]) -> bool {
    !want.iter().any(|w| used.iter().any(|u| w.collides_with(u)))
}

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

    #[test]
    fn sidecars_hold_ports_and_other_init_containers_do_not() {
        let cases = [(json!({"restartPolicy": "Always"}), 1), (json!({}), 0)];
        for (policy, held) in cases {
            let mut init = json!({"name": "init", "image": "i", "ports": [{"hostPort": 9000}]});
            if let Some(p) = policy.get("restartPolicy") {
                init["restartPolicy"] = p.clone();
            }
            let pod =
                crate::plugins::testing::pod(json!({"containers": [], "initContainers": [init]}));
            assert_eq!(host_ports(&pod).len(), held, "{policy}");
        }
        let defaults = host_ports(&with_ports(json!([{"hostPort": 80}])));
        assert_eq!(
            defaults,
            [HostPort {
                ip: "0.0.0.0".into(),
                protocol: "TCP".into(),
                port: 80
            }]
        );
    }
}
