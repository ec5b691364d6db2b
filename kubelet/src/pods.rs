//! Pods bound to our nodes, from the one shared pod informer: admission, start (status
//! written through `pods/status`), readiness after the probes' initial delay, and graceful
//! deletion finished with a grace-0 delete. Mirror pods are left to [`crate::static_pods`],
//! except that a mirror being deleted is finished here as any other pod.

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
use crate::lifecycle::{drifted, readiness_delay, Facts, Input, Stage};
use crate::{Kubelet, NodeState, PodRecord};

pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// How often the cache is walked again, in case a notification was missed, and statuses that
/// drifted from ours are written again.
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
                facts: Facts::none(),
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
        // its periodic sync: a status a client patched stays visible for a while.
        return;
    }
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return;
    }
    let delay = readiness_delay(pod);
    if let Some(rec) = adopt(&n, pod) {
        if rec.owns_ip {
            local.ips.claim(&rec.facts.pod_ip);
        }
        let wait = (rec.stage == Stage::Starting).then(|| {
            let elapsed = crate::now().duration_since(rec.facts.started_at);
            delay.saturating_sub(Duration::try_from(elapsed).unwrap_or_default())
        });
        local.pods.insert(uid.clone(), rec);
        drop(local);
        match wait {
            Some(wait) => {
                tokio::spawn(become_ready(k.clone(), n, pod.clone(), wait));
            }
            None => reassert(k, &n, pod),
        }
        return;
    }
    let requests = pod_requests(pod);
    let (used, count) = local.usage();
    let now = crate::now();
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
            ready_at: delay.is_zero().then_some(now),
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
    tokio::spawn(start(k.clone(), n, pod.clone(), input, delay));
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
        let settled = matches!(
            rec.stage,
            Stage::Starting | Stage::Ready | Stage::Rejected { .. }
        );
        if !settled || rec.writing > 0 {
            return;
        }
        let Some(ours) = rec.stage.status(pod, &rec.facts) else {
            return;
        };
        if !drifted(pod.status.as_ref(), &ours) {
            return;
        }
        if rec.stage == Stage::Ready {
            // Ready again: the condition's transition is now.
            rec.facts.ready_at = Some(crate::now());
        }
        // Counted here, so a notification arriving before the task starts writes nothing.
        rec.writing += 1;
    }
    let (k, n, pod) = (k.clone(), n.clone(), pod.clone());
    tokio::spawn(async move {
        write_status_counted(&k, &n, &pod).await;
    });
}

/// A pod found running after a restart of the kubelet: take it over as it is.
fn adopt(n: &NodeState, pod: &Pod) -> Option<PodRecord> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Running") {
        return None;
    }
    let pod_ip = status.pod_ip.clone()?;
    let ready = status.container_statuses.iter().flatten().all(|c| c.ready);
    let started_at = status
        .start_time
        .as_ref()
        .map(|t| t.0)
        .unwrap_or(crate::now());
    let host_ip = n.config.node_ip.to_string();
    Some(PodRecord {
        stage: if ready { Stage::Ready } else { Stage::Starting },
        requests: pod_requests(pod),
        owns_ip: pod_ip != host_ip,
        facts: Facts {
            host_ip,
            pod_ip,
            started_at,
            ready_at: ready.then_some(started_at),
        },
        is_static: false,
        writing: 0,
    })
}

/// Report the admission verdict; if admitted, create and start the containers and wait for
/// readiness. A lone node first reports `ContainerCreating`, as `kubectl get pods -w` shows on a
/// real cluster; simulated nodes go straight to Running (half the writes).
async fn start(k: Arc<Kubelet>, n: Arc<NodeState>, pod: Arc<Pod>, input: Input, delay: Duration) {
    if let Input::Reject { reason, message } = input {
        write_status(&k, &n, &pod).await;
        k.pod_event(&pod, EventType::Warning, &reason, &message)
            .await;
        return;
    }
    if k.nodes.len() == 1 {
        write_status(&k, &n, &pod).await;
        container_events(&k, &pod).await;
    }
    {
        let mut local = n.local();
        let Some(rec) = local.pods.get_mut(&uid_of(&pod)) else {
            return;
        };
        let Some(next) = rec.stage.next(&Input::Started {
            readiness_delay: delay,
        }) else {
            return;
        };
        let now = crate::now();
        rec.stage = next;
        rec.facts.started_at = now;
        rec.facts.ready_at = delay.is_zero().then_some(now);
    }
    write_status(&k, &n, &pod).await;
    if !delay.is_zero() {
        become_ready(k, n, pod, delay).await;
    }
}

/// The events a kubelet records while starting containers (image already present).
async fn container_events(k: &Kubelet, pod: &Pod) {
    for c in pod.spec.iter().flat_map(|s| s.containers.iter()) {
        let image = c.image.as_deref().unwrap_or("");
        let msgs = [
            (
                "Pulled",
                format!("Container image \"{image}\" already present on machine"),
            ),
            ("Created", format!("Created container: {}", c.name)),
            ("Started", format!("Started container {}", c.name)),
        ];
        for (reason, msg) in msgs {
            k.pod_event(pod, EventType::Normal, reason, &msg).await;
        }
    }
}

async fn become_ready(k: Arc<Kubelet>, n: Arc<NodeState>, pod: Arc<Pod>, wait: Duration) {
    tokio::time::sleep(wait).await;
    {
        let mut local = n.local();
        let Some(rec) = local.pods.get_mut(&uid_of(&pod)) else {
            return;
        };
        let Some(next) = rec.stage.next(&Input::ReadinessDelayElapsed) else {
            return;
        };
        rec.stage = next;
        rec.facts.ready_at = Some(crate::now());
    }
    write_status(&k, &n, &pod).await;
}

/// Write the status of the pod's current stage, retrying while the pod is still ours.
async fn write_status(k: &Kubelet, n: &NodeState, pod: &Pod) {
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

/// Finish a graceful deletion: the containers are "stopped" at once, then the pod is deleted
/// with grace 0 (with a UID precondition, so a new pod of the same name is never hit).
async fn finalize(k: Arc<Kubelet>, pod: Arc<Pod>) {
    let uid = uid_of(&pod);
    let api: Api<Pod> = Api::namespaced(
        k.client.clone(),
        pod.metadata.namespace.as_deref().unwrap_or("default"),
    );
    let name = pod.metadata.name.clone().unwrap_or_default();
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
