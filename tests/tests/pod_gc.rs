//! The pod garbage collector, as on upstream: a Deployment's pod on a deleted Node is marked
//! Failed with `DisruptionTarget` (DeletionByPodGC), force-deleted and replaced; terminated pods
//! beyond `--terminated-pod-gc-threshold` go oldest first; a pod stuck Terminating on a node
//! that is down and tainted `node.kubernetes.io/out-of-service` is force-deleted.

use std::time::Duration;

use serde_json::Value;
use tinykube_tests::{
    eventually, mark_all_ready, ready_nodes, table_rows, ApiServer, ControllerManager, Scheduler,
};

const T: Duration = Duration::from_secs(30);

const WEB: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx
"#;

/// `(pod, node)` of the pods `kubectl get pods -o wide` lists with `selector`.
fn placement(server: &ApiServer, selector: &str) -> Vec<(String, String)> {
    let out = server.kubectl(&["get", "pods", "-l", selector, "-o", "wide"]);
    table_rows(out.ok())
        .into_iter()
        .skip(1)
        .map(|r| (r[0].clone(), r[6].clone()))
        .collect()
}

fn pod_names(server: &ApiServer) -> Vec<String> {
    let out = server.kubectl(&["get", "pods", "-o", "name"]);
    out.ok().lines().map(str::to_string).collect()
}

#[test]
fn pods_of_a_deleted_node_are_failed_deleted_and_replaced() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 2, false);
    let _sched = Scheduler::start(&server, &[]).unwrap();
    let _cm = ControllerManager::start(
        &server,
        &[
            "--controllers=replicaset,deployment,podgc",
            "--pod-gc-check-period=500ms",
        ],
    )
    .unwrap();
    let file = tinykube_tests::manifest(&server.scratch(), "web.yaml", WEB);
    server
        .kubectl(&["apply", "-f", file.to_str().unwrap()])
        .ok();
    assert!(eventually(T, || {
        let p = placement(&server, "app=web");
        p.len() == 2 && p.iter().all(|(_, n)| n != "<none>")
    }));
    mark_all_ready(&server, "default", "app=web");
    let (doomed, _) = placement(&server, "app=web")
        .into_iter()
        .find(|(_, n)| n == "worker1")
        .expect("the scheduler spreads two replicas over two nodes");
    let list: Value = server
        .http()
        .get(format!("{}/api/v1/namespaces/default/pods", server.url))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap();

    server.kubectl(&["delete", "node", "worker1"]).ok();
    assert!(
        eventually(T, || {
            let p = placement(&server, "app=web");
            p.len() == 2 && p.iter().all(|(name, n)| n == "worker0" && *name != doomed)
        }),
        "{:?}",
        placement(&server, "app=web")
    );

    // What a watcher saw of the orphan: marked Failed with upstream's condition, then deleted.
    let events = server.watch_events(&format!(
        "/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&fieldSelector=metadata.name%3D{doomed}&timeoutSeconds=1"
    ));
    let failed = events
        .iter()
        .find(|e| e["type"] == "MODIFIED" && e["object"]["status"]["phase"] == "Failed")
        .unwrap_or_else(|| panic!("no Failed update in {events:#?}"));
    let conditions = failed["object"]["status"]["conditions"].as_array().unwrap();
    let target = conditions
        .iter()
        .find(|c| c["type"] == "DisruptionTarget")
        .unwrap_or_else(|| panic!("no DisruptionTarget in {conditions:#?}"));
    assert_eq!(target["status"], "True");
    assert_eq!(target["reason"], "DeletionByPodGC");
    assert_eq!(target["message"], "PodGC: node no longer exists");
    assert_eq!(events.last().unwrap()["type"], "DELETED", "{events:#?}");
}

#[test]
fn terminated_pods_beyond_the_threshold_go_oldest_first() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 1, false);
    let _cm = ControllerManager::start(
        &server,
        &[
            "--controllers=podgc",
            "--terminated-pod-gc-threshold=2",
            "--pod-gc-check-period=500ms",
        ],
    )
    .unwrap();
    // Created one after the other: p1 is the oldest (same second: the name decides, as
    // upstream).
    for name in ["running", "p1", "p2", "p3", "p4"] {
        server
            .kubectl(&[
                "run",
                name,
                "--image=nginx",
                "--overrides={\"spec\":{\"nodeName\":\"worker0\"}}",
            ])
            .ok();
    }
    for name in ["p1", "p2", "p3", "p4"] {
        server.patch_status("pod", name, r#"{"status":{"phase":"Succeeded"}}"#);
    }
    let want = ["pod/p3", "pod/p4", "pod/running"];
    assert!(
        eventually(T, || pod_names(&server) == want),
        "{:?}",
        pod_names(&server)
    );
    // And it stays that way: two terminated pods are within the threshold.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(pod_names(&server), want);
}

#[test]
fn terminating_pods_of_an_out_of_service_node_are_force_deleted() {
    let server = ApiServer::start().unwrap();
    ready_nodes(&server, 1, false);
    let _cm = ControllerManager::start(
        &server,
        &["--controllers=podgc", "--pod-gc-check-period=500ms"],
    )
    .unwrap();
    server
        .kubectl(&[
            "run",
            "stuck",
            "--image=nginx",
            "--overrides={\"spec\":{\"nodeName\":\"worker0\"}}",
        ])
        .ok();
    // No kubelet finishes the graceful deletion: the pod stays Terminating.
    server
        .kubectl(&["delete", "pod", "stuck", "--wait=false"])
        .ok();
    std::thread::sleep(Duration::from_millis(1500));
    let out = server.kubectl(&["get", "pod", "stuck"]);
    assert!(out.ok().contains("Terminating"), "{}", out.ok());

    // The node shut down (not Ready) and an admin says it won't come back.
    server.patch_status(
        "node",
        "worker0",
        r#"{"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletNotReady","message":"node is shutting down"}]}}"#,
    );
    server
        .kubectl(&[
            "taint",
            "node",
            "worker0",
            "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute",
        ])
        .ok();
    assert!(
        eventually(T, || pod_names(&server).is_empty()),
        "{:?}",
        pod_names(&server)
    );
}
