//! The containers of the pods this kubelet runs, as a runtime would run them: each container's
//! process from `tinykube-runtime`, driven on tokio's clock, with its logs, its restarts and
//! its probes. [`crate::pods`] and [`crate::static_pods`] decide which pods run; this module
//! runs them and says what their containers are doing.
//!
//! What the streaming endpoints use: [`Kubelet::container_logs`] and [`Kubelet::exec`].

use tinykube_runtime::{BoxFuture, Stream};
use tokio::sync::mpsc;

use crate::logs::LogHandle;
use crate::Kubelet;

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

#[allow(dead_code)] // the streaming endpoints use them (landing next)
impl Kubelet {
    /// The logs of a container of a pod of ours (`previous` is read from the handle).
    pub(crate) fn container_logs(
        &self,
        namespace: &str,
        pod: &str,
        _container: &str,
    ) -> Result<LogHandle, StreamError> {
        Err(StreamError::PodNotFound {
            namespace: namespace.into(),
            pod: pod.into(),
        })
    }

    /// Start `argv` in a running container; the future is the command, ending in its exit
    /// code.
    pub(crate) fn exec(
        &self,
        namespace: &str,
        pod: &str,
        _container: &str,
        _argv: Vec<String>,
        _io: ExecIo,
    ) -> Result<BoxFuture<'static, i32>, StreamError> {
        Err(StreamError::PodNotFound {
            namespace: namespace.into(),
            pod: pod.into(),
        })
    }
}
