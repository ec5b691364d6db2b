//! The containers of the pods this kubelet runs, as a runtime would run them: each container's
//! process from `tinykube-runtime`, driven on the kubelet's clock, with its logs, its restarts
//! and its probes. [`crate::pods`] and [`crate::static_pods`] decide which pods run; this module
//! runs them and says what their containers are doing.
//!
//! What the streaming endpoints use: [`Kubelet::container_logs`] and [`Kubelet::exec`].

#[cfg(test)]
pub(crate) mod clock_tests;
mod env;
mod host;
pub(crate) mod network;
mod pod;
mod probes;
pub(crate) mod remote;
pub(crate) mod state;
mod volumes;

use std::sync::Arc;
use std::time::Duration;

use tinykube_runtime::{BoxFuture, Stream, Volume};
use tokio::sync::mpsc;

use crate::logs::LogHandle;
use crate::{Kubelet, NodeState};
pub(crate) use network::Cluster;
use network::PodNetwork;
pub(crate) use pod::PodHandle;

/// Why a container's logs, or a command in it, cannot be had (the kubelet answers 4xx; the
/// message is shown to the user as is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// No pod of that namespace and name runs here.
    #[error("pod \"{pod}\" in namespace \"{namespace}\" not found")]
    PodNotFound { namespace: String, pod: String },
    /// The pod has no such container.
    #[error("container \"{container}\" in pod \"{pod}\" not found")]
    ContainerNotFound { pod: String, container: String },
    /// The container has not started (logs) or is not running (exec); the message is the
    /// kubelet's own, e.g. `container "app" in pod "p" is waiting to start: ContainerCreating`.
    #[error("{0}")]
    NotRunning(String),
}

/// The stdio of a command run with [`Kubelet::exec`].
pub struct ExecIo {
    /// Stdin chunks (`None`: the command has no stdin, and reads end at once).
    pub stdin: Option<mpsc::Receiver<String>>,
    /// Stdout and stderr as written (with a TTY, stderr is written to stdout).
    pub output: mpsc::UnboundedSender<(Stream, String)>,
    pub tty: bool,
}

/// Host paths of a node, one tree per path (`hostPath` volumes).
pub(crate) type HostPaths = Arc<dyn Fn(&str) -> Volume + Send + Sync>;

/// The crash-loop back-off of one container: the first restart at once, then 10 s doubling to
/// 5 min; reset once a run lasted 10 min.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    current: Option<Duration>,
}

const BACKOFF_START: Duration = Duration::from_secs(10);
const BACKOFF_MAX: Duration = Duration::from_secs(300);
const BACKOFF_RESET: Duration = Duration::from_secs(600);

impl Backoff {
    /// How long to wait before the next start, after a run that lasted `ran_for`.
    pub fn next(&mut self, ran_for: Duration) -> Duration {
        if ran_for >= BACKOFF_RESET {
            self.current = None;
        }
        match self.current {
            None => {
                self.current = Some(BACKOFF_START);
                Duration::ZERO
            }
            Some(d) => {
                self.current = Some((d * 2).min(BACKOFF_MAX));
                d
            }
        }
    }
}

/// Start running an admitted pod's containers on node `n`; the handle the pod's record keeps.
pub(crate) fn start(
    k: &Arc<Kubelet>,
    n: &Arc<NodeState>,
    pod: Arc<k8s_openapi::api::core::v1::Pod>,
    pod_ip: &str,
    host_ip: &str,
) -> Arc<PodHandle> {
    let spec = pod.spec.clone().unwrap_or_default();
    let hostname = spec
        .hostname
        .clone()
        .or_else(|| pod.metadata.name.clone())
        .unwrap_or_default();
    let kubelet = Arc::downgrade(k);
    let network = Arc::new(PodNetwork {
        cluster: k.network.clone(),
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        pod_ip: pod_ip.to_string(),
        hostname,
        known_ip: Arc::new(move |ip: &str| kubelet.upgrade().is_some_and(|k| k.holds_ip(ip))),
    });
    let h = Arc::new(PodHandle::new(
        pod,
        network,
        host_ip.to_string(),
        k.nodes.len() == 1,
        k.clock.clone(),
        n.meter.clone(),
    ));
    let node = n.clone();
    let host_paths: HostPaths = Arc::new(move |path: &str| node.host_path(path));
    let (namespace, name) = (h.namespace(), h.name());
    n.meter.add_pod(
        &namespace,
        &name,
        &h.pod.metadata.uid.clone().unwrap_or_default(),
    );
    let (k2, h2) = (k.clone(), h.clone());
    tokio::spawn(async move {
        let meter = h2.meter.clone();
        pod::run(k2, h2, host_paths).await;
        meter.remove_pod(&namespace, &name);
    });
    h
}

