//! What each container of a node uses, integrated lazily on the kubelet's clock (as cAdvisor
//! reads cgroup counters): no timer per container, the figures move forward only when a
//! container's demand changes (a process's `set_cpu`/`set_memory`, a request charged) or when
//! someone reads them.
//!
//! The model, per container: **demand** = the cores its process asks for steadily
//! (`set_cpu`) + its image's idle CPU (jittered), or all it may have while it has queued
//! request work (each answered request adds its image's CPU cost to a queue, drained at the
//! speed the container gets); **cap** = its `limits.cpu` (CFS quota), else what the node's pods
//! share. When the node's pods want more than their share (capacity minus the system's),
//! they get it by `cpu.shares` (requests × 1024 / 1000, at least 2) as CFS does, water-filled
//! (who wants less than its share keeps what it wants). A container held at its own limit gets
//! [`THROTTLED`] of it (the docs' `-cpus 2` under limit 1 shows 974m). The counter is the
//! integral of that rate; memory is the idle footprint plus what the process holds. The node
//! adds a system baseline (kubelet, runtime, OS) and never goes above its capacity.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use tinykube_clock::Clock;
use tokio::time::Instant;

use super::model::{self, Baseline};
use super::view::{ContainerView, Figures, PodView, Snapshot};

/// What a container held at its own CPU limit gets of it (CFS throttling wastes a little of
/// each period's quota).
pub const THROTTLED: f64 = 0.975;
/// Queued request work is kept up to this many seconds of the container's cap; beyond it the
/// server's queue overflows (the simulated clients never wait, so the queue would otherwise
/// grow without end under a load the container cannot serve).
pub const BACKLOG_SECONDS: f64 = 2.0;
/// The slope of a counter is taken over at least this much time (cAdvisor's housekeeping).
pub const SAMPLE_WINDOW: Duration = Duration::from_secs(10);
/// CFS's enforcement period (`cpu.cfs_period_us` 100000).
pub const CFS_PERIOD: Duration = Duration::from_millis(100);

/// A container, named as the kubelet names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ContainerKey {
    pub namespace: String,
    pub pod: String,
    pub container: String,
}

/// What the kubelet knows of a container when it starts it.
#[derive(Debug, Clone, Default)]
pub(crate) struct ContainerSpec {
    pub id: String,
    pub image: String,
    pub cpu_request_milli: i64,
    pub cpu_limit_milli: Option<i64>,
    pub memory_limit: Option<u64>,
    /// An init container (sidecars included).
    pub init: bool,
    /// The pod's QoS class (its cgroup's parent).
    pub qos: String,
}

/// A counter's last two samples, for its slope.
#[derive(Debug, Clone, Copy)]
struct Samples {
    prev: (Instant, f64),
    last: (Instant, f64),
}

impl Samples {
    fn new(at: Instant) -> Samples {
        Samples {
            prev: (at, 0.0),
            last: (at, 0.0),
        }
    }

    /// Take a sample of `value` at `now` if the window has passed; the slope in units per
    /// second over the last window (from the start until the first one has passed).
    fn rate(&mut self, now: Instant, value: f64) -> f64 {
        if now.duration_since(self.last.0) >= SAMPLE_WINDOW {
            self.prev = self.last;
            self.last = (now, value);
        }
        let (from, to) = if self.last.0 > self.prev.0 {
            (self.prev, self.last)
        } else {
            (self.prev, (now, value))
        };
        let dt = to.0.duration_since(from.0).as_secs_f64();
        if dt > 0.0 {
            ((to.1 - from.1) / dt).max(0.0)
        } else {
            0.0
        }
    }
}

/// One running container's account.
#[derive(Debug)]
struct Meter {
    /// Which start of the container this is (a restart under the same name is another).
    run: u64,
    spec: ContainerSpec,
    started: SystemTime,
    started_at: Instant,
    base: Baseline,
    /// Cores asked for steadily (`set_cpu`).
    steady: f64,
    /// Bytes held by the process (`set_memory`).
    held: u64,
    /// Request work not done yet, in core-seconds.
    backlog: f64,
    /// CPU used since the start, in core-seconds.
    used: f64,
    /// Time held at the limit, in seconds (throttled periods).
    throttled: f64,
    samples: Samples,
}

