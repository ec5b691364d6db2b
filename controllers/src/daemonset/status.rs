//! Pure DaemonSet arithmetic: daemon pods by the node they are for, the template pods are
//! made from (default tolerations, revision labels) and the status counts upstream's
//! updateDaemonSetStatus computes.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::{Node, Pod, PodTemplateSpec};
use k8s_openapi::jiff::Timestamp;

use super::history::HASH_LABEL;
use super::placement::{add_daemon_tolerations, node_should_run, target_node, template_spec};
use super::update::{self, GENERATION_LABEL};
use crate::owned::Owner;
use crate::util::{is_pod_available, is_pod_ready, is_pod_terminal};

/// The annotation the API server keeps the template generation in, upstream.
pub const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// Node name → the daemon pods for it, oldest (and scheduled) first.
pub type NodePods = BTreeMap<String, Vec<Arc<Pod>>>;

/// The template generation: the API server's annotation, else the object's generation.
pub fn template_generation(ds: &DaemonSet) -> Option<i64> {
    ds.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(TEMPLATE_GENERATION))
        .and_then(|g| g.parse().ok())
        .or(ds.metadata.generation)
}

/// The template pods are made from: default tolerations and the revision labels added.
pub fn pod_template(ds: &DaemonSet, hash: &str) -> PodTemplateSpec {
    let mut t = ds
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    if let Some(spec) = t.spec.as_mut() {
        add_daemon_tolerations(spec);
    }
    let labels = t
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(Default::default);
    if let Some(g) = template_generation(ds) {
        labels.insert(GENERATION_LABEL.into(), g.to_string());
    }
    if !hash.is_empty() {
        labels.insert(HASH_LABEL.into(), hash.into());
    }
    t
}

