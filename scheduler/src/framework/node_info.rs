//! The per-node view a scheduling cycle works on: a node, the pods on it (bound or assumed), and
//! what they add up to (requests, host ports).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

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
