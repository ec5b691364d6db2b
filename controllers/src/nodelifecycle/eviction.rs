//! Taint-based eviction, without I/O: when a pod on a node with NoExecute taints must go.
//! A taint the pod does not tolerate evicts it at once; otherwise it stays for the shortest
//! `tolerationSeconds` among the tolerations it uses (forever when none has a limit), counted
//! from when the taint was added, as upstream's taint eviction controller does.

use k8s_openapi::api::core::v1::{Pod, Taint};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use tinykube_proto::taints::{tolerated, tolerations_of};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    Now,
    At(Timestamp),
    Never,
}

/// When `pod` must leave a node tainted with `taints` (effects other than NoExecute ignored).
pub fn eviction(pod: &Pod, taints: &[Taint], now: Timestamp) -> Eviction {
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[]);
    let no_execute: Vec<&Taint> = taints.iter().filter(|t| t.effect == "NoExecute").collect();
    if no_execute.is_empty() {
        return Eviction::Never;
    }
    if no_execute.iter().any(|t| !tolerated(tolerations, t)) {
        return Eviction::Now;
    }
    let limit = no_execute
        .iter()
        .flat_map(|t| tolerations_of(tolerations, t))
        .filter_map(|t| t.toleration_seconds)
        .min();
    let Some(seconds) = limit else {
        return Eviction::Never;
    };
    if seconds <= 0 {
        return Eviction::Now;
    }
    let since = no_execute
        .iter()
        .filter_map(|t| t.time_added.as_ref().map(|t| t.0))
        .min()
        .unwrap_or(now);
    let at = since
        .checked_add(SignedDuration::from_secs(seconds))
        .unwrap_or(Timestamp::MAX);
    if at <= now {
        Eviction::Now
    } else {
        Eviction::At(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(tolerations: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [], "tolerations": tolerations}}))
            .unwrap()
    }

    #[test]
    fn evictions_follow_tolerations() {
        let t0 = Timestamp::from_second(1_000).unwrap();
        let taints: Vec<Taint> = serde_json::from_value(json!([
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "1970-01-01T00:16:40Z"},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
        ]))
        .unwrap();
        let unreachable = |secs: Option<i64>| {
            json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                    "effect": "NoExecute", "tolerationSeconds": secs}])
        };
        let at = |s: i64| Eviction::At(Timestamp::from_second(1_000 + s).unwrap());
        let cases = [
            ("no toleration", pod(json!([])), t0, Eviction::Now),
            (
                "tolerated forever (DaemonSet pods)",
                pod(unreachable(None)),
                t0,
                Eviction::Never,
            ),
            (
                "the admission default",
                pod(unreachable(Some(300))),
                t0,
                at(300),
            ),
            (
                "after the deadline",
                pod(unreachable(Some(300))),
                Timestamp::from_second(1_300).unwrap(),
                Eviction::Now,
            ),
            ("zero seconds", pod(unreachable(Some(0))), t0, Eviction::Now),
            (
                "the shortest limit wins",
                pod(json!([{"operator": "Exists", "tolerationSeconds": 60},
                           {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 30}])),
                t0,
                at(30),
            ),
            (
                "tolerating another key does not help",
                pod(
                    json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]),
                ),
                t0,
                Eviction::Now,
            ),
        ];
        for (what, p, now, want) in cases {
            assert_eq!(eviction(&p, &taints, now), want, "{what}");
        }
        assert_eq!(eviction(&pod(json!([])), &taints[1..], t0), Eviction::Never);
    }
}
