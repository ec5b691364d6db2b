//! Resource amounts as the scheduler counts them: a node's allocatable, a pod's requests (as
//! upstream's resource helpers compute them), and the non-zero requests scoring assumes for
//! containers that request nothing.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use tinykube_proto::quantity::Quantity;

/// Requests assumed for scoring a container that does not request cpu (or memory), as
/// upstream.
pub const DEFAULT_MILLI_CPU: i64 = 100;
pub const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024;

/// Requested or allocatable amounts: cpu in millicores, memory and ephemeral storage in bytes,
/// pods, and the scalar resources (extended resources, hugepages) by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub pods: i64,
    pub scalar: BTreeMap<String, i64>,
}

/// Whether upstream counts `name` as a scalar resource (IsScalarResourceName): an extended
/// resource (a domain-prefixed name outside `kubernetes.io/`), a `kubernetes.io/`-prefixed
/// native one, `hugepages-*` or `attachable-volumes-*`. Other names are not counted at all.
pub fn is_scalar(name: &str) -> bool {
    let extended = name.contains('/')
        && !name.contains("kubernetes.io/")
        && !name.starts_with("requests.")
        && tinykube_proto::labels::validate_key(&format!("requests.{name}")).is_ok();
    extended
        || name.contains("kubernetes.io/")
        || name.starts_with("hugepages-")
        || name.starts_with("attachable-volumes-")
}

