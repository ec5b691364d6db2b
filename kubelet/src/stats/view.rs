//! What the endpoints render: a node's figures read at one time, with its pods and their
//! running containers ([`super::NodeMeter::snapshot`]).

use std::time::SystemTime;

use super::meter::ContainerSpec;

/// CPU and memory figures of a node, pod or container at one time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Figures {
    /// Cumulative CPU, in core-nanoseconds.
    pub cpu_ns: u64,
    /// The counter's slope over the last sampling window, in nanocores.
    pub nano_cores: u64,
    pub working_set: u64,
    /// Working set plus inactive page cache (`memory.usage`).
    pub usage: u64,
    pub rss: u64,
    pub page_faults: u64,
    pub major_page_faults: u64,
}

impl Figures {
    pub(super) fn new(
        used: f64,
        rate: f64,
        working_set: u64,
        held: u64,
        idle_memory: u64,
    ) -> Figures {
        Figures {
            cpu_ns: (used * 1e9) as u64,
            nano_cores: (rate * 1e9) as u64,
            working_set,
            usage: working_set + idle_memory / 4,
            rss: held + idle_memory * 3 / 4,
            page_faults: working_set / 4096 + idle_memory / 1024,
            major_page_faults: idle_memory / (1 << 20),
        }
    }

    pub(super) fn add(&mut self, o: &Figures) {
        self.working_set += o.working_set;
        self.usage += o.usage;
        self.rss += o.rss;
        self.page_faults += o.page_faults;
        self.major_page_faults += o.major_page_faults;
    }
}

/// One running container in a [`Snapshot`].
#[derive(Debug, Clone)]
pub(crate) struct ContainerView {
    pub name: String,
    pub spec: ContainerSpec,
    pub started: SystemTime,
    pub figures: Figures,
    /// CFS periods since the start, and those in which it was throttled.
    pub periods: u64,
    pub throttled_periods: u64,
    pub throttled_ns: u64,
}

/// One pod in a [`Snapshot`].
#[derive(Debug, Clone)]
pub(crate) struct PodView {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub started: SystemTime,
    pub figures: Figures,
    pub containers: Vec<ContainerView>,
}

/// A node's figures read at one time, pods in `namespace/name` order.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub time: SystemTime,
    pub node_started: SystemTime,
    pub node: Figures,
    pub capacity_cores: f64,
    pub capacity_memory: u64,
    pub system: Figures,
    pub pods: Vec<PodView>,
    pub started_pods: u64,
    pub started_containers: u64,
    pub started_init_containers: u64,
}
