//! Table tests of the slice plan: endpoints of pods, grouping by ports, chunks of at most
//! `max`, endpoints staying in their slice, the placeholder.

use super::*;
use serde_json::json;

fn pod(name: &str, ip: &str, ready: bool, terminating: bool) -> Arc<Pod> {
    let mut v = json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "labels": {"app": "web"}},
        "spec": {"nodeName": "worker0", "containers": [{"name": "c",
                 "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": ip,
                   "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}
    });
    if terminating {
        v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    Arc::new(serde_json::from_value(v).unwrap())
}

fn svc() -> Service {
    serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"},
                 "ports": [{"port": 80, "targetPort": "http", "protocol": "TCP"}]}}))
    .unwrap()
}

fn slice(name: &str, ips: &[&str], with_ports: bool) -> Arc<EndpointSlice> {
    let endpoints: Vec<serde_json::Value> =
        ips.iter().map(|ip| json!({"addresses": [ip]})).collect();
    let mut v = json!({"metadata": {"name": name, "namespace": "default"}, "addressType": "IPv4",
                       "endpoints": endpoints});
    if with_ports {
        v["ports"] = json!([{"name": "", "port": 8080, "protocol": "TCP"}]);
    }
    Arc::new(serde_json::from_value(v).unwrap())
}

fn conditions(e: &Endpoint) -> (bool, bool, bool) {
    let c = e.conditions.clone().unwrap();
    (c.ready.unwrap(), c.serving.unwrap(), c.terminating.unwrap())
}

#[test]
fn endpoints_carry_upstream_conditions() {
    let pods = [
        pod("a", "10.244.0.10", true, false),
        pod("b", "10.244.0.9", false, false),
        pod("c", "10.244.0.11", true, true),
    ];
    let wanted = wanted(&svc(), &pods, |_| Some("zone-a".into()));
    let (ports, eps) = wanted.values().next().unwrap();
    assert_eq!(ports[0].port, Some(8080));
    let view: Vec<(String, (bool, bool, bool))> = eps
        .iter()
        .map(|e| (e.addresses[0].clone(), conditions(e)))
        .collect();
    assert_eq!(
        view,
        vec![
            ("10.244.0.9".to_string(), (false, false, false)),
            ("10.244.0.10".to_string(), (true, true, false)),
            ("10.244.0.11".to_string(), (false, true, true)),
        ]
    );
    assert_eq!(eps[0].node_name.as_deref(), Some("worker0"));
    assert_eq!(eps[0].zone.as_deref(), Some("zone-a"));
    assert_eq!(
        eps[0].target_ref.as_ref().unwrap().name.as_deref(),
        Some("b")
    );
}

fn puts(actions: &[Action]) -> Vec<(Option<String>, usize)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Put {
                name, endpoints, ..
            } => Some((name.clone(), endpoints.len())),
            Action::Delete(_) => None,
        })
        .collect()
}

#[test]
fn plans_keep_endpoints_in_place_and_chunk() {
    let pods: Vec<Arc<Pod>> = (1..=5)
        .map(|i| pod(&format!("p{i}"), &format!("10.0.0.{i}"), true, false))
        .collect();
    // Nothing yet: two new slices of at most 3.
    let actions = plan(&[], wanted(&svc(), &pods, |_| None), 3);
    assert_eq!(puts(&actions), vec![(None, 3), (None, 2)]);
    // An existing slice keeps its endpoints and takes new ones while it has room.
    let existing = [slice("web-a", &["10.0.0.5", "10.0.0.9"], true)];
    let actions = plan(&existing, wanted(&svc(), &pods, |_| None), 3);
    assert_eq!(puts(&actions), vec![(Some("web-a".into()), 3), (None, 2)]);
    let Action::Put { endpoints, .. } = &actions[0] else {
        panic!()
    };
    assert_eq!(endpoints[0].addresses[0], "10.0.0.5");
    // No pods: one placeholder, reusing a slice, deleting the others.
    let existing = [
        slice("web-a", &["10.0.0.5"], true),
        slice("web-b", &["10.0.0.6"], true),
    ];
    let actions = plan(&existing, wanted(&svc(), &[], |_| None), 3);
    assert_eq!(
        actions,
        vec![
            Action::Put {
                name: Some("web-a".into()),
                ports: None,
                endpoints: vec![]
            },
            Action::Delete("web-b".into()),
        ]
    );
    // Pods again: the placeholder (other ports) goes, a real slice comes.
    let placeholder = [slice("web-a", &[], false)];
    let actions = plan(&placeholder, wanted(&svc(), &pods[..1], |_| None), 3);
    assert_eq!(actions[0], Action::Delete("web-a".into()),);
    assert_eq!(puts(&actions), vec![(None, 1)]);
}
