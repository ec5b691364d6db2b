//! tinykube-kubelet: a kubelet of simulated nodes. It registers one node (or, with
//! `--simulate-nodes`, many), keeps their Leases and conditions fresh, runs the pods bound to
//! them with simulated containers ([`runner`] over `tinykube-runtime`), and runs static pods
//! from manifest files or a URL with their mirror pods.
//!
//! One entry, [`run`]. Every simulated node shares one pod informer, one heartbeat timer, one
//! static-pod timer and one HTTP endpoint, so a thousand nodes cost little.

pub mod admission;
pub mod containers;
pub mod hash;
pub mod heartbeat;
pub mod ipam;
pub mod lifecycle;
pub mod logs;
pub mod node;
pub mod pods;
pub mod runner;
pub mod server;
pub mod static_pods;
pub mod stats;
pub mod streaming;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use k8s_openapi::jiff::Timestamp;
use tinykube_client::events::{EventType, Recorder};
pub(crate) use tinykube_client::reflector::key_of as reflector_key;
use tinykube_client::reflector::{Informer, Store};
use tinykube_client::{Api, Client, ListParams};
use tinykube_clock::Clock;
use tokio_util::sync::CancellationToken;

use crate::admission::Requests;
use crate::lifecycle::{Facts, Stage};
use crate::node::{Capacity, Machine, NodeConfig};

/// Settings of one kubelet process.
#[derive(Debug, Clone)]
pub struct Config {
    pub client: tinykube_client::Config,
    /// The nodes this process plays (one, or N with `--simulate-nodes`).
    pub nodes: Vec<NodeConfig>,
    pub capacity: Capacity,
    /// Create the Node objects (`--register-node`); otherwise wait for them to exist.
    pub register_node: bool,
    pub file_check_frequency: Duration,
    pub manifest_url: Option<String>,
    pub http_check_frequency: Duration,
    /// How often conditions are checked (`--node-status-update-frequency`).
    pub node_status_update_frequency: Duration,
    /// How often unchanged conditions are posted anyway (upstream: 5 min, or the update
    /// frequency when that flag was given).
    pub node_status_report_frequency: Duration,
    /// `leaseDurationSeconds` of the node Leases (upstream's nodeLeaseDurationSeconds, 40);
    /// they are renewed every quarter of it.
    pub node_lease_duration_seconds: i32,
    /// Where `/healthz`, `/pods` and the streaming endpoints (logs, exec, attach) are served
    /// (`None`: not served).
    pub serve_addr: Option<SocketAddr>,
    /// The cluster DNS server pods are told of (`--cluster-dns`).
    pub cluster_dns: String,
    /// The cluster's DNS domain (`--cluster-domain`).
    pub cluster_domain: String,
    /// Seeds the deterministic jitter of the simulated usage (`--seed`): the same seed gives
    /// the same figures run to run.
    pub seed: u64,
    /// The time of the cluster: heartbeats, leases, pod and container times, probes, back-offs,
    /// grace periods, the containers' own clocks and log times go by it (`Clock::real()` in the
    /// binary; a manual clock in an in-process test cluster).
    pub clock: Clock,
}

#[derive(Debug, thiserror::Error)]
pub enum KubeletError {
    #[error("connecting to the API server: {0}")]
    Client(#[from] tinykube_client::ClientError),
    #[error("serving the kubelet endpoint on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("no node to run: --simulate-nodes must be at least 1")]
    NoNodes,
}

/// A pod this kubelet runs (bound through the API, or static).
#[derive(Debug, Clone)]
pub(crate) struct PodRecord {
    pub stage: Stage,
    pub requests: Requests,
    pub facts: Facts,
    /// The pod's own IP came from the node's range (not hostNetwork).
    pub owns_ip: bool,
    /// A static pod (from a manifest), not an API pod.
    pub is_static: bool,
    /// Status writes of this pod under way (a drifted API copy is not re-asserted meanwhile).
    pub writing: u32,
}

/// What one node knows about its pods.
pub(crate) struct NodeLocal {
    pub ips: ipam::PodIps,
    /// Pods by UID (static pods under their generated UID).
    pub pods: HashMap<String, PodRecord>,
    /// Static pods by `namespace/name`.
    pub statics: std::collections::BTreeMap<String, static_pods::Running>,
    /// `hostPath` volumes by path: one tree each, shared by the node's pods.
    pub host_paths: HashMap<String, tinykube_runtime::Volume>,
}

impl NodeLocal {
    /// Requests and count of the pods holding resources.
    pub fn usage(&self) -> (Requests, i64) {
        let mut used = Requests::default();
        let mut n = 0;
        for r in self
            .pods
            .values()
            .filter(|r| r.stage.holds_resources(&r.facts))
        {
            used += r.requests;
            n += 1;
        }
        (used, n)
    }

