//! Pods bound to our nodes, from the one shared pod informer: admission, start (status
//! written through `pods/status`), readiness after the probes' initial delay, and graceful
//! deletion finished with the stopped pod's last status (terminal phase) and a grace-0
//! delete. Mirror pods are left to [`crate::static_pods`], except that a mirror being deleted
//! is finished here as any other pod.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use tinykube_client::events::EventType;
use tinykube_client::reflector::Notification;
use tinykube_client::{Api, Patch};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;

use crate::admission::{self, pod_requests};
use crate::lifecycle::{drifted, Facts, Input, Stage};
use crate::{Kubelet, NodeState, PodRecord};

pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// How often the cache is walked again, in case a notification was missed, and statuses that
/// drifted from ours are written again. On tokio's clock, not the cluster's: it is the
/// kubelet's own bookkeeping (upstream's status manager syncs on a real ticker too), and it
/// retries a failed final delete.
const RESYNC: Duration = Duration::from_secs(10);

pub fn is_mirror(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION))
}

fn uid_of(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

/// Handle notifications until `shutdown`.
pub(crate) async fn run(
    k: Arc<Kubelet>,
    mut rx: broadcast::Receiver<Notification<Pod>>,
    shutdown: CancellationToken,
) {
    let mut store = k.pods.clone();
    tokio::select! {
        _ = shutdown.cancelled() => return,
        _ = store.wait_ready() => {}
    }
    resync(&k);
    let mut ticker = tokio::time::interval(RESYNC);
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => resync(&k),
            n = rx.recv() => match n {
                Ok(Notification::Add(p)) | Ok(Notification::Update { new: p, .. }) => handle(&k, &p),
                Ok(Notification::Delete(p)) => gone(&k, &p),
                Err(RecvError::Lagged(_)) => resync(&k),
                Err(RecvError::Closed) => return,
            },
        }
    }
}

/// Walk the cache: handle every pod of ours, forget pods that are gone.
fn resync(k: &Arc<Kubelet>) {
    let pods = k.pods.list();
    let live: std::collections::HashSet<String> = pods.iter().map(|p| uid_of(p)).collect();
    for p in &pods {
        handle(k, p);
        if let Some(n) = p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .and_then(|name| k.node(name))
        {
            if p.metadata.deletion_timestamp.is_none() && !is_mirror(p) {
                reassert(k, n, p);
            }
        }
    }
    for n in &k.nodes {
        let mut local = n.local();
        let stale: Vec<String> = local
            .pods
            .iter()
            .filter(|(uid, r)| !r.is_static && !live.contains(*uid))
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in stale {
            local.forget(&uid);
        }
    }
}

fn gone(k: &Arc<Kubelet>, pod: &Pod) {
    let uid = uid_of(pod);
    k.finalizing().remove(&uid);
    let Some(n) = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .and_then(|n| k.node(n))
    else {
        return;
    };
    let mut local = n.local();
    if is_mirror(pod) {
        // The static pod loop makes a new mirror, not at once: see `MIRROR_RECREATE_AFTER`.
        if let Some(s) = local.statics.get_mut(&crate::reflector_key(pod)) {
            s.mirror_gone_at = Some(std::time::Instant::now());
        }
        return;
    }
    local.forget(&uid);
}

/// React to the current state of one pod.
pub(crate) fn handle(k: &Arc<Kubelet>, pod: &Arc<Pod>) {
    let Some(n) = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .and_then(|name| k.node(name))
        .cloned()
    else {
        return;
    };
    let uid = uid_of(pod);
    if pod.metadata.deletion_timestamp.is_some() {
        if !is_mirror(pod) {
            let mut local = n.local();
            let requests = pod_requests(pod);
            let rec = local.pods.entry(uid.clone()).or_insert_with(|| PodRecord {
                stage: Stage::Pending,
                requests,
                facts: Facts::none(k.clock.timestamp()),
                owns_ip: false,
                is_static: false,
                writing: 0,
            });
            if let Some(next) = rec.stage.next(&Input::DeletionRequested) {
                rec.stage = next;
            }
        }
        if k.finalizing().insert(uid) {
            tokio::spawn(finalize(k.clone(), pod.clone()));
        }
        return;
    }
    if is_mirror(pod) {
        return;
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    let mut local = n.local();
    if local.pods.contains_key(&uid) {
        // A drifted status is re-asserted by the resync, as upstream's status manager does in
        // its periodic sync: a status a client patched stays visible for a while. A pod with
        // readiness gates is looked at now: a gate's condition set by its controller moves
        // Ready at once.
        let gated = pod
            .spec
            .as_ref()
            .is_some_and(|s| s.readiness_gates.as_ref().is_some_and(|g| !g.is_empty()));
        drop(local);
        if gated {
            reassert(k, &n, pod);
        }
        return;
    }
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return;
    }
    if let Some(rec) = adopt(&n, pod, k.clock.timestamp()) {
        if rec.owns_ip {
            local.ips.claim(&rec.facts.pod_ip);
        }
        local.pods.insert(uid.clone(), rec);
        drop(local);
        tokio::spawn(start(k.clone(), n, pod.clone(), Input::Admit, true));
        return;
    }
    let requests = pod_requests(pod);
    let (used, count) = local.usage();
    let now = k.clock.timestamp();
    let host_network = pod
        .spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false);
    let node_ip = n.config.node_ip.to_string();
    let mut rec = PodRecord {
        stage: Stage::Pending,
        requests,
        facts: Facts {
            host_ip: node_ip.clone(),
            pod_ip: node_ip,
            started_at: now,
            run: None,
        },
        owns_ip: false,
        is_static: false,
        writing: 0,
    };
    let input = match admission::admit(requests, used, count, k.capacity.allocatable) {
        Err(r) => Input::Reject {
            reason: r.reason,
            message: r.message,
        },
        Ok(()) => Input::Admit,
    };
    if let (Input::Admit, false) = (&input, host_network) {
        if let Some(ip) = local.ips.allocate() {
            rec.facts.pod_ip = ip;
            rec.owns_ip = true;
        }
    }
    rec.stage = rec.stage.next(&input).unwrap_or(Stage::Pending);
    local.pods.insert(uid.clone(), rec);
    drop(local);
    tokio::spawn(start(k.clone(), n, pod.clone(), input, false));
}

