//! Placements upstream's scheduler makes and tinykube's once did not, with real kubectl, the
//! simulated kubelet running three nodes and the controller manager: a Deployment whose pods
//! require affinity to each other all start on one node (even beside a pod that matches only
//! part of that affinity), and a pod asking for more ephemeral-storage than any node has stays
//! Pending with upstream's reason.

use std::time::Duration;

use tinykube_tests::{
    eventually, lift_not_ready_taint, table_rows, ApiServer, ControllerManager, Kubelet, Scheduler,
};

const WAIT: Duration = Duration::from_secs(30);

/// Three Ready nodes `w-0`..`w-2` from one kubelet process, each declaring `capacity`, with
/// the not-ready taint lifted as the node-lifecycle controller would.
fn three_nodes(server: &ApiServer, capacity: &str) -> Kubelet {
    let kubelet = Kubelet::start(
        server,
        &[
            "--hostname-override",
            "w",
            "--simulate-nodes",
            "3",
            "--capacity",
            capacity,
        ],
    )
    .expect("kubelet starts");
    let ready = || {
        let out = server.kubectl(&["get", "nodes", "--no-headers"]);
        table_rows(&out.stdout)
            .iter()
            .filter(|r| r[1] == "Ready")
            .count()
    };
    assert!(eventually(WAIT, || ready() == 3), "three Ready nodes");
    for node in ["w-0", "w-1", "w-2"] {
        lift_not_ready_taint(server, node);
    }
    kubelet
}

/// `name phase node` of the pods `selector` picks.
fn pods(server: &ApiServer, selector: &str) -> Vec<(String, String, String)> {
    let out = server.kubectl(&[
        "get",
        "pods",
        "-l",
        selector,
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.spec.nodeName}{\"\\n\"}{end}",
    ]);
    out.ok()
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            Some((
                f.next()?.to_string(),
                f.next()?.to_string(),
                f.next().unwrap_or("").to_string(),
            ))
        })
        .collect()
}

#[test]
fn a_deployment_with_affinity_to_itself_starts_on_one_node() {
    let server = ApiServer::start().unwrap();
    let _kubelet = three_nodes(&server, "cpu=4,memory=8Gi,pods=110");
    let _cm = ControllerManager::start(&server, &["--controllers=deployment,replicaset"]).unwrap();
    let _scheduler = Scheduler::start(&server, &["--seed", "1"]).unwrap();
    // A pod matching one of the Deployment's two terms: upstream counts only pods matching
    // both, so it neither attracts the Deployment's pods nor keeps the first one waiting.
    let lone = "apiVersion: v1
kind: Pod
metadata:
  name: lone
  labels: {app: cache}
spec:
  containers:
  - name: redis
    image: redis:7
";
    server.kubectl_stdin(&["apply", "-f", "-"], Some(lone)).ok();
    assert!(eventually(WAIT, || pods(&server, "app=cache")
        .first()
        .is_some_and(|(_, phase, _)| phase == "Running")));
    let deployment = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: cache
spec:
  replicas: 3
  selector:
    matchLabels: {app: cache, tier: backend}
  template:
    metadata:
      labels: {app: cache, tier: backend}
    spec:
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchExpressions:
              - {key: app, operator: In, values: [cache]}
            topologyKey: kubernetes.io/hostname
          - labelSelector:
              matchLabels: {tier: backend}
            topologyKey: kubernetes.io/hostname
      containers:
      - name: redis
        image: redis:7
";
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(deployment))
        .ok();
    let all_running = || {
        let p = pods(&server, "tier=backend");
        p.len() == 3 && p.iter().all(|(_, phase, _)| phase == "Running")
    };
    assert!(
        eventually(WAIT, all_running),
        "{:?}\n{}",
        pods(&server, "tier=backend"),
        server.kubectl(&["get", "events"]).stdout
    );
    let running = pods(&server, "tier=backend");
    let node = &running[0].2;
    assert!(node.starts_with("w-"), "{running:?}");
    assert!(running.iter().all(|(_, _, n)| n == node), "{running:?}");
}

#[test]
fn ephemeral_storage_beyond_every_node_leaves_the_pod_pending() {
    let server = ApiServer::start().unwrap();
    let _kubelet = three_nodes(&server, "cpu=4,memory=8Gi,pods=110,ephemeral-storage=20Gi");
    let _scheduler = Scheduler::start(&server, &["--seed", "1"]).unwrap();
    let pod = |name: &str, storage: &str| {
        format!(
            "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{storage: {name}}}
spec:
  containers:
  - name: c
    image: busybox
    resources:
      requests: {{ephemeral-storage: {storage}}}
"
        )
    };
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&pod("scratch", "30Gi")))
        .ok();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&pod("small", "1Gi")))
        .ok();
    let expected = "0/3 nodes are available: 3 Insufficient ephemeral-storage.";
    let message = || {
        server
            .kubectl(&[
                "get",
                "events",
                "--field-selector",
                "involvedObject.name=scratch,reason=FailedScheduling",
                "-o",
                "jsonpath={.items[0].message}",
            ])
            .stdout
    };
    assert!(
        eventually(WAIT, || message().starts_with(expected)),
        "{}",
        message()
    );
    // What fits is placed as ever.
    assert!(eventually(WAIT, || pods(&server, "storage=small")
        .first()
        .is_some_and(|(_, phase, _)| phase == "Running")));
    let scratch = pods(&server, "storage=scratch");
    assert_eq!(
        scratch,
        [("scratch".to_string(), "Pending".to_string(), String::new())]
    );
    let condition = server.kubectl(&[
        "get",
        "pod",
        "scratch",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].reason}",
    ]);
    assert_eq!(condition.ok(), "Unschedulable");
}
