//! The runner on a manual clock: a container's own sleep, the crash-loop back-off, a liveness
//! probe's period and the termination grace period all wait for the clock, never for real
//! time. Tokio's time is paused, so "a long real wait" is free and nothing sleeps for real.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Pod;
use tinykube_client::events::Recorder;
use tinykube_client::reflector::Informer;
use tinykube_client::{Api, Client, ListParams};
use tinykube_clock::Clock;

use super::state::{PodRun, State};
use super::PodHandle;
use crate::node::{self, Machine, NodeConfig};
use crate::{ipam, Config, Kubelet, NodeLocal, NodeState};

/// A kubelet of two nodes (so no events are recorded) on `clock`, with no API server.
fn kubelet(clock: &Clock) -> Arc<Kubelet> {
    kubelet_of(clock, &["n-0", "n-1"])
}

/// A kubelet of nodes `names` (4 cores, 8 GiB each) on `clock`, with no API server.
pub(crate) fn kubelet_of(clock: &Clock, names: &[&str]) -> Arc<Kubelet> {
    let client_config = tinykube_client::Config::new("http://127.0.0.1:1");
    let client = Client::new(client_config.clone()).expect("a client");
    let configs: Vec<NodeConfig> = names
        .iter()
        .enumerate()
        .map(|(i, name)| NodeConfig {
            name: name.to_string(),
            labels: Default::default(),
            taints: vec![],
            node_ip: ipam::nth_ip("192.168.0.10".parse().unwrap(), i as u32),
            pod_cidr: format!("10.244.{i}.0/24"),
            manifest_path: None,
        })
        .collect();
    let nodes: Vec<Arc<NodeState>> = configs
        .iter()
        .map(|n| {
            Arc::new(NodeState {
                config: n.clone(),
                uid: Mutex::new(None),
                since: clock.timestamp(),
                lease: Mutex::new(None),
                reported_at: Mutex::new(None),
                meter: Arc::new(crate::stats::NodeMeter::new(
                    &n.name,
                    0,
                    4000,
                    8 << 30,
                    clock.clone(),
                )),
                local: Mutex::new(NodeLocal {
                    ips: ipam::PodIps::new(&n.pod_cidr).unwrap(),
                    pods: HashMap::new(),
                    statics: Default::default(),
                    host_paths: HashMap::new(),
                }),
            })
        })
        .collect();
    let network = Arc::new(super::Cluster::new(
        Informer::new(Api::all(client.clone()), ListParams::default()).store(),
        Informer::new(Api::all(client.clone()), ListParams::default()).store(),
        Informer::new(Api::all(client.clone()), ListParams::default()).store(),
        configs.iter().map(|n| n.name.clone()).collect(),
        "10.96.0.10".into(),
        "cluster.local".into(),
        clock.clone(),
    ));
    let capacity = node::parse_capacity("").unwrap();
    Arc::new(Kubelet {
        recorder: Recorder::new(client.clone(), "kubelet", Some("n-0")).with_clock(clock.clone()),
        capacity: capacity.clone(),
        machine: Machine::detect(),
        by_name: configs
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect(),
        nodes,
        pods: Informer::new(Api::all(client.clone()), ListParams::default()).store(),
        node_objects: Informer::new(Api::all(client.clone()), ListParams::default()).store(),
        writes: tokio::sync::Semaphore::new(8),
        config: Config {
            client: client_config,
            nodes: configs,
            capacity,
            register_node: true,
            file_check_frequency: Duration::from_secs(20),
            manifest_url: None,
            http_check_frequency: Duration::from_secs(20),
            node_status_update_frequency: Duration::from_secs(10),
            node_status_report_frequency: Duration::from_secs(300),
            node_lease_duration_seconds: 40,
            serve_addr: None,
            cluster_dns: "10.96.0.10".into(),
            cluster_domain: "cluster.local".into(),
            seed: 0,
            clock: clock.clone(),
        },
        client,
        finalizing: Mutex::new(HashSet::new()),
        wake_static: tokio::sync::Notify::new(),
        network,
        endpoint: None,
        clock: clock.clone(),
    })
}

/// A pod of one container `app` (busybox unless `image` says otherwise).
pub(crate) fn pod(spec: serde_json::Value) -> Arc<Pod> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
            "spec": spec,
        }))
        .unwrap(),
    )
}

/// Start `pod` on the first node of a kubelet on a fresh manual clock.
fn start(pod: Arc<Pod>) -> (Clock, Arc<PodHandle>) {
    let clock = Clock::manual(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    let k = kubelet(&clock);
    let n = k.nodes[0].clone();
    let h = super::start(&k, &n, pod, "10.244.0.5", "192.168.0.10");
    (clock, h)
}

/// Wait (in paused tokio time: no real wait) until `what` holds of the pod's containers.
pub(crate) async fn until(h: &PodHandle, what: impl Fn(&PodRun) -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let changed = h.changed.notified();
            if what(&h.run()) {
                return;
            }
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        }
    })
    .await;
    assert!(waited.is_ok(), "never happened: {:?}", h.run().apps);
}

