//! The node lifecycle controller: watches each node's heartbeats (its Lease in
//! `kube-node-lease` and its Ready condition), marks a node whose kubelet went silent for
//! `--node-monitor-grace-period` Unknown ("Kubelet stopped posting node status."), keeps the
//! condition taints (not-ready, unreachable, pressure, unschedulable) in step with the node's
//! conditions, and evicts pods from NoExecute-tainted nodes once their tolerations run out.
//!
//! Wiring only: every `--node-monitor-period` and on each node or pod change the node's name is
//! queued; [`sync`] reconciles one node; [`taints`] and [`eviction`] decide without I/O. The
//! period, the grace period and the tolerations' timers all go by the cluster's clock.

pub mod eviction;
pub mod sync;
pub mod taints;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use tinykube_client::events::EventType;
use tinykube_client::reflector::{Notification, Store};
use tokio::time::Instant;

use crate::context::{route, Context};
use crate::events::EventRecorder;
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// The event source, as upstream.
pub const COMPONENT: &str = "node-controller";

/// The last heartbeat seen of a node and when (by the cluster's clock) it changed.
#[derive(Debug, Clone)]
struct Probe {
    heartbeat: String,
    seen: Instant,
}

pub struct Controller {
    pub ctx: Arc<Context>,
    pub nodes: Store<Node>,
    pub leases: Store<Lease>,
    pub pods: Store<Pod>,
    pub queue: WorkQueue,
    pub recorder: Arc<EventRecorder>,
    /// The pod recorder of upstream's taint eviction controller.
    pub eviction_recorder: Arc<EventRecorder>,
    probes: Mutex<HashMap<String, Probe>>,
    /// The nodes this controller has announced with `RegisteredNode` (upstream's knownNodeSet).
    known: Mutex<HashSet<String>>,
}

/// A node as upstream's node events refer to it: no namespace, no resourceVersion.
pub fn node_ref(node: &Node) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: node.metadata.name.clone(),
        uid: node.metadata.uid.clone(),
        ..Default::default()
    }
}

/// Subscribe to nodes and pods and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let node_events = ctx.nodes.subscribe();
    let pod_events = ctx.pods.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        nodes: ctx.nodes.store(),
        leases: ctx.leases.store(),
        pods: ctx.pods.store(),
        queue: ctx.queue(),
        recorder: ctx.recorder(COMPONENT),
        eviction_recorder: ctx.recorder("taint-eviction-controller"),
        probes: Mutex::new(HashMap::new()),
        known: Mutex::new(HashSet::new()),
    });
    let period = ctx.options.node_monitor_period;
    Box::pin(async move {
        let (Some(node_events), Some(pod_events)) = (node_events, pod_events) else {
            tracing::error!("node lifecycle controller started after the informers");
            return;
        };
        let on_node = route(
            node_events,
            &c,
            Controller::on_node,
            Controller::enqueue_all,
        );
        let on_pod = route(pod_events, &c, Controller::on_pod, Controller::enqueue_all);
        let run = {
            let c = c.clone();
            async move {
                c.nodes.clone().wait_ready().await;
                c.leases.clone().wait_ready().await;
                c.pods.clone().wait_ready().await;
                // Every node is looked at each period; notifications only bring a node forward.
                let ticker = {
                    let c = c.clone();
                    async move {
                        let period = period.max(std::time::Duration::from_millis(100));
                        let mut tick = c.ctx.clock.interval(period);
                        loop {
                            tick.tick().await;
                            c.enqueue_all();
                        }
                    }
                };
                let s = c.clone();
                let workers = run_workers("nodelifecycle", c.queue.clone(), 2, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                });
                tokio::join!(ticker, workers);
            }
        };
        tokio::join!(on_node, on_pod, run);
    })
}

impl Controller {
    fn enqueue_all(&self) {
        for n in self.nodes.list() {
            self.queue
                .add(n.metadata.name.as_deref().unwrap_or_default());
        }
    }

    fn on_node(&self, n: Notification<Node>) {
        match n {
            Notification::Add(node) | Notification::Update { new: node, .. } => self
                .queue
                .add(node.metadata.name.as_deref().unwrap_or_default()),
            Notification::Delete(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                self.lock_probes().remove(&name);
                let known = self
                    .known
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&name);
                if known {
                    self.recorder.record(
                        &node_ref(&node),
                        EventType::Normal,
                        "RemovingNode",
                        format!("Node {name} event: Removing Node {name} from Controller"),
                    );
                }
            }
        }
    }

    /// The first time this controller sees a node, it says so, as upstream's does (again after
    /// a restart of the controller manager, as upstream's).
    pub fn register(&self, node: &Node) {
        let name = node.metadata.name.clone().unwrap_or_default();
        let new = self
            .known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.clone());
        if new {
            self.recorder.record(
                &node_ref(node),
                EventType::Normal,
                "RegisteredNode",
                format!("Node {name} event: Registered Node {name} in Controller"),
            );
        }
    }

    /// A pod landing on (or changing on) a node with NoExecute taints must be looked at.
    fn on_pod(&self, n: Notification<Pod>) {
        let pod = match n {
            Notification::Add(p) | Notification::Update { new: p, .. } => p,
            Notification::Delete(_) => return,
        };
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
            return;
        };
        let tainted = self.nodes.get(node).is_some_and(|n| {
            n.spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|t| t.iter().any(|t| t.effect == "NoExecute"))
        });
        if tainted {
            self.queue.add(node);
        }
    }

    fn lock_probes(&self) -> std::sync::MutexGuard<'_, HashMap<String, Probe>> {
        self.probes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How long ago, by the cluster's clock, the node's heartbeat last changed. A node seen
    /// for the first time counts from now, so a restarted controller waits a full grace period.
    fn silent_for(&self, name: &str, heartbeat: String) -> std::time::Duration {
        observe(
            &mut self.lock_probes(),
            name,
            heartbeat,
            self.ctx.clock.instant(),
        )
    }
}

/// Record `heartbeat` of node `name` seen at `now` (upstream's probeTimestamp moves only when
/// the heartbeat changes); how long it has been the same.
fn observe(
    probes: &mut HashMap<String, Probe>,
    name: &str,
    heartbeat: String,
    now: Instant,
) -> std::time::Duration {
    let probe = probes.entry(name.to_string()).or_insert_with(|| Probe {
        heartbeat: heartbeat.clone(),
        seen: now,
    });
    if probe.heartbeat != heartbeat {
        probe.heartbeat = heartbeat;
        probe.seen = now;
    }
    now - probe.seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tinykube_clock::Clock;

    #[test]
    fn a_node_goes_silent_only_as_the_clock_moves_past_its_last_new_heartbeat() {
        let clock = Clock::manual(std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let mut probes = HashMap::new();
        // (advance before looking, heartbeat seen, silent for)
        let steps: &[(u64, &str, u64)] = &[
            (0, "renewed@0", 0),
            (30, "renewed@0", 30),
            (10, "renewed@40", 0),
            (40, "renewed@40", 40),
            (1, "renewed@40", 41),
            (300, "renewed@40", 341),
            (0, "renewed@381", 0),
        ];
        for &(advance, heartbeat, want) in steps {
            clock.advance(Duration::from_secs(advance));
            let silent = observe(&mut probes, "n1", heartbeat.into(), clock.instant());
            assert_eq!(silent, Duration::from_secs(want), "+{advance}s {heartbeat}");
        }
    }
}
