//! DefaultPreemption (PostFilter): when a pod fits nowhere, look for a node where removing
//! pods of lower priority makes room, evict the fewest and least important of them, and
//! nominate the node for the pod (`status.nominatedNodeName`).
//!
//! The choice follows upstream: only nodes that failed with a resolvable reason are tried; on
//! each, every lower-priority pod is removed, and if the pod then fits, the removed pods are
//! put back one by one, keeping each that still leaves room: first those whose eviction would
//! violate a PodDisruptionBudget (`status.disruptionsAllowed` spent pod by pod), then the
//! others, most important first in both groups. Among the candidate nodes the one with the
//! fewest budget violations wins, then the one whose most important victim has the lowest
//! priority, then the lowest sum of victim priorities, then the fewest victims, then the latest
//! start of the most important victims.

mod budgets;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use rand::Rng;

pub use budgets::split_by_pdb;

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

/// A node preemption could free for the pod.
#[derive(Debug)]
pub struct Candidate {
    /// The node's index in the snapshot.
    pub index: usize,
    /// The pods to evict, most important first.
    pub victims: Vec<Arc<Pod>>,
    /// How many of them a PodDisruptionBudget does not allow to go.
    pub pdb_violations: usize,
}

/// The fewest, least important pods to evict from `nodes[index]` for `pod` to fit there,
/// sparing those a PodDisruptionBudget protects when it can; or why no eviction there helps.
/// Pods not started yet rank as starting `now`.
pub fn select_victims(
    fw: &Framework,
    pod: &Pod,
    nodes: &[Arc<NodeInfo>],
    index: usize,
    pdbs: &[Arc<PodDisruptionBudget>],
    now: Timestamp,
) -> Result<Candidate, Status> {
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
    potential.sort_by(|a, b| more_important(a, b, now));
    let (violating, others) = split_by_pdb(potential, pdbs);
    let mixed = !violating.is_empty() && !others.is_empty();
    let mut victims = Vec::new();
    let mut pdb_violations = 0;
    // Reprieve the protected pods first, so that they go only when nothing else makes room.
    for (protected, group) in [(true, violating), (false, others)] {
        for p in group {
            kept.push(p.clone());
            trial[index] = Arc::new(NodeInfo::new(node.node.clone(), kept.clone()));
            if !fits(fw, pod, &trial, index).is_success() {
                kept.pop();
                victims.push(p);
                pdb_violations += usize::from(protected);
            }
        }
    }
    if victims.is_empty() {
        return Err(Status::Error(format!(
            "expected at least one victim pod on node {:?}",
            node.name()
        )));
    }
    if mixed {
        victims.sort_by(|a, b| more_important(a, b, now));
    }
    Ok(Candidate {
        index,
        victims,
        pdb_violations,
    })
}

/// Among candidate nodes, the one to preempt on (its index), by upstream's criteria in order
/// (victims not started yet count as starting `now`).
pub fn pick_node(candidates: &[Candidate], now: Timestamp) -> Option<usize> {
    type Criterion = fn(&Candidate, Timestamp) -> i64;
    let criteria: [Criterion; 5] = [
        // The fewest PodDisruptionBudget violations.
        |c, _| -(c.pdb_violations as i64),
        // The lowest priority of the most important victim.
        |c, _| -(priority(&c.victims[0]) as i64),
        // The lowest sum of priorities (shifted so that negative priorities still add up).
        |c, _| {
            -c.victims
                .iter()
                .map(|p| priority(p) as i64 + i32::MAX as i64 + 1)
                .sum::<i64>()
        },
        // The fewest victims.
        |c, _| -(c.victims.len() as i64),
        // The latest start among the victims of the highest priority.
        |c, now| {
            let top = priority(&c.victims[0]);
            c.victims
                .iter()
                .filter(|p| priority(p) == top)
                .map(|p| start_time(p, now))
                .min()
                .map(|t| t.as_nanosecond() as i64)
                .unwrap_or(i64::MIN)
        },
    ];
    let mut left: Vec<&Candidate> = candidates.iter().collect();
    for criterion in criteria {
        if left.len() <= 1 {
            break;
        }
        let scores: Vec<i64> = left.iter().map(|c| criterion(c, now)).collect();
        let best = scores.iter().copied().max()?;
        left = left
            .into_iter()
            .zip(scores)
            .filter(|(_, s)| *s == best)
            .map(|(c, _)| c)
            .collect();
    }
    left.first().map(|c| c.index)
}

