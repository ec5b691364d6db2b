//! NodeResourcesBalancedAllocation: prefer nodes where cpu and memory would be used in similar
//! proportions after placing the pod: `(1 - standard deviation of the fractions) * 100`.

use k8s_openapi::api::core::v1::Pod;

use crate::framework::{pod_requests, CycleState, NodeInfo, Plugin};

pub const NAME: &str = "NodeResourcesBalancedAllocation";

pub struct BalancedAllocation;

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn score(&self, pod: &Pod, node: &NodeInfo, state: &CycleState) -> i64 {
        let want = pod_requests(pod, state);
        let fraction = |used: i64, have: i64| {
            if have <= 0 {
                1.0
            } else {
                (used as f64 / have as f64).min(1.0)
            }
        };
        let cpu = fraction(
            node.requested.milli_cpu + want.milli_cpu,
            node.allocatable.milli_cpu,
        );
        let mem = fraction(node.requested.memory + want.memory, node.allocatable.memory);
        let std = (cpu - mem).abs() / 2.0;
        ((1.0 - std) * 100.0) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::{node, pod};
    use serde_json::json;
    use std::sync::Arc;

    #[test]
    fn balanced_use_scores_higher() {
        let n = node("w", json!({}), json!({}));
        let p = pod(
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]}),
        );
        // 1/4 cpu and 2/8 memory: perfectly balanced.
        assert_eq!(
            BalancedAllocation.score(&p, &n, &CycleState::default()),
            100
        );
        let cpu_heavy: Pod =
            pod(json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]}));
        let busy = NodeInfo::new(n.node.clone(), vec![Arc::new(cpu_heavy)]);
        // 4/4 cpu and 2/8 memory: fractions 1.0 and 0.25, std 0.375.
        assert_eq!(
            BalancedAllocation.score(&p, &busy, &CycleState::default()),
            62
        );
    }
}
