//! The pod garbage collector, upstream's `podgc` controller. Every check period (20 s) it
//! force-deletes, after marking them `Failed`:
//! - terminated pods (phase `Succeeded` or `Failed`) beyond `--terminated-pod-gc-threshold`,
//!   evicted ones first, then the oldest;
//! - terminating pods on a node that is not Ready and carries the
//!   `node.kubernetes.io/out-of-service` taint (their kubelet will never finish them);
//! - pods bound to a node that no longer exists, once the node has been missing for the
//!   quarantine (twice the period: 40 s) and a GET confirms it is gone; these get the
//!   `DisruptionTarget` condition with reason `DeletionByPodGC`;
//! - terminating pods that were never scheduled.
//!
//! Their controllers then see the pods gone and replace them: deleting a Node is how a
//! Deployment's pods leave a machine that will not come back.
//!
//! The period and the quarantine go by the cluster's clock.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{json, Value};
use tinykube_client::reflector::{key_of, Store};
use tinykube_client::{Api, ClientError, Patch};
use tokio::time::Instant;

use crate::context::Context;
use crate::util::{is_pod_terminal, node_name, node_ready_condition};

/// The taint that says a node is shut down for good and its pods may go.
pub const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// Deletions in flight at once.
const CONCURRENCY: usize = 16;

pub struct Controller {
    ctx: Arc<Context>,
    pods: Store<Pod>,
    nodes: Store<Node>,
    /// Terminated pods kept before the oldest are deleted (0: never).
    threshold: usize,
    period: Duration,
    quarantine: Duration,
    /// Node names some pod is bound to that the cache lacks, since when (the clock's instant).
    missing: Mutex<HashMap<String, Instant>>,
}

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error("marking pod {pod} failed: {source}")]
    MarkFailed {
        pod: String,
        #[source]
        source: ClientError,
    },
    #[error("deleting pod {pod}: {source}")]
    Delete {
        pod: String,
        #[source]
        source: ClientError,
    },
}

/// Subscribe to pods and nodes and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        pods: ctx.pods.store(),
        nodes: ctx.nodes.store(),
        threshold: ctx.options.terminated_pod_gc_threshold,
        period: ctx.options.pod_gc_check_period,
        quarantine: ctx.options.pod_gc_check_period * 2,
        missing: Mutex::new(HashMap::new()),
    });
    Box::pin(async move {
        c.pods.clone().wait_ready().await;
        c.nodes.clone().wait_ready().await;
        loop {
            c.gc().await;
            c.ctx.clock.sleep(c.period).await;
        }
    })
}

/// Whether the kubelet evicted the pod (upstream's `PodIsEvicted`).
fn is_evicted(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Failed") && s.reason.as_deref() == Some("Evicted")
    })
}

