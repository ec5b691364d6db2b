//! What a test asks of its cluster: the nodes (names, labels, taints, capacity, static pods),
//! which components and controllers run, the scheduler's seed, the clock and the timing knobs.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::{StartError, TestCluster};

/// One node of a [`TestCluster`] and how its kubelet describes it.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) taints: String,
    pub(crate) capacity: String,
    pub(crate) static_pods: Vec<(String, String)>,
}

/// The capacity of every node unless told otherwise (the kubelet's own default).
pub const DEFAULT_CAPACITY: &str = "cpu=4,memory=8Gi,ephemeral-storage=20Gi,pods=110";

impl NodeSpec {
    /// A node named `name` with the default capacity, no extra label and no taint.
    pub fn new(name: impl Into<String>) -> Self {
        NodeSpec {
            name: name.into(),
            labels: BTreeMap::new(),
            taints: String::new(),
            capacity: DEFAULT_CAPACITY.into(),
            static_pods: Vec::new(),
        }
    }

    /// An extra label (`--node-labels`), beside the well-known ones the kubelet sets.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// A taint registered with the node, as `--register-with-taints` takes it
    /// (`key=value:NoSchedule`, `key:NoExecute`).
    pub fn taint(mut self, taint: &str) -> Self {
        if !self.taints.is_empty() {
            self.taints.push(',');
        }
        self.taints.push_str(taint);
        self
    }

    /// Capacity as `--capacity` takes it: `cpu=2,memory=4Gi,pods=20` (extended resources by
    /// name, e.g. `example.com/gpu=2`).
    pub fn capacity(mut self, capacity: &str) -> Self {
        self.capacity = capacity.into();
        self
    }

    /// A static pod manifest (YAML or JSON) in the node's manifest directory before its
    /// kubelet starts; `file` is its file name there.
    pub fn static_pod(mut self, file: impl Into<String>, manifest: impl Into<String>) -> Self {
        self.static_pods.push((file.into(), manifest.into()));
        self
    }
}

/// How a [`TestCluster`] is made; [`TestCluster::builder`] starts one.
#[derive(Debug, Clone)]
pub struct Builder {
    pub(crate) nodes: Vec<NodeSpec>,
    pub(crate) controllers: Vec<String>,
    pub(crate) scheduler: bool,
    pub(crate) seed: Option<u64>,
    pub(crate) manual_clock: Option<SystemTime>,
    pub(crate) node_monitor_grace_period: Option<Duration>,
    pub(crate) pod_gc_period: Option<Duration>,
    pub(crate) terminated_pod_gc_threshold: Option<usize>,
    pub(crate) job_pod_failure_backoff: Option<Duration>,
    pub(crate) node_status_update_frequency: Option<Duration>,
    pub(crate) file_check_frequency: Duration,
    pub(crate) temp_parent: Option<PathBuf>,
    pub(crate) durable: bool,
    pub(crate) etcd: bool,
    pub(crate) metrics_resolution: Option<Duration>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            nodes: vec![NodeSpec::new("worker0")],
            controllers: vec!["*".into()],
            scheduler: true,
            seed: None,
            manual_clock: None,
            node_monitor_grace_period: None,
            pod_gc_period: None,
            terminated_pod_gc_threshold: None,
            job_pod_failure_backoff: None,
            node_status_update_frequency: None,
            file_check_frequency: Duration::from_secs(1),
            temp_parent: None,
            durable: false,
            etcd: std::env::var("TINYKUBE_TEST_STORAGE").is_ok_and(|v| v == "etcd"),
            metrics_resolution: None,
        }
    }
}

