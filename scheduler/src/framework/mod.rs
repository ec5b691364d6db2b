//! The scheduling framework: what a plugin is, what it answers, and the per-node view it
//! answers about. A plugin's answer separates "this node does not fit" (Unschedulable,
//! UnschedulableAndUnresolvable) from "something broke" (Error).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use tinykube_proto::quantity::Quantity;

/// A filter's verdict on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Success,
    /// The node does not fit now; preemption or cluster changes may help.
    Unschedulable(Vec<String>),
    /// The node can never fit this pod (e.g. node affinity); preemption cannot help.
    UnschedulableAndUnresolvable(Vec<String>),
    Error(String),
}

impl Status {
    pub fn unschedulable(reason: &str) -> Self {
        Status::Unschedulable(vec![reason.to_string()])
    }

    pub fn unresolvable(reason: &str) -> Self {
        Status::UnschedulableAndUnresolvable(vec![reason.to_string()])
    }

    pub fn is_success(&self) -> bool {
        matches!(self, Status::Success)
    }

    /// Whether removing pods could make the node fit (the nodes preemption looks at).
    pub fn is_resolvable(&self) -> bool {
        matches!(self, Status::Unschedulable(_))
    }

    pub fn reasons(&self) -> Vec<String> {
        match self {
            Status::Success => Vec::new(),
            Status::Unschedulable(r) | Status::UnschedulableAndUnresolvable(r) => r.clone(),
            Status::Error(e) => vec![e.clone()],
        }
    }
}

/// Requested or allocatable amounts: cpu in millicores, memory in bytes, pods, and extended
/// resources by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub pods: i64,
    pub scalar: BTreeMap<String, i64>,
}

impl Resources {
    fn add_map(
        &mut self,
        map: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
    ) {
        for (name, q) in map.into_iter().flatten() {
            let Ok(q) = Quantity::parse(&q.0) else {
                continue;
            };
            match name.as_str() {
                "cpu" => self.milli_cpu += q.milli_value(),
                "memory" => self.memory += q.value(),
                "pods" => self.pods += q.value(),
                "ephemeral-storage" => {}
                other => *self.scalar.entry(other.to_string()).or_default() += q.value(),
            }
        }
    }

    /// A node's allocatable resources (capacity when allocatable is not reported).
    pub fn allocatable(node: &Node) -> Resources {
        let mut r = Resources::default();
        let status = node.status.as_ref();
        let map = status.and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref()));
        r.add_map(map);
        r
    }

    /// What a pod requests, as upstream computes it: the sum over containers, at least the
    /// largest init container, plus overhead.
    pub fn requested(pod: &Pod) -> Resources {
        let mut sum = Resources::default();
        let Some(spec) = pod.spec.as_ref() else {
            return sum;
        };
        for c in &spec.containers {
            sum.add_map(c.resources.as_ref().and_then(|r| r.requests.as_ref()));
        }
        for c in spec.init_containers.iter().flatten() {
            let mut one = Resources::default();
            one.add_map(c.resources.as_ref().and_then(|r| r.requests.as_ref()));
            sum.milli_cpu = sum.milli_cpu.max(one.milli_cpu);
            sum.memory = sum.memory.max(one.memory);
            for (k, v) in one.scalar {
                let e = sum.scalar.entry(k).or_default();
                *e = (*e).max(v);
            }
        }
        sum.add_map(spec.overhead.as_ref());
        sum.pods = 1;
        sum
    }

    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.pods += other.pods;
        for (k, v) in &other.scalar {
            *self.scalar.entry(k.clone()).or_default() += v;
        }
    }
}

/// One node as the scheduler sees it in a cycle: the node and the pods on it (bound or assumed).
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub node: Arc<Node>,
    pub pods: Vec<Arc<Pod>>,
    pub requested: Resources,
    /// cpu and memory requested with upstream's scoring defaults for pods requesting none.
    pub nonzero: (i64, i64),
    pub allocatable: Resources,
    /// The pods with pod affinity or anti-affinity terms of their own, which are all that
    /// InterPodAffinity needs to look at for an incoming pod without terms.
    pub affinity_pods: Vec<Arc<Pod>>,
}

impl NodeInfo {
    pub fn new(node: Arc<Node>, pods: Vec<Arc<Pod>>) -> Self {
        let mut requested = Resources::default();
        let mut nonzero = (0, 0);
        for p in &pods {
            let r = Resources::requested(p);
            let (cpu, mem) = crate::plugins::node_resources_fit::nonzero(&r);
            nonzero.0 += cpu;
            nonzero.1 += mem;
            requested.add(&r);
        }
        let allocatable = Resources::allocatable(&node);
        let affinity_pods = pods
            .iter()
            .filter(|p| {
                let affinity = p.spec.as_ref().and_then(|s| s.affinity.as_ref());
                affinity.is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some())
            })
            .cloned()
            .collect();
        NodeInfo {
            node,
            pods,
            requested,
            nonzero,
            allocatable,
            affinity_pods,
        }
    }

    pub fn name(&self) -> &str {
        self.node.metadata.name.as_deref().unwrap_or("")
    }

    pub fn labels(&self) -> &BTreeMap<String, String> {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        self.node.metadata.labels.as_ref().unwrap_or(&NONE)
    }
}

