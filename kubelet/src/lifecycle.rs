//! The pod lifecycle as the kubelet plays it: a plain enum with `next()` (the allowed
//! transitions) and `status()` (what the API shows for each stage).
//!
//! A pod is admitted (or rejected: phase `Failed`), its containers created, then run by
//! [`crate::runner`], whose container states give the status of a `Running` pod (its phase
//! there follows the containers: Running, or Succeeded/Failed once they are done for good),
//! and deleted gracefully.

use k8s_openapi::api::core::v1::{HostIP, Pod, PodCondition, PodIP, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::containers;

/// Where a pod is in its life on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Bound to the node, not admitted yet.
    Pending,
    /// Admitted; its containers are being created (`ContainerCreating`).
    Creating,
    /// Admission refused it (does not fit): phase `Failed` for good.
    Rejected { reason: String, message: String },
    /// The runner has its containers (see [`Facts::run`]).
    Running,
    /// Deletion requested: containers being stopped; once they are, the phase is terminal
    /// whatever the restart policy (upstream's `podIsTerminal`).
    Terminating,
    /// Stopped; the API object is deleted.
    Terminated,
}

/// What happens to a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Admission passed: its containers are created.
    Admit,
    /// The runner took the pod's containers.
    Started,
    Reject {
        reason: String,
        message: String,
    },
    /// The pod got a `deletionTimestamp` (or its static manifest went away).
    DeletionRequested,
    /// Its containers are stopped.
    Stopped,
}

/// Facts about one pod that its status shows.
#[derive(Debug, Clone)]
pub struct Facts {
    pub host_ip: String,
    pub pod_ip: String,
    pub started_at: Timestamp,
    /// The pod's containers, once the runner has them.
    pub(crate) run: Option<std::sync::Arc<crate::runner::PodHandle>>,
}

impl Facts {
    /// Placeholder facts of a pod never started here, seen `now`.
    pub fn none(now: Timestamp) -> Facts {
        Facts {
            host_ip: String::new(),
            pod_ip: String::new(),
            started_at: now,
            run: None,
        }
    }
}

impl Stage {
    /// The stage after `input`, or `None` when that transition is not allowed.
    pub fn next(&self, input: &Input) -> Option<Stage> {
        use Stage::*;
        match (self, input) {
            (Pending, Input::Admit) => Some(Creating),
            (Creating, Input::Started) => Some(Running),
            (Pending, Input::Reject { reason, message }) => Some(Rejected {
                reason: reason.clone(),
                message: message.clone(),
            }),
            (Pending | Creating | Rejected { .. } | Running, Input::DeletionRequested) => {
                Some(Terminating)
            }
            (Terminating, Input::Stopped) => Some(Terminated),
            _ => None,
        }
    }

    /// Whether the pod holds node resources (counts in admission): not once it is done.
    pub fn holds_resources(&self, facts: &Facts) -> bool {
        let done = facts
            .run
            .as_ref()
            .is_some_and(|h| matches!(h.run().phase(), "Succeeded" | "Failed"));
        matches!(self, Stage::Creating | Stage::Running | Stage::Terminating) && !done
    }