impl Builder {
    /// `n` plain nodes `worker0…worker{n-1}` (the names `tinykube up` gives), replacing any
    /// set before. `nodes(0)` gives a control plane without nodes.
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = (0..n)
            .map(|i| NodeSpec::new(format!("worker{i}")))
            .collect();
        self
    }

    /// Add a node described by `spec` (after those of [`nodes`](Self::nodes); call
    /// `nodes(0)` first for only your own).
    pub fn node(mut self, spec: NodeSpec) -> Self {
        self.nodes.push(spec);
        self
    }

    /// Which controllers run, as the controller manager's `--controllers` takes them:
    /// `["*"]` (the default: all), `["*", "-garbagecollector"]`, `["job", "namespace"]`.
    /// An empty list runs no controller manager at all.
    pub fn controllers<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.controllers = names.into_iter().map(Into::into).collect();
        self
    }

    /// Run a metrics server scraping the kubelets every `resolution` (its `--metric-resolution`;
    /// 15 s on a real cluster's), registered as the `v1beta1.metrics.k8s.io` APIService, so
    /// that PodMetrics and NodeMetrics (and the HorizontalPodAutoscaler) work. Off by default,
    /// as on a kind cluster.
    pub fn metrics_server(mut self, resolution: Duration) -> Self {
        self.metrics_resolution = Some(resolution);
        self
    }

    /// Run the scheduler (the default) or not (pods then stay Pending unless the test binds
    /// them).
    pub fn scheduler(mut self, run: bool) -> Self {
        self.scheduler = run;
        self
    }

    /// The scheduler's and the kubelets' `--seed`: ties between equally scored nodes broken
    /// the same way on every run, and the same idle usage figures of the containers.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// A manual clock starting now: the cluster's time stands still until
    /// [`TestCluster::advance`].
    pub fn manual_clock(self) -> Self {
        self.manual_clock_at(SystemTime::now())
    }

    /// A manual clock starting at `start`.
    pub fn manual_clock_at(mut self, start: SystemTime) -> Self {
        self.manual_clock = Some(start);
        self
    }

    /// The node lifecycle controller's `--node-monitor-grace-period` (40 s by default); below
    /// 40 s the node leases are shortened to match, so that a healthy node never misses it.
    pub fn node_monitor_grace_period(mut self, d: Duration) -> Self {
        self.node_monitor_grace_period = Some(d);
        self
    }

    /// The pod garbage collector's `--pod-gc-check-period` (20 s by default).
    pub fn pod_gc_period(mut self, d: Duration) -> Self {
        self.pod_gc_period = Some(d);
        self
    }

    /// `--terminated-pod-gc-threshold` (12500 by default).
    pub fn terminated_pod_gc_threshold(mut self, n: usize) -> Self {
        self.terminated_pod_gc_threshold = Some(n);
        self
    }

    /// The Job controller's first back-off before replacing a failed pod (10 s by default).
    pub fn job_pod_failure_backoff(mut self, d: Duration) -> Self {
        self.job_pod_failure_backoff = Some(d);
        self
    }

    /// The kubelets' `--node-status-update-frequency` (10 s by default).
    pub fn node_status_update_frequency(mut self, d: Duration) -> Self {
        self.node_status_update_frequency = Some(d);
        self
    }

    /// How often the kubelets look at their static pod manifest directories (1 s here; the
    /// kubelet's own default is 20 s).
    pub fn file_check_frequency(mut self, d: Duration) -> Self {
        self.file_check_frequency = d;
        self
    }

    /// Acknowledge each write only once it is flushed to disk, as `tinykube up` and upstream's
    /// etcd do. Off by default: a test's cluster is thrown away with its directory, so its
    /// writes are kept in the store's memory and written out lazily (what a `tmpfs` does for
    /// envtest's etcd); every other guarantee (revisions, compare-and-swap, watches) holds.
    pub fn durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    /// Store the cluster's objects in etcd (a local `etcd` from PATH started for the cluster,
    /// its data in the cluster's directory) instead of sled. The default is sled, or etcd when
    /// the environment has `TINYKUBE_TEST_STORAGE=etcd`, which runs any test on etcd unchanged.
    pub fn etcd(mut self, etcd: bool) -> Self {
        self.etcd = etcd;
        self
    }

    /// Make the cluster's temporary data directory inside `dir` instead of the system's
    /// temporary directory. It is removed with the cluster either way.
    pub fn temp_dir_in(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_parent = Some(dir.into());
        self
    }

    /// Start the cluster and return once every node is Ready and schedulable and the
    /// `default` ServiceAccount exists (when its controller runs).
    pub async fn start(self) -> Result<TestCluster, StartError> {
        crate::boot::start(self).await
    }

    /// The node lease to use for the grace period asked (as `tinykube up` does).
    pub(crate) fn lease_seconds(&self) -> i32 {
        match self.node_monitor_grace_period {
            Some(g) if g.as_secs() < 40 => g.as_secs().max(2) as i32,
            _ => 40,
        }
    }
}

/// The InternalIP and pod CIDR of the `i`th node: 192.168.10.10… and 10.244.1.0/24…, as
/// `tinykube up` numbers them.
pub(crate) fn addresses(i: usize) -> (Ipv4Addr, String) {
    let ip = Ipv4Addr::from(u32::from(Ipv4Addr::new(192, 168, 10, 10)) + i as u32);
    let cidr = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 244, 0, 0)) + ((i as u32 + 1) << 8));
    (ip, format!("{cidr}/24"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_named_and_numbered_as_tinykube_up_does() {
        let b = Builder::default().nodes(3);
        let names: Vec<_> = b.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["worker0", "worker1", "worker2"]);
        assert_eq!(
            addresses(0),
            (Ipv4Addr::new(192, 168, 10, 10), "10.244.1.0/24".into())
        );
        assert_eq!(
            addresses(2),
            (Ipv4Addr::new(192, 168, 10, 12), "10.244.3.0/24".into())
        );
    }

    #[test]
    fn a_short_grace_period_shortens_the_leases() {
        let cases = [(None, 40), (Some(60), 40), (Some(10), 10), (Some(1), 2)];
        for (grace, lease) in cases {
            let mut b = Builder::default();
            if let Some(g) = grace {
                b = b.node_monitor_grace_period(Duration::from_secs(g));
            }
            assert_eq!(b.lease_seconds(), lease, "grace {grace:?}");
        }
    }

    #[test]
    fn node_specs_collect_taints_in_the_kubelets_syntax() {
        let n = NodeSpec::new("gpu0")
            .label("accelerator", "a100")
            .taint("gpu=true:NoSchedule")
            .taint("dedicated:NoExecute")
            .capacity("cpu=8,memory=32Gi,example.com/gpu=2");
        assert_eq!(n.taints, "gpu=true:NoSchedule,dedicated:NoExecute");
        assert_eq!(n.labels["accelerator"], "a100");
    }
}
