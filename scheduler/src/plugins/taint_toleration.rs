//! TaintToleration: NoSchedule and NoExecute taints keep off pods that do not tolerate them;
//! PreferNoSchedule taints lower a node's score.

use k8s_openapi::api::core::v1::{Pod, Taint, Toleration};

use crate::framework::{default_normalize, CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "TaintToleration";
pub const REASON: &str = "node(s) had untolerated taint(s)";

pub struct TaintToleration;

pub use tinykube_proto::taints::tolerates;

fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| {
        tolerates(
            t,
            &taint.key,
            taint.value.as_deref().unwrap_or(""),
            &taint.effect,
        )
    })
}

fn pod_tolerations(pod: &Pod) -> &[Toleration] {
    pod.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[])
}

fn taints(node: &NodeInfo) -> &[Taint] {
    node.node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
}

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }

    fn filter(&self, pod: &Pod, node: &NodeInfo, _state: &CycleState) -> Status {
        let tolerations = pod_tolerations(pod);
        let blocked = taints(node)
            .iter()
            .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
            .any(|t| !tolerated(tolerations, t));
        if blocked {
            Status::unresolvable(REASON)
        } else {
            Status::Success
        }
    }

    fn score(&self, pod: &Pod, node: &NodeInfo, _state: &CycleState) -> i64 {
        let tolerations: Vec<Toleration> = pod_tolerations(pod)
            .iter()
            .filter(|t| {
                t.effect
                    .as_deref()
                    .is_none_or(|e| e.is_empty() || e == "PreferNoSchedule")
            })
            .cloned()
            .collect();
        taints(node)
            .iter()
            .filter(|t| t.effect == "PreferNoSchedule" && !tolerated(&tolerations, t))
            .count() as i64
    }

    fn normalize(&self, scores: &mut [i64]) {
        default_normalize(scores, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{node, pod};
    use serde_json::json;

    #[test]
    fn taints_and_tolerations() {
        let master = node(
            "m",
            json!({}),
            json!({"taints": [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]}),
        );
        let cases = [
            (json!([]), false),
            // Equal (the default) with no value tolerates a taint without a value: the seed's
            // DaemonSet runs on masters this way.
            (
                json!([{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]),
                true,
            ),
            (
                json!([{"key": "node-role.kubernetes.io/master", "value": "x", "effect": "NoSchedule"}]),
                false,
            ),
            (
                json!([{"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}]),
                true,
            ),
            (json!([{"operator": "Exists"}]), true),
            (
                json!([{"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoExecute"}]),
                false,
            ),
        ];
        for (tolerations, fits) in cases {
            let p = pod(json!({"containers": [], "tolerations": tolerations}));
            assert_eq!(
                TaintToleration
                    .filter(&p, &master, &CycleState::default())
                    .is_success(),
                fits,
                "{tolerations}"
            );
        }
        // An Equal toleration with an empty key only matches with Exists semantics upstream.
        let valued = node(
            "v",
            json!({}),
            json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}),
        );
        let eq = pod(
            json!({"containers": [], "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu"}]}),
        );
        assert!(TaintToleration
            .filter(&eq, &valued, &CycleState::default())
            .is_success());
    }

    #[test]
    fn prefer_no_schedule_lowers_the_score() {
        let soft = node(
            "s",
            json!({}),
            json!({"taints": [{"key": "a", "effect": "PreferNoSchedule"}]}),
        );
        let clean = node("c", json!({}), json!({}));
        let p = pod(json!({"containers": []}));
        let mut scores = [
            TaintToleration.score(&p, &soft, &CycleState::default()),
            TaintToleration.score(&p, &clean, &CycleState::default()),
        ];
        TaintToleration.normalize(&mut scores);
        assert_eq!(scores, [0, 100]);
    }
}
