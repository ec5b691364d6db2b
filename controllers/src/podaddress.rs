//! What the endpoints and endpointslice controllers share about a Service's pods (upstream's
//! `endpointslice/util` and `podutil`): which services select a pod, which pods belong in
//! endpoints at all, a service port's target resolved on one pod (named ports by container
//! port name), the labels endpoints objects inherit, and the last-change trigger time.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tinykube_client::reflector::{key_of, Store};

use crate::context::BY_NAMESPACE;

/// Annotation with the time of the last pod or service change the endpoints reflect.
pub const TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// Label of headless services' endpoints objects.
pub const HEADLESS: &str = "service.kubernetes.io/headless";

/// The service's selector; `None` for services without one (their endpoints are someone
/// else's).
pub fn selector(svc: &Service) -> Option<&BTreeMap<String, String>> {
    svc.spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .filter(|s| !s.is_empty())
}

/// Whether a service selector (a plain label map) selects `pod`.
pub fn selects(sel: &BTreeMap<String, String>, pod: &Pod) -> bool {
    let empty = BTreeMap::new();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    sel.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// Keys of the services in the pod's namespace whose selector selects it.
pub fn services_of(services: &Store<Service>, pod: &Pod) -> Vec<String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    services
        .by_index(BY_NAMESPACE, ns)
        .iter()
        .filter(|s| selector(s).is_some_and(|sel| selects(sel, pod)))
        .map(|s| key_of(s.as_ref()))
        .collect()
}

/// The pods a service selects, from the cache.
pub fn pods_of(pods: &Store<Pod>, svc: &Service) -> Vec<Arc<Pod>> {
    let Some(sel) = selector(svc) else {
        return Vec::new();
    };
    let ns = svc.metadata.namespace.as_deref().unwrap_or_default();
    pods.by_index(BY_NAMESPACE, ns)
        .into_iter()
        .filter(|p| selects(sel, p))
        .collect()
}

pub fn pod_ip(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .unwrap_or("")
}

pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Upstream's ShouldPodBeInEndpoints: an IP, not finished, and not terminating unless
/// `include_terminating`.
pub fn should_be_in_endpoints(pod: &Pod, include_terminating: bool) -> bool {
    if pod_ip(pod).is_empty() || crate::util::is_pod_terminal(pod) {
        return false;
    }
    include_terminating || !is_terminating(pod)
}

/// The port a service port reaches on `pod`: its number, or the container port of that name
/// and protocol; `None` when the pod has no such named port.
pub fn resolve_port(pod: &Pod, port: &ServicePort) -> Option<i32> {
    let protocol = port.protocol.as_deref().unwrap_or("TCP");
    match &port.target_port {
        None => Some(port.port),
        Some(IntOrString::Int(0)) => Some(port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => pod
            .spec
            .as_ref()?
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten())
            .find(|p| {
                p.name.as_deref() == Some(name.as_str())
                    && p.protocol.as_deref().unwrap_or("TCP") == protocol
            })
            .map(|p| p.container_port),
    }
}

/// The pod as an endpoint's `targetRef`.
pub fn target_ref(pod: &Pod) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".into()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        ..Default::default()
    }
}

pub fn is_headless(svc: &Service) -> bool {
    svc.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None")
}

/// The service's labels, plus the headless marker, as endpoints objects carry them.
pub fn inherited_labels(svc: &Service) -> BTreeMap<String, String> {
    let mut labels = svc.metadata.labels.clone().unwrap_or_default();
    if is_headless(svc) {
        labels.insert(HEADLESS.into(), String::new());
    } else {
        labels.remove(HEADLESS);
    }
    labels
}

/// The last change the endpoints reflect: the latest of the service's creation and each pod's
/// creation or readiness transition (upstream's trigger time tracker, simplified).
pub fn trigger_time(svc: &Service, pods: &[Arc<Pod>]) -> Option<Time> {
    let mut latest = svc.metadata.creation_timestamp.clone();
    for pod in pods {
        let ready_change = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .and_then(|c| c.last_transition_time.clone());
        for t in [pod.metadata.creation_timestamp.clone(), ready_change]
            .into_iter()
            .flatten()
        {
            if latest.as_ref().is_none_or(|l| t.0 > l.0) {
                latest = Some(t);
            }
        }
    }
    latest
}

/// A time as the API writes it (RFC 3339, UTC).
pub fn time_text(t: &Time) -> Option<String> {
    serde_json::to_value(t)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn named_ports_resolve_per_pod() {
        let p = pod(
            json!({"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c",
            "ports": [{"name": "http", "containerPort": 8080}, {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}]}}),
        );
        let port = |target: serde_json::Value, protocol: &str| -> ServicePort {
            serde_json::from_value(json!({"port": 80, "targetPort": target, "protocol": protocol}))
                .unwrap()
        };
        assert_eq!(resolve_port(&p, &port(json!("http"), "TCP")), Some(8080));
        assert_eq!(resolve_port(&p, &port(json!("http"), "UDP")), None);
        assert_eq!(resolve_port(&p, &port(json!("dns"), "UDP")), Some(53));
        assert_eq!(resolve_port(&p, &port(json!("nope"), "TCP")), None);
        assert_eq!(resolve_port(&p, &port(json!(9000), "TCP")), Some(9000));
    }

    #[test]
    fn which_pods_belong_in_endpoints() {
        let base = json!({"metadata": {"name": "a"}, "status": {"podIP": "10.244.0.5", "phase": "Running"}});
        assert!(should_be_in_endpoints(&pod(base.clone()), false));
        let mut no_ip = base.clone();
        no_ip["status"]["podIP"] = json!(null);
        assert!(!should_be_in_endpoints(&pod(no_ip), true));
        let mut done = base.clone();
        done["status"]["phase"] = json!("Succeeded");
        assert!(!should_be_in_endpoints(&pod(done), true));
        let mut deleting = base;
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(!should_be_in_endpoints(&pod(deleting.clone()), false));
        assert!(should_be_in_endpoints(&pod(deleting), true));
    }
}