impl Meter {
    /// Its cap in cores, with `share` what the node's pods share.
    fn cap(&self, share: f64) -> f64 {
        match self.spec.cpu_limit_milli {
            Some(l) => (l.max(0) as f64 / 1000.0).min(share),
            None => share,
        }
    }

    /// What it runs at without queued work.
    fn base_demand(&self, share: f64) -> f64 {
        (self.steady + self.base.idle_cores).min(self.cap(share))
    }

    fn demand(&self, share: f64) -> f64 {
        if self.backlog > 0.0 {
            self.cap(share)
        } else {
            self.base_demand(share)
        }
    }

    /// CFS's `cpu.shares` of the container.
    fn weight(&self) -> f64 {
        (self.spec.cpu_request_milli.max(0) as f64 * 1024.0 / 1000.0).max(2.0)
    }

    fn working_set(&self) -> u64 {
        self.base.idle_memory + self.held
    }
}

/// A pod's account: what its ended containers used (the pod cgroup outlives them).
#[derive(Debug)]
struct PodAccount {
    uid: String,
    started: SystemTime,
    retired: f64,
    samples: Samples,
}

/// One node's account.
struct Account {
    seed: u64,
    capacity_cores: f64,
    capacity_memory: u64,
    system: Baseline,
    started: SystemTime,
    started_at: Instant,
    /// Time accounted up to.
    at: Instant,
    /// CPU of containers that ended.
    retired: f64,
    containers: BTreeMap<ContainerKey, Meter>,
    pods: BTreeMap<(String, String), PodAccount>,
    samples: Samples,
    started_pods: u64,
    started_containers: u64,
    started_init_containers: u64,
}

impl Account {
    /// What the node's pods share, in cores.
    fn share(&self) -> f64 {
        (self.capacity_cores - self.system.idle_cores).max(0.0)
    }

    /// Each container's rate now, in the map's order, water-filled by weight, and whether it
    /// is held at its own limit.
    fn rates(&self) -> (Vec<f64>, Vec<bool>) {
        let share = self.share();
        let demands: Vec<f64> = self.containers.values().map(|m| m.demand(share)).collect();
        let mut rates = demands.clone();
        if demands.iter().sum::<f64>() > share {
            let weights: Vec<f64> = self.containers.values().map(Meter::weight).collect();
            let mut open: Vec<usize> = (0..rates.len()).filter(|&i| demands[i] > 0.0).collect();
            let mut left = share;
            while !open.is_empty() {
                let total: f64 = open.iter().map(|&i| weights[i]).sum();
                let per = left / total;
                let (done, rest): (Vec<usize>, Vec<usize>) =
                    open.iter().partition(|&&i| demands[i] <= per * weights[i]);
                if done.is_empty() {
                    for &i in &rest {
                        rates[i] = per * weights[i];
                    }
                    break;
                }
                left -= done.iter().map(|&i| demands[i]).sum::<f64>();
                open = rest;
            }
        }
        let mut held = Vec::with_capacity(rates.len());
        for (r, m) in rates.iter_mut().zip(self.containers.values()) {
            let at_limit = m.spec.cpu_limit_milli.is_some_and(|l| {
                let limit = l as f64 / 1000.0;
                let wants_more = m.backlog > 0.0 || m.steady + m.base.idle_cores >= limit;
                wants_more && *r >= limit * (1.0 - 1e-9)
            });
            if at_limit {
                *r *= THROTTLED;
            }
            held.push(at_limit);
        }
        (rates, held)
    }

    /// Integrate every container up to `now`, stepping where a queue runs dry.
    fn advance(&mut self, now: Instant) {
        if now <= self.at {
            return;
        }
        let share = self.share();
        let mut left = now.duration_since(self.at).as_secs_f64();
        for _ in 0..=self.containers.len() {
            let (rates, held) = self.rates();
            // How fast each queue drains, and the first to run dry.
            let drains: Vec<f64> = self
                .containers
                .values()
                .zip(&rates)
                .map(|(m, r)| (r - m.base_demand(share)).max(0.0))
                .collect();
            let mut step = left;
            let mut dry = None;
            for (i, (m, d)) in self.containers.values().zip(&drains).enumerate() {
                if m.backlog > 0.0 && *d > 0.0 && m.backlog / d < step {
                    step = m.backlog / d;
                    dry = Some(i);
                }
            }
            for (i, m) in self.containers.values_mut().enumerate() {
                m.used += rates[i] * step;
                m.backlog = if dry == Some(i) {
                    0.0
                } else {
                    (m.backlog - drains[i] * step).max(0.0)
                };
                if held[i] {
                    m.throttled += step;
                }
            }
            left -= step;
            if dry.is_none() || left <= 0.0 {
                break;
            }
        }
        self.at = now;
    }

