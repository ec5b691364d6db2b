//! NodeAffinity: `nodeSelector` and required node-affinity terms filter (terms ORed, a term's
//! expressions ANDed; In, NotIn, Exists, DoesNotExist, Gt, Lt; matchFields on metadata.name);
//! preferred terms score by the sum of the weights that match.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use tinykube_proto::node_affinity::{self, term_matches};

use crate::framework::{default_normalize, CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "NodeAffinity";
pub const REASON: &str = "node(s) didn't match Pod's node affinity/selector";

pub struct NodeAffinity;

/// Whether the pod's nodeSelector and required node affinity admit the node.
pub fn required_matches(pod: &Pod, labels: &BTreeMap<String, String>, node_name: &str) -> bool {
    pod.spec
        .as_ref()
        .is_none_or(|spec| node_affinity::required_matches(spec, labels, node_name))
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Skip the Filter for a pod without nodeSelector and required node affinity, as upstream.
    fn pre_filter(&self, pod: &Pod, _nodes: &[Arc<NodeInfo>], _state: &mut CycleState) -> Status {
        let Some(spec) = pod.spec.as_ref() else {
            return Status::Skip;
        };
        let selector = spec.node_selector.as_ref().is_some_and(|s| !s.is_empty());
        let required = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .is_some_and(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .is_some()
            });
        if selector || required {
            Status::Success
        } else {
            Status::Skip
        }
    }

    fn filter(&self, pod: &Pod, node: &NodeInfo, _state: &CycleState) -> Status {
        if required_matches(pod, node.labels(), node.name()) {
            Status::Success
        } else {
            Status::unresolvable(REASON)
        }
    }

    fn score(&self, pod: &Pod, node: &NodeInfo, _state: &CycleState) -> i64 {
        let labels = node.labels();
        pod.spec
            .as_ref()
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|terms| {
                terms
                    .iter()
                    .filter(|t| term_matches(&t.preference, labels, node.name()))
                    .map(|t| i64::from(t.weight))
                    .sum()
            })
            .unwrap_or(0)
    }

    fn normalize(&self, scores: &mut [i64]) {
        default_normalize(scores, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{node, pod};
    use serde_json::json;

    #[test]
    fn pods_without_node_constraints_skip_the_filter() {
        let required = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}}});
        let preferred = json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
            [{"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}});
        let cases = [
            ("nothing", json!({"containers": []}), Status::Skip),
            (
                "an empty nodeSelector",
                json!({"containers": [], "nodeSelector": {}}),
                Status::Skip,
            ),
            (
                "only preferences",
                json!({"containers": [], "affinity": preferred}),
                Status::Skip,
            ),
            (
                "a nodeSelector",
                json!({"containers": [], "nodeSelector": {"a": "b"}}),
                Status::Success,
            ),
            (
                "required terms",
                json!({"containers": [], "affinity": required}),
                Status::Success,
            ),
        ];
        for (what, spec, want) in cases {
            let got = NodeAffinity.pre_filter(&pod(spec), &[], &mut CycleState::default());
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn selectors_and_required_terms() {
        let n = node(
            "w0",
            json!({"project": "project1", "ssd": "true", "gen": "5"}),
            json!({}),
        );
        let term = |exprs: serde_json::Value| json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}}, "containers": []});
        let cases = [
            (
                json!({"containers": [], "nodeSelector": {"ssd": "true"}}),
                true,
            ),
            (
                json!({"containers": [], "nodeSelector": {"ssd": "false"}}),
                false,
            ),
            (
                term(
                    json!([{"key": "project", "operator": "In", "values": ["project1"]}, {"key": "ssd", "operator": "In", "values": ["true"]}]),
                ),
                true,
            ),
            (
                term(
                    json!([{"key": "project", "operator": "In", "values": ["project1"]}, {"key": "accelerator", "operator": "Exists"}]),
                ),
                false,
            ),
            (
                term(json!([{"key": "project", "operator": "NotIn", "values": ["project2"]}])),
                true,
            ),
            (
                term(json!([{"key": "accelerator", "operator": "DoesNotExist"}])),
                true,
            ),
            (
                term(json!([{"key": "gen", "operator": "Gt", "values": ["4"]}])),
                true,
            ),
            (
                term(json!([{"key": "gen", "operator": "Lt", "values": ["4"]}])),
                false,
            ),
            (
                json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "nope", "operator": "Exists"}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w0"]}]}]}}}}),
                true,
            ),
        ];
        for (spec, fits) in cases {
            assert_eq!(
                NodeAffinity
                    .filter(&pod(spec.clone()), &n, &CycleState::default())
                    .is_success(),
                fits,
                "{spec}"
            );
        }
    }

    #[test]
    fn preferred_terms_add_their_weights() {
        let spec = json!({"containers": [], "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 60, "preference": {"matchExpressions": [{"key": "project", "operator": "In", "values": ["project2"]}]}},
            {"weight": 30, "preference": {"matchExpressions": [{"key": "ssd", "operator": "In", "values": ["true"]}]}}]}}});
        let p = pod(spec);
        let both = node(
            "a",
            json!({"project": "project2", "ssd": "true"}),
            json!({}),
        );
        let one = node("b", json!({"project": "project2"}), json!({}));
        let none = node("c", json!({}), json!({}));
        let mut scores = [
            NodeAffinity.score(&p, &both, &CycleState::default()),
            NodeAffinity.score(&p, &one, &CycleState::default()),
            NodeAffinity.score(&p, &none, &CycleState::default()),
        ];
        assert_eq!(scores, [90, 60, 0]);
        NodeAffinity.normalize(&mut scores);
        assert_eq!(scores, [100, 66, 0]);
    }
}
