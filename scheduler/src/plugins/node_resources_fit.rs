//! NodeResourcesFit: requests (cpu, memory, ephemeral storage, extended resources and
//! hugepages, overhead included) and the pod count must fit in what a node has left; a node
//! that does not declare a resource has none of it. Scored by the profile's strategy over weighted resources (cpu and
//! memory, weight 1 each, by default): LeastAllocated (more left free scores higher, the
//! default), MostAllocated (fuller scores higher, to pack), or RequestedToCapacityRatio (a
//! piecewise-linear shape of utilization 0-100 to score 0-10).

use k8s_openapi::api::core::v1::Pod;

use crate::framework::resources::is_scalar;
use crate::framework::{pod_nonzero_requests, pod_requests, CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "NodeResourcesFit";

/// How a node's use after placing the pod becomes a score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    LeastAllocated,
    MostAllocated,
    /// Points of (utilization 0..=100, score 0..=10), utilization ascending.
    RequestedToCapacityRatio(Vec<(i64, i64)>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeResourcesFit {
    pub strategy: Strategy,
    /// Resources weighed in the score, with their weights.
    pub resources: Vec<(String, i64)>,
}

impl Default for NodeResourcesFit {
    fn default() -> Self {
        NodeResourcesFit {
            strategy: Strategy::LeastAllocated,
            resources: vec![("cpu".into(), 1), ("memory".into(), 1)],
        }
    }
}

impl NodeResourcesFit {
    /// One resource's score (0..=100) from what would be requested and what the node has.
    fn resource_score(&self, requested: i64, capacity: i64) -> i64 {
        match &self.strategy {
            Strategy::LeastAllocated => {
                if requested > capacity {
                    0
                } else {
                    (capacity - requested) * 100 / capacity
                }
            }
            Strategy::MostAllocated => requested.min(capacity) * 100 / capacity,
            Strategy::RequestedToCapacityRatio(shape) => {
                let utilization = if requested > capacity {
                    100
                } else {
                    requested * 100 / capacity
                };
                broken_linear(shape, utilization) * 10
            }
        }
    }
}

/// The shape's score at `x`, linear between points and flat beyond the ends.
fn broken_linear(shape: &[(i64, i64)], x: i64) -> i64 {
    let Some(first) = shape.first() else {
        return 0;
    };
    if x <= first.0 {
        return first.1;
    }
    for pair in shape.windows(2) {
        let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
        if x <= x1 {
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0).max(1);
        }
    }
    shape.last().map(|p| p.1).unwrap_or(0)
}

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }

    fn filter(&self, pod: &Pod, node: &NodeInfo, state: &CycleState) -> Status {
        let want = pod_requests(pod, state);
        let (have, used) = (&node.allocatable, &node.requested);
        let mut reasons = Vec::new();
        // A request beyond the node's whole allocatable cannot be helped by preemption.
        let mut unresolvable = false;
        if used.pods + 1 > have.pods {
            reasons.push("Too many pods".to_string());
        }
        let mut check = |name: &str, want: i64, used: i64, have: i64| {
            if want > 0 && want + used > have {
                reasons.push(format!("Insufficient {name}"));
                unresolvable |= want > have;
            }
        };
        check("cpu", want.milli_cpu, used.milli_cpu, have.milli_cpu);
        check("memory", want.memory, used.memory, have.memory);
        check(
            "ephemeral-storage",
            want.ephemeral_storage,
            used.ephemeral_storage,
            have.ephemeral_storage,
        );
        for (name, amount) in &want.scalar {
            check(name, *amount, used.amount(name), have.amount(name));
        }
        match (reasons.is_empty(), unresolvable) {
            (true, _) => Status::Success,
            (false, true) => Status::UnschedulableAndUnresolvable(reasons),
            (false, false) => Status::Unschedulable(reasons),
        }
    }

    /// The strategy's score per weighted resource, averaged by weight. Containers without
    /// cpu or memory requests count as 100m and 200Mi, as upstream; a scalar resource the pod
    /// does not request, or one the node does not have, is left out.
    fn score(&self, pod: &Pod, node: &NodeInfo, state: &CycleState) -> i64 {
        let want = pod_requests(pod, state);
        let (pod_cpu, pod_mem) = pod_nonzero_requests(pod, state);
        let (mut sum, mut weights) = (0i64, 0i64);
        for (name, weight) in &self.resources {
            let (requested, capacity) = match name.as_str() {
                "cpu" => (node.nonzero.0 + pod_cpu, node.allocatable.milli_cpu),
                "memory" => (node.nonzero.1 + pod_mem, node.allocatable.memory),
                other if is_scalar(other) && want.amount(other) == 0 => continue,
                other => (
                    node.requested.amount(other) + want.amount(other),
                    node.allocatable.amount(other),
                ),
            };
            if capacity <= 0 {
                continue;
            }
            sum += self.resource_score(requested, capacity) * weight;
            weights += weight;
        }
        if weights == 0 {
            return 0;
        }
        match self.strategy {
            Strategy::RequestedToCapacityRatio(_) => (sum as f64 / weights as f64).round() as i64,
            _ => sum / weights,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{node, pod};
    use serde_json::json;
    use std::sync::Arc;

    fn requesting(cpu: &str, mem: &str) -> Pod {
        pod(
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}}]}),
        )
    }

    #[test]
    fn requests_must_fit() {
        let n = node("w", json!({}), json!({}));
        assert!(NodeResourcesFit::default()
            .filter(&requesting("4", "1Gi"), &n, &CycleState::default())
            .is_success());
        assert_eq!(
            NodeResourcesFit::default().filter(
                &requesting("5", "256Mi"),
                &n,
                &CycleState::default()
            ),
            Status::UnschedulableAndUnresolvable(vec!["Insufficient cpu".into()])
        );
        let busy = NodeInfo::new(n.node.clone(), vec![Arc::new(requesting("3", "7Gi"))]);
        assert_eq!(
            NodeResourcesFit::default().filter(
                &requesting("2", "2Gi"),
                &busy,
                &CycleState::default()
            ),
            Status::Unschedulable(vec![
                "Insufficient cpu".into(),
                "Insufficient memory".into()
            ])
        );
    }

    #[test]
    fn least_allocated_prefers_the_emptier_node() {
        let empty = node("e", json!({}), json!({}));
        let busy = NodeInfo::new(empty.node.clone(), vec![Arc::new(requesting("2", "4Gi"))]);
        let p = requesting("1", "1Gi");
        assert!(
            NodeResourcesFit::default().score(&p, &empty, &CycleState::default())
                > NodeResourcesFit::default().score(&p, &busy, &CycleState::default())
        );
        assert_eq!(
            NodeResourcesFit::default().score(&p, &empty, &CycleState::default()),
            (75 + 87) / 2
        );
    }

    #[test]
    fn strategies_score_as_configured() {
        let n = node("w", json!({}), json!({}));
        // 1 of 4 cpu and 2 of 8 Gi memory requested after placement: 25 % used.
        let p = requesting("1", "2Gi");
        let most = NodeResourcesFit {
            strategy: Strategy::MostAllocated,
            ..Default::default()
        };
        let cases = [
            (NodeResourcesFit::default(), 75),
            (most, 25),
            (
                NodeResourcesFit {
                    strategy: Strategy::RequestedToCapacityRatio(vec![(0, 10), (100, 0)]),
                    ..Default::default()
                },
                // 10 - 10 * 25 / 100 = 8 (integer), times 10.
                80,
            ),
            (
                NodeResourcesFit {
                    strategy: Strategy::MostAllocated,
                    resources: vec![("cpu".into(), 3), ("memory".into(), 1)],
                },
                25,
            ),
        ];
        for (plugin, want) in cases {
            assert_eq!(
                plugin.score(&p, &n, &CycleState::default()),
                want,
                "{plugin:?}"
            );
        }
        assert_eq!(broken_linear(&[(0, 0), (50, 10), (100, 0)], 75), 5);
        assert_eq!(broken_linear(&[(20, 3)], 0), 3);
    }

    /// A node with `allocatable` and the pods `held`.
    fn node_with(allocatable: serde_json::Value, held: Vec<Pod>) -> NodeInfo {
        let n: k8s_openapi::api::core::v1::Node = serde_json::from_value(json!({
            "metadata": {"name": "w"}, "status": {"allocatable": allocatable}
        }))
        .unwrap();
        NodeInfo::new(Arc::new(n), held.into_iter().map(Arc::new).collect())
    }

    /// A pod whose one container requests `requests`.
    fn wanting(requests: serde_json::Value) -> Pod {
        pod(json!({"containers": [{"name": "c", "resources": {"requests": requests}}]}))
    }

    #[test]
    fn every_requested_resource_must_fit() {
        let unschedulable =
            |r: &[&str]| Status::Unschedulable(r.iter().map(|s| s.to_string()).collect());
        let unresolvable = |r: &[&str]| {
            Status::UnschedulableAndUnresolvable(r.iter().map(|s| s.to_string()).collect())
        };
        let base = json!({"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "10Gi",
            "example.com/foo": "5", "hugepages-2Mi": "4Mi"});
        let cases = [
            (
                "ephemeral-storage within what is left",
                base.clone(),
                vec![wanting(json!({"ephemeral-storage": "4Gi"}))],
                wanting(json!({"ephemeral-storage": "5Gi"})),
                Status::Success,
            ),
            (
                "ephemeral-storage beyond what is left",
                base.clone(),
                vec![wanting(json!({"ephemeral-storage": "8Gi"}))],
                wanting(json!({"ephemeral-storage": "5Gi"})),
                unschedulable(&["Insufficient ephemeral-storage"]),
            ),
            (
                "ephemeral-storage beyond the whole node",
                base.clone(),
                vec![],
                wanting(json!({"ephemeral-storage": "11Gi"})),
                unresolvable(&["Insufficient ephemeral-storage"]),
            ),
            (
                "a node that declares no ephemeral-storage has none",
                json!({"cpu": "4", "memory": "8Gi", "pods": "110"}),
                vec![],
                wanting(json!({"ephemeral-storage": "1Ki"})),
                unresolvable(&["Insufficient ephemeral-storage"]),
            ),
            (
                "the largest init container's ephemeral-storage counts",
                base.clone(),
                vec![],
                pod(json!({
                    "initContainers": [{"name": "i", "resources": {"requests": {"ephemeral-storage": "12Gi"}}}],
                    "containers": [{"name": "c", "resources": {"requests": {"ephemeral-storage": "1Gi"}}}]})),
                unresolvable(&["Insufficient ephemeral-storage"]),
            ),
            (
                "an extended resource within what is left",
                base.clone(),
                vec![wanting(json!({"example.com/foo": "2"}))],
                wanting(json!({"example.com/foo": "3"})),
                Status::Success,
            ),
            (
                "an extended resource beyond what is left",
                base.clone(),
                vec![wanting(json!({"example.com/foo": "3"}))],
                wanting(json!({"example.com/foo": "3"})),
                unschedulable(&["Insufficient example.com/foo"]),
            ),
            (
                "an extended resource the node does not have",
                base.clone(),
                vec![],
                wanting(json!({"example.com/bar": "1"})),
                unresolvable(&["Insufficient example.com/bar"]),
            ),
            (
                "hugepages count",
                base.clone(),
                vec![wanting(json!({"hugepages-2Mi": "2Mi"}))],
                wanting(json!({"hugepages-2Mi": "4Mi"})),
                unschedulable(&["Insufficient hugepages-2Mi"]),
            ),
            (
                "every shortage is a reason, in upstream's order",
                base.clone(),
                vec![wanting(
                    json!({"cpu": "3", "ephemeral-storage": "9Gi", "example.com/foo": "5"}),
                )],
                wanting(json!({"cpu": "2", "ephemeral-storage": "2Gi", "example.com/foo": "1"})),
                unschedulable(&[
                    "Insufficient cpu",
                    "Insufficient ephemeral-storage",
                    "Insufficient example.com/foo",
                ]),
            ),
            (
                "a sidecar's requests add to the containers'",
                base.clone(),
                vec![],
                pod(json!({
                    "initContainers": [{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}],
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "3500m"}}}]})),
                unresolvable(&["Insufficient cpu"]),
            ),
            (
                "the pod's overhead counts",
                base.clone(),
                vec![],
                pod(json!({
                    "overhead": {"cpu": "1", "ephemeral-storage": "1Gi"},
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "3500m", "ephemeral-storage": "9500Mi"}}}]})),
                unresolvable(&["Insufficient cpu", "Insufficient ephemeral-storage"]),
            ),
            (
                "a name upstream counts as no resource is ignored",
                base.clone(),
                vec![],
                wanting(json!({"example": "1"})),
                Status::Success,
            ),
        ];
        for (what, allocatable, held, p, want) in cases {
            let n = node_with(allocatable, held);
            let fit = NodeResourcesFit::default();
            assert_eq!(fit.filter(&p, &n, &CycleState::for_pod(&p)), want, "{what}");
            assert_eq!(
                fit.filter(&p, &n, &CycleState::default()),
                want,
                "{what}, no cycle state"
            );
        }
    }

    #[test]
    fn scoring_counts_overhead_and_upstreams_defaults_per_container() {
        let alloc = json!({"cpu": "4", "memory": "8Gi", "pods": "110", "example.com/foo": "4"});
        let empty = |n: usize| {
            let c: Vec<_> = (0..n).map(|i| json!({"name": format!("c{i}")})).collect();
            pod(json!({ "containers": c }))
        };
        let cases = [
            (
                // 100m and 200Mi per container that requests nothing, plus 1 cpu and 1Gi of
                // overhead: (4000-1100)*100/4000 = 72, (8192-1224)*100/8192 = 85.
                "overhead on top of the defaults",
                NodeResourcesFit::default(),
                vec![],
                pod(
                    json!({"overhead": {"cpu": "1", "memory": "1Gi"}, "containers": [{"name": "c"}]}),
                ),
                (72 + 85) / 2,
            ),
            (
                // Two empty containers held: 200m and 400Mi, and 100m, 200Mi for the pod.
                "the defaults apply per container of the pods held",
                NodeResourcesFit::default(),
                vec![empty(2)],
                empty(1),
                ((4000 - 300) * 100 / 4000 + (8192 - 600) * 100 / 8192) / 2,
            ),
            (
                // A request of 0 is a request: no default for it.
                "an explicit zero is no missing request",
                NodeResourcesFit::default(),
                vec![],
                wanting(json!({"cpu": "0", "memory": "0"})),
                100,
            ),
            (
                // The pod asks for no example.com/foo: only cpu is scored.
                "an extended resource the pod does not request is not scored",
                NodeResourcesFit {
                    strategy: Strategy::MostAllocated,
                    resources: vec![("cpu".into(), 1), ("example.com/foo".into(), 1)],
                },
                vec![],
                wanting(json!({"cpu": "1"})),
                25,
            ),
            (
                "an extended resource the pod requests is scored",
                NodeResourcesFit {
                    strategy: Strategy::MostAllocated,
                    resources: vec![("cpu".into(), 1), ("example.com/foo".into(), 1)],
                },
                vec![],
                wanting(json!({"cpu": "1", "example.com/foo": "3"})),
                (25 + 75) / 2,
            ),
        ];
        for (what, plugin, held, p, want) in cases {
            let n = node_with(alloc.clone(), held);
            assert_eq!(
                plugin.score(&p, &n, &CycleState::for_pod(&p)),
                want,
                "{what}"
            );
        }
    }
}