    /// Forget a pod and give back its IP.
    pub fn forget(&mut self, uid: &str) -> Option<PodRecord> {
        let r = self.pods.remove(uid)?;
        if let Some(h) = &r.facts.run {
            // Gone from the API: its containers are killed at once.
            h.stop(Duration::ZERO);
        }
        if r.owns_ip {
            self.ips.release(&r.facts.pod_ip);
        }
        Some(r)
    }
}

/// One simulated node.
pub(crate) struct NodeState {
    pub config: NodeConfig,
    pub uid: Mutex<Option<String>>,
    pub since: Timestamp,
    pub lease: Mutex<Option<Lease>>,
    pub local: Mutex<NodeLocal>,
    /// When its conditions were last posted (an instant of the kubelet's clock).
    pub reported_at: Mutex<Option<tokio::time::Instant>>,
    /// What its containers use ([`stats`]).
    pub meter: Arc<stats::NodeMeter>,
}

impl NodeState {
    pub fn local(&self) -> std::sync::MutexGuard<'_, NodeLocal> {
        self.local.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tree of a `hostPath` volume of this node.
    pub fn host_path(&self, path: &str) -> tinykube_runtime::Volume {
        let path = tinykube_runtime::fs::absolute("/", path);
        self.local().host_paths.entry(path).or_default().clone()
    }

    pub fn uid(&self) -> Option<String> {
        self.uid.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The node as the kubelet's events name it (upstream uses the node name as its UID).
    pub fn reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(self.config.name.clone()),
            uid: Some(self.config.name.clone()),
            ..Default::default()
        }
    }
}

/// Shared state of a running kubelet process.
pub(crate) struct Kubelet {
    pub client: Client,
    pub capacity: Capacity,
    pub machine: Machine,
    pub nodes: Vec<Arc<NodeState>>,
    pub by_name: HashMap<String, usize>,
    pub pods: Store<Pod>,
    /// The Node objects as the API server has them: ours (to notice conditions changed by
    /// others) and the other kubelets' (the pod network reaches their pods).
    pub node_objects: Store<Node>,
    pub recorder: Recorder,
    /// Bounds concurrent writes to the API server.
    pub writes: tokio::sync::Semaphore,
    pub config: Config,
    /// UIDs of pods whose grace-0 delete is under way.
    pub finalizing: Mutex<HashSet<String>>,
    /// Pokes the static pod loop (the manifest URL answered).
    pub wake_static: tokio::sync::Notify,
    /// The cluster network the pods see (Services, endpoints, listening containers).
    pub network: Arc<runner::Cluster>,
    /// Where the API server reaches this process's endpoint (published on every Node).
    pub endpoint: Option<SocketAddr>,
    /// The cluster's time (`Config::clock`): what Kubernetes defines goes by it; retries,
    /// polls and timeouts of the plumbing stay on tokio's clock.
    pub clock: Clock,
}

impl Kubelet {
    pub fn finalizing(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.finalizing.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn node(&self, name: &str) -> Option<&Arc<NodeState>> {
        self.by_name.get(name).map(|&i| &self.nodes[i])
    }

    /// Record an event about one of our nodes (best effort).
    pub async fn node_event(&self, node: &NodeState, kind: EventType, reason: &str, msg: &str) {
        // As upstream's kubelet: the reference has no namespace (a Node has none; the Event
        // itself goes to `default`) and the node's name as its UID, which is what
        // `kubectl describe node` looks for.
        let reference = node.reference();
        if let Err(e) = self.recorder.record(&reference, kind, reason, msg).await {
            tracing::debug!(error = %e, reason, "could not record node event");
        }
    }

    /// Record an event about a pod (best effort).
    pub async fn pod_event(&self, pod: &Pod, kind: EventType, reason: &str, msg: &str) {
        let reference = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: pod.metadata.name.clone(),
            namespace: pod.metadata.namespace.clone(),
            uid: pod.metadata.uid.clone(),
            resource_version: pod.metadata.resource_version.clone(),
            ..Default::default()
        };
        if let Err(e) = self.recorder.record(&reference, kind, reason, msg).await {
            tracing::debug!(error = %e, reason, "could not record pod event");
        }
    }
}

/// Informer index: pods by `spec.nodeName`.
pub(crate) const BY_NODE: &str = "node";

/// The field selector of the one pod watch: this node's pods, or every bound pod when several
/// nodes are simulated (filtered here).
fn pod_selector(nodes: &[NodeConfig]) -> String {
    match nodes {
        [one] => format!("spec.nodeName={}", one.name),
        _ => "spec.nodeName!=".into(),
    }
}

