//! Registration and heartbeats of every simulated node: the Node is created (or, with
//! `--register-node=false`, waited for), its Lease renewed every 10 s (a quarter of its 40 s
//! duration) and its conditions posted every report period, all on the kubelet's clock (a
//! failed registration is retried on tokio's). One timer serves all nodes: each tick handles
//! one slot of them, so renewals are spread evenly over the period.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use serde_json::json;
use tinykube_client::events::EventType;
use tinykube_client::{Api, Patch};
use tinykube_clock::Clock;
use tokio_util::sync::CancellationToken;

use crate::node::{self, LEASE_NAMESPACE};
use crate::{Kubelet, NodeState};

/// Ticks per period: node `i` is handled on tick `i % SLOTS`.
pub const SLOTS: usize = 20;
/// Concurrent API writes of one tick.
const CONCURRENCY: usize = 32;

/// The nodes (indexes out of `n`) due on `tick`.
pub fn slot_members(n: usize, tick: u64) -> impl Iterator<Item = usize> {
    let slot = (tick % SLOTS as u64) as usize;
    (slot..n).step_by(SLOTS)
}

/// Call `f` with the nodes due on each tick, every `period / SLOTS` of `clock`, until
/// `shutdown`; each node comes up once per period. A tick that comes late (the machine was
/// busy, or a manual clock jumped) also serves the slots it passed, at most one period's worth:
/// after a jump of many periods every node comes up once, not once per period skipped.
pub async fn staggered<F, Fut>(
    n: usize,
    period: Duration,
    clock: &Clock,
    shutdown: CancellationToken,
    f: F,
) where
    F: Fn(Vec<usize>) -> Fut,
    Fut: Future<Output = ()>,
{
    let slot = (period / SLOTS as u32).max(Duration::from_millis(1));
    let mut ticker = clock.interval(slot);
    let mut start = None;
    // The first slot not served yet.
    let mut next = 0u64;
    loop {
        let due_at = tokio::select! {
            _ = shutdown.cancelled() => return,
            at = ticker.tick() => at,
        };
        let start = *start.get_or_insert(due_at);
        let current = ((clock.instant() - start).as_nanos() / slot.as_nanos()) as u64;
        let from = next.max((current + 1).saturating_sub(SLOTS as u64));
        let due: Vec<usize> = (from..=current).flat_map(|t| slot_members(n, t)).collect();
        next = next.max(current + 1);
        if !due.is_empty() {
            f(due).await;
        }
    }
}

/// Leases are renewed every quarter of their duration (10 s for upstream's 40 s).
pub fn lease_period(duration_seconds: i32) -> Duration {
    Duration::from_millis(duration_seconds.max(1) as u64 * 250)
}

