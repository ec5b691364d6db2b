//! Which pods go first when a ReplicaSet scales down, as upstream ranks them: unscheduled
//! before scheduled, pending before unknown before running, not ready before ready, lower
//! `controller.kubernetes.io/pod-deletion-cost` first, pods doubled up on a node first, ready
//! for less time first, more restarts first, newer first.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::util::{node_name, ready_since};

/// Upstream's annotation for the relative cost of deleting a pod.
pub const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

fn phase_rank(pod: &Pod) -> u8 {
    match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Pending") => 0,
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 0,
    }
}

fn deletion_cost(pod: &Pod) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DELETION_COST))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map(|cs| cs.iter().map(|c| c.restart_count).max().unwrap_or(0))
        .unwrap_or(0)
}

/// Whether `a` should be deleted before `b`; `rank` is how many related pods share the node.
fn delete_first(a: &Pod, rank_a: usize, b: &Pod, rank_b: usize) -> Ordering {
    let unassigned = |p: &Pod| !node_name(p).is_empty();
    let ready = |p: &Pod| ready_since(p).is_some();
    unassigned(a)
        .cmp(&unassigned(b))
        .then(phase_rank(a).cmp(&phase_rank(b)))
        .then(ready(a).cmp(&ready(b)))
        .then(deletion_cost(a).cmp(&deletion_cost(b)))
        .then(rank_b.cmp(&rank_a))
        .then_with(|| {
            // Ready for less time first (both ready): later transition first.
            match (ready_since(a).flatten(), ready_since(b).flatten()) {
                (Some(ta), Some(tb)) => tb.cmp(&ta),
                _ => Ordering::Equal,
            }
        })
        .then(restarts(b).cmp(&restarts(a)))
        .then_with(|| {
            let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
            created(b).cmp(&created(a))
        })
}

/// The `n` pods to delete from `pods`, ranked by the pods sharing their node.
pub fn pods_to_delete(pods: &[Arc<Pod>], n: usize) -> Vec<Arc<Pod>> {
    let mut per_node: HashMap<&str, usize> = HashMap::new();
    for p in pods {
        if !node_name(p).is_empty() {
            *per_node.entry(node_name(p)).or_default() += 1;
        }
    }
    let mut ranked: Vec<(usize, Arc<Pod>)> = pods
        .iter()
        .map(|p| (per_node.get(node_name(p)).copied().unwrap_or(0), p.clone()))
        .collect();
    ranked.sort_by(|(ra, a), (rb, b)| delete_first(a, *ra, b, *rb));
    ranked.into_iter().take(n).map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn pod(name: &str, node: &str, phase: &str, ready_at: Option<i64>, created: i64) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.creation_timestamp = Some(Time(Timestamp::from_second(created).unwrap()));
        p.spec = Some(PodSpec {
            node_name: (!node.is_empty()).then(|| node.to_string()),
            ..Default::default()
        });
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            conditions: ready_at.map(|t| {
                vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(Time(Timestamp::from_second(t).unwrap())),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        });
        Arc::new(p)
    }

    fn first(pods: Vec<Arc<Pod>>) -> String {
        pods_to_delete(&pods, 1)[0].metadata.name.clone().unwrap()
    }

    #[test]
    fn ranking_as_upstream() {
        let table: Vec<(&str, Vec<Arc<Pod>>, &str)> = vec![
            (
                "unscheduled first",
                vec![
                    pod("a", "n1", "Running", Some(1), 1),
                    pod("b", "", "Pending", None, 1),
                ],
                "b",
            ),
            (
                "pending before running",
                vec![
                    pod("a", "n1", "Running", None, 1),
                    pod("b", "n2", "Pending", None, 1),
                ],
                "b",
            ),
            (
                "not ready before ready",
                vec![
                    pod("a", "n1", "Running", Some(1), 1),
                    pod("b", "n2", "Running", None, 1),
                ],
                "b",
            ),
            (
                "doubled up first",
                vec![
                    pod("a", "n1", "Running", Some(1), 1),
                    pod("b", "n2", "Running", Some(1), 1),
                    pod("c", "n2", "Running", Some(1), 1),
                ],
                "b",
            ),
            (
                "ready for less time first",
                vec![
                    pod("a", "n1", "Running", Some(1), 1),
                    pod("b", "n2", "Running", Some(5), 1),
                ],
                "b",
            ),
            (
                "newer first",
                vec![
                    pod("a", "n1", "Running", Some(1), 1),
                    pod("b", "n2", "Running", Some(1), 9),
                ],
                "b",
            ),
        ];
        for (what, pods, want) in table {
            assert_eq!(first(pods), want, "{what}");
        }
    }

    #[test]
    fn deletion_cost_protects_pods() {
        let cheap = pod("cheap", "n1", "Running", Some(1), 1);
        let mut dear = (*pod("dear", "n2", "Running", Some(1), 9)).clone();
        dear.metadata.annotations = Some([(DELETION_COST.to_string(), "10".to_string())].into());
        assert_eq!(first(vec![Arc::new(dear), cheap]), "cheap");
    }
}
