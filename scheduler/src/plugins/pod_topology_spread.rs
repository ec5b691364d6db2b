//! PodTopologySpread: `whenUnsatisfiable: DoNotSchedule` constraints keep the skew (this
//! domain's matching pods, plus the pod itself, minus the emptiest domain's) within `maxSkew`;
//! `ScheduleAnyway` constraints score emptier domains higher, as upstream scores them
//! (`count * ln(domains + 2) + maxSkew - 1` per constraint, nodes missing a topology key
//! scored lowest). Domains are counted over the nodes the pod's nodeSelector and required node
//! affinity admit.
//!
//! A pod without constraints of its own gets the profile's default constraints (upstream's
//! `defaultingType: System` by default: hostname maxSkew 3 and zone maxSkew 5, both
//! ScheduleAnyway), selecting pods as upstream's DefaultSelector: by the selectors of the
//! Services that select the pod, merged with the selector of the ReplicationController,
//! ReplicaSet or StatefulSet that controls it; a pod none of them selects gets no defaults.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController, Service, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use tinykube_proto::labels::Selector;

use super::node_affinity::required_matches;
use crate::framework::handle::{Fixed, Lister};
use crate::framework::{CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "PodTopologySpread";
pub const REASON: &str = "node(s) didn't match pod topology spread constraints";
pub const MISSING_LABEL_REASON: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

const HOSTNAME: &str = "kubernetes.io/hostname";
const PRE_SCORE: &str = "PreScorePodTopologySpread";

/// Constraints for pods without their own, as the profile's `pluginConfig` gives them.
#[derive(Clone, Debug)]
pub struct Defaults {
    pub constraints: Vec<TopologySpreadConstraint>,
    /// Whether they are upstream's System ones: then a node missing a topology key is still
    /// scored by the keys it has (hostname spreading on nodes without a zone).
    pub system: bool,
}

impl Default for Defaults {
    /// Upstream's default, `defaultingType: System`.
    fn default() -> Self {
        Defaults {
            constraints: system_defaults(),
            system: true,
        }
    }
}

pub struct PodTopologySpread {
    pub defaults: Defaults,
    /// What the default constraints select pods by.
    pub selectors: Selectors,
}

impl Default for PodTopologySpread {
    /// No default constraints and nothing to select by.
    fn default() -> Self {
        PodTopologySpread {
            defaults: Defaults {
                constraints: Vec::new(),
                system: false,
            },
            selectors: Selectors::default(),
        }
    }
}

/// The objects whose selectors upstream's DefaultSelector merges.
#[derive(Clone)]
pub struct Selectors {
    pub services: Arc<dyn Lister<Service>>,
    pub replication_controllers: Arc<dyn Lister<ReplicationController>>,
    pub replica_sets: Arc<dyn Lister<ReplicaSet>>,
    pub stateful_sets: Arc<dyn Lister<StatefulSet>>,
}

impl Default for Selectors {
    fn default() -> Self {
        Selectors {
            services: Arc::new(Fixed::<Service>::new([])),
            replication_controllers: Arc::new(Fixed::<ReplicationController>::new([])),
            replica_sets: Arc::new(Fixed::<ReplicaSet>::new([])),
            stateful_sets: Arc::new(Fixed::<StatefulSet>::new([])),
        }
    }
}

/// Upstream's `defaultingType: System` constraints.
pub fn system_defaults() -> Vec<TopologySpreadConstraint> {
    [(HOSTNAME, 3), ("topology.kubernetes.io/zone", 5)]
        .into_iter()
        .map(|(key, skew)| TopologySpreadConstraint {
            topology_key: key.into(),
            max_skew: skew,
            when_unsatisfiable: "ScheduleAnyway".into(),
            ..Default::default()
        })
        .collect()
}

/// Upstream's DefaultSelector: the selectors of the Services in the pod's namespace that
/// select it, merged with the selector of the ReplicationController, `apps/v1` ReplicaSet or
/// StatefulSet that controls it (found by name in the caches); `None` when that selects
/// nothing (no Service and no such controller, or empty selectors).
pub fn default_selector(pod: &Pod, from: &Selectors) -> Option<LabelSelector> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let mut match_labels: BTreeMap<String, String> = BTreeMap::new();
    for svc in from.services.list() {
        if svc.metadata.namespace.as_deref().unwrap_or("default") != ns {
            continue;
        }
        let Some(selector) = svc.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
            continue;
        };
        if selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            match_labels.extend(selector.clone());
        }
    }
    let mut expressions: Vec<LabelSelectorRequirement> = Vec::new();
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let key = |name: &str| format!("{ns}/{name}");
    let mut add = |selector: &LabelSelector| {
        if Selector::from_label_selector(selector).is_ok() {
            match_labels.extend(selector.match_labels.clone().unwrap_or_default());
            expressions.extend(selector.match_expressions.clone().unwrap_or_default());
        }
    };
    match owner.map(|o| (o.api_version.as_str(), o.kind.as_str(), o.name.as_str())) {
        Some(("v1", "ReplicationController", name)) => {
            if let Some(rc) = from.replication_controllers.get(&key(name)) {
                let selector = rc.spec.as_ref().and_then(|s| s.selector.clone());
                match_labels.extend(selector.unwrap_or_default());
            }
        }
        Some(("apps/v1", "ReplicaSet", name)) => {
            if let Some(rs) = from.replica_sets.get(&key(name)) {
                if let Some(spec) = rs.spec.as_ref() {
                    add(&spec.selector);
                }
            }
        }
        Some(("apps/v1", "StatefulSet", name)) => {
            if let Some(sts) = from.stateful_sets.get(&key(name)) {
                if let Some(spec) = sts.spec.as_ref() {
                    add(&spec.selector);
                }
            }
        }
        _ => {}
    }
    if match_labels.is_empty() && expressions.is_empty() {
        return None;
    }
    Some(LabelSelector {
        match_labels: (!match_labels.is_empty()).then_some(match_labels),
        match_expressions: (!expressions.is_empty()).then_some(expressions),
    })
}