/// Decide preemption for `pod`, which failed every node as `diagnosis` says.
pub fn preempt(
    fw: &Framework,
    pod: &Pod,
    nodes: &[Arc<NodeInfo>],
    diagnosis: &Diagnosis,
    pdbs: &[Arc<PodDisruptionBudget>],
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
    let now = fw.clock().timestamp();
    let mut candidates = Vec::new();
    let mut failed: std::collections::BTreeMap<String, usize> = Default::default();
    let mut tried = 0;
    for k in 0..potential.len() {
        if candidates.len() >= wanted && !candidates.is_empty() {
            break;
        }
        let index = potential[(offset + k) % potential.len()];
        tried += 1;
        match select_victims(fw, pod, nodes, index, pdbs, now) {
            Ok(candidate) => candidates.push(candidate),
            Err(status) => {
                for r in status.reasons() {
                    *failed.entry(r).or_default() += 1;
                }
            }
        }
    }
    match pick_node(&candidates, now) {
        Some(index) => {
            let victims = candidates
                .into_iter()
                .find(|c| c.index == index)
                .map(|c| c.victims)
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

    /// The scheduler's clock in these tests, after every pod's start.
    fn now() -> Timestamp {
        "2026-02-01T00:00:00Z".parse().expect("a time")
    }

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

    /// `pod` with the label `app`.
    fn app(pod: Arc<Pod>, app: &str) -> Arc<Pod> {
        let mut p = (*pod).clone();
        p.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        Arc::new(p)
    }

    /// A budget in `ns` over `app=<app>` with `allowed` disruptions left and the named pods
    /// already being evicted.
    fn pdb(ns: &str, app: &str, allowed: i32, disrupted: &[&str]) -> Arc<PodDisruptionBudget> {
        let disrupted: serde_json::Map<String, serde_json::Value> = disrupted
            .iter()
            .map(|p| (p.to_string(), json!("2026-01-01T00:00:00Z")))
            .collect();
        let selector = if app.is_empty() {
            json!({})
        } else {
            json!({"matchLabels": {"app": app}})
        };
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": format!("{app}-pdb"), "namespace": ns},
                "spec": {"selector": selector},
                "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted,
                           "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
            }))
            .unwrap(),
        )
    }

    /// What one case expects: the victims' names and how many violate a budget, or the reason
    /// no eviction helps.
    type Want<'a> = Result<(Vec<&'a str>, usize), &'a str>;
    type Pods = Vec<Arc<Pod>>;
    type Budgets = Vec<Arc<PodDisruptionBudget>>;

    #[test]
    fn victims_are_the_fewest_least_important_pods() {
        // Nodes have 4 cpu. The preemptor wants 2.
        let cases: Vec<(&str, Pods, Budgets, Want)> = vec![
            (
                "one low pod is enough; the more important stays",
                vec![pod("low", 1, "2", None), pod("mid", 5, "2", None)],
                vec![],
                Ok((vec!["low"], 0)),
            ),
            (
                "both must go",
                vec![pod("a", 1, "3", None), pod("b", 2, "3", None)],
                vec![],
                Ok((vec!["b", "a"], 0)),
            ),
            (
                "higher-priority pods are never victims",
                vec![pod("high", 100, "4", None)],
                vec![],
                Err(NO_VICTIMS),
            ),
            (
                "removing every lower pod is still not enough",
                vec![pod("high", 100, "3", None), pod("low", 1, "1", None)],
                vec![],
                Err("Insufficient cpu"),
            ),
            (
                "a budget spares the less important pod; the other goes",
                vec![
                    app(pod("db", 1, "2", None), "db"),
                    app(pod("web", 5, "2", None), "web"),
                ],
                vec![pdb("default", "db", 0, &[])],
                Ok((vec!["web"], 0)),
            ),
            (
                "a budget with a disruption left protects nothing",
                vec![
                    app(pod("db", 1, "2", None), "db"),
                    app(pod("web", 5, "2", None), "web"),
                ],
                vec![pdb("default", "db", 1, &[])],
                Ok((vec!["db"], 0)),
            ),
            (
                "a pod already being evicted spends nothing",
                vec![
                    app(pod("db", 1, "2", None), "db"),
                    app(pod("web", 5, "2", None), "web"),
                ],
                vec![pdb("default", "db", 0, &["db"])],
                Ok((vec!["db"], 0)),
            ),
            (
                "budgets of other namespaces and empty selectors do not count",
                vec![
                    app(pod("db", 1, "2", None), "db"),
                    app(pod("web", 5, "2", None), "web"),
                ],
                vec![pdb("other", "db", 0, &[]), pdb("default", "", 0, &[])],
                Ok((vec!["db"], 0)),
            ),
            (
                "when both must go, the violation is counted",
                vec![
                    app(pod("db", 1, "3", None), "db"),
                    app(pod("web", 2, "3", None), "web"),
                ],
                vec![pdb("default", "db", 0, &[])],
                Ok((vec!["web", "db"], 1)),
            ),
            (
                "one disruption allowed for two pods: the second overspends it",
                vec![
                    app(pod("db-0", 2, "2", None), "db"),
                    app(pod("db-1", 1, "2", None), "db"),
                ],
                vec![pdb("default", "db", 1, &[])],
                Ok((vec!["db-0"], 0)),
            ),
        ];
        let fw = Profile::default_named("p").framework(&Handle::detached());
        let preemptor = pod("p", 10, "2", None);
        for (what, pods, pdbs, want) in cases {
            let nodes = vec![with_pods("n1", pods)];
            let got = select_victims(&fw, &preemptor, &nodes, 0, &pdbs, now());
            match (got, want) {
                (Ok(c), Ok((w, violations))) => {
                    assert_eq!(names(&c.victims), w, "{what}");
                    assert_eq!(c.pdb_violations, violations, "{what}");
                }
                (Err(s), Err(w)) => assert_eq!(s.reasons(), vec![w.to_string()], "{what}"),
                (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn the_node_with_the_cheapest_victims_is_chosen() {
        let t1 = Some("2026-01-01T00:00:00Z");
        let t2 = Some("2026-01-02T00:00:00Z");
        // (what, each node's victims and budget violations, the node chosen)
        type Victims = Vec<(Pods, usize)>;
        let cases: Vec<(&str, Victims, usize)> = vec![
            (
                "fewest budget violations, before any priority",
                vec![
                    (vec![pod("a", 1, "1", t1)], 1),
                    (vec![pod("b", 9, "1", t1)], 0),
                ],
                1,
            ),
            (
                "lowest highest priority",
                vec![
                    (vec![pod("a", 5, "1", t1)], 0),
                    (vec![pod("b", 3, "1", t1)], 0),
                ],
                1,
            ),
            (
                "lowest sum",
                vec![
                    (vec![pod("a", 3, "1", t1), pod("b", 3, "1", t1)], 0),
                    (vec![pod("c", 3, "1", t1), pod("d", 1, "1", t1)], 0),
                ],
                1,
            ),
            (
                "fewest victims",
                vec![
                    (vec![pod("a", 3, "1", t1), pod("b", 3, "1", t1)], 0),
                    (vec![pod("c", 3, "1", t1)], 0),
                ],
                1,
            ),
            (
                "latest start",
                vec![
                    (vec![pod("a", 3, "1", t2)], 0),
                    (vec![pod("b", 3, "1", t1)], 0),
                ],
                0,
            ),
            (
                "a victim not started yet starts at the scheduler's clock",
                vec![
                    (vec![pod("a", 3, "1", t2)], 0),
                    (vec![pod("b", 3, "1", None)], 0),
                ],
                1,
            ),
        ];
        for (what, nodes, want) in cases {
            let candidates: Vec<Candidate> = nodes
                .into_iter()
                .enumerate()
                .map(|(index, (victims, pdb_violations))| Candidate {
                    index,
                    victims,
                    pdb_violations,
                })
                .collect();
            assert_eq!(pick_node(&candidates, now()), Some(want), "{what}");
        }
    }

    #[test]
    fn preemption_nominates_or_explains() {
        let fw = Profile::default_named("p").framework(&Handle::detached());
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
        match preempt(&fw, &preemptor, &nodes, &diagnosis, &[], &mut rng) {
            Outcome::Nominate { node, victims } => {
                assert_eq!(node, "n2");
                assert_eq!(names(&victims), ["low"]);
            }
            other => panic!("{other:?}"),
        }
        let humble = pod("p", 0, "2", None);
        match preempt(&fw, &humble, &nodes, &diagnosis, &[], &mut rng) {
            Outcome::NotHelpful(m) => assert_eq!(
                m,
                "0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
            ),
            other => panic!("{other:?}"),
        }
        let mut never = (*preemptor).clone();
        never.spec.as_mut().unwrap().preemption_policy = Some("Never".into());
        match preempt(&fw, &never, &nodes, &diagnosis, &[], &mut rng) {
            Outcome::NotEligible(m) => {
                assert_eq!(m, "not eligible due to preemptionPolicy=Never.")
            }
            other => panic!("{other:?}"),
        }
    }
}