impl Resources {
    fn add_map(&mut self, map: Option<&BTreeMap<String, ApiQuantity>>) {
        for (name, q) in map.into_iter().flatten() {
            let Ok(q) = Quantity::parse(&q.0) else {
                continue;
            };
            match name.as_str() {
                "cpu" => self.milli_cpu += q.milli_value(),
                "memory" => self.memory += q.value(),
                "ephemeral-storage" => self.ephemeral_storage += q.value(),
                "pods" => self.pods += q.value(),
                other if is_scalar(other) => {
                    *self.scalar.entry(other.to_string()).or_default() += q.value()
                }
                _ => {}
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

    /// What a pod requests, as upstream's PodRequests: the sum over its containers and its
    /// sidecars (init containers that keep running), at least what any init container needs
    /// while it runs (its own requests and those of the sidecars started before it), plus the
    /// pod's overhead (RuntimeClass). `pods` is 1.
    pub fn requested(pod: &Pod) -> Resources {
        of_pod(pod, false)
    }

    /// The amount of `name` (a resource name as the API spells it; cpu in millicores).
    pub fn amount(&self, name: &str) -> i64 {
        match name {
            "cpu" => self.milli_cpu,
            "memory" => self.memory,
            "ephemeral-storage" => self.ephemeral_storage,
            "pods" => self.pods,
            other => self.scalar.get(other).copied().unwrap_or(0),
        }
    }

    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.ephemeral_storage += other.ephemeral_storage;
        self.pods += other.pods;
        for (k, v) in &other.scalar {
            *self.scalar.entry(k.clone()).or_default() += v;
        }
    }

    /// Raise each amount to at least `other`'s.
    fn set_max(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.pods = self.pods.max(other.pods);
        for (k, v) in &other.scalar {
            let e = self.scalar.entry(k.clone()).or_default();
            *e = (*e).max(*v);
        }
    }
}

/// The cpu (millicores) and memory (bytes) a pod requests for scoring, as upstream's
/// non-zero requests: a container (or init container) that does not request cpu counts as
/// [`DEFAULT_MILLI_CPU`], one that does not request memory as [`DEFAULT_MEMORY`] (an explicit 0
/// stays 0); overhead is added as it is.
pub fn nonzero(pod: &Pod) -> (i64, i64) {
    let r = of_pod(pod, true);
    (r.milli_cpu, r.memory)
}

/// One container's requests; with `defaults`, upstream's scoring defaults for cpu and memory
/// it does not request.
fn of_container(c: &Container, defaults: bool) -> Resources {
    let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
    let mut r = Resources::default();
    r.add_map(requests);
    if defaults {
        let missing = |name: &str| requests.is_none_or(|m| !m.contains_key(name));
        if missing("cpu") {
            r.milli_cpu += DEFAULT_MILLI_CPU;
        }
        if missing("memory") {
            r.memory += DEFAULT_MEMORY;
        }
    }
    r
}

fn of_pod(pod: &Pod, defaults: bool) -> Resources {
    let mut sum = Resources::default();
    let Some(spec) = pod.spec.as_ref() else {
        return sum;
    };
    for c in &spec.containers {
        sum.add(&of_container(c, defaults));
    }
    // Init containers run one after the other, each beside the sidecars started before it.
    let (mut sidecars, mut busiest) = (Resources::default(), Resources::default());
    for c in spec.init_containers.iter().flatten() {
        let own = of_container(c, defaults);
        let running = if c.restart_policy.as_deref() == Some("Always") {
            sum.add(&own);
            sidecars.add(&own);
            sidecars.clone()
        } else {
            let mut with_sidecars = own;
            with_sidecars.add(&sidecars);
            with_sidecars
        };
        busiest.set_max(&running);
    }
    sum.set_max(&busiest);
    sum.add_map(spec.overhead.as_ref());
    sum.pods = 1;
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::testing::pod;
    use serde_json::{json, Value};

    fn container(name: &str, requests: Value) -> Value {
        json!({"name": name, "resources": {"requests": requests}})
    }

    fn sidecar(name: &str, requests: Value) -> Value {
        json!({"name": name, "restartPolicy": "Always", "resources": {"requests": requests}})
    }

    #[test]
    fn pod_requests_read_as_upstreams_resource_helpers() {
        let cases = [
            (
                "containers add up",
                json!({"containers": [container("a", json!({"cpu": "1", "memory": "1Gi"})),
                    container("b", json!({"cpu": "500m", "ephemeral-storage": "1Gi"}))]}),
                (1500, 1 << 30, 1 << 30),
            ),
            (
                "the largest init container wins over smaller containers",
                json!({"initContainers": [container("i1", json!({"cpu": "2"})), container("i2", json!({"cpu": "3"}))],
                    "containers": [container("c", json!({"cpu": "1"}))]}),
                (3000, 0, 0),
            ),
            (
                // Sidecars run with the containers (1 + 1 + 1) and beside every init container
                // started after them: i4 runs with s1 and s3, 3 + 2 = 5.
                "sidecars add up and run beside later init containers",
                json!({"initContainers": [sidecar("s1", json!({"cpu": "1"})), container("i2", json!({"cpu": "2"})),
                    sidecar("s3", json!({"cpu": "1"})), container("i4", json!({"cpu": "3"}))],
                    "containers": [container("c", json!({"cpu": "1"}))]}),
                (5000, 0, 0),
            ),
            (
                "sidecars alone add to the containers",
                json!({"initContainers": [sidecar("s", json!({"memory": "1Gi"}))],
                    "containers": [container("c", json!({"memory": "1Gi"}))]}),
                (0, 2 << 30, 0),
            ),
            (
                "overhead is added last",
                json!({"overhead": {"cpu": "250m", "memory": "120Mi", "ephemeral-storage": "1Gi"},
                    "initContainers": [container("i", json!({"cpu": "2"}))],
                    "containers": [container("c", json!({"cpu": "1"}))]}),
                (2250, 120 << 20, 1 << 30),
            ),
        ];
        for (what, spec, (cpu, memory, storage)) in cases {
            let r = Resources::requested(&pod(spec));
            assert_eq!(
                (r.milli_cpu, r.memory, r.ephemeral_storage, r.pods),
                (cpu, memory, storage, 1),
                "{what}"
            );
        }
    }

    #[test]
    fn only_upstreams_scalar_names_count() {
        let cases = [
            ("example.com/foo", true),
            ("nvidia.com/gpu", true),
            ("hugepages-2Mi", true),
            ("attachable-volumes-aws-ebs", true),
            ("kubernetes.io/something", true),
            ("foo", false),
            ("requests.example.com/foo", false),
            ("example.com/-bad-", false),
        ];
        for (name, scalar) in cases {
            assert_eq!(is_scalar(name), scalar, "{name}");
        }
    }

    #[test]
    fn non_zero_requests_default_per_container() {
        let cases = [
            ("no containers", json!({"containers": []}), (0, 0)),
            (
                "two containers without requests",
                json!({"containers": [{"name": "a"}, {"name": "b"}]}),
                (200, 400 << 20),
            ),
            (
                "only the missing one is defaulted",
                json!({"containers": [container("a", json!({"cpu": "1"}))]}),
                (1000, 200 << 20),
            ),
            (
                "an explicit zero stays zero",
                json!({"containers": [container("a", json!({"cpu": "0", "memory": "0"}))]}),
                (0, 0),
            ),
            (
                "overhead on top",
                json!({"overhead": {"cpu": "1"}, "containers": [{"name": "a"}]}),
                (1100, 200 << 20),
            ),
        ];
        for (what, spec, want) in cases {
            assert_eq!(nonzero(&pod(spec)), want, "{what}");
        }
    }
}
