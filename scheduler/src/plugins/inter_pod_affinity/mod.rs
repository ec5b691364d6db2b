//! InterPodAffinity: required pod affinity and anti-affinity of the incoming pod, and the
//! required anti-affinity of pods already placed, filter nodes by topology domain; preferred
//! terms (both ways) and placed pods' required affinity score them.
//!
//! As upstream's: a placed pod counts for the incoming pod's affinity only when it matches
//! every required term, and then in each term's domain; a node passes when each term's domain
//! holds such a pod, or, when no pod in the cluster does, when the pod matches its own terms
//! (the first pod of a group with affinity to itself) and the node has every topology key.

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Pod};

use crate::framework::affinity::{
    matches_all, namespace_labels, namespace_of, preferred, required, Term,
};
use crate::framework::handle::Lister;
use crate::framework::node_info::with_affinity_pods;
use crate::framework::{CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "InterPodAffinity";
pub const AFFINITY_REASON: &str = "node(s) didn't match pod affinity rules";
pub const ANTI_AFFINITY_REASON: &str = "node(s) didn't match pod anti-affinity rules";
pub const EXISTING_ANTI_AFFINITY_REASON: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// The weight of an existing pod's required affinity in scoring, as upstream's default.
const HARD_POD_AFFINITY_WEIGHT: i64 = 1;

/// CycleState key of what PreScore computed.
const SCORES: &str = "PreScoreInterPodAffinity";

pub struct InterPodAffinity {
    /// Namespaces, whose labels `namespaceSelector`s match.
    pub namespaces: Arc<dyn Lister<Namespace>>,
}

/// Counts per topology domain (a topology key's value), by topology key, so that a node's
/// domain is looked up without building a key.
#[derive(Default)]
struct Counts(HashMap<String, HashMap<String, i64>>);

impl Counts {
    /// Add `n` for the domain of `key` that `node` is in, if it has the key.
    fn add(&mut self, node: &NodeInfo, key: &str, n: i64) {
        if let Some(v) = node.labels().get(key) {
            let per_value = match self.0.get_mut(key) {
                Some(m) => m,
                None => self.0.entry(key.to_string()).or_default(),
            };
            match per_value.get_mut(v.as_str()) {
                Some(c) => *c += n,
                None => {
                    per_value.insert(v.clone(), n);
                }
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the domain of `key` that a node labelled `labels` is in holds a counted pod.
    fn holds(&self, labels: &Labels, key: &str) -> bool {
        labels
            .get(key)
            .and_then(|v| self.0.get(key)?.get(v.as_str()))
            .is_some_and(|n| *n > 0)
    }

    /// Whether any domain a node labelled `labels` is in holds a counted pod.
    fn holds_any(&self, labels: &Labels) -> bool {
        self.0.keys().any(|k| self.holds(labels, k))
    }

    /// The sum over the domains a node labelled `labels` is in.
    fn sum(&self, labels: &Labels) -> i64 {
        self.0
            .iter()
            .filter_map(|(k, per_value)| per_value.get(labels.get(k)?.as_str()))
            .sum()
    }
}

type Labels = BTreeMap<String, String>;

/// What PreFilter learns from the cluster for one incoming pod.
struct State {
    affinity: Vec<Term>,
    anti: Vec<Term>,
    /// Placed pods matching every required affinity term, per domain of each term.
    affinity_counts: Counts,
    /// Placed pods matching a required anti-affinity term, per domain of that term.
    anti_counts: Counts,
    /// Placed pods whose required anti-affinity selects the incoming pod, per domain.
    existing_anti_counts: Counts,
}

fn same_pod(a: &Pod, b: &Pod) -> bool {
    a.metadata.namespace == b.metadata.namespace && a.metadata.name == b.metadata.name
}

impl InterPodAffinity {
    /// The incoming pod's own terms, with their namespace selectors resolved.
    fn own_terms(&self, mut terms: Vec<Term>) -> Vec<Term> {
        for t in &mut terms {
            t.resolve(self.namespaces.as_ref());
        }
        terms
    }
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Skip the Filter when neither the pod nor any pod it meets has a required term to
    /// check, as upstream.
    fn pre_filter(&self, pod: &Pod, nodes: &[Arc<NodeInfo>], state: &mut CycleState) -> Status {
        let mut st = State {
            affinity: self.own_terms(required(pod, false, HARD_POD_AFFINITY_WEIGHT)),
            anti: self.own_terms(required(pod, true, HARD_POD_AFFINITY_WEIGHT)),
            affinity_counts: Counts::default(),
            anti_counts: Counts::default(),
            existing_anti_counts: Counts::default(),
        };
        let ns_labels = namespace_labels(self.namespaces.as_ref(), namespace_of(pod));
        let has_terms = !(st.affinity.is_empty() && st.anti.is_empty());
        for node in with_affinity_pods(nodes, state) {
            let placed = node.affinity_pods.iter().zip(&node.affinity_terms);
            for (_, terms) in placed.filter(|(o, _)| !same_pod(o, pod)) {
                for t in &terms.required_anti {
                    if t.matches(pod, &ns_labels) {
                        st.existing_anti_counts.add(node, &t.topology_key, 1);
                    }
                }
            }
        }
        for node in nodes.iter().filter(|_| has_terms) {
            for other in node.pods.iter().filter(|o| !same_pod(o, pod)) {
                if matches_all(&st.affinity, other) {
                    for t in &st.affinity {
                        st.affinity_counts.add(node, &t.topology_key, 1);
                    }
                }
                for t in st.anti.iter().filter(|t| t.matches(other, &Labels::new())) {
                    st.anti_counts.add(node, &t.topology_key, 1);
                }
            }
        }
        let nothing_to_check = !has_terms && st.existing_anti_counts.is_empty();
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
        // Upstream's order: the pod's affinity, its anti-affinity, then existing pods' anti-affinity.
        let has_keys = st
            .affinity
            .iter()
            .all(|t| labels.contains_key(&t.topology_key));
        let satisfied = st
            .affinity
            .iter()
            .all(|t| st.affinity_counts.holds(labels, &t.topology_key));
        // The first pod of a group with affinity to itself.
        let first_of_group = st.affinity_counts.is_empty() && matches_all(&st.affinity, pod);
        if !has_keys || !(satisfied || first_of_group) {
            return Status::unresolvable(AFFINITY_REASON);
        }
        if st
            .anti
            .iter()
            .any(|t| st.anti_counts.holds(labels, &t.topology_key))
        {
            return Status::unschedulable(ANTI_AFFINITY_REASON);
        }
        if st.existing_anti_counts.holds_any(labels) {
            return Status::unschedulable(EXISTING_ANTI_AFFINITY_REASON);
        }
        Status::Success
    }

    /// Preferred (anti-)affinity both ways, and placed pods' required affinity that selects
    /// the pod, summed per topology domain over every node, as upstream's PreScore.
    fn pre_score(
        &self,
        pod: &Pod,
        feasible: &[&NodeInfo],
        all: &[Arc<NodeInfo>],
        state: &mut CycleState,
    ) {
        if feasible.is_empty() {
            state.put(SCORES, Counts::default());
            return;
        }
        let pref = self.own_terms(preferred(pod, false));
        let pref_anti = self.own_terms(preferred(pod, true));
        let ns_labels = namespace_labels(self.namespaces.as_ref(), namespace_of(pod));
        // Without preferred terms of its own, the pod only meets the terms of pods that have some.
        let has_terms = !(pref.is_empty() && pref_anti.is_empty());
        let nodes: Box<dyn Iterator<Item = &Arc<NodeInfo>>> = if has_terms {
            Box::new(all.iter())
        } else {
            with_affinity_pods(all, state)
        };
        let mut scores = Counts::default();
        let none = Labels::new();
        for node in nodes {
            if has_terms {
                for other in node.pods.iter().filter(|o| !same_pod(o, pod)) {
                    for t in pref.iter().filter(|t| t.matches(other, &none)) {
                        scores.add(node, &t.topology_key, t.weight);
                    }
                    for t in pref_anti.iter().filter(|t| t.matches(other, &none)) {
                        scores.add(node, &t.topology_key, -t.weight);
                    }
                }
            }
            // Only pods with terms of their own have terms that may select the pod.
            let placed = node.affinity_pods.iter().zip(&node.affinity_terms);
            for (_, terms) in placed.filter(|(o, _)| !same_pod(o, pod)) {
                for t in terms.required.iter().filter(|t| t.matches(pod, &ns_labels)) {
                    scores.add(node, &t.topology_key, HARD_POD_AFFINITY_WEIGHT);
                }
                for t in terms
                    .preferred
                    .iter()
                    .filter(|t| t.matches(pod, &ns_labels))
                {
                    scores.add(node, &t.topology_key, t.weight);
                }
                for t in terms
                    .preferred_anti
                    .iter()
                    .filter(|t| t.matches(pod, &ns_labels))
                {
                    scores.add(node, &t.topology_key, -t.weight);
                }
            }
        }
        state.put(SCORES, scores);
    }

    fn score(&self, _pod: &Pod, node: &NodeInfo, state: &CycleState) -> i64 {
        let Some(scores) = state.get::<Counts>(SCORES) else {
            return 0;
        };
        scores.sum(node.labels())
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