/// Upstream's status manager: when the API's copy of a pod's status differs from what this
/// kubelet reports (the node lifecycle controller marked the pods of a lost node not ready, a
/// client patched the status), write ours again; at once for a pod taken over after a restart,
/// else at the next resync (every 10 s, upstream's status sync period). A pod still being
/// started, or with a write under way, is left to that write.
fn reassert(k: &Arc<Kubelet>, n: &Arc<NodeState>, pod: &Arc<Pod>) {
    {
        let mut local = n.local();
        let Some(rec) = local.pods.get_mut(&uid_of(pod)) else {
            return;
        };
        let settled = matches!(rec.stage, Stage::Running | Stage::Rejected { .. });
        if !settled || rec.writing > 0 {
            return;
        }
        let Some(ours) = rec.stage.status(pod, &rec.facts) else {
            return;
        };
        if !drifted(pod.status.as_ref(), &ours) {
            return;
        }
        // Counted here, so a notification arriving before the task starts writes nothing.
        rec.writing += 1;
    }
    let (k, n, pod) = (k.clone(), n.clone(), pod.clone());
    tokio::spawn(async move {
        write_status_counted(&k, &n, &pod).await;
    });
}

/// A pod found running after a restart of the kubelet: taken over with its IP. Its containers'
/// processes lived in the old kubelet process, so they start again (without events).
fn adopt(n: &NodeState, pod: &Pod, now: k8s_openapi::jiff::Timestamp) -> Option<PodRecord> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Running") {
        return None;
    }
    let pod_ip = status.pod_ip.clone()?;
    let started_at = status.start_time.as_ref().map(|t| t.0).unwrap_or(now);
    let host_ip = n.config.node_ip.to_string();
    Some(PodRecord {
        stage: Stage::Creating,
        requests: pod_requests(pod),
        owns_ip: pod_ip != host_ip,
        facts: Facts {
            host_ip,
            pod_ip,
            started_at,
            run: None,
        },
        is_static: false,
        writing: 0,
    })
}

/// Report the admission verdict; if admitted, hand the pod to the runner and report its
/// containers from then on. A lone node first reports `ContainerCreating`, as
/// `kubectl get pods -w` shows on a real cluster; simulated nodes skip that write.
async fn start(k: Arc<Kubelet>, n: Arc<NodeState>, pod: Arc<Pod>, input: Input, adopted: bool) {
    if let Input::Reject { reason, message } = input {
        write_status(&k, &n, &pod).await;
        k.pod_event(&pod, EventType::Warning, &reason, &message)
            .await;
        return;
    }
    if k.nodes.len() == 1 && !adopted {
        write_status(&k, &n, &pod).await;
    }
    let handle = {
        let mut local = n.local();
        let Some(rec) = local.pods.get_mut(&uid_of(&pod)) else {
            return;
        };
        let Some(next) = rec.stage.next(&Input::Started) else {
            return;
        };
        rec.stage = next;
        let h = crate::runner::start(&k, &n, pod.clone(), &rec.facts.pod_ip, &rec.facts.host_ip);
        if adopted {
            h.seed(pod.status.as_ref());
        }
        rec.facts.run = Some(h.clone());
        h
    };
    crate::runner::report(k, n, handle).await;
}

/// Write the status of the pod's current stage, retrying while the pod is still ours.
pub(crate) async fn write_status(k: &Kubelet, n: &NodeState, pod: &Pod) {
    match n.local().pods.get_mut(&uid_of(pod)) {
        Some(rec) => rec.writing += 1,
        None => return,
    }
    write_status_counted(k, n, pod).await;
}

