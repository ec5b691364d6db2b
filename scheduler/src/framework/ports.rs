//! Host ports: which ones a pod holds (its containers' and its sidecars'), and when two
//! collide, as upstream's HostPortInfo. NodeInfo keeps the ports its pods hold; the NodePorts
//! plugin checks an incoming pod's against them.

use k8s_openapi::api::core::v1::{Container, Pod};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::testing::pod;
    use serde_json::json;

    #[test]
    fn sidecars_hold_ports_and_other_init_containers_do_not() {
        let cases = [(json!({"restartPolicy": "Always"}), 1), (json!({}), 0)];
        for (policy, held) in cases {
            let mut init = json!({"name": "init", "image": "i", "ports": [{"hostPort": 9000}]});
            if let Some(p) = policy.get("restartPolicy") {
                init["restartPolicy"] = p.clone();
            }
            let p = pod(json!({"containers": [], "initContainers": [init]}));
            assert_eq!(host_ports(&p).len(), held, "{policy}");
        }
        let defaults = host_ports(&pod(
            json!({"containers": [{"name": "c", "image": "i", "ports": [{"hostPort": 80}]}]}),
        ));
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
