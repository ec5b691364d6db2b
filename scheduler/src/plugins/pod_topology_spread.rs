//! PodTopologySpread: `whenUnsatisfiable: DoNotSchedule` constraints keep the skew (this
//! domain's matching pods, plus the pod itself, minus the emptiest domain's) within `maxSkew`;
//! `ScheduleAnyway` constraints score emptier domains higher. Domains are counted over the
//! nodes the pod's nodeSelector and required node affinity admit. No default constraints
//! unless the profile configures them (`defaultingType: System` or a `List`); those apply to a
//! pod without constraints of its own that a ReplicaSet, StatefulSet or ReplicationController
//! owns, selecting pods with its labels (upstream takes the owners' selectors, which the
//! scheduler does not watch).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, TopologySpreadConstraint};
use tinykube_proto::labels::Selector;

use super::node_affinity::required_matches;
use crate::framework::{default_normalize, CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "PodTopologySpread";
pub const REASON: &str = "node(s) didn't match pod topology spread constraints";
pub const MISSING_LABEL_REASON: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

#[derive(Default)]
pub struct PodTopologySpread {
    /// Constraints for pods that have none (without label selectors).
    pub defaults: Vec<TopologySpreadConstraint>,
}

/// Upstream's `defaultingType: System` constraints.
pub fn system_defaults() -> Vec<TopologySpreadConstraint> {
    [
        ("kubernetes.io/hostname", 3),
        ("topology.kubernetes.io/zone", 5),
    ]
    .into_iter()
    .map(|(key, skew)| TopologySpreadConstraint {
        topology_key: key.into(),
        max_skew: skew,
        when_unsatisfiable: "ScheduleAnyway".into(),
        ..Default::default()
    })
    .collect()
}

impl PodTopologySpread {
    /// The pod's own constraints, or the defaults if it has none and a workload owns it.
    fn constraints_for(&self, pod: &Pod) -> Vec<TopologySpreadConstraint> {
        let own = constraints(pod);
        if !own.is_empty() || self.defaults.is_empty() {
            return own.to_vec();
        }
        let owned = pod.metadata.owner_references.iter().flatten().any(|o| {
            o.controller == Some(true)
                && matches!(
                    o.kind.as_str(),
                    "ReplicaSet" | "StatefulSet" | "ReplicationController"
                )
        });
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        if !owned || labels.is_empty() {
            return Vec::new();
        }
        self.defaults
            .iter()
            .map(|c| TopologySpreadConstraint {
                label_selector: Some(
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                        match_labels: Some(labels.clone()),
                        ..Default::default()
                    },
                ),
                ..c.clone()
            })
            .collect()
    }
}

struct Constraint {
    key: String,
    max_skew: i64,
    min_domains: usize,
    hard: bool,
    selector: Selector,
    /// Whether the incoming pod counts for its own constraint.
    self_match: i64,
    /// Matching pods per topology value, over eligible nodes.
    counts: BTreeMap<String, i64>,
}

impl Constraint {
    fn min_count(&self) -> i64 {
        if self.counts.len() < self.min_domains {
            return 0;
        }
        self.counts.values().copied().min().unwrap_or(0)
    }
}

