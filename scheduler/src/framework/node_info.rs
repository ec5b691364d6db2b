//! The per-node view a scheduling cycle works on: a node, the pods on it (bound or assumed), and
//! what they add up to (requests, host ports).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::affinity::PodTerms;
use super::ports::{host_ports, HostPort};
use super::resources::{self, Resources};

/// One node as the scheduler sees it in a cycle: the node and the pods on it (bound or assumed).
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub node: Arc<Node>,
    pub pods: Vec<Arc<Pod>>,
    pub requested: Resources,
    /// cpu and memory requested with upstream's scoring defaults for containers requesting
    /// none ([`resources::nonzero`]).
    pub nonzero: (i64, i64),
    pub allocatable: Resources,
    /// The pods with pod affinity or anti-affinity terms of their own, which are all that
    /// InterPodAffinity needs to look at for an incoming pod without terms.
    pub affinity_pods: Vec<Arc<Pod>>,
    /// The terms of each of `affinity_pods`, in the same order.
    pub affinity_terms: Vec<PodTerms>,
    /// The host ports its pods hold (NodePorts); empty on most nodes.
    pub used_ports: Vec<HostPort>,
}

impl NodeInfo {
    pub fn new(node: Arc<Node>, pods: Vec<Arc<Pod>>) -> Self {
        let mut requested = Resources::default();
        let mut nonzero = (0, 0);
        let mut used_ports = Vec::new();
        for p in &pods {
            used_ports.extend(host_ports(p));
            let (cpu, mem) = resources::nonzero(p);
            nonzero.0 += cpu;
            nonzero.1 += mem;
            requested.add(&Resources::requested(p));
        }
        let allocatable = Resources::allocatable(&node);
        let affinity_pods: Vec<Arc<Pod>> = pods
            .iter()
            .filter(|p| {
                let affinity = p.spec.as_ref().and_then(|s| s.affinity.as_ref());
                affinity.is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some())
            })
            .cloned()
            .collect();
        let affinity_terms = affinity_pods.iter().map(|p| PodTerms::of(p)).collect();
        NodeInfo {
            node,
            pods,
            requested,
            nonzero,
            allocatable,
            affinity_pods,
            affinity_terms,
            used_ports,
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

/// CycleState key of [`AffinityNodes`].
pub const AFFINITY_NODES: &str = "NodesWithAffinityPods";

/// The positions, in the cycle's node list, of the nodes holding a pod with pod affinity or
/// anti-affinity terms (upstream's HavePodsWithAffinityNodeInfoList). The scheduling cycle
/// puts it in the CycleState when its snapshot has it, so that plugins look at those nodes
/// only instead of every node.
pub struct AffinityNodes(pub Arc<Vec<usize>>);

/// The nodes of `nodes` that may hold a pod with affinity terms: those the cycle's
/// [`AffinityNodes`] lists, or every node when the cycle has no such list.
pub fn with_affinity_pods<'a>(
    nodes: &'a [Arc<NodeInfo>],
    state: &'a super::CycleState,
) -> Box<dyn Iterator<Item = &'a Arc<NodeInfo>> + 'a> {
    match state.get::<AffinityNodes>(AFFINITY_NODES) {
        Some(AffinityNodes(list)) => Box::new(list.iter().filter_map(|i| nodes.get(*i))),
        None => Box::new(nodes.iter()),
    }
}
