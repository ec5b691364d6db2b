//! tinykube-testcluster: a whole cluster inside a test's process, started by [`TestCluster`].
//!
//! `builder` holds what a test asks for; `boot` starts the components as tasks on a
//! runtime of the cluster's own and waits for the nodes; this file is the handle the test
//! keeps, which stops everything and removes the data when it is dropped.
//!
#![doc = include_str!("../README.md")]

mod boot;
mod builder;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use builder::{Builder, NodeSpec, DEFAULT_CAPACITY};
pub use tinykube_clock::Clock;

/// How long a stopping cluster gives its components to finish before they are dropped.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a cluster could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("making the cluster's temporary directory: {0}")]
    TempDir(#[source] std::io::Error),
    #[error("starting the cluster's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("binding the API server's port: {0}")]
    Listen(#[source] std::io::Error),
    #[error("--controllers: {0}")]
    Controllers(String),
    #[error("node {node}: {message}")]
    Node { node: String, message: String },
    #[error("a component failed to start: {0}")]
    Component(String),
    #[error("timed out waiting for {0}")]
    Timeout(String),
}

/// A running cluster: an API server over a store in a temporary directory, the controller
/// manager, the scheduler and one kubelet per node, all tasks of this process. Dropping it
/// (also while a test panics) stops every component and removes the directory.
pub struct TestCluster {
    url: String,
    kubeconfig: PathBuf,
    nodes: Vec<String>,
    clock: Clock,
    /// The longest single move of the clock in [`advance`](Self::advance).
    step: Duration,
    running: Option<Running>,
}

impl std::fmt::Debug for TestCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCluster")
            .field("server", &self.url)
            .field("nodes", &self.nodes)
            .field("clock", &self.clock)
            .finish()
    }
}

impl TestCluster {
    /// How the cluster is made: nodes, controllers, clock, timing knobs.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A cluster with the defaults: one node `worker0`, every controller, the scheduler and
    /// the real clock.
    pub async fn start() -> Result<TestCluster, StartError> {
        Builder::default().start().await
    }

    /// The API server's URL (`http://127.0.0.1:PORT`).
    pub fn server_url(&self) -> &str {
        &self.url
    }

    /// A kubeconfig for this cluster (for kubectl, client-go, the Python client...).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The cluster's temporary directory (the store, the node directories).
    pub fn data_dir(&self) -> &Path {
        self.kubeconfig.parent().unwrap_or(Path::new("."))
    }

    /// The names of the nodes, in the order they were asked for.
    pub fn node_names(&self) -> &[String] {
        &self.nodes
    }

    /// Where node `node`'s kubelet looks for static pod manifests.
    pub fn manifests_dir(&self, node: &str) -> PathBuf {
        self.data_dir().join("nodes").join(node).join("manifests")
    }

    /// The cluster's clock (shared by every component).
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Move the cluster's manual clock forward: whatever falls due meanwhile (leases, node
    /// monitor grace periods, toleration seconds, back-offs, grace periods, schedules) fires.
    ///
    /// The clock moves in steps of at most a quarter of the node lease (10 s by default), and
    /// after each step this waits until every running kubelet has renewed its lease, as
    /// healthy machines would have during that time: a long advance makes a stopped node
    /// NotReady, never a running one.
    ///
    /// Call it inside a tokio runtime (it polls the API between steps).
    ///
    /// # Panics
    /// When the cluster was not built with [`Builder::manual_clock`].
    pub async fn advance(&self, by: Duration) {
        assert!(
            self.clock.is_manual(),
            "TestCluster::advance needs a cluster built with .manual_clock()"
        );
        let leases = tinykube_client::Api::namespaced(self.tinykube_client(), "kube-node-lease");
        let mut left = by;
        while !left.is_zero() {
            let step = left.min(self.step);
            self.clock.advance(step);
            left -= step;
            self.settle(&leases).await;
        }
    }

