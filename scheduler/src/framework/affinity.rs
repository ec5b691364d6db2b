//! Pod (anti-)affinity terms as upstream's AffinityTerm: which pods a term selects (a label
//! selector over the pods of some namespaces) and the topology key it groups nodes by. A
//! placed pod's terms are parsed once, when its node's NodeInfo is built ([`PodTerms`], as
//! upstream's PodInfo), not in every cycle.
//!
//! A term looks in the namespaces it lists or whose labels its `namespaceSelector` matches
//! (`{}` matches every namespace); with neither, in its own pod's namespace. For the incoming
//! pod's own terms the selector is resolved into names up front ([`Term::resolve`]), as
//! upstream's mergeAffinityTermNamespacesIfNotEmpty; an existing pod's terms are matched
//! against the incoming pod's namespace labels.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::{Namespace, Pod, PodAffinityTerm, WeightedPodAffinityTerm};
use tinykube_proto::labels::Selector;

use crate::framework::handle::Lister;

/// The label every namespace carries with its name (set by the API server).
const NAME_LABEL: &str = "kubernetes.io/metadata.name";

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// A term resolved against its owner's namespace.
#[derive(Debug, Clone)]
pub struct Term {
    selector: Selector,
    namespaces: HashSet<String>,
    /// `None` matches no namespace (no `namespaceSelector`); `{}` matches them all.
    namespace_selector: Option<Selector>,
    pub topology_key: String,
    pub weight: i64,
}

impl Term {
    fn new(t: &PodAffinityTerm, owner_namespace: &str, weight: i64) -> Term {
        let selector = t
            .label_selector
            .as_ref()
            .and_then(|s| Selector::from_label_selector(s).ok())
            .unwrap_or_else(Selector::nothing);
        let mut namespaces: HashSet<String> = t.namespaces.iter().flatten().cloned().collect();
        if namespaces.is_empty() && t.namespace_selector.is_none() {
            namespaces.insert(owner_namespace.to_string());
        }
        Term {
            selector,
            namespaces,
            namespace_selector: t
                .namespace_selector
                .as_ref()
                .and_then(|s| Selector::from_label_selector(s).ok()),
            topology_key: t.topology_key.clone(),
            weight,
        }
    }

    /// Turn the namespace selector into the names of the namespaces it matches now (unless it
    /// matches them all), so that matching needs no namespace labels.
    pub fn resolve(&mut self, namespaces: &dyn Lister<Namespace>) {
        let Some(sel) = self.namespace_selector.take() else {
            return;
        };
        if sel.is_everything() {
            self.namespace_selector = Some(sel);
            return;
        }
        for ns in namespaces.list() {
            if sel.matches(ns.metadata.labels.as_ref().unwrap_or(&NO_LABELS)) {
                self.namespaces.extend(ns.metadata.name.clone());
            }
        }
    }

    /// Whether `pod`, in a namespace labelled `namespace_labels`, is one the term selects.
    pub fn matches(&self, pod: &Pod, namespace_labels: &BTreeMap<String, String>) -> bool {
        let in_namespace = self.namespaces.contains(namespace_of(pod))
            || self
                .namespace_selector
                .as_ref()
                .is_some_and(|sel| sel.matches(namespace_labels));
        in_namespace
            && self
                .selector
                .matches(pod.metadata.labels.as_ref().unwrap_or(&NO_LABELS))
    }
}

pub fn namespace_of(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or("default")
}

/// The labels of namespace `name`; one not (yet) in the cache is known by the label every
/// namespace carries.
pub fn namespace_labels(
    namespaces: &dyn Lister<Namespace>,
    name: &str,
) -> BTreeMap<String, String> {
    match namespaces.get(name) {
        Some(ns) => ns.metadata.labels.clone().unwrap_or_default(),
        None => BTreeMap::from([(NAME_LABEL.to_string(), name.to_string())]),
    }
}

fn terms_of(pod: &Pod, anti: bool) -> (&[PodAffinityTerm], &[WeightedPodAffinityTerm]) {
    let affinity = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
    let (required, preferred) = if anti {
        let a = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        (
            a.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_deref()
            }),
            a.and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_deref()
            }),
        )
    } else {
        let a = affinity.and_then(|a| a.pod_affinity.as_ref());
        (
            a.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_deref()
            }),
            a.and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_deref()
            }),
        )
    };
    (required.unwrap_or(&[]), preferred.unwrap_or(&[]))
}

/// The pod's required affinity (or, `anti`, anti-affinity) terms, each of weight `weight`
/// when scored.
pub fn required(pod: &Pod, anti: bool, weight: i64) -> Vec<Term> {
    let ns = namespace_of(pod);
    terms_of(pod, anti)
        .0
        .iter()
        .map(|t| Term::new(t, ns, weight))
        .collect()
}

/// The pod's preferred affinity (or, `anti`, anti-affinity) terms with their weights.
pub fn preferred(pod: &Pod, anti: bool) -> Vec<Term> {
    let ns = namespace_of(pod);
    terms_of(pod, anti)
        .1
        .iter()
        .map(|t| Term::new(&t.pod_affinity_term, ns, i64::from(t.weight)))
        .collect()
}

/// The terms of a placed pod, parsed once (upstream's PodInfo): required terms weigh 1.
#[derive(Debug, Clone)]
pub struct PodTerms {
    pub required: Vec<Term>,
    pub required_anti: Vec<Term>,
    pub preferred: Vec<Term>,
    pub preferred_anti: Vec<Term>,
}

impl PodTerms {
    pub fn of(pod: &Pod) -> PodTerms {
        PodTerms {
            required: required(pod, false, 1),
            required_anti: required(pod, true, 1),
            preferred: preferred(pod, false),
            preferred_anti: preferred(pod, true),
        }
    }
}

/// Whether `pod` matches every one of `terms` (and there is one), upstream's
/// podMatchesAllAffinityTerms for the incoming pod's resolved terms.
pub fn matches_all(terms: &[Term], pod: &Pod) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod, &NO_LABELS))
}