/// Register every node, then keep leases and conditions fresh until `shutdown`.
pub(crate) async fn run(k: Arc<Kubelet>, shutdown: CancellationToken) {
    let registered = futures::stream::iter(k.nodes.clone())
        .map(|n| {
            let k = k.clone();
            let stop = shutdown.clone();
            async move { register(&k, &n, &stop).await }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<_>>();
    tokio::select! {
        _ = shutdown.cancelled() => return,
        _ = registered => {}
    }
    tracing::info!(nodes = k.nodes.len(), "nodes registered");
    let lease_period = lease_period(k.config.node_lease_duration_seconds);
    let n = k.nodes.len();
    let leases = staggered(n, lease_period, &k.clock, shutdown.clone(), |due| {
        let k = k.clone();
        async move {
            futures::stream::iter(due)
                .for_each_concurrent(CONCURRENCY, |i| {
                    let k = k.clone();
                    async move { renew_lease(&k, &k.nodes[i]).await }
                })
                .await
        }
    });
    // Conditions are checked every --node-status-update-frequency and posted when the API
    // server's copy differs (the node lifecycle controller may have set Ready=Unknown) or when
    // the report period has passed since the last post, as upstream.
    let status = staggered(
        n,
        k.config.node_status_update_frequency,
        &k.clock,
        shutdown.clone(),
        |due| {
            let k = k.clone();
            async move {
                futures::stream::iter(due)
                    .for_each_concurrent(CONCURRENCY, |i| {
                        let k = k.clone();
                        async move {
                            let n = &k.nodes[i];
                            let current = k.node_objects.get(&n.config.name);
                            let last = *n.reported_at.lock().unwrap_or_else(|e| e.into_inner());
                            let stale = last.is_none_or(|t| {
                                k.clock.instant() - t >= k.config.node_status_report_frequency
                            });
                            if !(stale || conditions_differ(current.as_deref())) {
                                return;
                            }
                            if let Err(e) = post_conditions(&k, n).await {
                                tracing::warn!(node = %n.config.name, error = %e, "posting node status failed");
                            }
                        }
                    })
                    .await
            }
        },
    );
    tokio::join!(leases, status);
}

/// Create the Node (or adopt an existing one), post its status and first Lease; retried
/// until it works or `shutdown`.
async fn register(k: &Kubelet, n: &NodeState, shutdown: &CancellationToken) {
    let api: Api<Node> = Api::all(k.client.clone());
    let name = &n.config.name;
    let mut delay = Duration::from_millis(100);
    loop {
        match register_once(k, n, &api).await {
            Ok(true) => break,
            Ok(false) => tracing::debug!(node = %name, "waiting for the Node to be created"),
            Err(e) => {
                tracing::warn!(node = %name, error = %e, "registering the node failed; retrying")
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(Duration::from_secs(7));
    }
    renew_lease(k, n).await;
    if k.nodes.len() == 1 {
        // What a real kubelet records on its Node when it starts (skipped when simulating
        // many nodes, where they would be thousands of writes).
        let mut events = vec![
            ("Starting", "Starting kubelet.".to_string()),
            (
                "NodeAllocatableEnforced",
                "Updated Node Allocatable limit across pods".to_string(),
            ),
        ];
        for reason in [
            "NodeHasSufficientMemory",
            "NodeHasNoDiskPressure",
            "NodeHasSufficientPID",
            "NodeReady",
        ] {
            events.push((reason, format!("Node {name} status is now: {reason}")));
        }
        for (reason, message) in events {
            k.node_event(n, EventType::Normal, reason, &message).await;
        }
    }
}

/// `Ok(false)` while `--register-node=false` and the Node does not exist yet.
async fn register_once(
    k: &Kubelet,
    n: &NodeState,
    api: &Api<Node>,
) -> Result<bool, tinykube_client::ClientError> {
    let name = &n.config.name;
    let wanted = node::initial(
        &n.config,
        &k.capacity,
        &k.machine,
        n.since,
        k.clock.timestamp(),
        k.endpoint,
    );
    let existing = if k.config.register_node {
        match api.create(&wanted).await {
            Ok(created) => Some(created),
            Err(e) if e.code() == Some(409) => {
                // Already registered (a restart): reconcile the well-known labels and the
                // podCIDR, as upstream reconciles an existing Node.
                let current = api.get(name).await?;
                let mut patch =
                    json!({"metadata": {"labels": node::labels(&n.config, &k.machine)}});
                let has_cidr = current
                    .spec
                    .as_ref()
                    .and_then(|s| s.pod_cidr.as_ref())
                    .is_some();
                if !has_cidr {
                    patch["spec"] =
                        json!({"podCIDR": n.config.pod_cidr, "podCIDRs": [n.config.pod_cidr]});
                }
                Some(api.patch(name, &Patch::Merge(patch)).await?)
            }
            Err(e) => return Err(e),
        }
    } else {
        api.get_opt(name).await?
    };
    let Some(existing) = existing else {
        return Ok(false);
    };
    *n.uid.lock().unwrap_or_else(|e| e.into_inner()) = existing.metadata.uid.clone();
    // Where the API server reaches us changes with every start (port 0): published each time.
    if let Some(endpoint) = k.endpoint {
        let published = existing
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(node::ADDRESS_ANNOTATION));
        if published != Some(&endpoint.to_string()) {
            let patch = json!({"metadata": {"annotations": {node::ADDRESS_ANNOTATION: endpoint.to_string()}}});
            api.patch(name, &Patch::Merge(patch)).await?;
        }
    }
    let status = serde_json::to_value(node::status(
        &n.config,
        &k.capacity,
        &k.machine,
        n.since,
        k.clock.timestamp(),
        k.endpoint,
    ))?;
    api.patch_status(name, &Patch::Strategic(json!({ "status": status })))
        .await?;
    *n.reported_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(k.clock.instant());
    Ok(true)
}

/// Whether the API server's copy of a node shows other conditions than this kubelet reports
/// (status and reason of each type; heartbeat times do not count). Unknown nodes do not differ.
pub fn conditions_differ(node: Option<&Node>) -> bool {
    let Some(node) = node else { return false };
    let current: Vec<(&str, &str, Option<&str>)> = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|c| {
            c.iter()
                .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_deref()))
                .collect()
        })
        .unwrap_or_default();
    let epoch = k8s_openapi::jiff::Timestamp::UNIX_EPOCH;
    node::conditions(epoch, epoch).iter().any(|want| {
        !current.contains(&(
            want.type_.as_str(),
            want.status.as_str(),
            want.reason.as_deref(),
        ))
    })
}