impl PodTopologySpread {
    /// The pod's own constraints with this `whenUnsatisfiable`, or, when it has none, the
    /// default ones selecting by its ReplicaSet's selector.
    fn constraints_for(&self, pod: &Pod, when: &str) -> Vec<TopologySpreadConstraint> {
        let own = constraints(pod);
        if !own.is_empty() {
            return own
                .iter()
                .filter(|c| c.when_unsatisfiable == when)
                .cloned()
                .collect();
        }
        let defaults: Vec<&TopologySpreadConstraint> = self
            .defaults
            .constraints
            .iter()
            .filter(|c| c.when_unsatisfiable == when)
            .collect();
        if defaults.is_empty() {
            return Vec::new();
        }
        let Some(selector) = default_selector(pod, &self.selectors) else {
            return Vec::new();
        };
        defaults
            .into_iter()
            .map(|c| TopologySpreadConstraint {
                label_selector: Some(selector.clone()),
                ..c.clone()
            })
            .collect()
    }
}

/// A constraint ready to count with.
struct Constraint {
    key: String,
    max_skew: i64,
    min_domains: usize,
    selector: Selector,
    /// Whether the incoming pod counts for its own constraint.
    self_match: i64,
    /// Matching pods per topology value.
    counts: BTreeMap<String, i64>,
}

impl Constraint {
    fn new(c: &TopologySpreadConstraint, own_labels: &BTreeMap<String, String>) -> Constraint {
        let selector = c
            .label_selector
            .as_ref()
            .and_then(|s| Selector::from_label_selector(s).ok())
            .unwrap_or_else(Selector::nothing);
        Constraint {
            key: c.topology_key.clone(),
            max_skew: i64::from(c.max_skew),
            min_domains: c.min_domains.unwrap_or(1).max(1) as usize,
            self_match: i64::from(selector.matches(own_labels)),
            selector,
            counts: BTreeMap::new(),
        }
    }

    fn min_count(&self) -> i64 {
        if self.counts.len() < self.min_domains {
            return 0;
        }
        self.counts.values().copied().min().unwrap_or(0)
    }

    /// The pods on `node` this constraint counts: of the pod's namespace, not terminating,
    /// matching the selector.
    fn matching(&self, node: &NodeInfo, ns: &str) -> i64 {
        node.pods
            .iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(ns))
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| {
                self.selector
                    .matches(p.metadata.labels.as_ref().unwrap_or(&NO_LABELS))
            })
            .count() as i64
    }
}

fn constraints(pod: &Pod) -> &[TopologySpreadConstraint] {
    pod.spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_deref())
        .unwrap_or(&[])
}

fn namespace(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or("default")
}