/// [`write_status`] for a caller that already counted the write in `PodRecord::writing`.
async fn write_status_counted(k: &Kubelet, n: &NodeState, pod: &Pod) {
    write_current_status(k, n, pod).await;
    if let Some(rec) = n.local().pods.get_mut(&uid_of(pod)) {
        rec.writing = rec.writing.saturating_sub(1);
    }
}

async fn write_current_status(k: &Kubelet, n: &NodeState, pod: &Pod) {
    let uid = uid_of(pod);
    let api: Api<Pod> = Api::namespaced(
        k.client.clone(),
        pod.metadata.namespace.as_deref().unwrap_or("default"),
    );
    let name = pod.metadata.name.clone().unwrap_or_default();
    let mut backoff = Duration::from_millis(200);
    loop {
        let snapshot = n
            .local()
            .pods
            .get(&uid)
            .map(|r| (r.stage.clone(), r.facts.clone()));
        let Some((stage, facts)) = snapshot else {
            return;
        };
        if matches!(stage, Stage::Terminating | Stage::Terminated) {
            return;
        }
        let Some(status) = stage.status(pod, &facts) else {
            return;
        };
        let result = {
            let _permit = k.writes.acquire().await;
            match serde_json::to_value(&status) {
                Ok(v) => {
                    api.patch_status(&name, &Patch::Merge(json!({ "status": v })))
                        .await
                }
                Err(e) => Err(e.into()),
            }
        };
        match result {
            Ok(_) => return,
            Err(e) if e.is_not_found() => return,
            Err(e) => {
                tracing::warn!(pod = %name, error = %e, "writing pod status failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Before the final delete, the status of the stopped pod, as upstream's status manager writes
/// it: its containers terminated, not ready, and its phase terminal (a watch shows the pod
/// `0/1 Terminating`). One attempt, on this pod only (its UID as precondition): the delete
/// follows either way.
async fn write_final_status(k: &Kubelet, api: &Api<Pod>, pod: &Pod) {
    let uid = uid_of(pod);
    let Some(n) = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .and_then(|n| k.node(n))
    else {
        return;
    };
    let status = {
        let local = n.local();
        let Some(rec) = local.pods.get(&uid) else {
            return;
        };
        rec.stage.status(pod, &rec.facts)
    };
    let Some(Ok(status)) = status.map(|s| serde_json::to_value(&s)) else {
        return;
    };
    let name = pod.metadata.name.clone().unwrap_or_default();
    let _permit = k.writes.acquire().await;
    if let Err(e) = api
        .patch_status(
            &name,
            &Patch::Merge(json!({ "metadata": { "uid": uid }, "status": status })),
        )
        .await
    {
        if !e.is_not_found() && !e.is_conflict() {
            tracing::debug!(pod = %name, error = %e, "writing the final status failed");
        }
    }
}

/// Finish a graceful deletion: the containers are "stopped" at once, then the pod is deleted
/// with grace 0 (with a UID precondition, so a new pod of the same name is never hit).
async fn finalize(k: Arc<Kubelet>, pod: Arc<Pod>) {
    let uid = uid_of(&pod);
    let api: Api<Pod> = Api::namespaced(
        k.client.clone(),
        pod.metadata.namespace.as_deref().unwrap_or("default"),
    );
    let name = pod.metadata.name.clone().unwrap_or_default();
    let run = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .and_then(|n| k.node(n))
        .and_then(|n| n.local().pods.get(&uid).and_then(|r| r.facts.run.clone()));
    if let Some(h) = run {
        // Stop the containers: preStop, SIGTERM, SIGKILL after the grace period.
        let grace = pod
            .metadata
            .deletion_grace_period_seconds
            .unwrap_or(30)
            .max(0) as u64;
        h.stop(Duration::from_secs(grace));
        let _ = k
            .clock
            .timeout(Duration::from_secs(grace + 5), h.done.cancelled())
            .await;
        // The sandbox goes with the pod.
        let now = k.clock.timestamp();
        h.update(|run| {
            run.sandbox_gone = true;
            run.sandbox_at = now;
        });
        write_final_status(&k, &api, &pod).await;
    }
    let options = json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                         "preconditions": {"uid": uid}});
    let mut backoff = Duration::from_millis(200);
    let mut done = false;
    for _ in 0..20 {
        let result = {
            let _permit = k.writes.acquire().await;
            api.delete(&name, Some(&options)).await
        };
        match result {
            Ok(_) => {
                done = true;
                break;
            }
            Err(e) if e.is_not_found() || e.is_conflict() => {
                done = true;
                break;
            }
            Err(e) => {
                tracing::warn!(pod = %name, error = %e, "deleting a terminated pod failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
    if !done {
        // Let the next resync try again.
        k.finalizing().remove(&uid);
        return;
    }
    if let Some(n) = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .and_then(|n| k.node(n))
    {
        let mut local = n.local();
        if let Some(rec) = local.pods.get_mut(&uid) {
            if let Some(next) = rec.stage.next(&Input::Stopped) {
                rec.stage = next;
            }
        }
    }
}
