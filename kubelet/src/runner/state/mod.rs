//! What a pod's containers are doing, and what the API shows of it: each container's state
//! (waiting with a reason, running, terminated with its exit), restart count, last state,
//! readiness and startedness; and from them the pod's phase and conditions, by upstream's
//! kubelet rules (`getPhase`, the Initialized/ContainersReady/Ready conditions).

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, Pod, PodCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::containers::{image_id, normalize_image};

/// One container's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Waiting {
        reason: String,
        message: Option<String>,
    },
    Running {
        started_at: Timestamp,
    },
    Terminated(Exit),
}

/// How a run of a container ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    pub exit_code: i32,
    /// `Completed`, `Error` or `OOMKilled`.
    pub reason: String,
    pub message: Option<String>,
    pub started_at: Timestamp,
    pub finished_at: Timestamp,
    pub container_id: String,
}

impl Exit {
    /// The reason a runtime gives an exit: `Completed` for 0, `Error` otherwise.
    pub fn reason_for(code: i32, oom: bool) -> &'static str {
        match (code, oom) {
            (_, true) => "OOMKilled",
            (0, false) => "Completed",
            _ => "Error",
        }
    }
}

/// Which list of the pod spec a container is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Init,
    /// An init container with `restartPolicy: Always`.
    Sidecar,
    App,
}

/// One container as the status shows it.
#[derive(Debug, Clone)]
pub struct ContainerRun {
    pub name: String,
    pub image: String,
    pub kind: Kind,
    pub state: State,
    pub last: Option<Exit>,
    pub restarts: i32,
    pub ready: bool,
    /// The startup probe succeeded (or there is none) in this run.
    pub started: bool,
    /// The container ID of the current (or last) run.
    pub id: Option<String>,
}

impl ContainerRun {
    fn new(name: &str, image: &str, kind: Kind, waiting: &str) -> ContainerRun {
        ContainerRun {
            name: name.to_string(),
            image: image.to_string(),
            kind,
            state: State::Waiting {
                reason: waiting.into(),
                message: None,
            },
            last: None,
            restarts: 0,
            ready: false,
            started: false,
            id: None,
        }
    }

    pub fn is_running(&self) -> bool {
        matches!(self.state, State::Running { .. })
    }

    /// Terminated with exit code 0.
    pub fn succeeded(&self) -> bool {
        matches!(&self.state, State::Terminated(e) if e.exit_code == 0)
    }

    fn status(&self) -> ContainerStatus {
        let state = match &self.state {
            State::Waiting { reason, message } => ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(reason.clone()),
                    message: message.clone(),
                }),
                ..Default::default()
            },
            State::Running { started_at } => ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(Time(*started_at)),
                }),
                ..Default::default()
            },
            State::Terminated(e) => terminated(e),
        };
        let ran = self.id.is_some();
        ContainerStatus {
            name: self.name.clone(),
            image: normalize_image(&self.image),
            image_id: if ran {
                image_id(&self.image)
            } else {
                String::new()
            },
            container_id: self.id.clone(),
            ready: self.ready,
            started: Some(self.started && self.is_running()),
            restart_count: self.restarts,
            state: Some(state),
            last_state: Some(self.last.as_ref().map(terminated).unwrap_or_default()),
            ..Default::default()
        }
    }
}