    fn pod_used(&self, key: &(String, String)) -> f64 {
        let live: f64 = self
            .containers
            .range(pod_range(&key.0, &key.1))
            .map(|(_, m)| m.used)
            .sum();
        self.pods.get(key).map_or(0.0, |p| p.retired) + live
    }

    fn node_used(&self, now: Instant) -> f64 {
        let system = self.system.idle_cores * now.duration_since(self.started_at).as_secs_f64();
        system + self.retired + self.containers.values().map(|m| m.used).sum::<f64>()
    }

    /// A container's counter goes to the past of its pod (whose cgroup outlives it) and node.
    fn retire(&mut self, key: &ContainerKey, used: f64) {
        self.retired += used;
        if let Some(p) = self.pods.get_mut(&(key.namespace.clone(), key.pod.clone())) {
            p.retired += used;
        }
    }
}

/// The containers of pod `namespace/pod` in a map ordered by [`ContainerKey`].
fn pod_range(namespace: &str, pod: &str) -> std::ops::RangeInclusive<ContainerKey> {
    let key = |c: &str| ContainerKey {
        namespace: namespace.into(),
        pod: pod.into(),
        container: c.into(),
    };
    key("")..=key("\u{10ffff}")
}

/// The account of one node, shared by its pods' containers and the stats endpoints.
pub(crate) struct NodeMeter {
    clock: Clock,
    inner: Mutex<Account>,
}

/// A running container's handle on its node's account; [`ContainerMeter::end`] retires it.
#[derive(Clone)]
pub(crate) struct ContainerMeter {
    node: Arc<NodeMeter>,
    key: ContainerKey,
    run: u64,
}

