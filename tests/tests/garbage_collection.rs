//! Garbage collection as `kubectl delete --cascade=background|foreground|orphan` shows it:
//! dependents go after their owner, before it, or stay without the owner reference.

use std::time::Duration;

use tinykube_tests::{eventually, pod_names, ApiServer, ControllerManager};

const RS: &str = "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: frontend\nspec:\n  replicas: 3\n  selector:\n    matchLabels:\n      tier: frontend\n  template:\n    metadata:\n      labels:\n        tier: frontend\n    spec:\n      containers:\n      - name: php-redis\n        image: gcr.io/google_samples/gb-frontend:v3\n";

fn start() -> (ApiServer, ControllerManager) {
    let server = ApiServer::start().unwrap();
    let cm =
        ControllerManager::start(&server, &["--controllers=replicaset,garbagecollector"]).unwrap();
    server.kubectl_stdin(&["apply", "-f", "-"], Some(RS)).ok();
    assert!(eventually(Duration::from_secs(10), || pod_names(
        &server,
        "default",
        "tier=frontend"
    )
    .len()
        == 3));
    (server, cm)
}

fn exists(server: &ApiServer, what: &[&str]) -> bool {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    server.kubectl(&args).success
}

#[test]
fn background_deletion_removes_the_pods_after_the_replicaset() {
    let (server, _cm) = start();
    let out = server.kubectl(&["delete", "rs", "frontend"]);
    assert_eq!(out.ok(), "replicaset.apps \"frontend\" deleted\n");
    assert!(!exists(&server, &["rs", "frontend"]));
    assert!(eventually(Duration::from_secs(10), || pod_names(
        &server,
        "default",
        "tier=frontend"
    )
    .is_empty()));
}

#[test]
fn foreground_deletion_waits_for_blocking_dependents() {
    let (server, _cm) = start();
    // One dependent is held by a finalizer: the owner must wait for it.
    let held = pod_names(&server, "default", "tier=frontend")[0].clone();
    server
        .kubectl(&[
            "patch",
            "pod",
            &held,
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
        ])
        .ok();
    server
        .kubectl(&[
            "delete",
            "rs",
            "frontend",
            "--cascade=foreground",
            "--wait=false",
        ])
        .ok();
    // The other pods go; the held one is Terminating; the owner stays meanwhile.
    assert!(eventually(Duration::from_secs(10), || {
        pod_names(&server, "default", "tier=frontend") == vec![held.clone()]
    }));
    let deleting = server.kubectl(&[
        "get",
        "pod",
        &held,
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
    ]);
    assert!(!deleting.ok().is_empty());
    std::thread::sleep(Duration::from_millis(300));
    let owner = server.kubectl(&[
        "get",
        "rs",
        "frontend",
        "-o",
        "jsonpath={.metadata.finalizers}",
    ]);
    assert_eq!(owner.ok(), "[\"foregroundDeletion\"]");

    server
        .kubectl(&[
            "patch",
            "pod",
            &held,
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ])
        .ok();
    assert!(eventually(Duration::from_secs(10), || !exists(
        &server,
        &["rs", "frontend"]
    )));
    assert!(pod_names(&server, "default", "tier=frontend").is_empty());
}

#[test]
fn foreground_deletion_with_kubectl_waiting() {
    let (server, _cm) = start();
    let out = server.kubectl(&["delete", "rs", "frontend", "--cascade=foreground"]);
    assert_eq!(out.ok(), "replicaset.apps \"frontend\" deleted\n");
    assert!(pod_names(&server, "default", "tier=frontend").is_empty());
    assert!(!exists(&server, &["rs", "frontend"]));
}

#[test]
fn orphan_deletion_leaves_the_pods_without_owner() {
    let (server, _cm) = start();
    let before = pod_names(&server, "default", "tier=frontend");
    server
        .kubectl(&["delete", "rs", "frontend", "--cascade=orphan"])
        .ok();
    assert!(eventually(Duration::from_secs(10), || !exists(
        &server,
        &["rs", "frontend"]
    )));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(pod_names(&server, "default", "tier=frontend"), before);
    let owners = server.kubectl(&[
        "get",
        "pods",
        "-l",
        "tier=frontend",
        "-o",
        "jsonpath={.items[*].metadata.ownerReferences}",
    ]);
    assert_eq!(owners.ok(), "");

    // A new ReplicaSet with the same selector adopts them instead of creating more.
    server.kubectl_stdin(&["apply", "-f", "-"], Some(RS)).ok();
    assert!(eventually(Duration::from_secs(10), || {
        let o = server.kubectl(&[
            "get",
            "pods",
            "-l",
            "tier=frontend",
            "-o",
            "jsonpath={.items[*].metadata.ownerReferences[0].name}",
        ]);
        o.stdout == "frontend frontend frontend"
    }));
    assert_eq!(pod_names(&server, "default", "tier=frontend"), before);
}
