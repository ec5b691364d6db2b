//! Namespace lifecycle: deleting a namespace deletes everything in it, reports upstream's
//! conditions while content (or a finalizer) remains, then lets the namespace go, so the same
//! name can be created again.

use std::time::Duration;

use tinykube_tests::{eventually, ApiServer, ControllerManager};

const CONTENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: demo\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: nginx\n        image: nginx\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: demo\ndata:\n  a: b\n";

fn condition(server: &ApiServer, kind: &str) -> String {
    server
        .kubectl(&[
            "get",
            "ns",
            "demo",
            "-o",
            &format!("jsonpath={{.status.conditions[?(@.type==\"{kind}\")].status}} {{.status.conditions[?(@.type==\"{kind}\")].reason}}: {{.status.conditions[?(@.type==\"{kind}\")].message}}"),
        ])
        .stdout
}

#[test]
fn deleting_a_namespace_removes_its_content_and_the_name_can_be_reused() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &[]).unwrap();
    server.kubectl(&["create", "namespace", "demo"]).ok();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(CONTENT))
        .ok();
    assert!(eventually(Duration::from_secs(10), || {
        let pods = server.kubectl(&["get", "pods", "-n", "demo", "-o", "name"]);
        pods.stdout.lines().count() == 2
    }));
    let out = server.kubectl(&["delete", "namespace", "demo", "--timeout=20s"]);
    assert_eq!(out.ok(), "namespace \"demo\" deleted\n");
    let gone = server.kubectl(&["get", "namespace", "demo"]);
    assert!(
        gone.fails().contains("namespaces \"demo\" not found"),
        "{gone:?}"
    );

    server.kubectl(&["create", "namespace", "demo"]).ok();
    let all = server.kubectl(&["get", "all,configmaps", "-n", "demo", "-o", "name"]);
    // Only what every new namespace gets: the root CA publisher's ConfigMap.
    let left: Vec<&str> = all
        .ok()
        .lines()
        .filter(|l| *l != "configmap/kube-root-ca.crt")
        .collect();
    assert!(
        left.is_empty(),
        "a recreated namespace starts empty: {left:?}"
    );
}

#[test]
fn a_finalizer_holds_the_namespace_terminating_with_upstream_conditions() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=namespace"]).unwrap();
    server.kubectl(&["create", "namespace", "demo"]).ok();
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: held\n  namespace: demo\n  finalizers: [example.com/hold]\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
    server.kubectl_stdin(&["create", "-f", "-"], Some(pod)).ok();
    server
        .kubectl(&["delete", "namespace", "demo", "--wait=false"])
        .ok();
    assert!(
        eventually(Duration::from_secs(10), || {
            condition(&server, "NamespaceFinalizersRemaining")
            == "True SomeFinalizersRemain: Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
        }),
        "{}",
        condition(&server, "NamespaceFinalizersRemaining")
    );
    assert_eq!(
        condition(&server, "NamespaceContentRemaining"),
        "True SomeResourcesRemain: Some resources are remaining: pods. has 1 resource instances"
    );
    assert_eq!(
        condition(&server, "NamespaceDeletionDiscoveryFailure"),
        "False ResourcesDiscovered: All resources successfully discovered"
    );
    assert_eq!(
        condition(&server, "NamespaceDeletionContentFailure"),
        "False ContentDeleted: All content successfully deleted, may be waiting on finalization"
    );
    let table = server.kubectl(&["get", "ns", "demo", "--no-headers"]);
    assert!(table.ok().contains("Terminating"), "{table:?}");

    server
        .kubectl(&[
            "patch",
            "pod",
            "held",
            "-n",
            "demo",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ])
        .ok();
    assert!(eventually(Duration::from_secs(10), || !server
        .kubectl(&["get", "namespace", "demo"])
        .success));
}
