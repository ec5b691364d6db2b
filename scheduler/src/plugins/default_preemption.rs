//! DefaultPreemption (PostFilter): when a pod fits nowhere, look for a node where removing
//! pods of lower priority makes room, evict the fewest and least important of them, and
//! nominate the node for the pod (`status.nominatedNodeName`).
//!
//! The choice follows upstream: only nodes that failed with a resolvable reason are tried; on
//! each, every lower-priority pod is removed, and if the pod then fits, the removed pods are
//! put back one by one, most important first, keeping each that still leaves room. Among the
//! candidate nodes the one whose most important victim has the lowest priority wins, then the
//! lowest sum of victim priorities, then the fewest victims, then the latest start of the most
//! important victims.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use rand::Rng;

use crate::framework::{fit_error, CycleState, Diagnosis, Framework, NodeInfo, Status};

pub const NAME: &str = "DefaultPreemption";

/// What a node reports when nothing on it may be evicted for the pod.
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
/// What a node reports when its failure is not one eviction could cure.
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// The least share of the nodes, and the least number, to dry-run before choosing, as
/// upstream's DefaultPreemptionArgs defaults (10 %, 100).
const MIN_CANDIDATE_NODES_PERCENTAGE: usize = 10;
const MIN_CANDIDATE_NODES_ABSOLUTE: usize = 100;

/// The outcome of preemption for one unschedulable pod.
#[derive(Debug)]
pub enum Outcome {
    /// Evict `victims` (most important first) and nominate `node`.
    Nominate {
        node: String,
        victims: Vec<Arc<Pod>>,
    },
    /// Preemption was not tried; the message says why and any nomination stays.
    NotEligible(String),
    /// No node can be freed for the pod; the message is the per-node summary and any
    /// nomination is cleared.
    NotHelpful(String),
}

pub fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

fn nominated_node(pod: &Pod) -> Option<&str> {
    pod.status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// When a pod started, for ranking victims; one not started yet counts as starting `now`.
fn start_time(pod: &Pod, now: Timestamp) -> Timestamp {
    pod.status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map(|t| t.0)
        .unwrap_or(now)
}

/// Upstream's MoreImportantPod: higher priority first, then the one running longer.
fn more_important(a: &Pod, b: &Pod, now: Timestamp) -> std::cmp::Ordering {
    priority(b)
        .cmp(&priority(a))
        .then_with(|| start_time(a, now).cmp(&start_time(b, now)))
}

/// Whether `pod` is going away because the scheduler preempted it.
fn terminating_by_preemption(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "DisruptionTarget"))
            .is_some_and(|c| {
                c.status == "True" && c.reason.as_deref() == Some("PreemptionByScheduler")
            })
}

/// Run every filter of the profile for `pod` on `nodes[index]`, PreFilter included.
fn fits(fw: &Framework, pod: &Pod, nodes: &[Arc<NodeInfo>], index: usize) -> Status {
    let mut state = CycleState::for_pod(pod);
    fw.run_pre_filter(pod, nodes, &mut state);
    fw.run_filters(pod, &nodes[index], &state)
}

/// Whether the pod may preempt at all: not with `preemptionPolicy: Never`, and not while
/// victims it already evicted on its nominated node are still terminating.
fn eligible(pod: &Pod, nodes: &[Arc<NodeInfo>], diagnosis: &Diagnosis) -> Result<(), String> {
    let policy = pod
        .spec
        .as_ref()
        .and_then(|s| s.preemption_policy.as_deref());
    if policy == Some("Never") {
        return Err("not eligible due to preemptionPolicy=Never.".into());
    }
    let Some(nominated) = nominated_node(pod) else {
        return Ok(());
    };
    let Some(index) = nodes.iter().position(|n| n.name() == nominated) else {
        return Ok(());
    };
    if matches!(
        diagnosis.statuses.get(index),
        Some(Status::UnschedulableAndUnresolvable(_))
    ) {
        return Ok(());
    }
    let waiting = nodes[index]
        .pods
        .iter()
        .any(|p| priority(p) < priority(pod) && terminating_by_preemption(p));
    if waiting {
        return Err("not eligible due to a terminating pod on the nominated node.".into());
    }
    Ok(())
}

