//! One scheduling cycle: filter every node in plugin order, score the feasible ones, pick the
//! best (ties at random, or seeded), assume, bind through pods/binding, and record the outcome
//! as upstream does (Scheduled / FailedScheduling events, the PodScheduled condition).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use rand::Rng;
use serde_json::json;
use tinykube_client::{Api, Patch};

use crate::cache::node_of;
use crate::framework::{fit_error_message, CycleState, NodeInfo, Status};
use crate::metrics::Outcome;
use crate::Scheduler;

/// Where a pod may go, or why it may go nowhere.
pub enum Decision {
    Node(String),
    Unschedulable(String),
}

/// Filter and score `pod` against `nodes`.
pub fn decide(sched: &Scheduler, pod: &Pod, nodes: &[NodeInfo]) -> Decision {
    let mut state = CycleState::default();
    for w in &sched.plugins {
        w.plugin.pre_filter(pod, nodes, &mut state);
    }
    let mut feasible: Vec<&NodeInfo> = Vec::new();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut unresolvable = 0;
    for node in nodes {
        let failed = sched
            .plugins
            .iter()
            .map(|w| w.plugin.filter(pod, node, &state))
            .find(|s| !s.is_success());
        match failed {
            None => feasible.push(node),
            Some(status) => {
                if matches!(
                    status,
                    Status::UnschedulableAndUnresolvable(_) | Status::Error(_)
                ) {
                    unresolvable += 1;
                }
                for r in status.reasons() {
                    *reasons.entry(r).or_default() += 1;
                }
            }
        }
    }
    if feasible.is_empty() {
        return Decision::Unschedulable(fit_error_message(nodes.len(), &reasons, unresolvable));
    }
    let mut totals = vec![0i64; feasible.len()];
    for w in sched
        .plugins
        .iter()
        .filter(|w| w.plugin.scores() && w.weight > 0)
    {
        let mut scores: Vec<i64> = feasible
            .iter()
            .map(|n| w.plugin.score(pod, n, &state))
            .collect();
        w.plugin.normalize(&mut scores);
        for (t, s) in totals.iter_mut().zip(scores) {
            *t += s * w.weight;
        }
    }
    let best = totals.iter().copied().max().unwrap_or(0);
    let winners: Vec<usize> = (0..feasible.len()).filter(|i| totals[*i] == best).collect();
    let pick = {
        let mut rng = sched.rng.lock().unwrap_or_else(|e| e.into_inner());
        winners[rng.random_range(0..winners.len())]
    };
    Decision::Node(feasible[pick].name().to_string())
}

fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// Schedule the pod at `key` (`namespace/name`).
pub async fn schedule_one(sched: &Arc<Scheduler>, key: &str) {
    let Some(pod) = sched.cache.pods.get(key) else {
        return;
    };
    if node_of(&pod).is_some() || pod.metadata.deletion_timestamp.is_some() {
        sched.queue.remove(key);
        return;
    }
    let scheduler_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduler_name.clone())
        .unwrap_or_else(|| "default-scheduler".into());
    let started = std::time::Instant::now();
    let nodes = sched.cache.snapshot();
    let ns = pod
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let name = pod.metadata.name.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(sched.client.clone(), &ns);
    match decide(sched, &pod, &nodes) {
        Decision::Node(node) => {
            sched.cache.assume(key, &node, pod.clone());
            let binding = json!({"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": ns, "uid": pod.metadata.uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}});
            match pods.create_subresource(&name, "binding", &binding).await {
                Ok(_) => {
                    sched.metrics.observe(Outcome::Scheduled, started.elapsed());
                    sched.queue.done(key);
                    let message = format!("Successfully assigned {ns}/{name} to {node}");
                    tracing::info!(pod = %key, %node, "bound");
                    sched
                        .record(
                            &pod,
                            &scheduler_name,
                            "Normal",
                            "Scheduled",
                            "Binding",
                            &message,
                        )
                        .await;
                }
                Err(e) => {
                    sched.metrics.observe(Outcome::Error, started.elapsed());
                    sched.cache.forget(key);
                    if e.is_not_found() || e.is_conflict() {
                        sched.queue.remove(key);
                    } else {
                        tracing::warn!(pod = %key, error = %e, "binding failed; retrying");
                        sched.queue.retry(key, priority(&pod));
                    }
                }
            }
        }
        Decision::Unschedulable(message) => {
            sched
                .metrics
                .observe(Outcome::Unschedulable, started.elapsed());
            tracing::info!(pod = %key, %message, "unschedulable");
            sched.queue.unschedulable(key, priority(&pod));
            let unchanged = pod
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"))
                .is_some_and(|c| {
                    c.status == "False" && c.message.as_deref() == Some(message.as_str())
                });
            let condition = json!({"status": {"conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                "lastProbeTime": null, "lastTransitionTime": tinykube_client::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(tinykube_client::now()),
                "observedGeneration": pod.metadata.generation,
            }]}});
            if unchanged {
                // Same verdict as last time: the condition (and its transition time) stands.
            } else if let Err(e) = pods.patch_status(&name, &Patch::Strategic(condition)).await {
                tracing::warn!(pod = %key, error = %e, "could not set the PodScheduled condition");
            }
            sched
                .record(
                    &pod,
                    &scheduler_name,
                    "Warning",
                    "FailedScheduling",
                    "Scheduling",
                    &message,
                )
                .await;
        }
    }
}