/// Write the pod's status whenever its containers change (coalesced), until it is done.
pub(crate) async fn report(k: Arc<Kubelet>, n: Arc<NodeState>, h: Arc<PodHandle>) {
    let key = format!("{}/{}", h.namespace(), h.name());
    let mut written = None;
    let mut first_write = true;
    loop {
        let notified = h.changed.notified();
        let version = h.run().version;
        // Version 0: nothing has happened to the containers yet (the pod shows
        // ContainerCreating, or nothing on simulated nodes, until one starts).
        if version > 0 && written != Some(version) {
            // Let a burst of changes land in one write (tokio's clock: a batching window).
            tokio::time::sleep(Duration::from_millis(20)).await;
            written = Some(h.run().version);
            let pod = k.pods.get(&key).unwrap_or_else(|| h.pod.clone());
            if pod.metadata.uid != h.pod.metadata.uid || pod.metadata.deletion_timestamp.is_some() {
                return;
            }
            // A pod taken over after a restart is written only if it shows something else
            // (later writes always go: the informer's copy may be behind our last write).
            let first = std::mem::replace(&mut first_write, false);
            let adopted = h.adopted.load(std::sync::atomic::Ordering::Relaxed);
            if !(first && adopted && already_shown(&n, &pod)) {
                crate::pods::write_status(&k, &n, &pod).await;
            }
            continue;
        }
        if h.done.is_cancelled() {
            return;
        }
        tokio::select! {
            _ = notified => {}
            _ = h.done.cancelled() => {}
        }
    }
}

/// Whether the API's copy of the pod already shows what its containers are doing: the same
/// phase, conditions and container states (`lifecycle::drifted`), restart counts and container
/// IDs. A pod taken over after a kubelet restart is then not written again.
fn already_shown(n: &NodeState, pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let ours = {
        let local = n.local();
        let Some(rec) = local.pods.get(&uid) else {
            return true;
        };
        rec.stage.status(pod, &rec.facts)
    };
    let (Some(ours), Some(api)) = (ours, pod.status.as_ref()) else {
        return false;
    };
    let ids = |s: &k8s_openapi::api::core::v1::PodStatus| -> Vec<(String, i32, Option<String>)> {
        s.container_statuses
            .iter()
            .flatten()
            .chain(s.init_container_statuses.iter().flatten())
            .map(|c| (c.name.clone(), c.restart_count, c.container_id.clone()))
            .collect()
    };
    !crate::lifecycle::drifted(Some(api), &ours) && ids(api) == ids(&ours)
}

impl Kubelet {
    /// Whether one of our pods holds `ip`.
    pub(crate) fn holds_ip(&self, ip: &str) -> bool {
        self.nodes
            .iter()
            .any(|n| n.local().pods.values().any(|r| r.facts.pod_ip == ip))
    }

    /// The IP and uid of the running pod `namespace/name` of any of our nodes.
    pub(crate) fn pod_address(&self, namespace: &str, pod: &str) -> Option<(String, String)> {
        self.nodes.iter().find_map(|n| {
            let local = n.local();
            local.pods.values().find_map(|r| {
                let h = r.facts.run.as_ref()?;
                (h.namespace() == namespace && h.name() == pod).then(|| {
                    let uid = h.pod.metadata.uid.clone().unwrap_or_default();
                    (r.facts.pod_ip.clone(), uid)
                })
            })
        })
    }