    /// The pod's status in this stage; `None` while nothing is to be reported (`Terminated`).
    pub fn status(&self, pod: &Pod, facts: &Facts) -> Option<PodStatus> {
        let old = pod.status.clone().unwrap_or_default();
        let mut scheduled: Vec<PodCondition> = old
            .conditions
            .iter()
            .flatten()
            .filter(|c| c.type_ == "PodScheduled")
            .cloned()
            .collect();
        if scheduled.is_empty() {
            // Static pods were never scheduled: the kubelet reports them scheduled itself.
            scheduled.push(condition("PodScheduled", true, facts.started_at, pod));
        }
        let base = PodStatus {
            qos_class: old.qos_class.clone(),
            start_time: Some(old.start_time.clone().unwrap_or(Time(facts.started_at))),
            observed_generation: pod.metadata.generation,
            ..Default::default()
        };
        match self {
            Stage::Terminated => None,
            Stage::Pending => Some(PodStatus {
                phase: Some("Pending".into()),
                conditions: Some(scheduled),
                host_ip: Some(facts.host_ip.clone()),
                host_ips: Some(vec![HostIP {
                    ip: facts.host_ip.clone(),
                }]),
                ..base
            }),
            Stage::Creating => Some(PodStatus {
                phase: Some("Pending".into()),
                conditions: Some(conditions(pod, facts, false, false, scheduled)),
                host_ip: Some(facts.host_ip.clone()),
                host_ips: Some(vec![HostIP {
                    ip: facts.host_ip.clone(),
                }]),
                container_statuses: Some(containers::creating(pod)),
                ..base
            }),
            Stage::Rejected { reason, message } => Some(PodStatus {
                phase: Some("Failed".into()),
                reason: Some(reason.clone()),
                message: Some(format!("Pod was rejected: {message}")),
                conditions: Some(scheduled),
                ..base
            }),
            Stage::Running | Stage::Terminating => {
                let Some(h) = &facts.run else {
                    return Some(PodStatus {
                        phase: Some("Pending".into()),
                        conditions: Some(scheduled),
                        ..base
                    });
                };
                let run = h.run();
                let phase = match self {
                    Stage::Terminating => run.phase_when_deleted(),
                    _ => run.phase(),
                };
                let mut conditions = run.conditions(pod, phase);
                conditions.extend(scheduled.into_iter().map(|mut c| {
                    c.observed_generation = pod.metadata.generation;
                    c
                }));
                // Conditions others own (readiness gates, DisruptionTarget) stay as they are.
                conditions.extend(
                    old.conditions
                        .iter()
                        .flatten()
                        .filter(|c| !KUBELET_CONDITIONS.contains(&c.type_.as_str()))
                        .cloned(),
                );
                let (containers, inits) = run.statuses();
                Some(PodStatus {
                    phase: Some(phase.into()),
                    conditions: Some(conditions),
                    host_ip: Some(facts.host_ip.clone()),
                    host_ips: Some(vec![HostIP {
                        ip: facts.host_ip.clone(),
                    }]),
                    pod_ip: Some(facts.pod_ip.clone()),
                    pod_ips: Some(vec![PodIP {
                        ip: facts.pod_ip.clone(),
                    }]),
                    container_statuses: Some(containers),
                    init_container_statuses: inits,
                    ..base
                })
            }
        }
    }
}

/// The conditions the kubelet writes.
const KUBELET_CONDITIONS: &[&str] = &[
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
];

fn condition(type_: &str, ok: bool, at: Timestamp, pod: &Pod) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        last_transition_time: Some(Time(at)),
        observed_generation: pod.metadata.generation,
        ..Default::default()
    }
}

fn container_names(pod: &Pod) -> Vec<String> {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter().map(|c| c.name.clone()))
        .collect()
}

fn conditions(
    pod: &Pod,
    facts: &Facts,
    ready: bool,
    running: bool,
    scheduled: Vec<PodCondition>,
) -> Vec<PodCondition> {
    let started = facts.started_at;
    let mut out = vec![
        condition("PodReadyToStartContainers", running, started, pod),
        condition("Initialized", true, started, pod),
    ];
    let ready_at = started;
    for kind in ["Ready", "ContainersReady"] {
        let mut c = condition(kind, ready, ready_at, pod);
        if !ready {
            c.reason = Some("ContainersNotReady".into());
            c.message = Some(format!(
                "containers with unready status: [{}]",
                container_names(pod).join(" ")
            ));
        }
        out.push(c);
    }
    out.extend(scheduled.into_iter().map(|mut c| {
        c.observed_generation = pod.metadata.generation;
        c
    }));
    out
}

