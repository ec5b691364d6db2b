//! The per-node view a scheduling cycle works on: a node, the pods on it (bound or assumed), and
//! what they add up to (requests, host ports).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use tinykube_proto::quantity::Quantity;

use crate::plugins::node_ports::{host_ports, HostPort};

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
