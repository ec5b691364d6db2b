//! Deletion: propagation policies leave upstream's finalizers for the garbage collector, and
//! pods bound to a node are deleted gracefully.

use serde_json::{json, Value};
use tinykube_tests::ApiServer;

fn seed(name: &str) -> String {
    format!("{}/fixtures/seeds/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn cascade_orphan_and_foreground_leave_finalizers() {
    let server = ApiServer::start().unwrap();
    server
        .kubectl(&["apply", "-f", &seed("mysql-deploy.yaml")])
        .ok();
    let out = server.kubectl(&[
        "delete",
        "deploy",
        "mysql-deploy",
        "--cascade=orphan",
        "--wait=false",
    ]);
    assert_eq!(out.ok(), "deployment.apps \"mysql-deploy\" deleted\n");
    let meta = server.kubectl(&[
        "get",
        "deploy",
        "mysql-deploy",
        "-o",
        "jsonpath={.metadata.finalizers} {.metadata.deletionTimestamp}",
    ]);
    let text = meta.ok();
    assert!(text.starts_with("[\"orphan\"] 20"), "{text}");

    server
        .kubectl(&["apply", "-f", &seed("tomcat-deploy.yaml")])
        .ok();
    let out = server.kubectl(&[
        "delete",
        "deploy",
        "tomcat-deploy",
        "--cascade=foreground",
        "--wait=false",
    ]);
    out.ok();
    let f = server.kubectl(&[
        "get",
        "deploy",
        "tomcat-deploy",
        "-o",
        "jsonpath={.metadata.finalizers}",
    ]);
    assert_eq!(f.ok(), "[\"foregroundDeletion\"]");
}

#[test]
fn bound_pods_are_deleted_gracefully_and_finalizers_hold_objects() {
    let server = ApiServer::start().unwrap();
    let http = server.http();
    let pods = format!("{}/api/v1/namespaces/default/pods", server.url);
    let spec = |name: &str, node: Option<&str>| {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        if let Some(n) = node {
            p["spec"]["nodeName"] = n.into();
        }
        p
    };
    http.post(&pods)
        .json(&spec("bound", Some("worker0")))
        .send()
        .unwrap();
    http.post(&pods).json(&spec("free", None)).send().unwrap();

    // An unbound pod goes at once.
    assert_eq!(
        http.delete(format!("{pods}/free"))
            .send()
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    assert_eq!(
        http.get(format!("{pods}/free"))
            .send()
            .unwrap()
            .status()
            .as_u16(),
        404
    );

    // A bound pod stays, Terminating, until its kubelet confirms with grace 0.
    let resp: Value = http
        .delete(format!("{pods}/bound"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(resp["metadata"]["deletionGracePeriodSeconds"], 30);
    let table = server.kubectl(&["get", "pod", "bound"]);
    assert!(table.ok().contains("Terminating"), "{table:?}");
    let gone = http
        .delete(format!("{pods}/bound?gracePeriodSeconds=0"))
        .send()
        .unwrap();
    assert_eq!(gone.status().as_u16(), 200);
    assert_eq!(
        http.get(format!("{pods}/bound"))
            .send()
            .unwrap()
            .status()
            .as_u16(),
        404
    );

    // A finalizer keeps an object until it is removed.
    let mut held = spec("held", None);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    http.post(&pods).json(&held).send().unwrap();
    http.delete(format!("{pods}/held")).send().unwrap();
    let still: Value = http
        .get(format!("{pods}/held"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert!(still["metadata"]["deletionTimestamp"].is_string());
    let out = server.kubectl(&[
        "patch",
        "pod",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    out.ok();
    assert_eq!(
        http.get(format!("{pods}/held"))
            .send()
            .unwrap()
            .status()
            .as_u16(),
        404
    );
}
