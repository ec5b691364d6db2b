//! InterPodAffinity: required pod affinity and anti-affinity of the incoming pod, and the
//! required anti-affinity of pods already placed, filter nodes by topology domain; preferred
//! terms (both ways) score them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, WeightedPodAffinityTerm};
use tinykube_proto::labels::Selector;

use crate::framework::{CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "InterPodAffinity";
pub const AFFINITY_REASON: &str = "node(s) didn't match pod affinity rules";
pub const ANTI_AFFINITY_REASON: &str = "node(s) didn't match pod anti-affinity rules";
pub const EXISTING_ANTI_AFFINITY_REASON: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// The weight of an existing pod's required affinity in scoring, as upstream's default.
const HARD_POD_AFFINITY_WEIGHT: i64 = 1;

pub struct InterPodAffinity;

/// A term resolved against its owner's namespace.
struct Term {
    selector: Selector,
    /// `None`: every namespace.
    namespaces: Option<HashSet<String>>,
    namespace_selector: Option<Selector>,
    topology_key: String,
    weight: i64,
}

impl Term {
    fn new(t: &PodAffinityTerm, owner_namespace: &str, weight: i64) -> Term {
        let selector = t
            .label_selector
            .as_ref()
            .and_then(|s| Selector::from_label_selector(s).ok())
            .unwrap_or_else(Selector::nothing);
        let listed: HashSet<String> = t.namespaces.iter().flatten().cloned().collect();
        let namespace_selector = t
            .namespace_selector
            .as_ref()
            .and_then(|s| Selector::from_label_selector(s).ok());
        let namespaces = match (&namespace_selector, listed.is_empty()) {
            (None, true) => Some(HashSet::from([owner_namespace.to_string()])),
            (None, false) => Some(listed),
            (Some(sel), _) if sel.is_everything() => None,
            (Some(_), _) => Some(listed),
        };
        Term {
            selector,
            namespaces,
            namespace_selector: namespace_selector.filter(|s| !s.is_everything()),
            topology_key: t.topology_key.clone(),
            weight,
        }
    }

    /// Whether `pod` is one the term selects.
    fn matches(&self, pod: &Pod) -> bool {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let in_namespace = self.namespaces.as_ref().is_none_or(|set| set.contains(ns))
            || self.namespace_selector.as_ref().is_some_and(|sel| {
                // Namespaces carry their name as the kubernetes.io/metadata.name label.
                sel.matches(&BTreeMap::from([(
                    "kubernetes.io/metadata.name".to_string(),
                    ns.to_string(),
                )]))
            });
        in_namespace
            && self
                .selector
                .matches(pod.metadata.labels.as_ref().unwrap_or(&NO_LABELS))
    }
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

fn required(pod: &Pod, anti: bool) -> Vec<Term> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let affinity = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
    let terms: &[PodAffinityTerm] = if anti {
        affinity
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or(&[])
    } else {
        affinity
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or(&[])
    };
    terms
        .iter()
        .map(|t| Term::new(t, ns, HARD_POD_AFFINITY_WEIGHT))
        .collect()
}

fn preferred(pod: &Pod, anti: bool) -> Vec<Term> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let affinity = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
    let terms: &[WeightedPodAffinityTerm] = if anti {
        affinity
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or(&[])
    } else {
        affinity
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or(&[])
    };
    terms
        .iter()
        .map(|t| Term::new(&t.pod_affinity_term, ns, i64::from(t.weight)))
        .collect()
}

/// What PreFilter learns from the cluster for one incoming pod.
#[derive(Default)]
struct State {
    affinity: Vec<Term>,
    anti: Vec<Term>,
    /// Per required affinity term: topology values holding a matching pod.
    affinity_domains: Vec<HashSet<String>>,
    /// Whether any pod in the cluster matches any required affinity term.
    any_affinity_match: bool,
    /// Per required anti-affinity term: topology values holding a matching pod.
    anti_domains: Vec<HashSet<String>>,
    /// (topology key, value) domains whose pods' required anti-affinity rejects the pod.
    existing_anti: HashSet<(String, String)>,
    /// Preferred (anti-)affinity both ways, summed per (topology key, value).
    scores: HashMap<(String, String), i64>,
}