/// Let every task run as far as it can without the clock (ten minutes of paused real time).
pub(crate) async fn idle() {
    tokio::time::sleep(Duration::from_secs(600)).await;
}

pub(crate) fn app(run: &PodRun) -> &super::state::ContainerRun {
    &run.apps[0]
}

pub(crate) fn terminated(run: &PodRun) -> Option<super::state::Exit> {
    match &app(run).state {
        State::Terminated(e) => Some(e.clone()),
        _ => None,
    }
}

fn back_off(run: &PodRun) -> Option<String> {
    match &app(run).state {
        State::Waiting { reason, message } if reason == "CrashLoopBackOff" => message.clone(),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_sleep_ends_when_the_clock_has_moved() {
    let (clock, h) = start(pod(serde_json::json!({
        "restartPolicy": "Never",
        "containers": [{"name": "app", "image": "busybox", "command": ["sh", "-c", "sleep 30"]}],
    })));
    until(&h, |r| app(r).is_running()).await;
    idle().await;
    clock.advance(Duration::from_secs(29));
    idle().await;
    assert!(app(&h.run()).is_running(), "{:?}", app(&h.run()).state);
    clock.advance(Duration::from_secs(1));
    until(&h, |r| terminated(r).is_some()).await;
    let exit = terminated(&h.run()).unwrap();
    assert_eq!((exit.exit_code, exit.reason.as_str()), (0, "Completed"));
    assert_eq!(
        exit.finished_at.as_second() - exit.started_at.as_second(),
        30
    );
    assert_eq!(exit.started_at, clock.timestamp() - Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn the_crash_loop_back_off_waits_for_the_clock() {
    let (clock, h) = start(pod(serde_json::json!({
        "containers": [{"name": "app", "image": "busybox", "command": ["sh", "-c", "exit 1"]}],
    })));
    // The first restart is at once, the next after 10 s, then 20 s, 40 s.
    until(&h, |r| back_off(r).is_some()).await;
    for (restarts, wait) in [(1, 10), (2, 20), (3, 40)] {
        idle().await;
        let (count, msg) = {
            let run = h.run();
            (app(&run).restarts, back_off(&run))
        };
        assert_eq!(count, restarts);
        let msg = msg.expect("waiting in CrashLoopBackOff");
        assert!(msg.starts_with(&format!("back-off {wait}s ")), "{msg}");
        clock.advance(Duration::from_secs(wait - 1));
        idle().await;
        assert_eq!(app(&h.run()).restarts, restarts, "not before {wait}s");
        clock.advance(Duration::from_secs(1));
        until(&h, |r| {
            app(r).restarts == restarts + 1 && back_off(r).is_some()
        })
        .await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_liveness_probe_kills_after_its_period_and_the_grace_period() {
    // `sh` ignores SIGTERM here (as PID 1 does): the kill waits out the grace period.
    let (clock, h) = start(pod(serde_json::json!({
        "terminationGracePeriodSeconds": 30,
        "containers": [{
            "name": "app", "image": "busybox",
            "command": ["sh", "-c", "trap '' TERM; sleep 3600"],
            "livenessProbe": {"exec": {"command": ["cat", "/tmp/healthy"]},
                              "periodSeconds": 5, "failureThreshold": 2},
        }],
    })));
    until(&h, |r| app(r).is_running()).await;
    // The first failure at once, the second (the kill) one period later.
    idle().await;
    clock.advance(Duration::from_secs(4));
    idle().await;
    clock.advance(Duration::from_secs(1));
    idle().await;
    // SIGTERM sent and ignored; SIGKILL 30 s later, then a restart at once.
    clock.advance(Duration::from_secs(29));
    idle().await;
    assert_eq!(app(&h.run()).restarts, 0);
    assert!(app(&h.run()).is_running());
    clock.advance(Duration::from_secs(1));
    until(&h, |r| app(r).restarts == 1 && app(r).is_running()).await;
    let last = app(&h.run()).last.clone().expect("the killed run");
    assert_eq!(last.exit_code, tinykube_runtime::EXIT_KILLED);
    assert_eq!(
        last.finished_at.as_second() - last.started_at.as_second(),
        35
    );
}

#[tokio::test(start_paused = true)]
async fn a_container_that_exits_on_sigterm_stops_with_no_advance() {
    let (clock, h) = start(pod(serde_json::json!({
        "containers": [{"name": "app", "image": "busybox",
                        "command": ["sh", "-c", "trap 'echo bye; exit 3' TERM; sleep 3600 & wait"]}],
    })));
    until(&h, |r| app(r).is_running()).await;
    h.stop(Duration::from_secs(30));
    // A trap that exits: done at once, with no advance.
    until(&h, |r| terminated(r).is_some()).await;
    assert_eq!(terminated(&h.run()).unwrap().exit_code, 3);
    let line = h
        .logs_of("app")
        .lock()
        .current
        .lines()
        .next()
        .cloned()
        .unwrap();
    assert_eq!((line.text.as_str(), line.at), ("bye", clock.now()));
}
