//! NodeResourcesFit: requests (cpu, memory, extended resources) and the pod count must fit in
//! what a node has left; scored LeastAllocated (more free cpu and memory scores higher).

use k8s_openapi::api::core::v1::Pod;

use crate::framework::{CycleState, NodeInfo, Plugin, Resources, Status};

pub const NAME: &str = "NodeResourcesFit";

/// Requests assumed for scoring a container that requests nothing, as upstream.
const DEFAULT_MILLI_CPU: i64 = 100;
const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024;

pub struct NodeResourcesFit;

fn nonzero(r: &Resources) -> (i64, i64) {
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

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }

    fn filter(&self, pod: &Pod, node: &NodeInfo, _state: &CycleState) -> Status {
        let want = Resources::requested(pod);
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

    fn scores(&self) -> bool {
        true
    }

    /// LeastAllocated: the mean over cpu and memory of the share left free after placing the pod.
    fn score(&self, pod: &Pod, node: &NodeInfo, _state: &CycleState) -> i64 {
        let (pod_cpu, pod_mem) = nonzero(&Resources::requested(pod));
        let (mut used_cpu, mut used_mem) = (0, 0);
        for p in &node.pods {
            let (c, m) = nonzero(&Resources::requested(p));
            used_cpu += c;
            used_mem += m;
        }
        let free = |used: i64, have: i64| {
            if have == 0 || used > have {
                0
            } else {
                (have - used) * 100 / have
            }
        };
        (free(used_cpu + pod_cpu, node.allocatable.milli_cpu)
            + free(used_mem + pod_mem, node.allocatable.memory))
            / 2
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
        assert!(NodeResourcesFit
            .filter(&requesting("4", "1Gi"), &n, &CycleState::default())
            .is_success());
        assert_eq!(
            NodeResourcesFit.filter(&requesting("5", "256Mi"), &n, &CycleState::default()),
            Status::UnschedulableAndUnresolvable(vec!["Insufficient cpu".into()])
        );
        let busy = NodeInfo::new(n.node.clone(), vec![Arc::new(requesting("3", "7Gi"))]);
        assert_eq!(
            NodeResourcesFit.filter(&requesting("2", "2Gi"), &busy, &CycleState::default()),
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
            NodeResourcesFit.score(&p, &empty, &CycleState::default())
                > NodeResourcesFit.score(&p, &busy, &CycleState::default())
        );
        assert_eq!(
            NodeResourcesFit.score(&p, &empty, &CycleState::default()),
            (75 + 87) / 2
        );
    }
}
