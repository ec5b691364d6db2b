//! The scheduling cycle of one pod: filter the nodes in plugin order, score the feasible ones,
//! pick the best (ties at random, or seeded), assume it there, Reserve and Permit; then hand
//! it to the binding cycle ([`crate::binding`]). A pod that fits nowhere goes through
//! DefaultPreemption and is reported as upstream does (FailedScheduling, PodScheduled=False).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use rand::Rng;
use serde_json::json;
use tinykube_client::{Api, Patch};

use crate::binding::{self, Nomination};
use crate::cache::{node_of, Snapshot};
use crate::framework::node_info::{AffinityNodes, AFFINITY_NODES};
use crate::framework::{CycleState, Diagnosis, Framework, NodeInfo, Status};
use crate::metrics::Outcome;
use crate::plugins::default_preemption::{self, Outcome as Preemption};
use crate::plugins::{inter_pod_affinity, pod_topology_spread};
use crate::Scheduler;

/// Where a pod may go, or why it may go nowhere.
pub enum Decision {
    Node(String),
    Unschedulable(Diagnosis),
}

/// `nodes` with the pods nominated to each (after preemption) that are at least as important
/// as `pod`, so that a less important pod does not take the room freed for them.
fn with_nominated(
    sched: &Scheduler,
    pod: &Pod,
    nodes: &[Arc<NodeInfo>],
) -> Option<Vec<Arc<NodeInfo>>> {
    let nominated = sched.cache.nominated();
    if nominated.is_empty() {
        return None;
    }
    let me = pod.metadata.uid.as_deref();
    let mut out = nodes.to_vec();
    for info in out.iter_mut() {
        let extra: Vec<Arc<Pod>> = nominated
            .iter()
            .filter(|(node, p)| {
                node == info.name()
                    && p.metadata.uid.as_deref() != me
                    && priority(p) >= priority(pod)
            })
            .map(|(_, p)| p.clone())
            .collect();
        if !extra.is_empty() {
            let mut pods = info.pods.clone();
            pods.extend(extra);
            *info = Arc::new(NodeInfo::new(info.node.clone(), pods));
        }
    }
    Some(out)
}

/// How many feasible nodes filtering looks for before scoring, as upstream's
/// numFeasibleNodesToFind: every node up to 100; else `percentage` of them (the profile's
/// percentageOfNodesToScore), or with 0 an adaptive share (50% minus 1% per 125 nodes, at
/// least 5%); never fewer than 100.
pub fn feasible_nodes_to_find(nodes: usize, percentage: i32) -> usize {
    const MIN_FEASIBLE: usize = 100;
    if nodes < MIN_FEASIBLE {
        return nodes;
    }
    let percentage = match usize::try_from(percentage) {
        Ok(p) if p > 0 => p.min(100),
        _ => 50usize.saturating_sub(nodes / 125).max(5),
    };
    (nodes * percentage / 100).max(MIN_FEASIBLE)
}

/// Filter and score `pod` against the snapshot's nodes with a profile's framework; the
/// decision and the cycle's state (which the binding cycle carries on).
pub fn decide(
    sched: &Scheduler,
    fw: &Framework,
    pod: &Pod,
    snapshot: &Snapshot,
) -> (Decision, CycleState) {
    let nodes: &[Arc<NodeInfo>] = snapshot;
    let augmented = with_nominated(sched, pod, nodes);
    let filter_view = augmented.as_deref().unwrap_or(nodes);
    let mut state = CycleState::for_pod(pod);
    if augmented.is_none() {
        // Nominated pods may add affinity terms anywhere; without them the snapshot knows
        // which nodes hold pods with terms.
        state.put(
            AFFINITY_NODES,
            AffinityNodes(snapshot.with_affinity.clone()),
        );
    }
    fw.run_pre_filter(pod, filter_view, &mut state);
    // A pod nominated by an earlier preemption goes to that node if it now fits there.
    let nominated = pod
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref());
    if let Some(i) = nominated.and_then(|n| filter_view.iter().position(|x| x.name() == n)) {
        if fw.run_filters(pod, &filter_view[i], &state).is_success() {
            return (Decision::Node(filter_view[i].name().to_string()), state);
        }
    }
    // As upstream, filtering stops once enough feasible nodes are found, and the next cycle
    // starts where this one stopped, so every node gets its turn.
    let total = filter_view.len();
    let wanted = feasible_nodes_to_find(total, fw.percentage_of_nodes_to_score);
    let start = if wanted < total {
        sched.next_start_node.load(Ordering::Relaxed) % total
    } else {
        0
    };
    // Only the nodes visited are kept: a cycle allocates in proportion to them, not to the
    // cluster.
    let mut feasible_at: Vec<usize> = Vec::with_capacity(wanted);
    let mut rejected: Vec<Status> = Vec::new();
    let mut visited = 0;
    while visited < total && feasible_at.len() < wanted {
        let i = (start + visited) % total;
        let status = fw.run_filters(pod, &filter_view[i], &state);
        if status.is_success() {
            feasible_at.push(i);
        } else if feasible_at.is_empty() {
            rejected.push(status);
        }
        visited += 1;
    }
    sched
        .next_start_node
        .store((start + visited) % total.max(1), Ordering::Relaxed);
    if feasible_at.is_empty() {
        // Every node was visited, from `start` on: the statuses by node, as preemption reads
        // them.
        let shift = start % rejected.len().max(1);
        rejected.rotate_right(shift);
        return (
            Decision::Unschedulable(Diagnosis { statuses: rejected }),
            state,
        );
    }
    // Scored in the nodes' order, whatever node filtering started at.
    feasible_at.sort_unstable();
    let feasible: Vec<&NodeInfo> = feasible_at.iter().map(|i| nodes[*i].as_ref()).collect();
    let totals = fw.run_scores(pod, &feasible, nodes, &mut state);
    let best = totals.iter().copied().max().unwrap_or(0);
    let winners: Vec<usize> = (0..feasible.len()).filter(|i| totals[*i] == best).collect();
    let pick = {
        let mut rng = sched.rng.lock().unwrap_or_else(|e| e.into_inner());
        winners[rng.random_range(0..winners.len())]
    };
    (Decision::Node(feasible[pick].name().to_string()), state)
}

fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// Schedule the pod at `key` (`namespace/name`).
pub async fn schedule_one(sched: &Arc<Scheduler>, key: &str) {
    let Some(pod) = sched.cache.pods.get(key) else {
        sched.queue.remove(key);
        return;
    };
    if node_of(&pod).is_some() || pod.metadata.deletion_timestamp.is_some() {
        sched.queue.remove(key);
        return;
    }
    if sched.cache.is_assumed(key, &pod) {
        // Its binding cycle is under way; it comes back through the queue only if that fails.
        return;
    }
    let scheduler_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduler_name.clone())
        .unwrap_or_else(|| "default-scheduler".into());
    let Some(fw) = sched.profiles.get(&scheduler_name).cloned() else {
        sched.queue.remove(key);
        return;
    };
    let started = std::time::Instant::now();
    let nodes = sched.cache.snapshot();
    match decide(sched, &fw, &pod, &nodes) {
        (Decision::Node(node), mut state) => {
            // Assume: the next pod already sees this one on its node.
            sched.cache.assume(key, &node, pod.clone());
            let mut status = fw.run_reserve(&pod, &node, &mut state);
            let mut held = false;
            if status.is_success() {
                match fw.run_permit(&pod, &node, &state) {
                    Ok(waits) => held = waits,
                    Err(s) => status = s,
                }
            }
            if !status.is_success() {
                fw.run_unreserve(&pod, &node, &mut state);
                sched.cache.forget(key);
                binding::fail(sched, &fw, &pod, key, &status, started).await;
                return;
            }
            // Bind beside the next scheduling cycle, as upstream's binding cycle does. At most
            // MAX_BINDINGS_IN_FLIGHT bind at once; a pod held at Permit takes its slot only
            // once it is let through, so held pods never stall scheduling.
            let slot = if held {
                None
            } else {
                match sched.binding_slots.clone().acquire_owned().await {
                    Ok(slot) => Some(slot),
                    Err(_) => return,
                }
            };
            let sched = sched.clone();
            let key = key.to_string();
            tokio::spawn(async move {
                let cycle = binding::Cycle {
                    fw,
                    pod,
                    key,
                    node,
                    state,
                    started,
                };
                cycle.run(&sched, slot).await;
            });
        }
        (Decision::Unschedulable(diagnosis), _) => {
            unschedulable(sched, &fw, &pod, key, &nodes, &diagnosis, started).await;
        }
    }
}

/// Whether pod affinity or topology spreading turned the pod down somewhere, so that a pod
/// bound elsewhere may let it in (the plugins upstream registers for AssignedPodAdd).
fn waits_for_pods(diagnosis: &Diagnosis) -> bool {
    const REASONS: &[&str] = &[
        inter_pod_affinity::AFFINITY_REASON,
        inter_pod_affinity::ANTI_AFFINITY_REASON,
        inter_pod_affinity::EXISTING_ANTI_AFFINITY_REASON,
        pod_topology_spread::REASON,
        pod_topology_spread::MISSING_LABEL_REASON,
    ];
    diagnosis
        .statuses
        .iter()
        .flat_map(Status::reasons)
        .any(|r| REASONS.contains(&r.as_str()))
}

