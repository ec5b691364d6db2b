//! Table tests of the usage model on a manual clock: caps and throttling, request work,
//! sharing a full node, idle baselines, counters across restarts.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use tinykube_clock::Clock;

use super::meter::{ContainerKey, ContainerMeter, ContainerSpec, NodeMeter, THROTTLED};
use super::view::Snapshot;

fn clock() -> Clock {
    Clock::manual(UNIX_EPOCH + Duration::from_secs(1_800_000_000))
}

/// A 4-core, 8 GiB node.
fn node(clock: &Clock) -> Arc<NodeMeter> {
    Arc::new(NodeMeter::new("worker0", 0, 4000, 8 << 30, clock.clone()))
}

fn key(pod: &str, c: &str) -> ContainerKey {
    ContainerKey {
        namespace: "default".into(),
        pod: pod.into(),
        container: c.into(),
    }
}

/// Start container `c` of pod `pod` (added if new) with `image`, requests and limit (m).
fn start(
    n: &Arc<NodeMeter>,
    pod: &str,
    image: &str,
    request: i64,
    limit: Option<i64>,
) -> ContainerMeter {
    n.add_pod("default", pod, &format!("uid-{pod}"));
    n.start(
        key(pod, "app"),
        ContainerSpec {
            image: image.into(),
            cpu_request_milli: request,
            cpu_limit_milli: limit,
            ..ContainerSpec::default()
        },
    )
}

fn cores(s: &Snapshot, pod: &str) -> f64 {
    let p = s.pods.iter().find(|p| p.name == pod).expect("pod listed");
    p.containers[0].figures.nano_cores as f64 / 1e9
}

fn used(s: &Snapshot, pod: &str) -> f64 {
    let p = s.pods.iter().find(|p| p.name == pod).expect("pod listed");
    p.containers[0].figures.cpu_ns as f64 / 1e9
}

fn close(got: f64, want: f64, tolerance: f64) -> bool {
    (got - want).abs() <= tolerance
}

#[test]
fn steady_demand_is_capped_by_the_limit_or_the_node() {
    // (image, set_cpu m, limit m, expected cores)
    let rows: &[(&str, u64, Option<i64>, f64)] = &[
        // "Assign CPU Resources": `-cpus 2` under limit 1 gets about one core (throttled).
        ("vish/stress", 2000, Some(1000), THROTTLED),
        // No limit: what it asks for.
        ("vish/stress", 2000, None, 2.0),
        // `stress --cpu 1` under a larger limit: not throttled.
        ("polinux/stress", 1000, Some(1500), 1.0),
        // More than the node has: what its pods share (4 cores less the system's).
        ("polinux/stress", 8000, None, -1.0),
    ];
    for (image, cpu, limit, want) in rows {
        let clock = clock();
        let n = node(&clock);
        let c = start(&n, "p", image, 0, *limit);
        c.set_cpu(*cpu);
        clock.advance(Duration::from_secs(60));
        let s = n.snapshot();
        let want = if *want < 0.0 {
            4.0 - s.system.nano_cores as f64 / 1e9
        } else {
            *want
        };
        assert!(
            close(cores(&s, "p"), want, 1e-6),
            "{image}: {}",
            cores(&s, "p")
        );
        assert!(close(used(&s, "p"), want * 60.0, 1e-3), "{image}");
        let throttled = s.pods[0].containers[0].throttled_periods;
        assert_eq!(
            throttled > 0,
            limit.is_some_and(|l| (*cpu as i64) > l),
            "{image}"
        );
    }
}

#[test]
fn servers_use_cpu_per_request() {
    // (image, limit, requests per second, expected cores)
    let rows: &[(&str, Option<i64>, u32, f64)] = &[
        ("nginx", None, 100, 100.0 * 0.000_25),
        ("nginx", None, 1000, 1000.0 * 0.000_25),
        // The HPA walkthrough: ~100 requests/s of 7 ms against one pod limited to 500m.
        ("hpa-example", Some(500), 100, 0.5 * THROTTLED),
        // Seven pods share that load: 100m each, 50 % of their 200m request.
        ("hpa-example", Some(500), 100 / 7, 100.0 / 7.0 * 0.007),
    ];
    for (image, limit, rate, want) in rows {
        let clock = clock();
        let n = node(&clock);
        let c = start(&n, "web", image, 200, *limit);
        let gap = Duration::from_secs(1) / *rate;
        for _ in 0..rate * 30 {
            c.charge(tinykube_runtime::images::footprint_of(image).request_cpu);
            clock.advance(gap);
        }
        let s = n.snapshot();
        let idle = tinykube_runtime::images::footprint_of(image).idle_millicores / 1000.0;
        let got = cores(&s, "web");
        assert!(
            close(got, *want, idle * 1.25 + 0.002),
            "{image} at {rate}/s: {got}"
        );
    }
}

