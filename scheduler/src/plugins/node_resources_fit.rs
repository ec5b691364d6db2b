//! NodeResourcesFit: requests (cpu, memory, extended resources) and the pod count must fit in
//! what a node has left. Scored by the profile's strategy over weighted resources (cpu and
//! memory, weight 1 each, by default): LeastAllocated (more left free scores higher, the
//! default), MostAllocated (fuller scores higher, to pack), or RequestedToCapacityRatio (a
//! piecewise-linear shape of utilization 0-100 to score 0-10).

use k8s_openapi::api::core::v1::Pod;

use crate::framework::resources::nonzero;
use crate::framework::{pod_requests, CycleState, NodeInfo, Plugin, Status};

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
        for (name, amount) in &want.scalar {
            check(
                name,
                *amount,
                used.scalar.get(name).copied().unwrap_or(0),
                have.scalar.get(name).copied().unwrap_or(0),
            );
        }
        match (reasons.is_empty(), unresolvable) {
            (true, _) => Status::Success,
            (false, true) => Status::UnschedulableAndUnresolvable(reasons),
            (false, false) => Status::Unschedulable(reasons),
        }
    }

    /// The strategy's score per weighted resource, averaged by weight. Containers without
    /// cpu or memory requests count as 100m and 200Mi, as upstream.
    fn score(&self, pod: &Pod, node: &NodeInfo, state: &CycleState) -> i64 {
        let want = pod_requests(pod, state);
        let (pod_cpu, pod_mem) = nonzero(&want);
        let (mut sum, mut weights) = (0i64, 0i64);
        for (name, weight) in &self.resources {
            let (requested, capacity) = match name.as_str() {
                "cpu" => (node.nonzero.0 + pod_cpu, node.allocatable.milli_cpu),
                "memory" => (node.nonzero.1 + pod_mem, node.allocatable.memory),
                other => (
                    node.requested.scalar.get(other).copied().unwrap_or(0)
                        + want.scalar.get(other).copied().unwrap_or(0),
                    node.allocatable.scalar.get(other).copied().unwrap_or(0),
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
}