fn constraints(pod: &Pod) -> &[TopologySpreadConstraint] {
    pod.spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_deref())
        .unwrap_or(&[])
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, pod: &Pod, nodes: &[Arc<NodeInfo>], state: &mut CycleState) {
        let ns = pod
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let own_labels = pod.metadata.labels.clone().unwrap_or_default();
        let mut out: Vec<Constraint> = self
            .constraints_for(pod)
            .iter()
            .map(|c| {
                let selector = c
                    .label_selector
                    .as_ref()
                    .and_then(|s| Selector::from_label_selector(s).ok())
                    .unwrap_or_else(Selector::nothing);
                Constraint {
                    key: c.topology_key.clone(),
                    max_skew: i64::from(c.max_skew),
                    min_domains: c.min_domains.unwrap_or(1).max(1) as usize,
                    hard: c.when_unsatisfiable == "DoNotSchedule",
                    self_match: i64::from(selector.matches(&own_labels)),
                    selector,
                    counts: BTreeMap::new(),
                }
            })
            .collect();
        // Without constraints there is nothing to count.
        let nodes = if out.is_empty() { &[] } else { nodes };
        for node in nodes {
            let labels = node.labels();
            if !required_matches(pod, labels, node.name()) {
                continue;
            }
            for c in out.iter_mut() {
                let Some(value) = labels.get(&c.key) else {
                    continue;
                };
                let matching = node
                    .pods
                    .iter()
                    .filter(|p| p.metadata.namespace.as_deref() == Some(ns.as_str()))
                    .filter(|p| p.metadata.deletion_timestamp.is_none())
                    .filter(|p| {
                        c.selector
                            .matches(p.metadata.labels.as_ref().unwrap_or(&NO_LABELS))
                    })
                    .count() as i64;
                *c.counts.entry(value.clone()).or_default() += matching;
            }
        }
        state.put(NAME, out);
    }

    fn filter(&self, _pod: &Pod, node: &NodeInfo, state: &CycleState) -> Status {
        let Some(cs) = state.get::<Vec<Constraint>>(NAME) else {
            return Status::Success;
        };
        let labels = node.labels();
        for c in cs.iter().filter(|c| c.hard) {
            let Some(value) = labels.get(&c.key) else {
                return Status::unresolvable(MISSING_LABEL_REASON);
            };
            let here = c.counts.get(value).copied().unwrap_or(0);
            if here + c.self_match - c.min_count() > c.max_skew {
                return Status::unschedulable(REASON);
            }
        }
        Status::Success
    }

    /// Matching pods already in this node's domains (fewer is better), for soft constraints.
    fn score(&self, _pod: &Pod, node: &NodeInfo, state: &CycleState) -> i64 {
        let Some(cs) = state.get::<Vec<Constraint>>(NAME) else {
            return 0;
        };
        let labels = node.labels();
        cs.iter()
            .filter(|c| !c.hard)
            .map(|c| {
                labels
                    .get(&c.key)
                    .and_then(|v| c.counts.get(v))
                    .copied()
                    .unwrap_or(0)
            })
            .sum()
    }

    fn normalize(&self, scores: &mut [i64]) {
        default_normalize(scores, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::node;
    use serde_json::{json, Value};
    use std::sync::Arc;

    fn web(name: &str, spread: Value) -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [], "topologySpreadConstraints": spread}}),
        )
        .unwrap()
    }

    fn zone(name: &str, zone: &str, pods: usize) -> NodeInfo {
        let n = node(name, json!({"zone": zone}), json!({}));
        let pods = (0..pods)
            .map(|i| Arc::new(web(&format!("{name}-{i}"), json!([]))))
            .collect();
        NodeInfo::new(n.node, pods)
    }

    #[test]
    fn hard_constraints_bound_the_skew() {
        let spread = json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                             "labelSelector": {"matchLabels": {"app": "web"}}}]);
        let nodes: Vec<Arc<NodeInfo>> = [
            zone("a1", "a", 2),
            zone("b1", "b", 1),
            node("x", json!({}), json!({})),
        ]
        .map(Arc::new)
        .into();
        let p = web("new", spread);
        let mut state = CycleState::default();
        PodTopologySpread::default().pre_filter(&p, &nodes, &mut state);
        let v: Vec<Status> = nodes
            .iter()
            .map(|n| PodTopologySpread::default().filter(&p, n, &state))
            .collect();
        // zone a: 2 + 1 - 1 = 2 > 1; zone b: 1 + 1 - 1 = 1; no zone label: unresolvable.
        assert_eq!(
            v,
            [
                Status::unschedulable(REASON),
                Status::Success,
                Status::unresolvable(MISSING_LABEL_REASON)
            ]
        );
    }

    #[test]
    fn soft_constraints_prefer_emptier_domains() {
        let spread = json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
                             "labelSelector": {"matchLabels": {"app": "web"}}}]);
        let nodes: Vec<Arc<NodeInfo>> = [zone("a1", "a", 3), zone("b1", "b", 0)]
            .map(Arc::new)
            .into();
        let p = web("new", spread);
        let mut state = CycleState::default();
        PodTopologySpread::default().pre_filter(&p, &nodes, &mut state);
        assert!(PodTopologySpread::default()
            .filter(&p, &nodes[0], &state)
            .is_success());
        let mut scores: Vec<i64> = nodes
            .iter()
            .map(|n| PodTopologySpread::default().score(&p, n, &state))
            .collect();
        PodTopologySpread::default().normalize(&mut scores);
        assert_eq!(scores, [0, 100]);
    }
}
