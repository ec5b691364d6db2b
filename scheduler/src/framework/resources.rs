//! Resource amounts as the scheduler counts them: a node's allocatable, a pod's requests (as
//! upstream's resource helpers compute them), and the non-zero requests scoring assumes for
//! containers that request nothing.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use tinykube_proto::quantity::Quantity;

/// Requests assumed for scoring a container that requests nothing, as upstream.
pub const DEFAULT_MILLI_CPU: i64 = 100;
pub const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024;

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

/// cpu and memory requested, with upstream's defaults for a pod that requests none.
pub fn nonzero(r: &Resources) -> (i64, i64) {
    let cpu = if r.milli_cpu == 0 {
        DEFAULT_MILLI_CPU
    } else {
        r.milli_cpu
    };
    let mem = if r.memory == 0 {
        DEFAULT_MEMORY
    } else {
        r.memory
    };
    (cpu, mem)
}