/// The fewest, least important pods to evict from `nodes[index]` for `pod` to fit there,
/// most important first; or why no eviction there helps.
pub fn select_victims(
    fw: &Framework,
    pod: &Pod,
    nodes: &[Arc<NodeInfo>],
    index: usize,
) -> Result<Vec<Arc<Pod>>, Status> {
    let node = &nodes[index];
    let (mut potential, mut kept): (Vec<Arc<Pod>>, Vec<Arc<Pod>>) = node
        .pods
        .iter()
        .cloned()
        .partition(|p| priority(p) < priority(pod));
    if potential.is_empty() {
        return Err(Status::unresolvable(NO_VICTIMS));
    }
    let mut trial = nodes.to_vec();
    trial[index] = Arc::new(NodeInfo::new(node.node.clone(), kept.clone()));
    let status = fits(fw, pod, &trial, index);
    if !status.is_success() {
        return Err(status);
    }
    let now = tinykube_client::now();
    potential.sort_by(|a, b| more_important(a, b, now));
    let mut victims = Vec::new();
    for p in potential {
        kept.push(p.clone());
        trial[index] = Arc::new(NodeInfo::new(node.node.clone(), kept.clone()));
        if !fits(fw, pod, &trial, index).is_success() {
            kept.pop();
            victims.push(p);
        }
    }
    if victims.is_empty() {
        return Err(Status::Error(format!(
            "expected at least one victim pod on node {:?}",
            node.name()
        )));
    }
    Ok(victims)
}

/// Among candidate nodes (index, victims most important first), the one to preempt on.
pub fn pick_node(candidates: &[(usize, Vec<Arc<Pod>>)]) -> Option<usize> {
    let now = tinykube_client::now();
    type Criterion = fn(&[Arc<Pod>], Timestamp) -> i64;
    let criteria: [Criterion; 4] = [
        // The lowest priority of the most important victim.
        |v, _| -(priority(&v[0]) as i64),
        // The lowest sum of priorities (shifted so that negative priorities still add up).
        |v, _| {
            -v.iter()
                .map(|p| priority(p) as i64 + i32::MAX as i64 + 1)
                .sum::<i64>()
        },
        // The fewest victims.
        |v, _| -(v.len() as i64),
        // The latest start among the victims of the highest priority.
        |v, now| {
            let top = priority(&v[0]);
            v.iter()
                .filter(|p| priority(p) == top)
                .map(|p| start_time(p, now))
                .min()
                .map(|t| t.as_nanosecond() as i64)
                .unwrap_or(i64::MIN)
        },
    ];
    let mut left: Vec<&(usize, Vec<Arc<Pod>>)> = candidates.iter().collect();
    for criterion in criteria {
        if left.len() <= 1 {
            break;
        }
        let scores: Vec<i64> = left.iter().map(|c| criterion(&c.1, now)).collect();
        let best = scores.iter().copied().max()?;
        left = left
            .into_iter()
            .zip(scores)
            .filter(|(_, s)| *s == best)
            .map(|(c, _)| c)
            .collect();
    }
    left.first().map(|c| c.0)
}