fn same_pod(a: &Pod, b: &Pod) -> bool {
    a.metadata.namespace == b.metadata.namespace && a.metadata.name == b.metadata.name
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Also what Score needs. Skip the Filter when neither the pod nor any pod it meets has a
    /// required term to check, as upstream.
    fn pre_filter(&self, pod: &Pod, nodes: &[Arc<NodeInfo>], state: &mut CycleState) -> Status {
        let mut st = State {
            affinity: required(pod, false),
            anti: required(pod, true),
            ..Default::default()
        };
        st.affinity_domains = vec![HashSet::new(); st.affinity.len()];
        st.anti_domains = vec![HashSet::new(); st.anti.len()];
        let (pref, pref_anti) = (preferred(pod, false), preferred(pod, true));
        // Without terms of its own, the pod only meets the terms of pods that have some.
        let has_terms = !(st.affinity.is_empty()
            && st.anti.is_empty()
            && pref.is_empty()
            && pref_anti.is_empty());
        for node in nodes {
            let labels = node.labels();
            let others = if has_terms {
                &node.pods
            } else {
                &node.affinity_pods
            };
            for other in others.iter().filter(|o| !same_pod(o, pod)) {
                let domain = |term: &Term| {
                    labels
                        .get(&term.topology_key)
                        .map(|v| (term.topology_key.clone(), v.clone()))
                };
                for (i, t) in st.affinity.iter().enumerate() {
                    if t.matches(other) {
                        st.any_affinity_match = true;
                        if let Some((_, v)) = domain(t) {
                            st.affinity_domains[i].insert(v);
                        }
                    }
                }
                for (i, t) in st.anti.iter().enumerate() {
                    if t.matches(other) {
                        if let Some((_, v)) = domain(t) {
                            st.anti_domains[i].insert(v);
                        }
                    }
                }
                for t in required(other, true).iter().filter(|t| t.matches(pod)) {
                    if let Some(d) = domain(t) {
                        st.existing_anti.insert(d);
                    }
                }
                let mut add = |t: &Term, sign: i64| {
                    if let Some(d) = domain(t) {
                        *st.scores.entry(d).or_default() += sign * t.weight;
                    }
                };
                pref.iter()
                    .filter(|t| t.matches(other))
                    .for_each(|t| add(t, 1));
                pref_anti
                    .iter()
                    .filter(|t| t.matches(other))
                    .for_each(|t| add(t, -1));
                preferred(other, false)
                    .iter()
                    .filter(|t| t.matches(pod))
                    .for_each(|t| add(t, 1));
                preferred(other, true)
                    .iter()
                    .filter(|t| t.matches(pod))
                    .for_each(|t| add(t, -1));
                required(other, false)
                    .iter()
                    .filter(|t| t.matches(pod))
                    .for_each(|t| add(t, 1));
            }
        }
        let nothing_to_check =
            st.affinity.is_empty() && st.anti.is_empty() && st.existing_anti.is_empty();
        state.put(NAME, st);
        if nothing_to_check {
            Status::Skip
        } else {
            Status::Success
        }
    }

    fn filter(&self, pod: &Pod, node: &NodeInfo, state: &CycleState) -> Status {
        let Some(st) = state.get::<State>(NAME) else {
            return Status::Error("InterPodAffinity: PreFilter did not run".into());
        };
        let labels = node.labels();
        let in_domain = |key: &str, values: &HashSet<String>| {
            labels.get(key).is_some_and(|v| values.contains(v))
        };
        // Upstream's order: the pod's affinity, its anti-affinity, then existing pods' anti-affinity.
        if !st.affinity.is_empty() {
            let has_keys = st
                .affinity
                .iter()
                .all(|t| labels.contains_key(&t.topology_key));
            let satisfied = st
                .affinity
                .iter()
                .zip(&st.affinity_domains)
                .all(|(t, d)| in_domain(&t.topology_key, d));
            // The first pod of a group that selects itself may go anywhere with the keys.
            let first_of_group =
                !st.any_affinity_match && st.affinity.iter().all(|t| t.matches(pod));
            if !has_keys || !(satisfied || first_of_group) {
                return Status::unresolvable(AFFINITY_REASON);
            }
        }
        if st
            .anti
            .iter()
            .zip(&st.anti_domains)
            .any(|(t, d)| in_domain(&t.topology_key, d))
        {
            return Status::unschedulable(ANTI_AFFINITY_REASON);
        }
        if st
            .existing_anti
            .iter()
            .any(|(k, v)| labels.get(k) == Some(v))
        {
            return Status::unschedulable(EXISTING_ANTI_AFFINITY_REASON);
        }
        Status::Success
    }

    fn score(&self, _pod: &Pod, node: &NodeInfo, state: &CycleState) -> i64 {
        let Some(st) = state.get::<State>(NAME) else {
            return 0;
        };
        let labels = node.labels();
        st.scores
            .iter()
            .filter(|((k, v), _)| labels.get(k) == Some(v))
            .map(|(_, s)| *s)
            .sum()
    }

    /// Min-max scaling to 0..=100, as upstream.
    fn normalize(&self, scores: &mut [i64]) {
        let (min, max) = (
            scores.iter().copied().min().unwrap_or(0),
            scores.iter().copied().max().unwrap_or(0),
        );
        for s in scores.iter_mut() {
            *s = if max > min {
                (*s - min) * 100 / (max - min)
            } else {
                0
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::node;
    use serde_json::{json, Value};
    use std::sync::Arc;

    fn pod(name: &str, labels: Value, affinity: Value) -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [], "affinity": affinity}}),
        )
        .unwrap()
    }

    fn with_pods(name: &str, labels: Value, pods: Vec<Pod>) -> Arc<NodeInfo> {
        let n = node(name, labels, json!({}));
        Arc::new(NodeInfo::new(
            n.node,
            pods.into_iter().map(Arc::new).collect(),
        ))
    }

    fn verdicts(p: &Pod, nodes: &[Arc<NodeInfo>]) -> Vec<Status> {
        let mut state = CycleState::default();
        InterPodAffinity.pre_filter(p, nodes, &mut state);
        nodes
            .iter()
            .map(|n| InterPodAffinity.filter(p, n, &state))
            .collect()
    }

    #[test]
    fn affinity_follows_the_topology_domain() {
        // mysql runs on a project1 node; tomcat wants the same project.
        let mysql = pod("mysql", json!({"app": "mysql"}), json!(null));
        let nodes = vec![
            with_pods("w0", json!({"project": "project1"}), vec![mysql]),
            with_pods("w1", json!({"project": "project1"}), vec![]),
            with_pods("w2", json!({"project": "project2"}), vec![]),
            with_pods("w3", json!({}), vec![]),
        ];
        let tomcat = pod(
            "tomcat",
            json!({"app": "tomcat"}),
            json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["mysql"]}]}, "namespaces": ["default"], "topologyKey": "project"}]}}),
        );
        let v = verdicts(&tomcat, &nodes);
        assert_eq!(v[..2], [Status::Success, Status::Success]);
        assert_eq!(v[2], Status::unresolvable(AFFINITY_REASON));
        assert_eq!(v[3], Status::unresolvable(AFFINITY_REASON));
    }

    #[test]
    fn anti_affinity_both_ways_and_the_first_of_a_group() {
        let term = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "fluentd"}}, "topologyKey": "kubernetes.io/hostname"}]}});
        let placed = pod("f1", json!({"app": "fluentd"}), term.clone());
        let nodes = vec![
            with_pods("w0", json!({"kubernetes.io/hostname": "w0"}), vec![placed]),
            with_pods("w1", json!({"kubernetes.io/hostname": "w1"}), vec![]),
        ];
        let next = pod("f2", json!({"app": "fluentd"}), term);
        assert_eq!(
            verdicts(&next, &nodes),
            [Status::unschedulable(ANTI_AFFINITY_REASON), Status::Success]
        );
        // A plain pod the placed one repels is kept off its node too.
        let plain = pod("x", json!({"app": "fluentd"}), json!(null));
        assert_eq!(
            verdicts(&plain, &nodes)[0],
            Status::unschedulable(EXISTING_ANTI_AFFINITY_REASON)
        );
        // Self-affinity: the first pod of a group may go where the topology key exists.
        let first = pod(
            "db",
            json!({"app": "db"}),
            json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}),
        );
        assert_eq!(verdicts(&first, &nodes), [Status::Success, Status::Success]);
    }

    #[test]
    fn preferred_terms_score_by_weight() {
        let mysql = pod("mysql", json!({"app": "mysql"}), json!(null));
        let nodes = vec![
            with_pods("w0", json!({"kubernetes.io/hostname": "w0"}), vec![mysql]),
            with_pods("w1", json!({"kubernetes.io/hostname": "w1"}), vec![]),
        ];
        let p = pod(
            "t",
            json!({}),
            json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 80, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "mysql"}}, "topologyKey": "kubernetes.io/hostname"}}]}}),
        );
        let mut state = CycleState::default();
        InterPodAffinity.pre_filter(&p, &nodes, &mut state);
        let mut scores: Vec<i64> = nodes
            .iter()
            .map(|n| InterPodAffinity.score(&p, n, &state))
            .collect();
        assert_eq!(scores, [80, 0]);
        InterPodAffinity.normalize(&mut scores);
        assert_eq!(scores, [100, 0]);
    }
}
