//! Helpers every controller shares: pod readiness and availability, controller references,
//! event object references, and the worker loop that drains a work queue.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeCondition, ObjectReference, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::Resource;
use serde_json::{json, Value};

use crate::workqueue::WorkQueue;

/// The owner reference with `controller: true`, if any.
pub fn controller_ref(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// A controller reference to `owner` as upstream's controllers set it.
pub fn new_controller_ref<K: Resource>(meta: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: K::API_VERSION.to_string(),
        kind: K::KIND.to_string(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The reference events are recorded against.
pub fn object_ref<K: Resource>(meta: &ObjectMeta) -> ObjectReference {
    ObjectReference {
        api_version: Some(K::API_VERSION.to_string()),
        kind: Some(K::KIND.to_string()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        ..Default::default()
    }
}

/// The node the pod is bound to (empty while unscheduled).
pub fn node_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

/// The node's Ready condition, if it reported one.
pub fn node_ready_condition(node: &Node) -> Option<&NodeCondition> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
}

/// Not finished and not being deleted (upstream's IsPodActive).
pub fn is_pod_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded") | Some("Failed"))
        && pod.metadata.deletion_timestamp.is_none()
}

/// Succeeded or Failed.
pub fn is_pod_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded") | Some("Failed")
    )
}

/// The time the pod's Ready condition last turned True, if it is ready.
pub fn ready_since(pod: &Pod) -> Option<Option<Timestamp>> {
    pod.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready" && c.status == "True")
        .map(|c| c.last_transition_time.as_ref().map(|t| t.0))
}

pub fn is_pod_ready(pod: &Pod) -> bool {
    ready_since(pod).is_some()
}

/// Ready for at least `min_ready_seconds` at `now` (upstream's IsPodAvailable).
pub fn is_pod_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    match ready_since(pod) {
        None => false,
        Some(_) if min_ready_seconds <= 0 => true,
        Some(None) => false,
        Some(Some(since)) => since
            .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(i64::from(
                min_ready_seconds,
            )))
            .is_ok_and(|t| t <= now),
    }
}

/// A pod for `owner` from its template (upstream's GetPodFromTemplate): the template's labels,
/// annotations, finalizers and spec, named by `generateName: OWNER-`.
pub fn pod_from_template(
    template: &PodTemplateSpec,
    namespace: &str,
    owner_name: &str,
    controller: OwnerReference,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    let prefix = format!("{owner_name}-");
    // A prefix that cannot start a valid name is used without the dash, as upstream.
    let generate_name = if prefix.len() > 253 {
        owner_name.to_string()
    } else {
        prefix
    };
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(generate_name),
            namespace: Some(namespace.to_string()),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![controller]),
            ..Default::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// A merge patch that drops the owner reference `uid` (the whole field when none is left),
/// guarded by the pod's uid and resourceVersion.
pub fn release_patch(meta: &ObjectMeta, uid: &str) -> Value {
    let rest: Vec<_> = meta
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.uid != uid)
        .collect();
    json!({"metadata": {
        "ownerReferences": if rest.is_empty() { Value::Null } else { json!(rest) },
        "uid": meta.uid,
        "resourceVersion": meta.resource_version,
    }})
}

/// A strategic merge patch that adds `controller` to the owner references, guarded by uid.
pub fn adopt_patch(meta: &ObjectMeta, controller: OwnerReference) -> Value {
    json!({"metadata": {
        "ownerReferences": [controller],
        "uid": meta.uid,
    }})
}

/// `namespace/name`.
pub fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// Split a `namespace/name` key.
pub fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

/// Run `workers` workers draining `queue` with `sync` until the future is dropped: a failed
/// key comes back with backoff, a successful one is forgotten.
pub async fn run_workers<F, Fut, E>(name: &'static str, queue: WorkQueue, workers: usize, sync: F)
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send,
    E: std::error::Error + 'static,
{
    let sync = Arc::new(sync);
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..workers.max(1) {
        let queue = queue.clone();
        let sync = sync.clone();
        set.spawn(async move {
            while let Some(key) = queue.get().await {
                match sync(key.clone()).await {
                    Ok(()) => queue.forget(&key),
                    Err(e) => {
                        if is_conflict(&e) {
                            // A stale cache: routine, retried at once with a fresh view.
                            tracing::debug!(controller = name, key = %key, error = %e, "sync conflicted; retrying");
                        } else {
                            tracing::warn!(controller = name, key = %key, error = %e, "sync failed; retrying");
                        }
                        queue.add_rate_limited(&key);
                    }
                }
                queue.done(&key);
            }
        });
    }
    let _guard = ShutDownOnDrop(queue);
    while set.join_next().await.is_some() {}
}

/// Whether an API conflict (409) is somewhere in the error's source chain.
pub fn is_conflict(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(c) = err.downcast_ref::<tinykube_client::ClientError>() {
            return c.is_conflict();
        }
        cur = err.source();
    }
    false
}

struct ShutDownOnDrop(WorkQueue);

impl Drop for ShutDownOnDrop {
    fn drop(&mut self) {
        self.0.shut_down();
    }
}

/// Seconds as a `Duration`, never negative.
pub fn secs(s: i64) -> Duration {
    Duration::from_secs(s.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn pod(phase: &str, ready: Option<i64>) -> Pod {
        Pod {
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: ready.map(|at| {
                    vec![PodCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        last_transition_time: Some(Time(Timestamp::from_second(at).unwrap())),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn availability_waits_min_ready_seconds() {
        let now = Timestamp::from_second(100).unwrap();
        let table = [
            (pod("Running", None), 0, false),
            (pod("Running", Some(100)), 0, true),
            (pod("Running", Some(95)), 10, false),
            (pod("Running", Some(90)), 10, true),
        ];
        for (p, min, want) in table {
            assert_eq!(is_pod_available(&p, min, now), want, "{min}");
        }
    }

    #[derive(Debug, thiserror::Error)]
    enum Stage {
        #[error("writing: {0}")]
        Write(#[source] tinykube_client::ClientError),
    }

    #[test]
    fn conflicts_are_found_in_the_source_chain() {
        let api = |code| {
            Stage::Write(tinykube_client::ClientError::Api(tinykube_client::Status {
                code,
                ..Default::default()
            }))
        };
        assert!(is_conflict(&api(409)));
        assert!(!is_conflict(&api(500)));
        assert!(!is_conflict(&std::fmt::Error));
    }

    #[test]
    fn finished_and_deleting_pods_are_not_active() {
        assert!(is_pod_active(&pod("Running", None)));
        assert!(is_pod_active(&pod("Pending", None)));
        assert!(!is_pod_active(&pod("Succeeded", None)));
        assert!(!is_pod_active(&pod("Failed", None)));
        let mut p = pod("Running", None);
        p.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        assert!(!is_pod_active(&p));
    }
}