/// Post the conditions with a fresh heartbeat time.
async fn post_conditions(k: &Kubelet, n: &NodeState) -> Result<(), tinykube_client::ClientError> {
    let _permit = k.writes.acquire().await;
    let api: Api<Node> = Api::all(k.client.clone());
    let conditions = serde_json::to_value(node::conditions(n.since, k.clock.timestamp()))?;
    api.patch_status(
        &n.config.name,
        &Patch::Strategic(json!({"status": {"conditions": conditions}})),
    )
    .await?;
    *n.reported_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(k.clock.instant());
    Ok(())
}

/// Renew the node's Lease: an update of the cached copy; on a conflict or a missing lease,
/// read or create it again.
async fn renew_lease(k: &Kubelet, n: &NodeState) {
    let _permit = k.writes.acquire().await;
    let api: Api<Lease> = Api::namespaced(k.client.clone(), LEASE_NAMESPACE);
    let name = &n.config.name;
    let cached = n.lease.lock().unwrap_or_else(|e| e.into_inner()).take();
    let now = k.clock.timestamp();
    let result = match cached {
        Some(mut lease) => {
            if let Some(spec) = lease.spec.as_mut() {
                spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                    now,
                ));
                spec.holder_identity = Some(name.clone());
                spec.lease_duration_seconds = Some(k.config.node_lease_duration_seconds);
            }
            api.replace(name, &lease).await
        }
        None => match api.get_opt(name).await {
            Ok(Some(mut lease)) => {
                let fresh = node::lease(
                    name,
                    n.uid().as_deref(),
                    k.config.node_lease_duration_seconds,
                    now,
                );
                lease.spec = fresh.spec;
                if lease.metadata.owner_references.is_none() {
                    lease.metadata.owner_references = fresh.metadata.owner_references;
                }
                api.replace(name, &lease).await
            }
            Ok(None) => {
                api.create(&node::lease(
                    name,
                    n.uid().as_deref(),
                    k.config.node_lease_duration_seconds,
                    now,
                ))
                .await
            }
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(lease) => *n.lease.lock().unwrap_or_else(|e| e.into_inner()) = Some(lease),
        Err(e) => tracing::warn!(node = %name, error = %e, "renewing the node lease failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    #[test]
    fn slots_cover_every_node_once_per_period() {
        for n in [1usize, 3, 20, 50, 1000] {
            let mut seen = vec![0; n];
            for tick in 0..SLOTS as u64 {
                for i in slot_members(n, tick) {
                    seen[i] += 1;
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "n={n}");
        }
        // A period's ticks split 1000 nodes into even batches of 50.
        assert_eq!(slot_members(1000, 7).count(), 50);
    }

    #[test]
    fn leases_renew_every_quarter_of_their_duration() {
        for (secs, want) in [(40, 10_000), (4, 1_000), (0, 250)] {
            assert_eq!(lease_period(secs), Duration::from_millis(want));
        }
    }

    #[test]
    fn conditions_differ_when_someone_else_changed_them() {
        let node = |conds: serde_json::Value| -> Node {
            serde_json::from_value(serde_json::json!({"metadata": {"name": "n"},
                                                      "status": {"conditions": conds}}))
            .unwrap()
        };
        let t = k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).unwrap();
        let ours = serde_json::to_value(node::conditions(t, t)).unwrap();
        let mut unknown = ours.clone();
        unknown[3]["status"] = "Unknown".into();
        unknown[3]["reason"] = "NodeStatusUnknown".into();
        let cases = [
            (Some(node(ours.clone())), false),
            (Some(node(unknown)), true),
            (Some(node(serde_json::json!([]))), true),
            (None, false),
        ];
        for (n, want) in cases {
            assert_eq!(conditions_differ(n.as_ref()), want, "{n:?}");
        }
    }

    /// `staggered` over 45 nodes, counting each node's calls and the batches.
    struct Counting {
        calls: Arc<Mutex<Vec<usize>>>,
        batches: Arc<AtomicUsize>,
        stop: CancellationToken,
        task: tokio::task::JoinHandle<()>,
    }

    fn counting(clock: &Clock) -> Counting {
        let calls = Arc::new(Mutex::new(vec![0usize; 45]));
        let batches = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        let (c, b, clock, s) = (calls.clone(), batches.clone(), clock.clone(), stop.clone());
        let task = tokio::spawn(async move {
            staggered(45, Duration::from_secs(10), &clock, s, move |due| {
                b.fetch_add(1, Ordering::SeqCst);
                for i in due {
                    c.lock().unwrap()[i] += 1;
                }
                async {}
            })
            .await
        });
        Counting {
            calls,
            batches,
            stop,
            task,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn staggered_calls_each_node_once_per_period() {
        let Counting {
            calls,
            batches,
            stop,
            task,
        } = counting(&Clock::real());
        // Three whole periods (the first tick fires at once).
        tokio::time::sleep(Duration::from_millis(29_999)).await;
        stop.cancel();
        task.await.unwrap();
        assert!(calls.lock().unwrap().iter().all(|&c| c == 3));
        assert_eq!(batches.load(Ordering::SeqCst), 3 * SLOTS);
    }

    /// On a manual clock: nothing but the first slot until an advance; a slot's worth of
    /// advance serves the next slot; a jump of many periods serves every node once.
    #[tokio::test(start_paused = true)]
    async fn staggered_follows_a_manual_clock() {
        let clock = Clock::manual(std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let Counting {
            calls, stop, task, ..
        } = counting(&clock);
        let settle = || tokio::time::sleep(Duration::from_millis(50));
        settle().await;
        let counts = || calls.lock().unwrap().clone();
        let first: Vec<usize> = (0..45).map(|i| usize::from(i % SLOTS == 0)).collect();
        assert_eq!(counts(), first, "only slot 0 before any advance");
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(counts(), first, "real time does not move it");
        clock.advance(Duration::from_millis(500));
        settle().await;
        let second: Vec<usize> = (0..45).map(|i| usize::from(i % SLOTS <= 1)).collect();
        assert_eq!(counts(), second, "slot 1 after one slot of advance");
        clock.advance(Duration::from_secs(300));
        settle().await;
        assert!(
            counts().iter().zip(&second).all(|(c, s)| c - s == 1),
            "every node once more"
        );
        stop.cancel();
        task.await.unwrap();
    }
}
