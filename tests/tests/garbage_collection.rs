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

fn uid(server: &ApiServer, what: &[&str]) -> String {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend_from_slice(&["-o", "jsonpath={.metadata.uid}"]);
    server.kubectl(&args).ok().to_string()
}

#[test]
fn any_served_kind_can_own_and_a_second_owner_keeps_the_dependent() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=garbagecollector"]).unwrap();
    server
        .kubectl_stdin(
            &["create", "-f", "-"],
            Some("apiVersion: v1\nkind: Node\nmetadata:\n  name: worker9\n"),
        )
        .ok();
    for name in ["owner-a", "owner-b"] {
        server
            .kubectl(&["create", "configmap", name, "--from-literal=k=v"])
            .ok();
    }
    let node = uid(&server, &["node", "worker9"]);
    let (a, b) = (
        uid(&server, &["configmap", "owner-a"]),
        uid(&server, &["configmap", "owner-b"]),
    );
    let owned = |name: &str, refs: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  ownerReferences:\n{refs}data:\n  k: v\n"
        )
    };
    let r = |kind: &str, api: &str, name: &str, uid: &str| {
        format!("  - apiVersion: {api}\n    kind: {kind}\n    name: {name}\n    uid: {uid}\n")
    };
    let on_node = owned("on-node", &r("Node", "v1", "worker9", &node));
    let two = owned(
        "two-owners",
        &(r("ConfigMap", "v1", "owner-a", &a) + &r("ConfigMap", "v1", "owner-b", &b)),
    );
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(&on_node))
        .ok();
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(&two))
        .ok();

    // A cluster-scoped owner goes: its namespaced dependent follows.
    server.kubectl(&["delete", "node", "worker9"]).ok();
    assert!(eventually(Duration::from_secs(10), || !exists(
        &server,
        &["configmap", "on-node"]
    )));

    // One of two owners goes: the dependent stays, without the reference to it.
    server.kubectl(&["delete", "configmap", "owner-a"]).ok();
    assert!(eventually(Duration::from_secs(10), || {
        server
            .kubectl(&[
                "get",
                "configmap",
                "two-owners",
                "-o",
                "jsonpath={.metadata.ownerReferences[*].name}",
            ])
            .stdout
            == "owner-b"
    }));
    server.kubectl(&["delete", "configmap", "owner-b"]).ok();
    assert!(eventually(Duration::from_secs(10), || !exists(
        &server,
        &["configmap", "two-owners"]
    )));
}

#[test]
fn a_dependent_whose_owner_never_existed_is_collected() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=garbagecollector"]).unwrap();
    let orphan = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dangling\n  ownerReferences:\n  - apiVersion: apps/v1\n    kind: Deployment\n    name: ghost\n    uid: 00000000-0000-0000-0000-000000000001\ndata:\n  k: v\n";
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(orphan))
        .ok();
    assert!(eventually(Duration::from_secs(10), || !exists(
        &server,
        &["configmap", "dangling"]
    )));
}

/// Owners and dependents of kinds no controller caches (PriorityClasses, RuntimeClasses) are
/// watched through discovery, as upstream's collector monitors every deletable resource.
#[test]
fn kinds_without_a_shared_informer_own_and_depend() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=garbagecollector"]).unwrap();
    let create = |text: &str| {
        server
            .kubectl_stdin(&["create", "-f", "-"], Some(text))
            .ok()
            .to_string()
    };
    let pc = |name: &str| {
        format!("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {name}\nvalue: 1000\n")
    };
    create(&pc("gold"));
    create(&pc("silver"));
    create("apiVersion: v1\nkind: Node\nmetadata:\n  name: worker9\n");
    let (gold, silver, node) = (
        uid(&server, &["priorityclass", "gold"]),
        uid(&server, &["priorityclass", "silver"]),
        uid(&server, &["node", "worker9"]),
    );
    let r = |kind: &str, api: &str, name: &str, uid: &str, block: bool| {
        format!("  ownerReferences:\n  - apiVersion: {api}\n    kind: {kind}\n    name: {name}\n    uid: {uid}\n    blockOwnerDeletion: {block}\n")
    };
    let runtime_class = |name: &str, refs: &str, extra: &str| {
        format!("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: {name}\n{extra}{refs}handler: runc\n")
    };
    create(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: of-gold\n{}data:\n  k: v\n",
        r(
            "PriorityClass",
            "scheduling.k8s.io/v1",
            "gold",
            &gold,
            false
        )
    ));
    create(&runtime_class(
        "of-node",
        &r("Node", "v1", "worker9", &node, false),
        "",
    ));
    create(&runtime_class(
        "of-silver",
        &r(
            "PriorityClass",
            "scheduling.k8s.io/v1",
            "silver",
            &silver,
            true,
        ),
        "  finalizers: [example.com/hold]\n",
    ));

    // An owner of a kind nothing else caches goes: its dependent follows.
    server.kubectl(&["delete", "priorityclass", "gold"]).ok();
    assert!(eventually(Duration::from_secs(10), || !exists(
        &server,
        &["configmap", "of-gold"]
    )));
    // A dependent of a kind nothing else caches goes after its owner.
    server.kubectl(&["delete", "node", "worker9"]).ok();
    assert!(eventually(Duration::from_secs(10), || !exists(
        &server,
        &["runtimeclass", "of-node"]
    )));
    // Foreground deletion of such an owner waits for its blocking dependent.
    server
        .kubectl(&[
            "delete",
            "priorityclass",
            "silver",
            "--cascade=foreground",
            "--wait=false",
        ])
        .ok();
    assert!(eventually(Duration::from_secs(10), || {
        let held = server.kubectl(&[
            "get",
            "runtimeclass",
            "of-silver",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ]);
        !held.stdout.is_empty()
    }));
    let owner = server.kubectl(&[
        "get",
        "priorityclass",
        "silver",
        "-o",
        "jsonpath={.metadata.finalizers}",
    ]);
    assert_eq!(owner.ok(), "[\"foregroundDeletion\"]");
    server
        .kubectl(&[
            "patch",
            "runtimeclass",
            "of-silver",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ])
        .ok();
    assert!(eventually(Duration::from_secs(10), || !exists(
        &server,
        &["priorityclass", "silver"]
    )));
}

/// An owner of a kind the API does not serve is left alone, as upstream: its dependent
/// stays, while a dependent of a served kind whose owner is gone is collected.
#[test]
fn an_owner_of_a_kind_not_served_keeps_its_dependent() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=garbagecollector"]).unwrap();
    let owned = |name: &str, api: &str, kind: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  ownerReferences:\n  - apiVersion: {api}\n    kind: {kind}\n    name: ghost\n    uid: 00000000-0000-0000-0000-000000000002\ndata:\n  k: v\n")
    };
    let unknown = owned("unknown-owner", "nope.example.com/v1", "Ghost");
    let gone = owned("gone-owner", "scheduling.k8s.io/v1", "PriorityClass");
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(&unknown))
        .ok();
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(&gone))
        .ok();
    assert!(eventually(Duration::from_secs(10), || !exists(
        &server,
        &["configmap", "gone-owner"]
    )));
    std::thread::sleep(Duration::from_millis(300));
    assert!(exists(&server, &["configmap", "unknown-owner"]));
}
