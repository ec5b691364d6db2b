//! ReplicationControllers with real kubectl: the selector and labels defaulted from the
//! template, pods named after the controller, `kubectl get rc` columns (wide with the
//! selector), `kubectl scale rc` both ways through the Scale's selector string, a deleted pod
//! replaced, upstream's validation messages, and orphans released when relabelled.

use std::time::Duration;

use tinykube_tests::{
    eventually, mark_all_ready, pod_names, table_rows, ApiServer, ControllerManager,
};

const T: Duration = Duration::from_secs(15);

const NGINX: &str = r#"apiVersion: v1
kind: ReplicationController
metadata:
  name: nginx
spec:
  replicas: 3
  template:
    metadata:
      name: nginx
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx
        ports:
        - containerPort: 80
"#;

fn count(server: &ApiServer, want: usize) -> bool {
    pod_names(server, "default", "app=nginx").len() == want
}

#[test]
fn replication_controller_keeps_scales_and_replaces_its_pods() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=replicationcontroller"]).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(NGINX))
        .ok();
    let defaults = server.kubectl(&[
        "get",
        "rc",
        "nginx",
        "-o",
        "jsonpath={.spec.selector} {.metadata.labels}",
    ]);
    assert_eq!(defaults.ok(), r#"{"app":"nginx"} {"app":"nginx"}"#);
    assert!(eventually(T, || count(&server, 3)));
    let names = pod_names(&server, "default", "app=nginx");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("nginx-") && n.len() == 11),
        "{names:?}"
    );
    let owner = server.kubectl(&[
        "get",
        "pod",
        &names[0],
        "-o",
        "jsonpath={.metadata.ownerReferences[0].apiVersion}/{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}",
    ]);
    assert_eq!(owner.ok(), "v1/ReplicationController/nginx");

    assert!(eventually(T, || {
        mark_all_ready(&server, "default", "app=nginx");
        let rows = table_rows(server.kubectl(&["get", "rc", "-o", "wide"]).ok());
        rows.len() == 2 && rows[1][..4] == ["nginx", "3", "3", "3"]
    }));
    let rows = table_rows(server.kubectl(&["get", "rc", "-o", "wide"]).ok());
    assert_eq!(
        rows[0],
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    assert_eq!(rows[1][5..], ["nginx", "nginx", "app=nginx"]);

    // A deleted pod is replaced.
    server.kubectl(&["delete", "pod", &names[0]]).ok();
    assert!(eventually(T, || {
        let now = pod_names(&server, "default", "app=nginx");
        now.len() == 3 && !now.contains(&names[0])
    }));

    // kubectl scale reads the Scale (its selector a string) and writes spec.replicas.
    let scale = server.kubectl(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/replicationcontrollers/nginx/scale",
    ]);
    assert!(
        scale.ok().contains(r#""selector":"app=nginx""#),
        "{}",
        scale.stdout
    );
    server
        .kubectl(&["scale", "rc", "nginx", "--replicas=5"])
        .ok();
    assert!(eventually(T, || count(&server, 5)));
    server
        .kubectl(&["scale", "rc", "nginx", "--replicas=1"])
        .ok();
    assert!(eventually(T, || count(&server, 1)));
    assert!(eventually(T, || {
        let s = server.kubectl(&[
            "get",
            "rc",
            "nginx",
            "-o",
            "jsonpath={.status.replicas} {.status.observedGeneration}",
        ]);
        s.ok() == "1 3"
    }));

    // A relabelled pod is released and replaced.
    let last = pod_names(&server, "default", "app=nginx").remove(0);
    server
        .kubectl(&["label", "pod", &last, "app=debug", "--overwrite"])
        .ok();
    assert!(eventually(T, || count(&server, 1)
        && !pod_names(&server, "default", "app=nginx").contains(&last)));
    assert!(eventually(T, || {
        let refs = server.kubectl(&[
            "get",
            "pod",
            &last,
            "-o",
            "jsonpath={.metadata.ownerReferences}",
        ]);
        refs.ok().is_empty()
    }));
    let events = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.kind=ReplicationController",
        "-o",
        "jsonpath={.items[*].source.component}",
    ]);
    assert!(
        events
            .ok()
            .split(' ')
            .all(|c| c == "replication-controller"),
        "{}",
        events.stdout
    );
}

#[test]
fn replication_controllers_are_validated_as_upstream() {
    let server = ApiServer::start().unwrap();
    let bad = NGINX.replace("replicas: 3\n", "replicas: 3\n  selector:\n    app: web\n");
    let out = server.kubectl_stdin(&["apply", "-f", "-"], Some(&bad));
    assert!(
        out.fails().contains(r#"spec.template.metadata.labels: Invalid value: {"app":"nginx"}: `selector` does not match template `labels`"#),
        "{}",
        out.stderr
    );
    let deadline = NGINX.replace(
        "      containers:",
        "      activeDeadlineSeconds: 5\n      containers:",
    );
    let out = server.kubectl_stdin(&["apply", "-f", "-"], Some(&deadline));
    assert!(
        out.fails().contains("spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported"),
        "{}",
        out.stderr
    );
    let none = server.kubectl(&["get", "rc", "--no-headers", "--ignore-not-found"]);
    assert_eq!(none.ok(), "");
}
