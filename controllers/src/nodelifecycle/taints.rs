//! What the node lifecycle controller decides about one node, without I/O: conditions set to
//! Unknown when the kubelet went silent, and the taints that follow from the node's conditions
//! (upstream's TaintNodesByCondition for NoSchedule, taint-based eviction for NoExecute).

use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// NoSchedule taints this controller owns, by the condition (type, status) that calls for them.
const NO_SCHEDULE: &[(&str, &str, &str)] = &[
    ("Ready", "False", NOT_READY),
    ("Ready", "Unknown", UNREACHABLE),
    (
        "MemoryPressure",
        "True",
        "node.kubernetes.io/memory-pressure",
    ),
    ("DiskPressure", "True", "node.kubernetes.io/disk-pressure"),
    ("PIDPressure", "True", "node.kubernetes.io/pid-pressure"),
    (
        "NetworkUnavailable",
        "True",
        "node.kubernetes.io/network-unavailable",
    ),
];

/// The conditions a kubelet posts, which go Unknown together when it stops.
const KUBELET_CONDITIONS: &[&str] = &["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"];

pub const STOPPED_POSTING: &str = "Kubelet stopped posting node status.";
pub const NEVER_POSTED: &str = "Kubelet never posted node status.";

fn condition<'a>(node: &'a Node, kind: &str) -> Option<&'a NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
}

/// The Ready condition's status: "True", "False", "Unknown", or None when never posted.
pub fn ready_status(node: &Node) -> Option<&str> {
    condition(node, "Ready").map(|c| c.status.as_str())
}

/// The node's conditions after its kubelet has been silent longer than the grace period:
/// every kubelet condition Unknown (added when never posted). `None` when already so.
pub fn silenced(node: &Node, now: Timestamp) -> Option<Vec<NodeCondition>> {
    let mut conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut changed = false;
    for kind in KUBELET_CONDITIONS {
        match conditions.iter_mut().find(|c| c.type_ == *kind) {
            Some(c) if c.status == "Unknown" => {}
            Some(c) => {
                c.status = "Unknown".into();
                c.reason = Some("NodeStatusUnknown".into());
                c.message = Some(STOPPED_POSTING.into());
                c.last_transition_time = Some(Time(now));
                changed = true;
            }
            None => {
                conditions.push(NodeCondition {
                    type_: kind.to_string(),
                    status: "Unknown".into(),
                    reason: Some("NodeStatusNeverUpdated".into()),
                    message: Some(NEVER_POSTED.into()),
                    last_heartbeat_time: None,
                    last_transition_time: Some(Time(now)),
                });
                changed = true;
            }
        }
    }
    changed.then_some(conditions)
}

/// The node's taints as its conditions call for: taints owned by this controller are added or
/// removed, every other taint is kept as it is. `None` when nothing changes.
pub fn reconciled_taints(node: &Node, now: Timestamp) -> Option<Vec<Taint>> {
    let current: Vec<Taint> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let status_of = |kind: &str| condition(node, kind).map(|c| c.status.as_str());
    let mut wanted: Vec<(&str, &str)> = NO_SCHEDULE
        .iter()
        .filter(|(kind, status, _)| status_of(kind) == Some(*status))
        .map(|(_, _, key)| (*key, "NoSchedule"))
        .collect();
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        wanted.push((UNSCHEDULABLE, "NoSchedule"));
    }
    match status_of("Ready") {
        Some("False") => wanted.push((NOT_READY, "NoExecute")),
        Some("Unknown") => wanted.push((UNREACHABLE, "NoExecute")),
        _ => {}
    }
    let owned = |t: &Taint| {
        let managed_key = t.key == UNSCHEDULABLE || NO_SCHEDULE.iter().any(|(_, _, k)| *k == t.key);
        let effect_owned = t.effect == "NoSchedule"
            || (t.effect == "NoExecute" && (t.key == NOT_READY || t.key == UNREACHABLE));
        managed_key && effect_owned
    };
    let mut next: Vec<Taint> = current
        .iter()
        .filter(|t| !owned(t) || wanted.contains(&(t.key.as_str(), t.effect.as_str())))
        .cloned()
        .collect();
    for (key, effect) in &wanted {
        if !next.iter().any(|t| t.key == *key && t.effect == *effect) {
            next.push(Taint {
                key: key.to_string(),
                effect: effect.to_string(),
                value: None,
                time_added: (*effect == "NoExecute").then_some(Time(now)),
            });
        }
    }
    (next != current).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(conditions: serde_json::Value, taints: serde_json::Value, cordoned: bool) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n"},
            "spec": {"taints": taints, "unschedulable": cordoned},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    fn keys(taints: &[Taint]) -> Vec<String> {
        taints
            .iter()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect()
    }

    #[test]
    fn taints_follow_conditions() {
        let ready = |s: &str| json!([{"type": "Ready", "status": s}]);
        let now = Timestamp::UNIX_EPOCH;
        let master = json!({"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"});
        let cases = [
            (
                "ready lifts the apiserver's not-ready taint, keeps others",
                node(
                    ready("True"),
                    json!([{"key": NOT_READY, "effect": "NoSchedule"}, master]),
                    false,
                ),
                Some(vec!["node-role.kubernetes.io/master:NoSchedule"]),
            ),
            (
                "not ready",
                node(
                    ready("False"),
                    json!([{"key": NOT_READY, "effect": "NoSchedule"}]),
                    false,
                ),
                Some(vec![
                    "node.kubernetes.io/not-ready:NoSchedule",
                    "node.kubernetes.io/not-ready:NoExecute",
                ]),
            ),
            (
                "unreachable swaps not-ready",
                node(
                    ready("Unknown"),
                    json!([{"key": NOT_READY, "effect": "NoExecute"}]),
                    false,
                ),
                Some(vec![
                    "node.kubernetes.io/unreachable:NoSchedule",
                    "node.kubernetes.io/unreachable:NoExecute",
                ]),
            ),
            (
                "ready and clean: nothing to do",
                node(ready("True"), json!([]), false),
                None,
            ),
            (
                "cordoned",
                node(ready("True"), json!([]), true),
                Some(vec!["node.kubernetes.io/unschedulable:NoSchedule"]),
            ),
            (
                "pressure",
                node(
                    json!([{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "True"}]),
                    json!([]),
                    false,
                ),
                Some(vec!["node.kubernetes.io/disk-pressure:NoSchedule"]),
            ),
            (
                "a user's NoExecute taint with a managed key is not ours to remove",
                node(
                    ready("True"),
                    json!([{"key": "node.kubernetes.io/disk-pressure", "effect": "NoExecute"}]),
                    false,
                ),
                None,
            ),
        ];
        for (what, n, want) in cases {
            let got = reconciled_taints(&n, now).map(|t| keys(&t));
            let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn a_silent_kubelet_leaves_every_condition_unknown() {
        let now = Timestamp::UNIX_EPOCH;
        let n = node(
            json!([{"type": "Ready", "status": "True", "reason": "KubeletReady"}]),
            json!([]),
            false,
        );
        let c = silenced(&n, now).unwrap();
        let ready = c.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(
            (
                ready.status.as_str(),
                ready.reason.as_deref(),
                ready.message.as_deref()
            ),
            ("Unknown", Some("NodeStatusUnknown"), Some(STOPPED_POSTING))
        );
        let memory = c.iter().find(|c| c.type_ == "MemoryPressure").unwrap();
        assert_eq!(memory.reason.as_deref(), Some("NodeStatusNeverUpdated"));
        let again = node(serde_json::to_value(&c).unwrap(), json!([]), false);
        assert!(silenced(&again, now).is_none());
    }
}