/// The terminated pods beyond `threshold`, in the order they go: evicted pods first, then by
/// creation time, then by name.
pub fn terminated_beyond(pods: &[Arc<Pod>], threshold: usize) -> Vec<Arc<Pod>> {
    let mut terminated: Vec<Arc<Pod>> = pods
        .iter()
        .filter(|p| is_pod_terminal(p))
        .cloned()
        .collect();
    if threshold == 0 || terminated.len() <= threshold {
        return Vec::new();
    }
    let excess = terminated.len() - threshold;
    terminated.sort_by(|a, b| {
        is_evicted(b)
            .cmp(&is_evicted(a))
            .then_with(|| {
                let at = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
                at(a).cmp(&at(b))
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    terminated.truncate(excess);
    terminated
}

/// Whether the node is down for good: not Ready and tainted out-of-service.
pub fn is_out_of_service(node: &Node) -> bool {
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| t.key == OUT_OF_SERVICE));
    let ready = node_ready_condition(node).is_some_and(|c| c.status == "True");
    tainted && !ready
}

/// Track the nodes pods are `bound` to that are not `cached` (a node back in the cache is
/// forgotten), and take those missing for at least `quarantine` by `now`.
fn quarantined<'a>(
    missing: &mut HashMap<String, Instant>,
    bound: impl Iterator<Item = &'a str>,
    cached: impl Fn(&str) -> bool,
    now: Instant,
    quarantine: Duration,
) -> Vec<String> {
    missing.retain(|name, _| !cached(name));
    for node in bound {
        if !node.is_empty() && !cached(node) {
            missing.entry(node.to_string()).or_insert(now);
        }
    }
    let due: Vec<String> = missing
        .iter()
        .filter(|(_, since)| now.duration_since(**since) >= quarantine)
        .map(|(name, _)| name.clone())
        .collect();
    for name in &due {
        missing.remove(name);
    }
    due
}

impl Controller {
    /// One pass over the caches.
    async fn gc(&self) {
        let pods = self.pods.list();
        let mut doomed: Vec<(Arc<Pod>, Option<Value>)> = Vec::new();
        doomed.extend(
            terminated_beyond(&pods, self.threshold)
                .into_iter()
                .map(|p| (p, None)),
        );
        for pod in &pods {
            if pod.metadata.deletion_timestamp.is_none() {
                continue;
            }
            let node = node_name(pod);
            let out_of_service = self.nodes.get(node).is_some_and(|n| is_out_of_service(&n));
            if node.is_empty() || out_of_service {
                doomed.push((pod.clone(), None));
            }
        }
        let gone = self.deleted_nodes(&pods).await;
        let now = self.ctx.clock.timestamp();
        for pod in &pods {
            if gone.contains(node_name(pod)) {
                let condition = json!({
                    "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                    "message": "PodGC: node no longer exists",
                    "lastTransitionTime": Time(now),
                });
                doomed.push((pod.clone(), Some(condition)));
            }
        }
        let mut seen = HashSet::new();
        doomed.retain(|(p, _)| seen.insert(p.metadata.uid.clone()));
        futures::stream::iter(doomed)
            .for_each_concurrent(CONCURRENCY, |(pod, condition)| async move {
                if let Err(e) = self.mark_failed_and_delete(&pod, condition).await {
                    tracing::warn!(error = %e, "pod garbage collection failed");
                }
            })
            .await;
    }

    /// The nodes pods are bound to that have been missing from the cache for the quarantine
    /// and that the API server confirms are gone.
    async fn deleted_nodes(&self, pods: &[Arc<Pod>]) -> HashSet<String> {
        let due = {
            let mut missing = self.missing.lock().unwrap_or_else(|e| e.into_inner());
            let bound = pods.iter().map(|p| node_name(p));
            let cached = |n: &str| self.nodes.get(n).is_some();
            quarantined(
                &mut missing,
                bound,
                cached,
                self.ctx.clock.instant(),
                self.quarantine,
            )
        };
        let api: Api<Node> = Api::all(self.ctx.client.clone());
        let mut gone = HashSet::new();
        for name in due {
            match api.get(&name).await {
                Err(e) if e.is_not_found() => {
                    gone.insert(name);
                }
                Err(e) => {
                    tracing::warn!(node = %name, error = %e, "checking whether a node still exists")
                }
                Ok(_) => {}
            }
        }
        gone
    }

    /// Set the pod's phase to Failed (with `condition`, if any) unless it already ended, then
    /// delete it without a grace period, as upstream's markFailedAndDeletePodWithCondition.
    async fn mark_failed_and_delete(
        &self,
        pod: &Pod,
        condition: Option<Value>,
    ) -> Result<(), GcError> {
        let key = key_of(pod);
        tracing::info!(pod = %key, "PodGC is force deleting Pod");
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), ns);
        if !is_pod_terminal(pod) {
            let mut status = json!({"phase": "Failed"});
            if let Some(c) = condition {
                status["conditions"] = json!([c]);
            }
            let patch = json!({"metadata": {"uid": pod.metadata.uid}, "status": status});
            match api.patch_status(name, &Patch::Strategic(patch)).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => return Ok(()),
                Err(source) => return Err(GcError::MarkFailed { pod: key, source }),
            }
        }
        let options = json!({
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": pod.metadata.uid},
        });
        match api.delete(name, Some(&options)).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
            Err(source) => Err(GcError::Delete { pod: key, source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn pod(name: &str, phase: &str, reason: Option<&str>, created: i64) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {
                    "name": name,
                    "creationTimestamp": Time(Timestamp::from_second(created).unwrap()),
                },
                "status": {"phase": phase, "reason": reason},
            }))
            .unwrap(),
        )
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<&str> {
        pods.iter()
            .map(|p| p.metadata.name.as_deref().unwrap())
            .collect()
    }

    #[test]
    fn evicted_then_oldest_terminated_pods_go_first() {
        let pods = vec![
            pod("running", "Running", None, 1),
            pod("old", "Succeeded", None, 2),
            pod("b-same", "Failed", None, 3),
            pod("a-same", "Failed", None, 3),
            pod("evicted", "Failed", Some("Evicted"), 9),
            pod("new", "Succeeded", None, 8),
        ];
        assert_eq!(
            names(&terminated_beyond(&pods, 2)),
            ["evicted", "old", "a-same"]
        );
        assert!(terminated_beyond(&pods, 5).is_empty());
        assert!(terminated_beyond(&pods, 0).is_empty(), "0 turns it off");
    }

    #[test]
    fn out_of_service_needs_the_taint_and_a_node_not_ready() {
        let node = |ready: &str, taint: Option<&str>| -> Node {
            serde_json::from_value(json!({
                "metadata": {"name": "n"},
                "spec": {"taints": taint.map(|k| vec![json!({"key": k, "effect": "NoExecute"})])},
                "status": {"conditions": [{"type": "Ready", "status": ready}]},
            }))
            .unwrap()
        };
        assert!(is_out_of_service(&node("False", Some(OUT_OF_SERVICE))));
        assert!(is_out_of_service(&node("Unknown", Some(OUT_OF_SERVICE))));
        assert!(!is_out_of_service(&node("True", Some(OUT_OF_SERVICE))));
        assert!(!is_out_of_service(&node(
            "Unknown",
            Some("node.kubernetes.io/unreachable")
        )));
    }

    #[test]
    fn a_missing_node_is_quarantined_for_the_clock_s_period() {
        let clock = tinykube_clock::Clock::manual(std::time::UNIX_EPOCH);
        let quarantine = Duration::from_secs(40);
        let mut missing = HashMap::new();
        let cached = |n: &str| n == "here";
        // (advance before the pass, nodes bound, due)
        let passes: &[(u64, &[&str], &[&str])] = &[
            (0, &["here", "gone", ""], &[]),
            (20, &["gone"], &[]),
            (19, &["gone", "late"], &[]),
            (1, &["gone", "late"], &["gone"]),
            (38, &["late"], &[]),
            (1, &["late"], &["late"]),
        ];
        for &(advance, bound, want) in passes {
            clock.advance(Duration::from_secs(advance));
            let mut due = quarantined(
                &mut missing,
                bound.iter().copied(),
                cached,
                clock.instant(),
                quarantine,
            );
            due.sort();
            assert_eq!(due, want, "+{advance}s {bound:?}");
        }
    }
}