/// Run until `shutdown` is cancelled.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), KubeletError> {
    if config.nodes.is_empty() {
        return Err(KubeletError::NoNodes);
    }
    let client = Client::new(config.client.clone())?;
    let informer = Informer::new(
        Api::<Pod>::all(client.clone()),
        ListParams::default().fields(&pod_selector(&config.nodes)),
    )
    .with_index(BY_NODE, |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect()
    });
    // Every Node: ours by name (conditions changed by others), the others for their podCIDRs
    // and kubelet addresses (the simulated network between kubelet processes).
    let node_informer = Informer::new(Api::<Node>::all(client.clone()), ListParams::default());
    let clock = config.clock.clone();
    let now = clock.timestamp();
    let nodes: Vec<Arc<NodeState>> = config
        .nodes
        .iter()
        .map(|n| {
            Arc::new(NodeState {
                config: n.clone(),
                uid: Mutex::new(None),
                since: now,
                lease: Mutex::new(None),
                reported_at: Mutex::new(None),
                meter: Arc::new(stats::NodeMeter::new(
                    &n.name,
                    config.seed,
                    config.capacity.allocatable.cpu_milli,
                    config.capacity.allocatable.memory.max(0) as u64,
                    clock.clone(),
                )),
                local: Mutex::new(NodeLocal {
                    ips: ipam::PodIps::new(&n.pod_cidr)
                        .or_else(|| ipam::PodIps::new("10.244.0.0/24"))
                        .expect("a literal CIDR parses"),
                    pods: HashMap::new(),
                    statics: Default::default(),
                    host_paths: HashMap::new(),
                }),
            })
        })
        .collect();
    let by_name = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.config.name.clone(), i))
        .collect();
    let host = config.nodes[0].name.clone();
    let services = Informer::new(
        Api::<k8s_openapi::api::core::v1::Service>::all(client.clone()),
        ListParams::default(),
    );
    let slices = Informer::new(
        Api::<k8s_openapi::api::discovery::v1::EndpointSlice>::all(client.clone()),
        ListParams::default(),
    );
    let network = Arc::new(runner::Cluster::new(
        services.store(),
        slices.store(),
        node_informer.store(),
        config.nodes.iter().map(|n| n.name.clone()).collect(),
        config.cluster_dns.clone(),
        config.cluster_domain.clone(),
        clock.clone(),
    ));
    // Bound before the Nodes are registered: they publish the port it got.
    let listener = match config.serve_addr {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| KubeletError::Bind { addr, source })?,
        ),
        None => None,
    };
    let endpoint = listener
        .as_ref()
        .and_then(|l| l.local_addr().ok())
        .map(node::reachable);
    if let Some(local) = listener.as_ref().and_then(|l| l.local_addr().ok()) {
        tracing::info!(addr = %local, "serving /healthz, /pods, /containerLogs, /exec, /attach, /simnet, /stats/summary and /metrics");
        println!("tinykube-kubelet serving /healthz and /pods on http://{local}");
    }
    let kubelet = Arc::new(Kubelet {
        recorder: Recorder::new(client.clone(), "kubelet", Some(&host)).with_clock(clock.clone()),
        client,
        capacity: config.capacity.clone(),
        machine: Machine::detect(),
        nodes,
        by_name,
        pods: informer.store(),
        node_objects: node_informer.store(),
        writes: tokio::sync::Semaphore::new(64),
        config,
        finalizing: Mutex::new(HashSet::new()),
        wake_static: tokio::sync::Notify::new(),
        network,
        endpoint,
        clock,
    });
    if let Some(listener) = listener {
        tokio::spawn(server::serve(listener, kubelet.clone(), shutdown.clone()));
    }
    let notifications = informer.subscribe();
    let informer_task = tokio::spawn(informer.run());
    let node_informer_task = tokio::spawn(node_informer.run());
    let service_task = tokio::spawn(services.run());
    let slice_task = tokio::spawn(slices.run());
    let mut tasks = vec![
        tokio::spawn(heartbeat::run(kubelet.clone(), shutdown.clone())),
        tokio::spawn(pods::run(kubelet.clone(), notifications, shutdown.clone())),
        tokio::spawn(static_pods::run(kubelet.clone(), shutdown.clone())),
    ];
    shutdown.cancelled().await;
    informer_task.abort();
    node_informer_task.abort();
    service_task.abort();
    slice_task.abort();
    for t in tasks.drain(..) {
        let _ = tokio::time::timeout(Duration::from_secs(2), t).await;
    }
    Ok(())
}
