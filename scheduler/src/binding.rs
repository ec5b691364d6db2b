//! The binding cycle of a pod assumed and reserved on a node, run beside the next scheduling
//! cycle as upstream's: wait while a Permit plugin holds it, PreBind, Bind (DefaultBinder's
//! `pods/binding`), then the `Scheduled` event and PostBind. Any failure unreserves, forgets
//! the assumption and goes through [`fail`], upstream's failure handler, which also serves
//! the scheduling cycle's Reserve and Permit failures.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use tinykube_client::{Api, Patch};
use tokio::sync::OwnedSemaphorePermit;

use crate::cache::node_of;
use crate::framework::{fit_error, CycleState, Framework, Status};
use crate::metrics::Outcome;
use crate::Scheduler;

/// Bindings that may be in flight at once; the scheduling cycle waits when all are taken.
pub const MAX_BINDINGS_IN_FLIGHT: usize = 64;

/// What a failure report does to `status.nominatedNodeName`.
pub enum Nomination {
    Keep,
    Set(String),
    Clear,
}

/// A pod past Permit (or held there), on its way to its node.
pub struct Cycle {
    pub fw: Arc<Framework>,
    pub pod: Arc<Pod>,
    pub key: String,
    pub node: String,
    pub state: CycleState,
    pub started: Instant,
}

impl Cycle {
    /// Run the binding cycle; `slot` is the binding slot, taken here when the pod was held.
    pub async fn run(self, sched: &Arc<Scheduler>, slot: Option<OwnedSemaphorePermit>) {
        let (status, _slot) = self.bind(sched, slot).await;
        let Cycle {
            fw,
            pod,
            key,
            node,
            mut state,
            started,
        } = self;
        if status.is_success() {
            sched.metrics.observe(Outcome::Scheduled, started.elapsed());
            sched.queue.done(&key);
            let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            tracing::info!(pod = %key, %node, "bound");
            let message = format!("Successfully assigned {ns}/{name} to {node}");
            sched
                .record(
                    &pod,
                    None,
                    &fw.profile_name,
                    "Normal",
                    "Scheduled",
                    "Binding",
                    &message,
                )
                .await;
            fw.run_post_bind(&pod, &node, &state);
            return;
        }
        fw.run_unreserve(&pod, &node, &mut state);
        sched.cache.forget(&key);
        // The room the pod was assumed to take is free again, as when a bound pod goes.
        sched.queue.cluster_changed();
        fail(sched, &fw, &pod, &key, &status, started).await;
    }

    /// WaitOnPermit, PreBind and Bind; the outcome and the binding slot, held until the
    /// outcome is recorded.
    async fn bind(
        &self,
        sched: &Scheduler,
        slot: Option<OwnedSemaphorePermit>,
    ) -> (Status, Option<OwnedSemaphorePermit>) {
        let status = self.fw.wait_on_permit(&self.pod).await;
        if !status.is_success() {
            return (status, slot);
        }
        let slot = match slot {
            Some(s) => s,
            None => match sched.binding_slots.clone().acquire_owned().await {
                Ok(s) => s,
                Err(_) => return (Status::Error("the scheduler is stopping".into()), None),
            },
        };
        let (pod, node, state) = (&self.pod, self.node.as_str(), &self.state);
        let status = self.fw.run_pre_bind(pod, node, state).await;
        if !status.is_success() {
            return (status, Some(slot));
        }
        let status = match self.fw.run_bind(pod, node, state).await {
            Status::Skip => Status::Error("no Bind plugin bound the pod".into()),
            s => s,
        };
        (status, Some(slot))
    }
}

fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// Upstream's failure handler for a pod turned down or failed after a node was chosen (at
/// Reserve, Permit, PreBind or Bind): count the attempt; unless the informer shows the pod gone
/// or bound meanwhile, park it (rejected) or back it off (an error), and report it with the
/// FailedScheduling event and `PodScheduled=False` (reason Unschedulable or SchedulerError). A
/// rejection reads as upstream's one-node fit error: `0/1 nodes are available: 1 <reason>.`
pub async fn fail(
    sched: &Arc<Scheduler>,
    fw: &Framework,
    pod: &Pod,
    key: &str,
    status: &Status,
    started: Instant,
) {
    let rejected = status.is_rejected();
    let outcome = if rejected {
        Outcome::Unschedulable
    } else {
        Outcome::Error
    };
    sched.metrics.observe(outcome, started.elapsed());
    let message = if rejected {
        let mut reasons = std::collections::BTreeMap::new();
        for r in status.reasons() {
            *reasons.entry(r).or_default() += 1;
        }
        fit_error(1, &reasons)
    } else {
        status.message()
    };
    let current = sched
        .cache
        .pods
        .get(key)
        .filter(|p| p.metadata.uid == pod.metadata.uid && node_of(p).is_none());
    let Some(current) = current else {
        sched.queue.remove(key);
        return;
    };
    let reason = if rejected {
        tracing::info!(pod = %key, %message, "unschedulable");
        sched.queue.unschedulable(key, priority(pod), false);
        "Unschedulable"
    } else {
        tracing::warn!(pod = %key, error = %message, "scheduling failed; retrying");
        sched.queue.retry(key, priority(pod));
        "SchedulerError"
    };
    report(
        sched,
        &current,
        &fw.profile_name,
        reason,
        &message,
        Nomination::Clear,
    )
    .await;
}

/// Report a pod that could not be scheduled: the `PodScheduled=False` condition (left alone
/// when it already says the same), the nomination change, and the FailedScheduling event.
pub async fn report(
    sched: &Scheduler,
    pod: &Pod,
    scheduler_name: &str,
    reason: &str,
    message: &str,
    nomination: Nomination,
) {
    let current_nomination = pod
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.clone())
        .filter(|n| !n.is_empty());
    // Some(Some(node)) sets the nomination, Some(None) clears it.
    let nomination = match nomination {
        Nomination::Keep => None,
        Nomination::Set(n) => Some(Some(n)),
        Nomination::Clear => Some(None),
    }
    .filter(|n| *n != current_nomination);
    let unchanged = nomination.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"))
            .is_some_and(|c| {
                c.status == "False"
                    && c.reason.as_deref() == Some(reason)
                    && c.message.as_deref() == Some(message)
            });
    let mut status = json!({"conditions": [{
        "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
        "lastProbeTime": null, "lastTransitionTime": sched.handle.clock.time(),
        "observedGeneration": pod.metadata.generation,
    }]});
    if let Some(n) = &nomination {
        status["nominatedNodeName"] = json!(n);
    }
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    if unchanged {
        // Same verdict as last time: the condition (and its transition time) stands.
    } else if let Err(e) = Api::<Pod>::namespaced(sched.client.clone(), ns)
        .patch_status(name, &Patch::Strategic(json!({ "status": status })))
        .await
    {
        tracing::warn!(pod = %name, error = %e, "could not set the PodScheduled condition");
    }
    sched
        .record(
            pod,
            None,
            scheduler_name,
            "Warning",
            "FailedScheduling",
            "Scheduling",
            message,
        )
        .await;
}