#[test]
fn a_full_node_is_shared_by_requests_and_never_exceeded() {
    let clock = clock();
    let n = node(&clock);
    // Three pods wanting 4 cores each: one requests 2 cores, two request nothing.
    let big = start(&n, "big", "polinux/stress", 2000, None);
    let small = [
        start(&n, "small-1", "polinux/stress", 0, None),
        start(&n, "small-2", "polinux/stress", 0, None),
    ];
    let idle = start(&n, "idle", "busybox", 0, None);
    for c in std::iter::once(&big).chain(&small) {
        c.set_cpu(4000);
    }
    clock.advance(Duration::from_secs(30));
    let s = n.snapshot();
    let system = s.system.nano_cores as f64 / 1e9;
    let share = 4.0 - system;
    let sum: f64 = s
        .pods
        .iter()
        .map(|p| p.figures.nano_cores as f64 / 1e9)
        .sum();
    assert!(close(sum, share, 1e-6), "pods use what they share: {sum}");
    let node = s.node.nano_cores as f64 / 1e9;
    assert!(
        close(node, 4.0, 1e-6),
        "the node is full, not above: {node}"
    );
    // The idle one keeps its little; the 2048 shares against 2 + 2 take almost all the rest.
    let busybox = cores(&s, "idle");
    assert!(busybox > 0.0 && busybox < 0.001);
    let (b, s1, s2) = (cores(&s, "big"), cores(&s, "small-1"), cores(&s, "small-2"));
    assert!(close(s1, s2, 1e-9));
    assert!(
        close(b / s1, 2048.0 / 2.0, 0.5),
        "shares 2048 : 2, {b} / {s1}"
    );
    // Once the big one stops asking, the others get the node.
    big.set_cpu(0);
    drop(idle);
    clock.advance(Duration::from_secs(10));
    let s = n.snapshot();
    assert!(close(
        cores(&s, "small-1"),
        (share - cores(&s, "big") - cores(&s, "idle")) / 2.0,
        1e-3
    ));
    assert!(s.node.nano_cores <= 4_000_000_000);
}

#[test]
fn idle_figures_are_stable_and_memory_adds_what_the_process_holds() {
    let run = || {
        let clock = clock();
        let n = node(&clock);
        let c = start(&n, "p", "polinux/stress", 0, None);
        clock.advance(Duration::from_secs(100));
        let before = n.snapshot();
        c.set_memory(150 << 20);
        clock.advance(Duration::from_secs(10));
        (before, n.snapshot(), c.working_set())
    };
    let (before, after, ws) = run();
    let (again, _, _) = run();
    let f = before.pods[0].containers[0].figures;
    assert_eq!(
        f, again.pods[0].containers[0].figures,
        "same seed, same figures"
    );
    assert_eq!(f.cpu_ns, 0, "stress idles at 0");
    // The docs' 150M stress shows 162856960 bytes; the jitter keeps within 3 % of the idle part.
    let held = after.pods[0].containers[0].figures.working_set;
    assert_eq!(held, ws);
    assert!(
        close(held as f64, 162_856_960.0, 0.03 * 5_570_560.0),
        "{held}"
    );
    // The node: its system part plus its pods, within capacity.
    assert_eq!(after.node.working_set, after.system.working_set + held);
    assert!(after.node.working_set <= 8 << 30);
}

#[test]
fn counters_start_at_zero_per_run_and_pods_and_nodes_never_go_back() {
    let clock = clock();
    let n = node(&clock);
    let c = start(&n, "p", "vish/stress", 0, None);
    c.set_cpu(1000);
    clock.advance(Duration::from_secs(20));
    let first = n.snapshot();
    c.end();
    // A restart: the container's counter starts again at 0, the pod's and the node's go on.
    let c2 = n.start(
        key("p", "app"),
        ContainerSpec {
            image: "vish/stress".into(),
            ..ContainerSpec::default()
        },
    );
    // The old run's handle no longer reaches the new run.
    c.set_cpu(4000);
    c.end();
    clock.advance(Duration::from_secs(5));
    let second = n.snapshot();
    assert!(close(used(&first, "p"), 20.0, 1e-6));
    assert_eq!(used(&second, "p"), 0.0);
    assert!(second.pods[0].figures.cpu_ns >= first.pods[0].figures.cpu_ns);
    assert!(second.node.cpu_ns > first.node.cpu_ns);
    c2.end();
    n.remove_pod("default", "p");
    clock.advance(Duration::from_secs(5));
    let third = n.snapshot();
    assert!(third.pods.is_empty());
    assert!(third.node.cpu_ns > second.node.cpu_ns);
    assert_eq!((third.started_pods, third.started_containers), (1, 2));
}

#[test]
fn the_rate_is_the_slope_over_the_last_window() {
    let clock = clock();
    let n = node(&clock);
    let c = start(&n, "p", "vish/stress", 0, None);
    c.set_cpu(1000);
    clock.advance(Duration::from_secs(15));
    assert!(close(cores(&n.snapshot(), "p"), 1.0, 1e-6));
    // Half a core from now: read within the window, the last window's slope stays.
    c.set_cpu(500);
    clock.advance(Duration::from_secs(5));
    assert!(close(cores(&n.snapshot(), "p"), 1.0, 1e-6));
    clock.advance(Duration::from_secs(10));
    // 15 s → 30 s: 5 s at 0.5 and 10 s at 0.5.
    assert!(close(cores(&n.snapshot(), "p"), 0.5, 1e-6));
}
