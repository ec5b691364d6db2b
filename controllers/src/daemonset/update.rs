//! RollingUpdate arithmetic, as upstream's daemon/update.go: which old pods to delete (within
//! maxUnavailable) or on which nodes to surge a new pod (within maxSurge). Pure: the caller
//! applies the plan through the same create/delete path as the manage loop.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use super::history::HASH_LABEL;
use crate::util::{is_pod_available, is_pod_ready};

/// The pod label with the DaemonSet's template generation.
pub const GENERATION_LABEL: &str = "pod-template-generation";

/// An int or a percent of `total`, rounded up (GetScaledValueFromIntOrPercent, roundUp).
pub fn scaled(v: Option<&IntOrString>, total: i32) -> i32 {
    match v {
        None => 0,
        Some(IntOrString::Int(i)) => *i,
        Some(IntOrString::String(s)) => {
            let Some(p) = s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) else {
                return 0;
            };
            ((p * i64::from(total) + 99) / 100).clamp(0, i64::from(i32::MAX)) as i32
        }
    }
}

fn rolling(ds: &DaemonSet) -> Option<&k8s_openapi::api::apps::v1::RollingUpdateDaemonSet> {
    let s = ds.spec.as_ref()?.update_strategy.as_ref()?;
    if s.type_.as_deref().unwrap_or("RollingUpdate") != "RollingUpdate" {
        return None;
    }
    s.rolling_update.as_ref()
}

/// Whether the DaemonSet updates by RollingUpdate (the default) rather than OnDelete.
pub fn is_rolling_update(ds: &DaemonSet) -> bool {
    ds.spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("RollingUpdate")
        == "RollingUpdate"
}

/// (maxSurge, maxUnavailable) for `desired` nodes; both zero means maxUnavailable 1.
pub fn limits(ds: &DaemonSet, desired: i32) -> (i32, i32) {
    let Some(r) = rolling(ds) else {
        return (0, 0);
    };
    let surge = scaled(r.max_surge.as_ref(), desired).max(0);
    let mut unavailable = scaled(r.max_unavailable.as_ref(), desired).max(0);
    if desired > 0 && surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable)
}

/// Whether surging is configured at all (upstream's AllowsSurge).
pub fn allows_surge(ds: &DaemonSet) -> bool {
    rolling(ds).is_some_and(|r| scaled(r.max_surge.as_ref(), 1) != 0)
}

/// Whether a pod runs the current template: its hash label, or (for pods from before hashes)
/// its template generation label.
pub fn is_updated(pod: &Pod, hash: &str, generation: Option<i64>) -> bool {
    let labels = pod.metadata.labels.as_ref();
    let pod_hash = labels.and_then(|l| l.get(HASH_LABEL));
    if let Some(h) = pod_hash {
        return !hash.is_empty() && h == hash;
    }
    generation.is_some_and(|g| labels.and_then(|l| l.get(GENERATION_LABEL)) == Some(&g.to_string()))
}

/// The new and old pod on a node; `None` when there are more than one of either.
fn find_updated<'a>(
    pods: &'a [Arc<Pod>],
    hash: &str,
    generation: Option<i64>,
) -> Option<(Option<&'a Pod>, Option<&'a Pod>)> {
    let (mut new, mut old) = (None, None);
    for p in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let slot = if is_updated(p, hash, generation) {
            &mut new
        } else {
            &mut old
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(p.as_ref());
    }
    Some((new, old))
}

/// What one rolling-update step does.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Names of pods to delete.
    pub delete: Vec<String>,
    /// Nodes to create a new pod on (surge).
    pub create: Vec<String>,
}

/// Inputs of a step: every node with daemon pods or that should run one, and its pods.
pub struct Step<'a> {
    pub nodes: &'a BTreeMap<String, Vec<Arc<Pod>>>,
    pub should_run: &'a dyn Fn(&str) -> bool,
    pub hash: &'a str,
    pub generation: Option<i64>,
    pub max_surge: i32,
    pub max_unavailable: i32,
    pub desired: i32,
    pub min_ready_seconds: i32,
    pub now: Timestamp,
}