impl NodeMeter {
    /// The account of node `name` with `cpu_milli` cores and `memory` bytes, started now.
    pub fn new(name: &str, seed: u64, cpu_milli: i64, memory: u64, clock: Clock) -> NodeMeter {
        let capacity_cores = cpu_milli.max(0) as f64 / 1000.0;
        let system = model::system(seed, name, capacity_cores, memory);
        let now = clock.instant();
        NodeMeter {
            inner: Mutex::new(Account {
                seed,
                capacity_cores,
                capacity_memory: memory,
                system,
                started: clock.now(),
                started_at: now,
                at: now,
                retired: 0.0,
                containers: BTreeMap::new(),
                pods: BTreeMap::new(),
                samples: Samples::new(now),
                started_pods: 0,
                started_containers: 0,
                started_init_containers: 0,
            }),
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Account> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A pod starts running here (its cgroup is made).
    pub fn add_pod(&self, namespace: &str, name: &str, uid: &str) {
        let now = self.clock.instant();
        let mut a = self.lock();
        a.advance(now);
        a.started_pods += 1;
        let started = self.clock.now();
        a.pods
            .entry((namespace.to_string(), name.to_string()))
            .or_insert(PodAccount {
                uid: uid.to_string(),
                started,
                retired: 0.0,
                samples: Samples::new(now),
            });
    }

    /// A pod is done here (its cgroup is gone).
    pub fn remove_pod(&self, namespace: &str, name: &str) {
        let now = self.clock.instant();
        let mut a = self.lock();
        a.advance(now);
        a.pods.remove(&(namespace.to_string(), name.to_string()));
    }

    /// A container starts: its counters begin at 0.
    pub fn start(self: &Arc<Self>, key: ContainerKey, spec: ContainerSpec) -> ContainerMeter {
        let now = self.clock.instant();
        let mut a = self.lock();
        a.advance(now);
        a.started_containers += 1;
        a.started_init_containers += u64::from(spec.init);
        let run = a.started_containers;
        let base = model::container(a.seed, &key, &spec.image);
        let meter = Meter {
            run,
            spec,
            started: self.clock.now(),
            started_at: now,
            base,
            steady: 0.0,
            held: 0,
            backlog: 0.0,
            used: 0.0,
            throttled: 0.0,
            samples: Samples::new(now),
        };
        if let Some(old) = a.containers.insert(key.clone(), meter) {
            a.retire(&key, old.used);
        }
        ContainerMeter {
            node: self.clone(),
            key,
            run,
        }
    }

    /// Everything at the clock's now.
    pub fn snapshot(&self) -> Snapshot {
        let now = self.clock.instant();
        let time = self.clock.now();
        let mut a = self.lock();
        a.advance(now);
        let mut pods = Vec::with_capacity(a.pods.len());
        let keys: Vec<(String, String)> = a.pods.keys().cloned().collect();
        let mut sum = Figures::default();
        for key in keys {
            let used = a.pod_used(&key);
            let mut containers = Vec::new();
            let mut figures = Figures::default();
            for (k, m) in a.containers.range_mut(pod_range(&key.0, &key.1)) {
                let rate = m.samples.rate(now, m.used);
                let f = Figures::new(m.used, rate, m.working_set(), m.held, m.base.idle_memory);
                figures.add(&f);
                let up = now.duration_since(m.started_at);
                containers.push(ContainerView {
                    name: k.container.clone(),
                    spec: m.spec.clone(),
                    started: m.started,
                    figures: f,
                    periods: (up.as_nanos() / CFS_PERIOD.as_nanos()) as u64,
                    throttled_periods: (m.throttled / CFS_PERIOD.as_secs_f64()) as u64,
                    throttled_ns: (m.throttled * 1e9) as u64,
                });
            }
            let Some(p) = a.pods.get_mut(&key) else {
                continue;
            };
            figures.cpu_ns = (used * 1e9) as u64;
            figures.nano_cores = (p.samples.rate(now, used) * 1e9) as u64;
            sum.add(&figures);
            pods.push(PodView {
                namespace: key.0,
                name: key.1,
                uid: p.uid.clone(),
                started: p.started,
                figures,
                containers,
            });
        }
        let used = a.node_used(now);
        let rate = a.samples.rate(now, used).min(a.capacity_cores);
        let system = Figures::new(
            a.system.idle_cores * now.duration_since(a.started_at).as_secs_f64(),
            a.system.idle_cores,
            a.system.idle_memory,
            0,
            a.system.idle_memory,
        );
        let mut node = sum;
        node.add(&system);
        node.working_set = node.working_set.min(a.capacity_memory);
        node.usage = node.usage.min(a.capacity_memory);
        node.rss = node.rss.min(a.capacity_memory);
        node.cpu_ns = (used * 1e9) as u64;
        node.nano_cores = (rate * 1e9) as u64;
        Snapshot {
            time,
            node_started: a.started,
            node,
            capacity_cores: a.capacity_cores,
            capacity_memory: a.capacity_memory,
            system,
            pods,
            started_pods: a.started_pods,
            started_containers: a.started_containers,
            started_init_containers: a.started_init_containers,
        }
    }
}

impl ContainerMeter {
    fn with<T>(&self, f: impl FnOnce(&mut Meter, f64) -> T) -> Option<T> {
        let now = self.node.clock.instant();
        let mut a = self.node.lock();
        a.advance(now);
        let share = a.share();
        a.containers
            .get_mut(&self.key)
            .filter(|m| m.run == self.run)
            .map(|m| f(m, share))
    }

    /// The process burns `millicores` steadily from now on.
    pub fn set_cpu(&self, millicores: u64) {
        self.with(|m, _| m.steady = millicores as f64 / 1000.0);
    }

    /// The process holds `bytes` from now on.
    pub fn set_memory(&self, bytes: u64) {
        self.with(|m, _| m.held = bytes);
    }

    /// Queue `work` of CPU (a request answered).
    pub fn charge(&self, work: Duration) {
        self.with(|m, share| {
            let most = m.cap(share) * BACKLOG_SECONDS;
            m.backlog = (m.backlog + work.as_secs_f64()).min(most);
        });
    }

    /// The container's working set now (what the OOM killer compares with the limit).
    pub fn working_set(&self) -> u64 {
        self.with(|m, _| m.working_set()).unwrap_or(0)
    }

    /// The container ended: its counters go.
    pub fn end(&self) {
        let now = self.node.clock.instant();
        let mut a = self.node.lock();
        a.advance(now);
        if a.containers
            .get(&self.key)
            .is_some_and(|m| m.run == self.run)
        {
            if let Some(m) = a.containers.remove(&self.key) {
                a.retire(&self.key, m.used);
            }
        }
    }
}