    /// Wait (a second at most) until the lease of every running node was renewed within the
    /// last step, then give the informers a moment to see it.
    async fn settle(
        &self,
        leases: &tinykube_client::Api<k8s_openapi::api::coordination::v1::Lease>,
    ) {
        let Some(running) = &self.running else {
            return;
        };
        let names: Vec<String> = lock(&running.kubelets)
            .iter()
            .filter(|(_, k)| k.task.is_some())
            .map(|(n, _)| n.clone())
            .collect();
        let due = self.clock.timestamp().as_second() - self.step.as_secs() as i64;
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while std::time::Instant::now() < deadline {
            let mut renewed = 0;
            if let Ok(list) = leases.list(&Default::default()).await {
                renewed = list
                    .items
                    .iter()
                    .filter(|l| names.iter().any(|n| l.metadata.name.as_ref() == Some(n)))
                    .filter(|l| {
                        l.spec
                            .as_ref()
                            .and_then(|s| s.renew_time.as_ref())
                            .is_some_and(|t| t.0.as_second() >= due)
                    })
                    .count();
            }
            if renewed == names.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    /// A kube-rs client for the cluster. Call it inside a tokio runtime.
    #[cfg(feature = "kube")]
    pub fn client(&self) -> kube::Client {
        let url = self.url.parse().expect("the server URL is a valid URI");
        kube::Client::try_from(kube::Config::new(url))
            .expect("a kube client for a plain-HTTP server")
    }

    /// A tinykube client for the cluster.
    pub fn tinykube_client(&self) -> tinykube_client::Client {
        tinykube_client::Client::new(tinykube_client::Config::new(&self.url))
            .expect("a client for a plain-HTTP server")
    }

    /// Stop node `node`'s kubelet, as a machine that fails: its lease and status are no
    /// longer renewed, its pods no longer reported. Returns false for an unknown or already
    /// stopped node.
    pub async fn stop_node(&self, node: &str) -> bool {
        let Some(running) = &self.running else {
            return false;
        };
        let task = {
            let mut kubelets = lock(&running.kubelets);
            let Some(k) = kubelets.get_mut(node) else {
                return false;
            };
            k.stop.cancel();
            k.task.take()
        };
        match task {
            Some(t) => {
                let _ = t.await;
                true
            }
            None => false,
        }
    }

    /// Start node `node`'s kubelet again after [`stop_node`](Self::stop_node): it resumes its
    /// node and the pods bound to it. Returns false for an unknown or running node.
    pub async fn start_node(&self, node: &str) -> bool {
        let Some(running) = &self.running else {
            return false;
        };
        let config = {
            let kubelets = lock(&running.kubelets);
            match kubelets.get(node) {
                Some(k) if k.task.is_none() => k.config.clone(),
                _ => return false,
            }
        };
        running.start_kubelet(node, config);
        true
    }

    /// Stop every component and remove the data, waiting for them to finish (what dropping
    /// the cluster does, without blocking the caller's thread).
    pub async fn stop(mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown.cancel();
            let tasks = running.take_tasks();
            let joined = running.handle().spawn(async move {
                let _ = tokio::time::timeout(STOP_TIMEOUT, futures::future::join_all(tasks)).await;
            });
            let _ = joined.await;
            drop(running);
        }
    }
}

/// What a running cluster owns; dropping it stops everything, then removes the directory.
pub(crate) struct Running {
    runtime: Option<tokio::runtime::Runtime>,
    shutdown: CancellationToken,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    kubelets: Mutex<BTreeMap<String, boot::KubeletRun>>,
    dir: Option<tempfile::TempDir>,
    /// The cluster's etcd, when it stores there.
    etcd: Mutex<Option<tinykube_store::LocalEtcd>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Running {
    fn handle(&self) -> tokio::runtime::Handle {
        self.runtime
            .as_ref()
            .expect("a running cluster has its runtime")
            .handle()
            .clone()
    }

    fn dir(&self) -> &Path {
        self.dir
            .as_ref()
            .expect("a running cluster has its directory")
            .path()
    }

    /// Run a component; an error or panic while the cluster runs is reported on stderr.
    fn spawn<F>(&self, name: &str, fut: F)
    where
        F: Future<Output = Result<(), String>> + Send + 'static,
    {
        let handle = self.handle();
        let inner = handle.spawn(fut);
        let shutdown = self.shutdown.clone();
        let name = name.to_string();
        let outer = handle.spawn(async move { boot::report(&name, &shutdown, inner.await) });
        lock(&self.tasks).push(outer);
    }

    /// Start (or start again) the kubelet of `node`.
    fn start_kubelet(&self, node: &str, config: tinykube_kubelet::Config) {
        let stop = self.shutdown.child_token();
        let handle = self.handle();
        let inner = {
            let (config, stop) = (config.clone(), stop.clone());
            handle.spawn(async move {
                tinykube_kubelet::run(config, stop)
                    .await
                    .map_err(|e| e.to_string())
            })
        };
        let name = format!("kubelet {node}");
        let watched = stop.clone();
        let task = handle.spawn(async move { boot::report(&name, &watched, inner.await) });
        lock(&self.kubelets).insert(
            node.to_string(),
            boot::KubeletRun {
                config,
                stop,
                task: Some(task),
            },
        );
    }

    /// Every task still running, kubelets included.
    fn take_tasks(&self) -> Vec<JoinHandle<()>> {
        let mut tasks = std::mem::take(&mut *lock(&self.tasks));
        tasks.extend(
            lock(&self.kubelets)
                .values_mut()
                .filter_map(|k| k.task.take()),
        );
        tasks
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
        let tasks = self.take_tasks();
        let etcd = lock(&self.etcd).take();
        if let Some(runtime) = self.runtime.take() {
            // A runtime cannot be shut down from inside another one (the test's): do it on a
            // thread of its own, and wait for it.
            let stopping = std::thread::spawn(move || {
                runtime.block_on(async {
                    let _ =
                        tokio::time::timeout(STOP_TIMEOUT, futures::future::join_all(tasks)).await;
                    if let Some(mut etcd) = etcd {
                        etcd.kill().await;
                    }
                });
                runtime.shutdown_timeout(Duration::from_secs(1));
            });
            let _ = stopping.join();
        }
        if let Some(dir) = self.dir.take() {
            let path = dir.path().to_path_buf();
            if let Err(e) = dir.close() {
                eprintln!("tinykube-testcluster: removing {}: {e}", path.display());
            }
        }
    }
}