    /// The running pod `namespace/name` of any of our nodes.
    fn find_pod(&self, namespace: &str, pod: &str) -> Result<Arc<PodHandle>, StreamError> {
        for n in &self.nodes {
            let local = n.local();
            for r in local.pods.values() {
                if let Some(h) = &r.facts.run {
                    if h.namespace() == namespace && h.name() == pod {
                        return Ok(h.clone());
                    }
                }
            }
        }
        Err(StreamError::PodNotFound {
            namespace: namespace.into(),
            pod: pod.into(),
        })
    }

    /// The logs of a container of a pod of ours (`previous` is read from the handle).
    pub(crate) fn container_logs(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Result<LogHandle, StreamError> {
        let h = self.find_pod(namespace, pod)?;
        let waiting = {
            let run = h.run();
            let c = run
                .apps
                .iter()
                .chain(run.inits.iter())
                .find(|c| c.name == container)
                .ok_or_else(|| StreamError::ContainerNotFound {
                    pod: pod.into(),
                    container: container.into(),
                })?;
            match (&c.state, c.id.is_some()) {
                (state::State::Waiting { reason, .. }, false) => Some(reason.clone()),
                _ => None,
            }
        };
        if let Some(reason) = waiting {
            return Err(StreamError::NotRunning(format!(
                "container \"{container}\" in pod \"{pod}\" is waiting to start: {reason}"
            )));
        }
        Ok(h.logs_of(container))
    }

    /// The stdin of a running container that has one (`stdin: true`), and whether it closes
    /// when the first attach ends (`stdinOnce`).
    pub(crate) fn attach_stdin(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Option<(mpsc::Sender<String>, bool)> {
        let h = self.find_pod(namespace, pod).ok()?;
        let once = h
            .pod
            .spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .find(|c| c.name == container)
            .and_then(|c| c.stdin_once)
            .unwrap_or(false);
        let tx = h
            .stdin
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(container)
            .cloned()?;
        Some((tx, once))
    }

    /// Close a container's stdin (the end of the attach of a `stdinOnce` container).
    pub(crate) fn close_stdin(&self, namespace: &str, pod: &str, container: &str) {
        if let Ok(h) = self.find_pod(namespace, pod) {
            h.stdin
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(container);
        }
    }

    /// Start `argv` in a running container; the future is the command, ending in its exit
    /// code.
    pub(crate) fn exec(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        argv: Vec<String>,
        io: ExecIo,
    ) -> Result<BoxFuture<'static, i32>, StreamError> {
        let h = self.find_pod(namespace, pod)?;
        let known = {
            let run = h.run();
            run.apps
                .iter()
                .chain(run.inits.iter())
                .any(|c| c.name == container)
        };
        if !known {
            return Err(StreamError::ContainerNotFound {
                pod: pod.into(),
                container: container.into(),
            });
        }
        let Some(live) = h.live(container) else {
            return Err(StreamError::NotRunning(format!(
                "container not found (\"{container}\")"
            )));
        };
        let mut host = host::KubeletHost {
            clock: live.clock.clone(),
            signals: Arc::new(host::Signals::default()),
            output: host::Output::Session {
                tx: io.output,
                tty: io.tty,
            },
            stdin: io.stdin,
            network: live.network.clone(),
            place: live.place.clone(),
            usage: Arc::new(host::Usage::default()),
        };
        Ok(Box::pin(async move {
            tinykube_runtime::run_exec(&argv, &live.spec, live.fs.clone(), &mut host).await
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_restarts_at_once_then_doubles_to_five_minutes() {
        let mut b = Backoff::default();
        let short = Duration::from_secs(1);
        let got: Vec<u64> = (0..8).map(|_| b.next(short).as_secs()).collect();
        assert_eq!(got, [0, 10, 20, 40, 80, 160, 300, 300]);
        assert_eq!(b.next(Duration::from_secs(601)), Duration::ZERO);
        assert_eq!(b.next(short), Duration::from_secs(10));
    }
}
