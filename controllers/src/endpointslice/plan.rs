//! What a Service's EndpointSlices should hold, and the writes that get the existing slices
//! there with little churn (upstream's reconciler, simplified): endpoints are grouped by the
//! ports resolved on their pod; an endpoint stays in the slice that has it, new ones fill the
//! slices with room, then new slices of at most `max` endpoints; emptied slices are deleted;
//! with no endpoint at all one placeholder slice (no ports, no endpoints) remains.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};

use crate::podaddress::{
    is_headless, is_terminating, pod_ip, resolve_port, should_be_in_endpoints, target_ref,
};
use crate::util::is_pod_ready;

/// A slice's ports as a grouping key: (name, port, protocol) triples.
pub type PortKey = Vec<(String, i32, String)>;

pub fn port_key(ports: Option<&Vec<EndpointPort>>) -> PortKey {
    let mut key: PortKey = ports
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p.name.clone().unwrap_or_default(),
                p.port.unwrap_or(0),
                p.protocol.clone().unwrap_or_default(),
            )
        })
        .collect();
    key.sort();
    key
}

/// The endpoint of one pod, as upstream's podToEndpoint builds it.
pub fn endpoint(svc: &Service, pod: &Pod, zone: Option<String>) -> Endpoint {
    let spec = svc.spec.clone().unwrap_or_default();
    let publish = spec.publish_not_ready_addresses.unwrap_or(false);
    let serving = publish || is_pod_ready(pod);
    let terminating = is_terminating(pod);
    let ready = publish || (serving && !terminating);
    let pod_spec = pod.spec.clone().unwrap_or_default();
    let svc_name = svc.metadata.name.as_deref();
    Endpoint {
        addresses: vec![pod_ip(pod).to_string()],
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        hostname: pod_spec
            .hostname
            .filter(|_| pod_spec.subdomain.as_deref() == svc_name),
        node_name: pod_spec.node_name.filter(|n| !n.is_empty()),
        target_ref: Some(target_ref(pod)),
        zone,
        ..Default::default()
    }
}

fn ip_order(e: &Endpoint) -> (Option<IpAddr>, String) {
    let a = e.addresses.first().cloned().unwrap_or_default();
    (a.parse().ok(), a)
}

/// The wanted endpoints of the service's IPv4 family, grouped by their resolved ports.
pub fn wanted(
    svc: &Service,
    pods: &[Arc<Pod>],
    zone_of: impl Fn(&str) -> Option<String>,
) -> BTreeMap<PortKey, (Vec<EndpointPort>, Vec<Endpoint>)> {
    let service_ports = svc
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .unwrap_or_default();
    let mut out: BTreeMap<PortKey, (Vec<EndpointPort>, Vec<Endpoint>)> = BTreeMap::new();
    for pod in pods {
        let ip = pod_ip(pod);
        if !should_be_in_endpoints(pod, true) || !ip.parse::<IpAddr>().is_ok_and(|a| a.is_ipv4()) {
            continue;
        }
        let ports: Vec<EndpointPort> = service_ports
            .iter()
            .filter_map(|p| {
                Some(EndpointPort {
                    name: Some(p.name.clone().unwrap_or_default()),
                    port: Some(resolve_port(pod, p)?),
                    protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".into())),
                    app_protocol: p.app_protocol.clone(),
                })
            })
            .collect();
        if ports.is_empty() && !(service_ports.is_empty() && is_headless(svc)) {
            continue;
        }
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or("");
        let ep = endpoint(svc, pod, zone_of(node));
        let entry = out
            .entry(port_key(Some(&ports)))
            .or_insert_with(|| (ports, Vec::new()));
        entry.1.push(ep);
    }
    for (_, eps) in out.values_mut() {
        eps.sort_by_key(ip_order);
    }
    out
}

/// One write: `name` `None` creates a slice.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Put {
        name: Option<String>,
        ports: Option<Vec<EndpointPort>>,
        endpoints: Vec<Endpoint>,
    },
    Delete(String),
}

fn address(e: &Endpoint) -> String {
    e.addresses.first().cloned().unwrap_or_default()
}

/// The writes from `existing` (this controller's slices of the service) to `wanted`.
pub fn plan(
    existing: &[Arc<EndpointSlice>],
    wanted: BTreeMap<PortKey, (Vec<EndpointPort>, Vec<Endpoint>)>,
    max: usize,
) -> Vec<Action> {
    let mut sorted: Vec<&Arc<EndpointSlice>> = existing.iter().collect();
    sorted.sort_by_key(|s| s.metadata.name.clone());
    let name = |s: &EndpointSlice| s.metadata.name.clone().unwrap_or_default();
    let mut actions = Vec::new();
    if wanted.values().all(|(_, eps)| eps.is_empty()) {
        let is_placeholder = |s: &EndpointSlice| {
            s.endpoints.as_ref().is_none_or(Vec::is_empty)
                && s.ports.as_ref().is_none_or(Vec::is_empty)
        };
        let keep = sorted
            .iter()
            .position(|s| is_placeholder(s))
            .or((!sorted.is_empty()).then_some(0));
        actions.push(Action::Put {
            name: keep.map(|i| name(sorted[i])),
            ports: None,
            endpoints: Vec::new(),
        });
        for (i, s) in sorted.iter().enumerate() {
            if Some(i) != keep {
                actions.push(Action::Delete(name(s)));
            }
        }
        return actions;
    }
    let mut by_key: BTreeMap<PortKey, Vec<&Arc<EndpointSlice>>> = BTreeMap::new();
    for s in sorted {
        by_key
            .entry(port_key(s.ports.as_ref()))
            .or_default()
            .push(s);
    }
    for (key, slices) in &by_key {
        if !wanted.contains_key(key) {
            actions.extend(slices.iter().map(|s| Action::Delete(name(s))));
        }
    }
    for (key, (ports, eps)) in wanted {
        let mut remaining: Vec<Endpoint> = eps;
        let mut puts: Vec<(Option<String>, Vec<Endpoint>)> = Vec::new();
        for s in by_key.get(&key).into_iter().flatten() {
            let mut kept = Vec::new();
            for old in s.endpoints.iter().flatten() {
                if let Some(i) = remaining.iter().position(|e| address(e) == address(old)) {
                    kept.push(remaining.remove(i));
                }
            }
            puts.push((Some(name(s)), kept));
        }
        for (_, eps) in puts.iter_mut() {
            while eps.len() < max && !remaining.is_empty() {
                eps.push(remaining.remove(0));
            }
        }
        while !remaining.is_empty() {
            let rest = remaining.split_off(remaining.len().min(max));
            puts.push((None, std::mem::replace(&mut remaining, rest)));
        }
        for (slice, eps) in puts {
            match slice {
                Some(n) if eps.is_empty() => actions.push(Action::Delete(n)),
                name => actions.push(Action::Put {
                    name,
                    ports: Some(ports.clone()),
                    endpoints: eps,
                }),
            }
        }
    }
    actions
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
