//! Pod admission as upstream's kubelet does it: the pod count, cpu, memory and ephemeral-storage
//! requests of a new pod must fit in what the node's allocatable leaves; otherwise the pod is
//! rejected with `OutOfpods` / `OutOfcpu` / `OutOfmemory` / `OutOfephemeral-storage` and
//! upstream's message.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use tinykube_proto::quantity::Quantity;

/// Requests of a pod, or the sum over pods.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests {
    pub cpu_milli: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
}

impl std::ops::AddAssign for Requests {
    fn add_assign(&mut self, o: Requests) {
        self.cpu_milli += o.cpu_milli;
        self.memory += o.memory;
        self.ephemeral_storage += o.ephemeral_storage;
    }
}

impl std::ops::SubAssign for Requests {
    fn sub_assign(&mut self, o: Requests) {
        self.cpu_milli -= o.cpu_milli;
        self.memory -= o.memory;
        self.ephemeral_storage -= o.ephemeral_storage;
    }
}

/// What a node offers to pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocatable {
    pub cpu_milli: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub pods: i64,
}

/// Why a pod was refused: the pod's `status.reason` and upstream's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reason: String,
    pub message: String,
}

fn quantity(list: Option<&BTreeMap<String, ApiQuantity>>, name: &str) -> Option<Quantity> {
    Quantity::parse(&list?.get(name)?.0).ok()
}

fn container_requests(c: &Container) -> Requests {
    let req = c.resources.as_ref().and_then(|r| r.requests.as_ref());
    Requests {
        cpu_milli: quantity(req, "cpu").map_or(0, |q| q.milli_value()),
        memory: quantity(req, "memory").map_or(0, |q| q.value()),
        ephemeral_storage: quantity(req, "ephemeral-storage").map_or(0, |q| q.value()),
    }
}

/// The pod's effective requests: the larger of its containers' sum and its largest init
/// container, plus the pod overhead.
pub fn pod_requests(pod: &Pod) -> Requests {
    let Some(spec) = pod.spec.as_ref() else {
        return Requests::default();
    };
    let mut sum = Requests::default();
    for c in &spec.containers {
        sum += container_requests(c);
    }
    for c in spec.init_containers.iter().flatten() {
        let r = container_requests(c);
        sum.cpu_milli = sum.cpu_milli.max(r.cpu_milli);
        sum.memory = sum.memory.max(r.memory);
        sum.ephemeral_storage = sum.ephemeral_storage.max(r.ephemeral_storage);
    }
    let overhead = spec.overhead.as_ref();
    sum.cpu_milli += quantity(overhead, "cpu").map_or(0, |q| q.milli_value());
    sum.memory += quantity(overhead, "memory").map_or(0, |q| q.value());
    sum.ephemeral_storage += quantity(overhead, "ephemeral-storage").map_or(0, |q| q.value());
    sum
}

fn insufficient(resource: &str, requested: i64, used: i64, capacity: i64) -> Rejection {
    Rejection {
        reason: format!("OutOf{resource}"),
        message: format!(
            "Node didn't have enough resource: {resource}, requested: {requested}, used: {used}, capacity: {capacity}"
        ),
    }
}

/// Admit a pod requesting `pod` onto a node with `alloc`, where admitted pods already count
/// `pods` and request `used`.
pub fn admit(
    pod: Requests,
    used: Requests,
    pods: i64,
    alloc: Allocatable,
) -> Result<(), Rejection> {
    if pods + 1 > alloc.pods {
        return Err(insufficient("pods", 1, pods, alloc.pods));
    }
    if pod.cpu_milli > 0 && pod.cpu_milli > alloc.cpu_milli - used.cpu_milli {
        return Err(insufficient(
            "cpu",
            pod.cpu_milli,
            used.cpu_milli,
            alloc.cpu_milli,
        ));
    }
    if pod.memory > 0 && pod.memory > alloc.memory - used.memory {
        return Err(insufficient(
            "memory",
            pod.memory,
            used.memory,
            alloc.memory,
        ));
    }
    let storage = pod.ephemeral_storage;
    if storage > 0 && storage > alloc.ephemeral_storage - used.ephemeral_storage {
        return Err(insufficient(
            "ephemeral-storage",
            storage,
            used.ephemeral_storage,
            alloc.ephemeral_storage,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GI: i64 = 1 << 30;
    const NODE: Allocatable = Allocatable {
        cpu_milli: 4000,
        memory: 8 * GI,
        ephemeral_storage: 20 * GI,
        pods: 110,
    };

    fn r(cpu_milli: i64, memory: i64) -> Requests {
        Requests {
            cpu_milli,
            memory,
            ephemeral_storage: 0,
        }
    }

    #[test]
    fn admission_table() {
        let cases = [
            (r(0, 0), r(0, 0), 0, None),
            (r(4000, 8 * GI), r(0, 0), 0, None),
            (r(5000, 0), r(0, 0), 0, Some(("OutOfcpu", "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"))),
            (r(500, 0), r(3600, 0), 3, Some(("OutOfcpu", "Node didn't have enough resource: cpu, requested: 500, used: 3600, capacity: 4000"))),
            (r(100, 9 * GI), r(0, 0), 0, Some(("OutOfmemory", "Node didn't have enough resource: memory, requested: 9663676416, used: 0, capacity: 8589934592"))),
            (r(0, 0), r(0, 0), 110, Some(("OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110"))),
            // A pod requesting nothing fits even on a full node's cpu.
            (r(0, 0), r(4000, 8 * GI), 5, None),
            (
                Requests { ephemeral_storage: 30 * GI, ..r(0, 0) },
                r(0, 0),
                0,
                Some(("OutOfephemeral-storage", "Node didn't have enough resource: ephemeral-storage, requested: 32212254720, used: 0, capacity: 21474836480")),
            ),
        ];
        for (pod, used, pods, want) in cases {
            let got = admit(pod, used, pods, NODE).err();
            let want = want.map(|(reason, message)| Rejection {
                reason: reason.into(),
                message: message.into(),
            });
            assert_eq!(got, want, "{pod:?} on {used:?} with {pods} pods");
        }
    }

    #[test]
    fn requests_of_a_pod() {
        let pod: Pod = serde_json::from_value(json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "10Mi"}}}],
            "overhead": {"cpu": "10m"}}}))
        .unwrap();
        assert_eq!(pod_requests(&pod), r(2010, 64 << 20));
        assert_eq!(pod_requests(&Pod::default()), r(0, 0));
    }
}