/// Upstream's podByCreationTimestampAndPhase: scheduled first, then oldest, then by name.
fn sort_pods(pods: &mut [Arc<Pod>]) {
    pods.sort_by(|a, b| {
        let bound = |p: &Pod| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.as_ref())
                .is_some_and(|n| !n.is_empty())
        };
        bound(b)
            .cmp(&bound(a))
            .then_with(|| {
                let t = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
                t(a).cmp(&t(b))
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

/// Pods by the node they are for; deleted terminal pods only when asked.
pub fn node_pods(pods: &[Arc<Pod>], include_deleted_terminal: bool) -> NodePods {
    let mut map = NodePods::new();
    for p in pods {
        if !include_deleted_terminal
            && is_pod_terminal(p)
            && p.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        if let Some(node) = target_node(p) {
            map.entry(node).or_default().push(p.clone());
        }
    }
    for v in map.values_mut() {
        sort_pods(v);
    }
    map
}

/// The pod's name.
pub fn name(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

/// Upstream's updateDaemonSetStatus arithmetic.
pub fn calculate_status(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    map: &NodePods,
    hash: &str,
    observe_generation: bool,
    now: Timestamp,
) -> DaemonSetStatus {
    let template = template_spec(ds);
    let min_ready = ds.min_ready_seconds();
    let generation = template_generation(ds);
    let (mut desired, mut current, mut mis, mut ready, mut updated, mut available) =
        (0, 0, 0, 0, 0, 0);
    for node in nodes {
        let node_name = node.metadata.name.as_deref().unwrap_or_default();
        let pods = map.get(node_name).filter(|p| !p.is_empty());
        if node_should_run(&template, node).should_run {
            desired += 1;
            let Some(pod) = pods.and_then(|p| p.first()) else {
                continue;
            };
            current += 1;
            if is_pod_ready(pod) {
                ready += 1;
                if is_pod_available(pod, min_ready, now) {
                    available += 1;
                }
            }
            if update::is_updated(pod, hash, generation) {
                updated += 1;
            }
        } else if pods.is_some() {
            mis += 1;
        }
    }
    let mut status = ds.status.clone().unwrap_or_default();
    let opt = |n: i32| (n != 0).then_some(n);
    status.desired_number_scheduled = desired;
    status.current_number_scheduled = current;
    status.number_misscheduled = mis;
    status.number_ready = ready;
    status.updated_number_scheduled = opt(updated);
    status.number_available = opt(available);
    status.number_unavailable = opt(desired - available);
    if observe_generation {
        status.observed_generation = ds.metadata.generation;
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemonset::placement::pin_to_node;
    use serde_json::{json, Value};

    fn ds() -> DaemonSet {
        serde_json::from_value(json!({
            "metadata": {"name": "fluentd", "namespace": "kube-system", "generation": 2},
            "spec": {"selector": {"matchLabels": {"name": "fluentd"}},
                     "template": {"metadata": {"labels": {"name": "fluentd"}},
                                  "spec": {"nodeSelector": {"logging": "on"},
                                           "containers": [{"name": "f", "image": "i"}]}}}
        }))
        .unwrap()
    }

    fn node(name: &str, logging: bool) -> Arc<Node> {
        let labels = if logging {
            json!({"logging": "on"})
        } else {
            json!({})
        };
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap(),
        )
    }

    fn pod(name: &str, node: &str, hash: &str, ready: bool) -> Arc<Pod> {
        let status: Value = if ready {
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
        } else {
            json!({"phase": "Pending"})
        };
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {HASH_LABEL: hash}},
                "spec": {"containers": [], "affinity": serde_json::to_value(pin_to_node(None, node)).unwrap()},
                "status": status,
            }))
            .unwrap(),
        )
    }

    #[test]
    fn status_counts_as_upstream() {
        let nodes = vec![
            node("a", true),
            node("b", true),
            node("c", false),
            node("d", true),
        ];
        let pods = vec![
            pod("pa", "a", "h", true),
            pod("pb", "b", "old", false),
            pod("pc", "c", "h", true),
        ];
        let s = calculate_status(
            &ds(),
            &nodes,
            &node_pods(&pods, false),
            "h",
            true,
            tinykube_client::now(),
        );
        assert_eq!(
            (
                s.desired_number_scheduled,
                s.current_number_scheduled,
                s.number_ready,
                s.number_misscheduled
            ),
            (3, 2, 1, 1)
        );
        assert_eq!(
            (
                s.updated_number_scheduled,
                s.number_available,
                s.number_unavailable,
                s.observed_generation
            ),
            (Some(1), Some(1), Some(2), Some(2))
        );
        let s = calculate_status(
            &ds(),
            &nodes,
            &NodePods::new(),
            "h",
            false,
            tinykube_client::now(),
        );
        assert_eq!(
            (
                s.updated_number_scheduled,
                s.number_available,
                s.observed_generation
            ),
            (None, None, None)
        );
    }

    #[test]
    fn pod_template_carries_revision_labels_and_tolerations() {
        let t = pod_template(&ds(), "abc");
        let labels = t.metadata.unwrap().labels.unwrap();
        assert_eq!(labels[HASH_LABEL], "abc");
        assert_eq!(labels[GENERATION_LABEL], "2");
        assert_eq!(labels["name"], "fluentd");
        assert_eq!(t.spec.unwrap().tolerations.unwrap().len(), 6);
        let mut annotated = ds();
        annotated.metadata.annotations =
            Some([(TEMPLATE_GENERATION.to_string(), "7".to_string())].into());
        assert_eq!(template_generation(&annotated), Some(7));
    }

    #[test]
    fn pods_map_to_their_target_node_scheduled_first() {
        let mut bound = (*pod("z-bound", "a", "h", true)).clone();
        bound.spec.as_mut().unwrap().node_name = Some("a".into());
        let pods = vec![
            pod("a-pending", "a", "h", false),
            Arc::new(bound),
            pod("b1", "b", "h", true),
        ];
        let map = node_pods(&pods, false);
        let names: Vec<_> = map["a"].iter().map(|p| name(p)).collect();
        assert_eq!(names, ["z-bound", "a-pending"]);
        assert_eq!(map["b"].len(), 1);
    }
}