/// What plugins computed for the pod being scheduled, shared by the cycle's extension points
/// (PreFilter writes, Filter and Score read), keyed by plugin name.
/// CycleState key of the incoming pod's [`Resources::requested`], computed once per cycle.
pub const POD_REQUESTS: &str = "PodRequests";

/// The incoming pod's requests: from the cycle when put there, else computed.
pub fn pod_requests<'a>(pod: &Pod, state: &'a CycleState) -> std::borrow::Cow<'a, Resources> {
    match state.get::<Resources>(POD_REQUESTS) {
        Some(r) => std::borrow::Cow::Borrowed(r),
        None => std::borrow::Cow::Owned(Resources::requested(pod)),
    }
}

#[derive(Default)]
pub struct CycleState {
    entries: std::collections::HashMap<&'static str, Box<dyn std::any::Any + Send + Sync>>,
}

impl CycleState {
    /// A cycle for `pod`, with what every plugin asks of it computed once.
    pub fn for_pod(pod: &Pod) -> Self {
        let mut state = CycleState::default();
        state.put(POD_REQUESTS, Resources::requested(pod));
        state
    }

    pub fn put<T: std::any::Any + Send + Sync>(&mut self, key: &'static str, value: T) {
        self.entries.insert(key, Box::new(value));
    }

    pub fn get<T: std::any::Any>(&self, key: &'static str) -> Option<&T> {
        self.entries.get(key).and_then(|b| b.downcast_ref())
    }
}

/// Extension points of a plugin: PreFilter, Filter, Score, NormalizeScore. Scores are 0..=100
/// after normalization.
pub trait Plugin: Send + Sync {
    fn name(&self) -> &'static str;

    /// Compute what filtering needs from the whole cluster, once per pod.
    fn pre_filter(&self, _pod: &Pod, _nodes: &[Arc<NodeInfo>], _state: &mut CycleState) {}

    /// Whether `pod` may run on `node`.
    fn filter(&self, _pod: &Pod, _node: &NodeInfo, _state: &CycleState) -> Status {
        Status::Success
    }

    /// Whether this plugin scores at all.
    fn scores(&self) -> bool {
        false
    }

    /// Raw score of `node` for `pod`.
    fn score(&self, _pod: &Pod, _node: &NodeInfo, _state: &CycleState) -> i64 {
        0
    }

    /// Map raw scores to 0..=100 (default: already in range).
    fn normalize(&self, _scores: &mut [i64]) {}
}

/// Scale scores so the highest becomes 100 (or, `reverse`, the lowest becomes 100), as
/// upstream's DefaultNormalizeScore.
pub fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = 100);
        }
        return;
    }
    for s in scores.iter_mut() {
        let scaled = *s * 100 / max;
        *s = if reverse { 100 - scaled } else { scaled };
    }
}

/// Upstream's FitError summary of why no node fits: `0/3 nodes are available: 1 node(s) had
/// untolerated taint(s), 2 Insufficient cpu.` Each reason is counted over the nodes that gave
/// it, and the "count reason" strings are sorted as strings, as upstream sorts them.
pub fn fit_error(total: usize, reasons: &BTreeMap<String, usize>) -> String {
    let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    format!("0/{total} nodes are available: {}.", parts.join(", "))
}

/// Why each node failed the filters in one cycle, by node index.
#[derive(Debug, Default)]
pub struct Diagnosis {
    pub statuses: Vec<Status>,
}

impl Diagnosis {
    /// The reasons histogram over every node.
    pub fn fit_error(&self) -> String {
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        for s in &self.statuses {
            for r in s.reasons() {
                *reasons.entry(r).or_default() += 1;
            }
        }
        fit_error(self.statuses.len(), &reasons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_errors_read_as_upstream() {
        let mut reasons = BTreeMap::new();
        reasons.insert("node(s) had untolerated taint(s)".to_string(), 1);
        reasons.insert("Insufficient cpu".to_string(), 3);
        assert_eq!(
            fit_error(4, &reasons),
            "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu."
        );
        let diagnosis = Diagnosis {
            statuses: vec![
                Status::unresolvable("node(s) had untolerated taint(s)"),
                Status::Unschedulable(vec![
                    "Insufficient cpu".into(),
                    "Insufficient memory".into(),
                ]),
                Status::unschedulable("Insufficient cpu"),
            ],
        };
        assert_eq!(
            diagnosis.fit_error(),
            "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
        );
    }

    #[test]
    fn normalization_scales_to_100() {
        let mut s = [10, 20, 40];
        default_normalize(&mut s, false);
        assert_eq!(s, [25, 50, 100]);
        let mut r = [0, 1, 2];
        default_normalize(&mut r, true);
        assert_eq!(r, [100, 50, 0]);
    }
}