fn has_keys(node: &NodeInfo, cs: &[Constraint]) -> bool {
    cs.iter().all(|c| node.labels().contains_key(&c.key))
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// What Score needs, computed at PreScore from the feasible nodes.
struct ScoreState {
    constraints: Vec<Constraint>,
    /// Per constraint, ln(number of its domains among the feasible nodes + 2).
    weights: Vec<f64>,
    /// Feasible nodes missing a topology key (when every key is required): scored lowest.
    ignored: BTreeSet<String>,
}

/// The raw score of a node PreScore ignored; NormalizeScore turns it into 0.
const IGNORED: i64 = -1;

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Skip when the pod has no hard constraints, as upstream.
    fn pre_filter(&self, pod: &Pod, nodes: &[Arc<NodeInfo>], state: &mut CycleState) -> Status {
        let own_labels = pod.metadata.labels.clone().unwrap_or_default();
        let mut cs: Vec<Constraint> = self
            .constraints_for(pod, "DoNotSchedule")
            .iter()
            .map(|c| Constraint::new(c, &own_labels))
            .collect();
        if cs.is_empty() {
            return Status::Skip;
        }
        for node in nodes {
            if !required_matches(pod, node.labels(), node.name()) || !has_keys(node, &cs) {
                continue;
            }
            for c in cs.iter_mut() {
                let matching = c.matching(node, namespace(pod));
                *c.counts.entry(node.labels()[&c.key].clone()).or_default() += matching;
            }
        }
        state.put(NAME, cs);
        Status::Success
    }

    fn filter(&self, _pod: &Pod, node: &NodeInfo, state: &CycleState) -> Status {
        let Some(cs) = state.get::<Vec<Constraint>>(NAME) else {
            return Status::Success;
        };
        let labels = node.labels();
        for c in cs {
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

    fn pre_score(
        &self,
        pod: &Pod,
        feasible: &[&NodeInfo],
        all: &[Arc<NodeInfo>],
        state: &mut CycleState,
    ) {
        let own_labels = pod.metadata.labels.clone().unwrap_or_default();
        let mut cs: Vec<Constraint> = self
            .constraints_for(pod, "ScheduleAnyway")
            .iter()
            .map(|c| Constraint::new(c, &own_labels))
            .collect();
        if cs.is_empty() {
            return;
        }
        // Nodes without a zone still spread by hostname under the System defaults.
        let require_all = !constraints(pod).is_empty() || !self.defaults.system;
        let mut ignored = BTreeSet::new();
        let mut domains = vec![0usize; cs.len()];
        for node in feasible {
            if require_all && !has_keys(node, &cs) {
                ignored.insert(node.name().to_string());
                continue;
            }
            for (i, c) in cs.iter_mut().enumerate() {
                if c.key == HOSTNAME {
                    continue; // counted per node at Score
                }
                let value = node.labels().get(&c.key).cloned().unwrap_or_default();
                if let std::collections::btree_map::Entry::Vacant(e) = c.counts.entry(value) {
                    e.insert(0);
                    domains[i] += 1;
                }
            }
        }
        let weights = cs
            .iter()
            .zip(&domains)
            .map(|(c, size)| {
                let size = if c.key == HOSTNAME {
                    feasible.len() - ignored.len()
                } else {
                    *size
                };
                ((size + 2) as f64).ln()
            })
            .collect();
        // Count matching pods in the feasible nodes' domains, over every node the pod's node
        // affinity admits.
        for node in all {
            if !required_matches(pod, node.labels(), node.name())
                || (require_all && !has_keys(node, &cs))
            {
                continue;
            }
            for c in cs.iter_mut().filter(|c| c.key != HOSTNAME) {
                let value = node.labels().get(&c.key).cloned().unwrap_or_default();
                if c.counts.contains_key(&value) {
                    let matching = c.matching(node, namespace(pod));
                    *c.counts.entry(value).or_default() += matching;
                }
            }
        }
        state.put(
            PRE_SCORE,
            ScoreState {
                constraints: cs,
                weights,
                ignored,
            },
        );
    }

    /// Matching pods in this node's domains, weighed per constraint (fewer is better).
    fn score(&self, pod: &Pod, node: &NodeInfo, state: &CycleState) -> i64 {
        let Some(s) = state.get::<ScoreState>(PRE_SCORE) else {
            return 0;
        };
        if s.ignored.contains(node.name()) {
            return IGNORED;
        }
        let labels = node.labels();
        let mut score = 0.0;
        for (c, weight) in s.constraints.iter().zip(&s.weights) {
            let Some(value) = labels.get(&c.key) else {
                continue;
            };
            let count = if c.key == HOSTNAME {
                c.matching(node, namespace(pod))
            } else {
                c.counts.get(value).copied().unwrap_or(0)
            };
            score += count as f64 * weight + (c.max_skew - 1) as f64;
        }
        score.round() as i64
    }

    /// The emptiest domains score 100: `100 * (max + min - score) / max`; ignored nodes 0.
    fn normalize(&self, scores: &mut [i64]) {
        let valid = scores.iter().copied().filter(|s| *s != IGNORED);
        let (min, max) = valid.fold((i64::MAX, 0), |(lo, hi), s| (lo.min(s), hi.max(s)));
        for s in scores.iter_mut() {
            *s = match *s {
                IGNORED => 0,
                _ if max == 0 => 100,
                v => 100 * (max + min - v) / max,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::node;
    use serde_json::{json, Value};

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

    /// Raw and normalized scores of `pod` on `nodes`, all of them feasible.
    fn scores(pl: &PodTopologySpread, pod: &Pod, nodes: &[Arc<NodeInfo>]) -> Vec<i64> {
        let mut state = CycleState::default();
        let feasible: Vec<&NodeInfo> = nodes.iter().map(|n| n.as_ref()).collect();
        pl.pre_score(pod, &feasible, nodes, &mut state);
        let mut s: Vec<i64> = feasible.iter().map(|n| pl.score(pod, n, &state)).collect();
        pl.normalize(&mut s);
        s
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
    fn soft_constraints_score_as_upstream() {
        let soft = |skew: i32| {
            json!([{"maxSkew": skew, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "web"}}}])
        };
        let cases = [
            // (what, maxSkew, nodes as (zone or none, matching pods), normalized scores)
            (
                "the emptier zone wins",
                1,
                vec![(Some("a"), 3), (Some("b"), 0)],
                vec![0, 100],
            ),
            // ln(4) = 1.386: raw 4 and 1, so 100 * (4 + 1 - s) / 4.
            (
                "a smaller gap scores closer",
                1,
                vec![(Some("a"), 3), (Some("b"), 1)],
                vec![25, 100],
            ),
            // maxSkew - 1 is added to every raw score, watering the difference down.
            (
                "a larger maxSkew tolerates more",
                3,
                vec![(Some("a"), 3), (Some("b"), 0)],
                vec![33, 100],
            ),
            (
                "a node missing the key scores lowest",
                1,
                vec![(Some("a"), 1), (None, 0)],
                vec![100, 0],
            ),
            (
                "no matching pods anywhere",
                1,
                vec![(Some("a"), 0), (Some("b"), 0)],
                vec![100, 100],
            ),
        ];
        for (what, skew, layout, want) in cases {
            let nodes: Vec<Arc<NodeInfo>> = layout
                .iter()
                .enumerate()
                .map(|(i, (z, pods))| {
                    let name = format!("n{i}");
                    Arc::new(match z {
                        Some(z) => zone(&name, z, *pods),
                        None => node(&name, json!({}), json!({})),
                    })
                })
                .collect();
            let p = web("new", soft(skew));
            assert_eq!(
                scores(&PodTopologySpread::default(), &p, &nodes),
                want,
                "{what}"
            );
        }
    }

    fn owned_by(name: &str, labels: Value, owner: Option<(&str, &str)>) -> Pod {
        let refs = owner.map(|(kind, api)| {
            json!([{"apiVersion": api, "kind": kind, "name": "web-rs", "uid": "u", "controller": true}])
        });
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default", "labels": labels,
                         "ownerReferences": refs.unwrap_or(json!([]))},
            "spec": {"containers": []}}))
        .unwrap()
    }

    fn replica_set(selector: Value) -> ReplicaSet {
        serde_json::from_value(json!({
            "metadata": {"name": "web-rs", "namespace": "default"},
            "spec": {"selector": selector, "template": {}}}))
        .unwrap()
    }

    fn selectors(rs: Vec<ReplicaSet>, others: Value) -> Selectors {
        let list = |k: &str| others[k].as_array().cloned().unwrap_or_default();
        Selectors {
            services: Arc::new(Fixed::new(
                list("services")
                    .into_iter()
                    .map(|v| serde_json::from_value(v).unwrap()),
            )),
            replication_controllers: Arc::new(Fixed::new(
                list("rcs")
                    .into_iter()
                    .map(|v| serde_json::from_value(v).unwrap()),
            )),
            replica_sets: Arc::new(Fixed::new(rs)),
            stateful_sets: Arc::new(Fixed::new(
                list("sts")
                    .into_iter()
                    .map(|v| serde_json::from_value(v).unwrap()),
            )),
        }
    }

    #[test]
    fn default_constraints_select_by_services_and_the_owning_controller() {
        let web_labels = json!({"app": "web", "pod-template-hash": "abc"});
        let svc = json!({"metadata": {"name": "web", "namespace": "default"},
                         "spec": {"selector": {"app": "web"}}});
        let other_ns = json!({"metadata": {"name": "web", "namespace": "other"},
                              "spec": {"selector": {"tier": "x"}}});
        let not_ours = json!({"metadata": {"name": "db", "namespace": "default"},
                              "spec": {"selector": {"app": "db"}}});
        let sts = json!({"metadata": {"name": "web-rs", "namespace": "default"},
                         "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                                  "serviceName": "web", "template": {}}});
        let rc = json!({"metadata": {"name": "web-rs", "namespace": "default"},
                        "spec": {"selector": {"app": "web", "pod-template-hash": "abc"}}});
        let rs = || vec![replica_set(json!({"matchLabels": {"app": "web"}}))];
        let none = json!({});
        let cases = [
            (
                "owned by the ReplicaSet",
                rs(),
                none.clone(),
                Some(("ReplicaSet", "apps/v1")),
                Some(json!({"matchLabels": {"app": "web"}})),
            ),
            ("no owner, no Service", rs(), none.clone(), None, None),
            (
                "a ReplicaSet of another group version",
                rs(),
                none.clone(),
                Some(("ReplicaSet", "extensions/v1beta1")),
                None,
            ),
            (
                "a Service selecting it (not those of other namespaces or labels)",
                vec![],
                json!({"services": [svc.clone(), other_ns, not_ours]}),
                None,
                Some(json!({"matchLabels": {"app": "web"}})),
            ),
            (
                "a StatefulSet's expressions with a Service's labels",
                vec![],
                json!({"services": [svc], "sts": [sts]}),
                Some(("StatefulSet", "apps/v1")),
                Some(json!({"matchLabels": {"app": "web"},
                         "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]})),
            ),
            (
                "a ReplicationController's map",
                vec![],
                json!({"rcs": [rc]}),
                Some(("ReplicationController", "v1")),
                Some(json!({"matchLabels": {"app": "web", "pod-template-hash": "abc"}})),
            ),
            (
                "an owner not in the caches",
                vec![],
                none.clone(),
                Some(("StatefulSet", "apps/v1")),
                None,
            ),
        ];
        for (what, rs, others, owner, want) in cases {
            let pod = owned_by("p", web_labels.clone(), owner);
            let want: Option<LabelSelector> = want.map(|w| serde_json::from_value(w).unwrap());
            assert_eq!(
                default_selector(&pod, &selectors(rs, others)),
                want,
                "{what}"
            );
        }
        let pod = owned_by("p", web_labels, Some(("ReplicaSet", "apps/v1")));
        let empty = selectors(vec![replica_set(json!({}))], json!({}));
        assert_eq!(default_selector(&pod, &empty), None, "an empty selector");
    }

    #[test]
    fn system_defaults_spread_a_replica_sets_pods_by_hostname() {
        let rs = Arc::new(Fixed::new([replica_set(
            json!({"matchLabels": {"app": "web"}}),
        )]));
        let pl = PodTopologySpread {
            defaults: Defaults::default(),
            selectors: Selectors {
                replica_sets: rs,
                ..Selectors::default()
            },
        };
        let owner = Some(("ReplicaSet", "apps/v1"));
        // Two nodes without a zone label: the System defaults still spread by hostname.
        let host = |name: &str, pods: usize| {
            let n = node(name, json!({"kubernetes.io/hostname": name}), json!({}));
            let pods = (0..pods)
                .map(|i| {
                    Arc::new(owned_by(
                        &format!("{name}-{i}"),
                        json!({"app": "web"}),
                        owner,
                    ))
                })
                .collect();
            Arc::new(NodeInfo::new(n.node, pods))
        };
        let nodes = vec![host("busy", 2), host("idle", 0)];
        let p = owned_by("new", json!({"app": "web"}), owner);
        let s = scores(&pl, &p, &nodes);
        assert!(s[1] > s[0], "the idle node scores higher: {s:?}");
        // A bare pod gets no default constraints.
        let bare = owned_by("bare", json!({"app": "web"}), None);
        let mut state = CycleState::default();
        pl.pre_score(&bare, &[], &nodes, &mut state);
        assert!(state.get::<ScoreState>(PRE_SCORE).is_none());
    }
}