/// No node fits: try DefaultPreemption, park the pod, and report.
async fn unschedulable(
    sched: &Arc<Scheduler>,
    fw: &Framework,
    pod: &Arc<Pod>,
    key: &str,
    nodes: &[Arc<NodeInfo>],
    diagnosis: &Diagnosis,
    started: std::time::Instant,
) {
    let fit = diagnosis.fit_error();
    // PostFilter: DynamicResources has no claims to free; then DefaultPreemption.
    let preemption = fw.runs_post_filter(default_preemption::NAME).then(|| {
        let pdbs = sched.handle.pdbs.list();
        let mut rng = sched.rng.lock().unwrap_or_else(|e| e.into_inner());
        default_preemption::preempt(fw, pod, nodes, diagnosis, &pdbs, &mut *rng)
    });
    let (message, nomination) = match &preemption {
        Some(Preemption::Nominate { node, .. }) => (fit, Nomination::Set(node.clone())),
        Some(Preemption::NotEligible(why)) => (
            format!("{fit} no new claims to deallocate, preemption: {why}"),
            Nomination::Keep,
        ),
        Some(Preemption::NotHelpful(summary)) => (
            format!("{fit} no new claims to deallocate, preemption: {summary}"),
            Nomination::Clear,
        ),
        None => (
            format!("{fit} no new claims to deallocate."),
            Nomination::Keep,
        ),
    };
    sched
        .metrics
        .observe(Outcome::Unschedulable, started.elapsed());
    tracing::info!(pod = %key, %message, "unschedulable");
    // Parked before the victims go, so their deletion moves the pod back.
    sched
        .queue
        .unschedulable(key, priority(pod), waits_for_pods(diagnosis));
    if let Some(Preemption::Nominate { node, victims }) = &preemption {
        sched.cache.nominate(key, node, pod.clone());
        preempt_victims(sched, pod, &fw.profile_name, node, victims).await;
    }
    binding::report(
        sched,
        pod,
        &fw.profile_name,
        "Unschedulable",
        &message,
        nomination,
    )
    .await;
}

/// Evict the victims chosen for `preemptor` on `node`, as upstream's preemption does: mark
/// each with the DisruptionTarget condition, delete it, and record `Preempted` on it; then take
/// the nomination away from less important pods nominated to the same node.
async fn preempt_victims(
    sched: &Arc<Scheduler>,
    preemptor: &Pod,
    scheduler_name: &str,
    node: &str,
    victims: &[Arc<Pod>],
) {
    let uid = preemptor.metadata.uid.clone().unwrap_or_default();
    for victim in victims {
        if victim.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let ns = victim.metadata.namespace.clone().unwrap_or_default();
        let name = victim.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(sched.client.clone(), &ns);
        let condition = json!({"status": {"conditions": [{
            "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
            "message": format!("{scheduler_name}: preempting to accommodate a higher priority pod"),
            "lastTransitionTime": sched.handle.clock.time(),
        }]}});
        match api.patch_status(&name, &Patch::Strategic(condition)).await {
            Err(e) if e.is_not_found() => continue,
            Err(e) => {
                tracing::warn!(victim = %name, error = %e, "could not mark the victim");
                continue;
            }
            Ok(_) => {}
        }
        match api.delete(&name, None).await {
            Ok(_) => {}
            Err(e) if e.is_not_found() => continue,
            Err(e) => {
                tracing::warn!(victim = %name, error = %e, "could not preempt the victim");
                continue;
            }
        }
        tracing::info!(preemptor = ?preemptor.metadata.name, victim = %name, %node, "preempted");
        sched
            .record(
                victim,
                Some(preemptor),
                scheduler_name,
                "Normal",
                "Preempted",
                "Preempting",
                &format!("Preempted by pod {uid} on node {node}"),
            )
            .await;
    }
    for (nominated_to, p) in sched.cache.nominated() {
        if nominated_to == node && priority(&p) < priority(preemptor) {
            let ns = p.metadata.namespace.clone().unwrap_or_default();
            let name = p.metadata.name.clone().unwrap_or_default();
            let clear = json!({"status": {"nominatedNodeName": null}});
            if let Err(e) = Api::<Pod>::namespaced(sched.client.clone(), &ns)
                .patch_status(&name, &Patch::Merge(clear))
                .await
            {
                tracing::warn!(pod = %name, error = %e, "could not clear the nomination");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::feasible_nodes_to_find;

    #[test]
    fn large_clusters_filter_an_adaptive_share_of_nodes() {
        for (nodes, percentage, want) in [
            (0, 0, 0),
            (3, 0, 3),
            (99, 0, 99),
            (100, 0, 100),
            (1000, 0, 420),
            (5000, 0, 500),
            (20_000, 0, 1000),
            // A configured percentageOfNodesToScore, still never under 100 nodes.
            (99, 10, 99),
            (1000, 100, 1000),
            (1000, 30, 300),
            (1000, 5, 100),
            (5000, 50, 2500),
        ] {
            assert_eq!(
                feasible_nodes_to_find(nodes, percentage),
                want,
                "{nodes} nodes at {percentage}%"
            );
        }
    }
}