/// Decide preemption for `pod`, which failed every node as `diagnosis` says.
pub fn preempt(
    fw: &Framework,
    pod: &Pod,
    nodes: &[Arc<NodeInfo>],
    diagnosis: &Diagnosis,
    rng: &mut impl Rng,
) -> Outcome {
    if let Err(why) = eligible(pod, nodes, diagnosis) {
        return Outcome::NotEligible(why);
    }
    let potential: Vec<usize> = (0..nodes.len())
        .filter(|i| {
            diagnosis
                .statuses
                .get(*i)
                .is_some_and(Status::is_resolvable)
        })
        .collect();
    let wanted = (potential.len() * MIN_CANDIDATE_NODES_PERCENTAGE / 100)
        .max(MIN_CANDIDATE_NODES_ABSOLUTE)
        .min(potential.len());
    let offset = if potential.is_empty() {
        0
    } else {
        rng.random_range(0..potential.len())
    };
    let mut candidates = Vec::new();
    let mut failed: std::collections::BTreeMap<String, usize> = Default::default();
    let mut tried = 0;
    for k in 0..potential.len() {
        if candidates.len() >= wanted && !candidates.is_empty() {
            break;
        }
        let index = potential[(offset + k) % potential.len()];
        tried += 1;
        match select_victims(fw, pod, nodes, index) {
            Ok(victims) => candidates.push((index, victims)),
            Err(status) => {
                for r in status.reasons() {
                    *failed.entry(r).or_default() += 1;
                }
            }
        }
    }
    match pick_node(&candidates) {
        Some(index) => {
            let victims = candidates
                .into_iter()
                .find(|c| c.0 == index)
                .map(|c| c.1)
                .unwrap_or_default();
            Outcome::Nominate {
                node: nodes[index].name().to_string(),
                victims,
            }
        }
        None => {
            let absent = nodes.len() - tried;
            if absent > 0 {
                *failed.entry(NOT_HELPFUL.to_string()).or_default() += absent;
            }
            Outcome::NotHelpful(fit_error(nodes.len(), &failed))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Profile;
    use crate::framework::Handle;
    use crate::plugins::testing::node;
    use rand::SeedableRng;
    use serde_json::json;

    fn pod(name: &str, priority: i32, cpu: &str, started: Option<&str>) -> Arc<Pod> {
        let mut p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"priority": priority, "containers": [{"name": "c", "image": "i",
                "resources": {"requests": {"cpu": cpu}}}]},
        }))
        .unwrap();
        if let Some(t) = started {
            p.status = Some(serde_json::from_value(json!({"startTime": t})).unwrap());
        }
        Arc::new(p)
    }

    fn with_pods(name: &str, pods: Vec<Arc<Pod>>) -> Arc<NodeInfo> {
        let n = node(name, json!({}), json!({}));
        Arc::new(NodeInfo::new(n.node, pods))
    }

    fn names(v: &[Arc<Pod>]) -> Vec<String> {
        v.iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    /// What one case expects: the victims' names, or the reason no eviction helps.
    type Want<'a> = Result<Vec<&'a str>, &'a str>;
    type Pods = Vec<Arc<Pod>>;

    #[test]
    fn victims_are_the_fewest_least_important_pods() {
        // Nodes have 4 cpu. The preemptor wants 2.
        let cases: Vec<(&str, Pods, Want)> = vec![
            (
                "one low pod is enough; the more important stays",
                vec![pod("low", 1, "2", None), pod("mid", 5, "2", None)],
                Ok(vec!["low"]),
            ),
            (
                "both must go",
                vec![pod("a", 1, "3", None), pod("b", 2, "3", None)],
                Ok(vec!["b", "a"]),
            ),
            (
                "higher-priority pods are never victims",
                vec![pod("high", 100, "4", None)],
                Err(NO_VICTIMS),
            ),
            (
                "removing every lower pod is still not enough",
                vec![pod("high", 100, "3", None), pod("low", 1, "1", None)],
                Err("Insufficient cpu"),
            ),
        ];
        let fw = Framework::new(&Profile::default_named("p"), &Handle::detached());
        let preemptor = pod("p", 10, "2", None);
        for (what, pods, want) in cases {
            let nodes = vec![with_pods("n1", pods)];
            let got = select_victims(&fw, &preemptor, &nodes, 0);
            match (got, want) {
                (Ok(v), Ok(w)) => assert_eq!(names(&v), w, "{what}"),
                (Err(s), Err(w)) => assert_eq!(s.reasons(), vec![w.to_string()], "{what}"),
                (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn the_node_with_the_cheapest_victims_is_chosen() {
        let t1 = Some("2026-01-01T00:00:00Z");
        let t2 = Some("2026-01-02T00:00:00Z");
        let cases: Vec<(&str, Vec<Pods>, usize)> = vec![
            (
                "lowest highest priority",
                vec![vec![pod("a", 5, "1", t1)], vec![pod("b", 3, "1", t1)]],
                1,
            ),
            (
                "lowest sum",
                vec![
                    vec![pod("a", 3, "1", t1), pod("b", 3, "1", t1)],
                    vec![pod("c", 3, "1", t1), pod("d", 1, "1", t1)],
                ],
                1,
            ),
            (
                "fewest victims",
                vec![
                    vec![pod("a", 3, "1", t1), pod("b", 3, "1", t1)],
                    vec![pod("c", 3, "1", t1)],
                ],
                1,
            ),
            (
                "latest start",
                vec![vec![pod("a", 3, "1", t2)], vec![pod("b", 3, "1", t1)]],
                0,
            ),
        ];
        for (what, victims, want) in cases {
            let candidates: Vec<(usize, Vec<Arc<Pod>>)> = victims.into_iter().enumerate().collect();
            assert_eq!(pick_node(&candidates), Some(want), "{what}");
        }
    }

    #[test]
    fn preemption_nominates_or_explains() {
        let fw = Framework::new(&Profile::default_named("p"), &Handle::detached());
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let nodes = vec![
            with_pods("n1", vec![pod("high", 100, "4", None)]),
            with_pods("n2", vec![pod("low", 1, "3", None)]),
            with_pods("n3", vec![]),
        ];
        let diagnosis = Diagnosis {
            statuses: vec![
                Status::unschedulable("Insufficient cpu"),
                Status::unschedulable("Insufficient cpu"),
                Status::unresolvable("node(s) had untolerated taint(s)"),
            ],
        };
        let preemptor = pod("p", 10, "2", None);
        match preempt(&fw, &preemptor, &nodes, &diagnosis, &mut rng) {
            Outcome::Nominate { node, victims } => {
                assert_eq!(node, "n2");
                assert_eq!(names(&victims), ["low"]);
            }
            other => panic!("{other:?}"),
        }
        let humble = pod("p", 0, "2", None);
        match preempt(&fw, &humble, &nodes, &diagnosis, &mut rng) {
            Outcome::NotHelpful(m) => assert_eq!(
                m,
                "0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
            ),
            other => panic!("{other:?}"),
        }
        let mut never = (*preemptor).clone();
        never.spec.as_mut().unwrap().preemption_policy = Some("Never".into());
        match preempt(&fw, &never, &nodes, &diagnosis, &mut rng) {
            Outcome::NotEligible(m) => {
                assert_eq!(m, "not eligible due to preemptionPolicy=Never.")
            }
            other => panic!("{other:?}"),
        }
    }
}