fn terminated(e: &Exit) -> ContainerState {
    ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: e.exit_code,
            reason: Some(e.reason.clone()),
            message: e.message.clone(),
            started_at: Some(Time(e.started_at)),
            finished_at: Some(Time(e.finished_at)),
            container_id: Some(e.container_id.clone()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The containers of one pod.
#[derive(Debug, Clone)]
pub struct PodRun {
    pub inits: Vec<ContainerRun>,
    pub apps: Vec<ContainerRun>,
    pub restart_policy: String,
    /// When the pod's sandbox was made (PodReadyToStartContainers).
    pub sandbox_at: Timestamp,
    /// When Initialized, ContainersReady and Ready last changed.
    pub initialized_at: Timestamp,
    pub ready_at: Timestamp,
    /// The sandbox is gone (a terminal pod).
    pub sandbox_gone: bool,
    /// Bumped on every change, so writers know when to write.
    pub version: u64,
}

impl PodRun {
    /// A pod whose containers are about to be created.
    pub fn new(pod: &Pod, now: Timestamp) -> PodRun {
        let spec = pod.spec.clone().unwrap_or_default();
        let has_inits = spec.init_containers.as_ref().is_some_and(|i| !i.is_empty());
        let app_waiting = if has_inits {
            "PodInitializing"
        } else {
            "ContainerCreating"
        };
        let inits = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| {
                let kind = if c.restart_policy.as_deref() == Some("Always") {
                    Kind::Sidecar
                } else {
                    Kind::Init
                };
                ContainerRun::new(
                    &c.name,
                    c.image.as_deref().unwrap_or(""),
                    kind,
                    "PodInitializing",
                )
            })
            .collect();
        let apps = spec
            .containers
            .iter()
            .map(|c| {
                ContainerRun::new(
                    &c.name,
                    c.image.as_deref().unwrap_or(""),
                    Kind::App,
                    app_waiting,
                )
            })
            .collect();
        PodRun {
            inits,
            apps,
            restart_policy: spec.restart_policy.unwrap_or_else(|| "Always".into()),
            sandbox_at: now,
            initialized_at: now,
            ready_at: now,
            sandbox_gone: false,
            version: 0,
        }
    }

    /// The container named `name` (init or app).
    pub fn get_mut(&mut self, kind: Kind, name: &str) -> Option<&mut ContainerRun> {
        let list = match kind {
            Kind::App => &mut self.apps,
            Kind::Init | Kind::Sidecar => &mut self.inits,
        };
        list.iter_mut().find(|c| c.name == name)
    }

    /// Every init container has completed (sidecars: started).
    pub fn initialized(&self) -> bool {
        self.inits.iter().all(|c| match c.kind {
            Kind::Sidecar => c.started && c.is_running() || c.restarts > 0 || c.last.is_some(),
            _ => c.succeeded(),
        })
    }

    /// Every app container (and sidecar) is ready.
    pub fn containers_ready(&self) -> bool {
        self.apps
            .iter()
            .chain(self.inits.iter().filter(|c| c.kind == Kind::Sidecar))
            .all(|c| c.ready)
    }

    /// The pod phase, as upstream's kubelet derives it from its containers.
    pub fn phase(&self) -> &'static str {
        let never = self.restart_policy == "Never";
        let init_failed = self.inits.iter().any(|c| {
            c.kind == Kind::Init && matches!(&c.state, State::Terminated(e) if e.exit_code != 0)
        });
        if init_failed && never {
            return "Failed";
        }
        if !self.initialized() {
            return "Pending";
        }
        let (mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0);
        for c in &self.apps {
            match &c.state {
                State::Running { .. } => running += 1,
                State::Terminated(e) => {
                    stopped += 1;
                    if e.exit_code == 0 {
                        succeeded += 1;
                    }
                }
                State::Waiting { .. } if c.last.is_some() => stopped += 1,
                State::Waiting { .. } => waiting += 1,
            }
        }
        if waiting > 0 {
            return "Pending";
        }
        if running > 0 {
            return "Running";
        }
        if stopped > 0 {
            if self.restart_policy == "Always" {
                return "Running";
            }
            if stopped == succeeded {
                return "Succeeded";
            }
            if never {
                return "Failed";
            }
            return "Running";
        }
        "Pending"
    }

    /// The phase of a pod being deleted (upstream's `podIsTerminal`): once no app container
    /// runs or waits to start, it is done for good whatever its restart policy, `Succeeded`
    /// when every one exited 0, else `Failed`; before that, as [`PodRun::phase`].
    pub fn phase_when_deleted(&self) -> &'static str {
        let phase = self.phase();
        if phase != "Running" || self.apps.iter().any(ContainerRun::is_running) {
            return phase;
        }
        let all_ok = self
            .apps
            .iter()
            .all(|c| matches!(&c.state, State::Terminated(e) if e.exit_code == 0));
        if all_ok {
            "Succeeded"
        } else {
            "Failed"
        }
    }

    /// The containers' statuses: (app, init).
    pub fn statuses(&self) -> (Vec<ContainerStatus>, Option<Vec<ContainerStatus>>) {
        let apps = self.apps.iter().map(ContainerRun::status).collect();
        let inits =
            (!self.inits.is_empty()).then(|| self.inits.iter().map(ContainerRun::status).collect());
        (apps, inits)
    }

    /// The kubelet's four conditions, in upstream's order, then `scheduled`.
    pub fn conditions(&self, pod: &Pod, phase: &str) -> Vec<PodCondition> {
        let cond = |type_: &str, ok: bool, at: Timestamp| PodCondition {
            type_: type_.into(),
            status: if ok { "True" } else { "False" }.into(),
            last_transition_time: Some(Time(at)),
            observed_generation: pod.metadata.generation,
            ..Default::default()
        };
        let done = matches!(phase, "Succeeded" | "Failed");
        let mut out = vec![cond(
            "PodReadyToStartContainers",
            !self.sandbox_gone,
            self.sandbox_at,
        )];
        let mut init = cond("Initialized", self.initialized(), self.initialized_at);
        if phase == "Succeeded" {
            init.status = "True".into();
            init.reason = Some("PodCompleted".into());
        } else if !self.initialized() {
            let pending: Vec<&str> = self
                .inits
                .iter()
                .filter(|c| !(c.succeeded() || c.kind == Kind::Sidecar && c.started))
                .map(|c| c.name.as_str())
                .collect();
            init.reason = Some("ContainersNotInitialized".into());
            init.message = Some(format!(
                "containers with incomplete status: [{}]",
                pending.join(" ")
            ));
        }
        out.push(init);
        let ready = self.containers_ready() && !done;
        let gates_ok = readiness_gates_ok(pod);
        for (type_, ok) in [("Ready", ready && gates_ok), ("ContainersReady", ready)] {
            let mut c = cond(type_, ok, self.ready_at);
            if phase == "Succeeded" {
                c.reason = Some("PodCompleted".into());
            } else if !ready {
                let unready: Vec<&str> = self
                    .apps
                    .iter()
                    .chain(self.inits.iter().filter(|c| c.kind == Kind::Sidecar))
                    .filter(|c| !c.ready)
                    .map(|c| c.name.as_str())
                    .collect();
                c.reason = Some("ContainersNotReady".into());
                c.message = Some(format!(
                    "containers with unready status: [{}]",
                    unready.join(" ")
                ));
            } else if !ok {
                c.reason = Some("ReadinessGatesNotReady".into());
                c.message = missing_gate(pod);
            }
            out.push(c);
        }
        out
    }
}

/// The condition types the pod's `readinessGates` name.
fn gates(pod: &Pod) -> Vec<String> {
    pod.spec
        .iter()
        .flat_map(|s| s.readiness_gates.iter().flatten())
        .map(|g| g.condition_type.clone())
        .collect()
}

/// Why the first readiness gate whose condition is not True holds the pod, in upstream's
/// words.
fn missing_gate(pod: &Pod) -> Option<String> {
    let conds = pod.status.as_ref().and_then(|s| s.conditions.clone());
    gates(pod)
        .into_iter()
        .find_map(|g| match conds.iter().flatten().find(|c| c.type_ == g) {
            None => Some(format!(
                "corresponding condition of pod readiness gate \"{g}\" does not exist."
            )),
            Some(c) if c.status != "True" => Some(format!(
                "the status of pod readiness gate \"{g}\" is not \"True\", but {}",
                c.status
            )),
            Some(_) => None,
        })
}

/// Every readiness gate's condition is True.
pub fn readiness_gates_ok(pod: &Pod) -> bool {
    missing_gate(pod).is_none()
}

#[cfg(test)]
mod tests;