/// Whether the API's copy of a pod's status says something else than this kubelet reports:
/// another phase or pod IP, a condition with another status (the node lifecycle controller
/// marks the pods of a lost node not Ready), a container with another readiness or state.
/// Timestamps and messages are not compared: they follow from these.
pub fn drifted(api: Option<&PodStatus>, ours: &PodStatus) -> bool {
    let Some(api) = api else {
        return true;
    };
    let condition = |type_: &str| {
        api.conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == type_)
            .map(|c| c.status.as_str())
    };
    let state = |c: &k8s_openapi::api::core::v1::ContainerStatus| {
        c.state.as_ref().map(|s| {
            (
                s.running.is_some(),
                s.waiting.is_some(),
                s.terminated.is_some(),
            )
        })
    };
    let container_drifted = |ours: &k8s_openapi::api::core::v1::ContainerStatus| {
        let theirs = api
            .container_statuses
            .iter()
            .flatten()
            .find(|c| c.name == ours.name);
        theirs.is_none_or(|t| {
            t.ready != ours.ready || t.started != ours.started || state(t) != state(ours)
        })
    };
    api.phase != ours.phase
        || (ours.pod_ip.is_some() && api.pod_ip != ours.pod_ip)
        || ours
            .conditions
            .iter()
            .flatten()
            .any(|c| condition(&c.type_) != Some(c.status.as_str()))
        || ours
            .container_statuses
            .iter()
            .flatten()
            .any(container_drifted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "u1", "generation": 1},
            "spec": spec,
            "status": {"phase": "Pending", "qosClass": "BestEffort",
                       "conditions": [{"type": "PodScheduled", "status": "True"}]}
        }))
        .unwrap()
    }

    fn facts() -> Facts {
        Facts {
            host_ip: "192.168.10.10".into(),
            pod_ip: "10.244.1.2".into(),
            started_at: Timestamp::UNIX_EPOCH,
            run: None,
        }
    }

    #[test]
    fn walks_every_allowed_transition() {
        use Stage::*;
        let reject = Input::Reject {
            reason: "OutOfcpu".into(),
            message: "m".into(),
        };
        let rejected = Rejected {
            reason: "OutOfcpu".into(),
            message: "m".into(),
        };
        let inputs = [
            Input::Admit,
            Input::Started,
            reject.clone(),
            Input::DeletionRequested,
            Input::Stopped,
        ];
        let allowed: Vec<(Stage, &Input, Stage)> = vec![
            (Pending, &Input::Admit, Creating),
            (Pending, &reject, rejected.clone()),
            (Pending, &Input::DeletionRequested, Terminating),
            (Creating, &Input::Started, Running),
            (Creating, &Input::DeletionRequested, Terminating),
            (rejected.clone(), &Input::DeletionRequested, Terminating),
            (Running, &Input::DeletionRequested, Terminating),
            (Terminating, &Input::Stopped, Terminated),
        ];
        for stage in [
            Pending,
            Creating,
            rejected.clone(),
            Running,
            Terminating,
            Terminated,
        ] {
            for input in &inputs {
                let expected = allowed
                    .iter()
                    .find(|(s, i, _)| *s == stage && *i == input)
                    .map(|(_, _, to)| to.clone());
                assert_eq!(stage.next(input), expected, "{stage:?} on {input:?}");
            }
        }
    }

    #[test]
    fn drift_is_a_different_phase_ip_condition_or_container() {
        let p = pod(json!({"containers": [{"name": "nginx", "image": "nginx:1.14.2"}]}));
        let mut ours = Stage::Creating.status(&p, &facts()).unwrap();
        ours.pod_ip = Some("10.244.1.2".into());
        let with = |f: &dyn Fn(&mut PodStatus)| {
            let mut s = ours.clone();
            f(&mut s);
            s
        };
        let flip_ready = |s: &mut PodStatus| {
            for c in s.conditions.iter_mut().flatten() {
                if c.type_ == "Ready" {
                    c.status = "True".into();
                }
            }
        };
        let cases: Vec<(&str, Option<PodStatus>, bool)> = vec![
            ("the same", Some(ours.clone()), false),
            (
                "other timestamps and messages",
                Some(with(&|s| {
                    s.start_time = None;
                    for c in s.conditions.iter_mut().flatten() {
                        c.last_transition_time = None;
                        c.message = Some("x".into());
                    }
                })),
                false,
            ),
            ("no status", None, true),
            ("another condition status", Some(with(&flip_ready)), true),
            (
                "another phase",
                Some(with(&|s| s.phase = Some("Running".into()))),
                true,
            ),
            (
                "another IP",
                Some(with(&|s| s.pod_ip = Some("10.0.0.9".into()))),
                true,
            ),
            (
                "a container ready",
                Some(with(&|s| {
                    s.container_statuses.as_mut().unwrap()[0].ready = true;
                })),
                true,
            ),
            (
                "a container missing",
                Some(with(&|s| s.container_statuses = None)),
                true,
            ),
        ];
        for (what, api, want) in cases {
            assert_eq!(drifted(api.as_ref(), &ours), want, "{what}");
        }
    }

    #[test]
    fn status_of_each_stage() {
        let p = pod(json!({"containers": [{"name": "nginx", "image": "nginx:1.14.2"}]}));
        let f = facts();
        let cases: Vec<(Stage, Option<&str>)> = vec![
            (Stage::Pending, Some("Pending")),
            (Stage::Creating, Some("Pending")),
            (Stage::Terminated, None),
        ];
        for (stage, phase) in cases {
            let st = stage.status(&p, &f);
            assert_eq!(
                st.as_ref().and_then(|s| s.phase.as_deref()),
                phase,
                "{stage:?}"
            );
        }
        let creating = Stage::Creating.status(&p, &f).unwrap();
        let waiting = creating.container_statuses.unwrap()[0]
            .state
            .clone()
            .unwrap()
            .waiting;
        assert_eq!(
            waiting.unwrap().reason.as_deref(),
            Some("ContainerCreating")
        );
        assert!(creating.pod_ip.is_none());
        let rejected = Stage::Rejected {
            reason: "OutOfcpu".into(),
            message:
                "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"
                    .into(),
        }
        .status(&p, &f)
        .unwrap();
        assert_eq!(rejected.phase.as_deref(), Some("Failed"));
        assert_eq!(rejected.message.as_deref(), Some("Pod was rejected: Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"));
    }
}