fn name(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

/// Upstream's rollingUpdate.
pub fn plan(s: &Step) -> Plan {
    let available = |p: &Pod| is_pod_available(p, s.min_ready_seconds, s.now);
    let mut out = Plan::default();
    if s.max_surge == 0 {
        let mut unavailable = 0;
        let mut candidates = Vec::new();
        for pods in s.nodes.values() {
            match find_updated(pods, s.hash, s.generation) {
                None | Some((None, None)) | Some((Some(_), Some(_))) => unavailable += 1,
                Some((Some(new), None)) => {
                    if !available(new) {
                        unavailable += 1;
                    }
                }
                Some((None, Some(old))) => {
                    if !available(old) {
                        out.delete.push(name(old));
                        unavailable += 1;
                    } else if unavailable < s.max_unavailable {
                        candidates.push(name(old));
                    }
                }
            }
        }
        let room = (s.max_unavailable - unavailable).clamp(0, candidates.len() as i32) as usize;
        out.delete.extend(candidates.into_iter().take(room));
        return out;
    }
    let mut should_not_run = Vec::new();
    let mut candidates = Vec::new();
    let (mut surge, mut num_available) = (0, 0);
    for (node, pods) in s.nodes {
        let Some((new, old)) = find_updated(pods, s.hash, s.generation) else {
            surge += 1;
            continue;
        };
        if old.or(new).is_some_and(available) {
            num_available += 1;
        }
        match (new, old) {
            (_, None) => {}
            (None, Some(old)) if !available(old) => {
                if (s.should_run)(node) {
                    out.create.push(node.clone());
                } else {
                    out.delete.push(name(old));
                }
            }
            (None, Some(old)) => {
                if !(s.should_run)(node) {
                    should_not_run.push(name(old));
                } else if surge < s.max_surge {
                    candidates.push(node.clone());
                }
            }
            (Some(new), Some(old)) => {
                if available(new) {
                    out.delete.push(name(old));
                } else {
                    surge += 1;
                }
            }
        }
    }
    let deletable = (num_available - s.desired).clamp(0, should_not_run.len() as i32) as usize;
    out.delete
        .extend(should_not_run.into_iter().take(deletable));
    let room = (s.max_surge - surge).clamp(0, candidates.len() as i32) as usize;
    out.create.extend(candidates.into_iter().take(room));
    out
}

/// When not surging, extra running pods on a node keep only the oldest; when surging, the
/// oldest new and oldest old pod are kept, and the old one goes once it is not ready or the
/// new one is available (upstream's podsShouldBeOnNode). `running` is oldest first.
pub fn excess_on_node(
    running: &[Arc<Pod>],
    surge: bool,
    hash: &str,
    min_ready_seconds: i32,
    now: Timestamp,
) -> Vec<String> {
    if running.len() <= 1 {
        return Vec::new();
    }
    if !surge {
        return running[1..].iter().map(|p| name(p)).collect();
    }
    let (mut oldest_new, mut oldest_old): (Option<&Pod>, Option<&Pod>) = (None, None);
    let mut out = Vec::new();
    for p in running {
        let is_new = p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HASH_LABEL))
            .map(String::as_str)
            == Some(hash);
        let slot = if is_new {
            &mut oldest_new
        } else {
            &mut oldest_old
        };
        if slot.is_none() {
            *slot = Some(p);
        } else {
            out.push(name(p));
        }
    }
    if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
        if !is_pod_ready(old) || is_pod_available(new, min_ready_seconds, now) {
            out.push(name(old));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, hash: &str, ready: bool) -> Arc<Pod> {
        let conditions = if ready {
            json!([{"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}])
        } else {
            json!([])
        };
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {HASH_LABEL: hash}},
                "status": {"phase": "Running", "conditions": conditions}
            }))
            .unwrap(),
        )
    }

    #[test]
    fn percentages_round_up() {
        let table = [
            (IntOrString::Int(2), 10, 2),
            (IntOrString::String("25%".into()), 10, 3),
            (IntOrString::String("100%".into()), 3, 3),
            (IntOrString::String("0%".into()), 3, 0),
            (IntOrString::String("junk".into()), 3, 0),
        ];
        for (v, total, want) in table {
            assert_eq!(scaled(Some(&v), total), want, "{v:?} of {total}");
        }
    }

    #[test]
    fn limits_default_to_one_unavailable() {
        let ds = |strategy: serde_json::Value| -> DaemonSet {
            serde_json::from_value(
                json!({"spec": {"selector": {}, "template": {}, "updateStrategy": strategy}}),
            )
            .unwrap()
        };
        let table = [
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
                (0, 1),
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}),
                (0, 1),
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "50%"}}),
                (2, 0),
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%"}}),
                (0, 2),
            ),
            (json!({"type": "OnDelete"}), (0, 0)),
        ];
        for (s, want) in table {
            assert_eq!(limits(&ds(s.clone()), 4), want, "{s}");
        }
    }

    #[test]
    fn updated_by_hash_or_by_generation_without_hash() {
        let with = |labels: serde_json::Value| -> Pod {
            serde_json::from_value(json!({"metadata": {"labels": labels}})).unwrap()
        };
        let table = [
            (json!({HASH_LABEL: "h1", GENERATION_LABEL: "1"}), true),
            (json!({HASH_LABEL: "h0", GENERATION_LABEL: "1"}), false),
            (json!({GENERATION_LABEL: "1"}), true),
            (json!({GENERATION_LABEL: "2"}), false),
            (json!({}), false),
        ];
        for (labels, want) in table {
            assert_eq!(
                is_updated(&with(labels.clone()), "h1", Some(1)),
                want,
                "{labels}"
            );
        }
    }

    fn run_plan(nodes: Vec<(&str, Vec<Arc<Pod>>)>, surge: i32, unavailable: i32) -> Plan {
        let nodes: BTreeMap<String, Vec<Arc<Pod>>> =
            nodes.into_iter().map(|(n, p)| (n.to_string(), p)).collect();
        let desired = nodes.len() as i32;
        plan(&Step {
            nodes: &nodes,
            should_run: &|_| true,
            hash: "new",
            generation: None,
            max_surge: surge,
            max_unavailable: unavailable,
            desired,
            min_ready_seconds: 0,
            now: tinykube_client::now(),
        })
    }

    #[test]
    fn rolling_update_steps() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // maxUnavailable 1: one old ready pod at a time.
        let p = run_plan(
            vec![
                ("a", vec![pod("a1", "old", true)]),
                ("b", vec![pod("b1", "old", true)]),
            ],
            0,
            1,
        );
        assert_eq!((p.delete, p.create), (s(&["a1"]), s(&[])));
        // An unready new pod uses up the budget.
        let p = run_plan(
            vec![
                ("a", vec![pod("a2", "new", false)]),
                ("b", vec![pod("b1", "old", true)]),
            ],
            0,
            1,
        );
        assert_eq!(p, Plan::default());
        // A node waiting for its new pod counts as unavailable.
        let p = run_plan(
            vec![("a", vec![]), ("b", vec![pod("b1", "old", true)])],
            0,
            1,
        );
        assert_eq!(p, Plan::default());
        // Unavailable old pods are replaced regardless of the budget.
        let p = run_plan(
            vec![
                ("a", vec![pod("a1", "old", false)]),
                ("b", vec![pod("b1", "old", false)]),
            ],
            0,
            1,
        );
        assert_eq!(p.delete, s(&["a1", "b1"]));
        // maxUnavailable 2 takes two at once.
        let p = run_plan(
            vec![
                ("a", vec![pod("a1", "old", true)]),
                ("b", vec![pod("b1", "old", true)]),
            ],
            0,
            2,
        );
        assert_eq!(p.delete, s(&["a1", "b1"]));
        // Surge: a new pod beside the old one, then the old one goes once the new is available.
        let p = run_plan(
            vec![
                ("a", vec![pod("a1", "old", true)]),
                ("b", vec![pod("b1", "old", true)]),
            ],
            1,
            0,
        );
        assert_eq!((p.delete, p.create), (s(&[]), s(&["a"])));
        let p = run_plan(
            vec![
                ("a", vec![pod("a1", "old", true), pod("a2", "new", true)]),
                ("b", vec![pod("b1", "old", true)]),
            ],
            1,
            0,
        );
        assert_eq!((p.delete, p.create), (s(&["a1"]), s(&["b"])));
        let p = run_plan(
            vec![
                ("a", vec![pod("a1", "old", true), pod("a2", "new", false)]),
                ("b", vec![pod("b1", "old", true)]),
            ],
            1,
            0,
        );
        assert_eq!(p, Plan::default());
    }

    #[test]
    fn excess_pods_on_a_node() {
        let now = tinykube_client::now();
        let names = |v: Vec<String>| v.join(",");
        let two_old = vec![pod("x1", "old", true), pod("x2", "old", true)];
        assert_eq!(names(excess_on_node(&two_old, false, "new", 0, now)), "x2");
        assert_eq!(
            names(excess_on_node(&two_old[..1], false, "new", 0, now)),
            ""
        );
        let old_and_ready_new = vec![pod("o", "old", true), pod("n", "new", true)];
        assert_eq!(
            names(excess_on_node(&old_and_ready_new, true, "new", 0, now)),
            "o"
        );
        let old_and_unready_new = vec![pod("o", "old", true), pod("n", "new", false)];
        assert_eq!(
            names(excess_on_node(&old_and_unready_new, true, "new", 0, now)),
            ""
        );
    }
}
