//! The subsets an Endpoints object should hold for a Service and its selected pods, repacked
//! as upstream's RepackSubsets does: addresses sharing one set of resolved ports form one
//! subset, ready ones in `addresses`, the others in `notReadyAddresses`, all sorted.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Pod, Service};

use crate::podaddress::{is_headless, pod_ip, resolve_port, should_be_in_endpoints, target_ref};
use crate::util::is_pod_ready;

/// Sort key of an address: by IP value, then text.
fn ip_key(a: &EndpointAddress) -> (Option<IpAddr>, String) {
    (a.ip.parse().ok(), a.ip.clone())
}

/// Port sets are grouped by their (name, port, protocol) triples.
type PortKey = Vec<(String, i32, String)>;

/// One subset in the making: its ports, ready and not-ready addresses.
type Group = (
    Vec<EndpointPort>,
    Vec<EndpointAddress>,
    Vec<EndpointAddress>,
);

/// The subsets of the service's Endpoints.
pub fn desired(svc: &Service, pods: &[Arc<Pod>]) -> Vec<EndpointSubset> {
    let spec = svc.spec.clone().unwrap_or_default();
    let publish_not_ready = spec.publish_not_ready_addresses.unwrap_or(false);
    let service_ports = spec.ports.unwrap_or_default();
    let name = svc.metadata.name.as_deref().unwrap_or_default();
    let mut groups: BTreeMap<PortKey, Group> = BTreeMap::new();
    for pod in pods {
        if !should_be_in_endpoints(pod, publish_not_ready) {
            continue;
        }
        let pod_spec = pod.spec.clone().unwrap_or_default();
        let hostname = pod_spec
            .hostname
            .filter(|_| pod_spec.subdomain.as_deref() == Some(name));
        let address = EndpointAddress {
            ip: pod_ip(pod).to_string(),
            hostname,
            node_name: pod_spec.node_name.filter(|n| !n.is_empty()),
            target_ref: Some(target_ref(pod)),
        };
        let mut ports: Vec<EndpointPort> = service_ports
            .iter()
            .filter_map(|p| {
                Some(EndpointPort {
                    name: p.name.clone().filter(|n| !n.is_empty()),
                    port: resolve_port(pod, p)?,
                    protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".into())),
                    app_protocol: p.app_protocol.clone(),
                })
            })
            .collect();
        if ports.is_empty() && !(service_ports.is_empty() && is_headless(svc)) {
            // No service port resolves on this pod: it serves none of them.
            continue;
        }
        ports.sort_by(|a, b| (&a.name, a.port).cmp(&(&b.name, b.port)));
        let key: PortKey = ports
            .iter()
            .map(|p| {
                (
                    p.name.clone().unwrap_or_default(),
                    p.port,
                    p.protocol.clone().unwrap_or_default(),
                )
            })
            .collect();
        let entry = groups
            .entry(key)
            .or_insert_with(|| (ports, Vec::new(), Vec::new()));
        if publish_not_ready || is_pod_ready(pod) {
            entry.1.push(address);
        } else {
            entry.2.push(address);
        }
    }
    groups
        .into_values()
        .map(|(ports, mut ready, mut not_ready)| {
            ready.sort_by_key(ip_key);
            not_ready.sort_by_key(ip_key);
            EndpointSubset {
                addresses: (!ready.is_empty()).then_some(ready),
                not_ready_addresses: (!not_ready.is_empty()).then_some(not_ready),
                ports: (!ports.is_empty()).then_some(ports),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, ip: &str, ready: bool, port_name: &str, port: i32) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                             "labels": {"app": "web"}},
                "spec": {"nodeName": "worker0", "containers": [{"name": "c",
                         "ports": [{"name": port_name, "containerPort": port}]}]},
                "status": {"phase": "Running", "podIP": ip,
                           "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}
            }))
            .unwrap(),
        )
    }

    fn svc(extra: serde_json::Value) -> Service {
        let mut spec = json!({"selector": {"app": "web"},
                              "ports": [{"port": 80, "targetPort": "http", "protocol": "TCP"}]});
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        serde_json::from_value(
            json!({"metadata": {"name": "web", "namespace": "default"}, "spec": spec}),
        )
        .unwrap()
    }

    #[test]
    fn ready_and_not_ready_addresses_grouped_by_resolved_ports() {
        let pods = [
            pod("b", "10.244.0.11", true, "http", 8080),
            pod("a", "10.244.0.9", true, "http", 8080),
            pod("c", "10.244.0.10", false, "http", 8080),
            pod("d", "10.244.0.12", true, "http", 9090),
            pod("e", "10.244.0.13", true, "other", 8080),
        ];
        let subsets = desired(&svc(json!({})), &pods);
        let view: Vec<(Vec<String>, Vec<String>, i32)> = subsets
            .iter()
            .map(|s| {
                let ips = |a: &Option<Vec<EndpointAddress>>| {
                    a.iter().flatten().map(|a| a.ip.clone()).collect::<Vec<_>>()
                };
                (
                    ips(&s.addresses),
                    ips(&s.not_ready_addresses),
                    s.ports.as_ref().unwrap()[0].port,
                )
            })
            .collect();
        assert_eq!(
            view,
            vec![
                (
                    vec!["10.244.0.9".to_string(), "10.244.0.11".to_string()],
                    vec!["10.244.0.10".to_string()],
                    8080
                ),
                (vec!["10.244.0.12".to_string()], vec![], 9090),
            ]
        );
        let a = &subsets[0].addresses.as_ref().unwrap()[0];
        assert_eq!(a.node_name.as_deref(), Some("worker0"));
        assert_eq!(a.target_ref.as_ref().unwrap().name.as_deref(), Some("a"));
        // publishNotReadyAddresses lists every pod as ready.
        let all = desired(&svc(json!({"publishNotReadyAddresses": true})), &pods[..3]);
        assert_eq!(all[0].addresses.as_ref().unwrap().len(), 3);
        assert!(all[0].not_ready_addresses.is_none());
    }
}
