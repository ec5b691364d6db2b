//! StatefulSets as the docs' "StatefulSet Basics" tutorial walks them, with real kubectl: a
//! headless Service `nginx` and a StatefulSet `web` whose pods come up in order (web-1 only
//! once web-0 is Running and Ready), with claims `www-web-N` made before their pods and kept
//! when a pod is replaced; scaling up in order and down in reverse order; a partitioned
//! rolling update with `kubectl rollout status/history/undo`; Parallel pod management; and a
//! controller manager killed mid-rollout that converges without an extra pod. No kubelet
//! runs: the tests mark pods Running and Ready as a kubelet would.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tinykube_tests::{
    eventually, mark_all_ready, mark_ready, pod_names, table_rows, ApiServer, ControllerManager,
};

const T: Duration = Duration::from_secs(15);

fn web(replicas: u32, policy: &str, image: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Service
metadata:
  name: nginx
  labels:
    app: nginx
spec:
  ports:
  - port: 80
    name: web
  clusterIP: None
  selector:
    app: nginx
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: "nginx"
  replicas: {replicas}
  podManagementPolicy: {policy}
  minReadySeconds: 0
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: {image}
        ports:
        - containerPort: 80
          name: web
        volumeMounts:
        - name: www
          mountPath: /usr/share/nginx/html
  volumeClaimTemplates:
  - metadata:
      name: www
    spec:
      accessModes: [ "ReadWriteOnce" ]
      resources:
        requests:
          storage: 1Gi
"#
    )
}

fn names(server: &ApiServer) -> Vec<String> {
    let mut n = pod_names(server, "default", "app=nginx");
    n.sort();
    n
}

fn jsonpath(server: &ApiServer, args: &[&str], path: &str) -> String {
    let template = format!("jsonpath={path}");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-o", template.as_str()]);
    server.kubectl(&all).ok().to_string()
}

/// Mark ready each pod as it appears until the set is `want` (READY column).
fn ready_up(server: &ApiServer, want: &str) -> bool {
    eventually(T, || {
        mark_all_ready(server, "default", "app=nginx");
        jsonpath(
            server,
            &["get", "sts", "web"],
            "{.status.readyReplicas}/{.spec.replicas}",
        ) == want
    })
}

/// The resourceVersion of a pod list now (kubectl's own lists carry none).
fn resource_version(server: &ApiServer) -> String {
    let list: serde_json::Value = server
        .http()
        .get(format!("{}/api/v1/namespaces/default/pods", server.url))
        .send()
        .and_then(|r| r.json())
        .expect("a pod list");
    list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Names of pods in the order the pod watch from `rv` saw them `kind` (ADDED, DELETED).
fn watched(server: &ApiServer, rv: &str, kind: &str) -> Vec<String> {
    server
        .watch_events(&format!(
            "/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}&timeoutSeconds=1&labelSelector=app%3Dnginx"
        ))
        .iter()
        .filter(|e| e["type"] == kind)
        .filter_map(|e| e["object"]["metadata"]["name"].as_str().map(String::from))
        .collect()
}

#[test]
fn web_comes_up_in_order_scales_both_ways_and_keeps_its_claims() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=statefulset"]).unwrap();
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&web(2, "OrderedReady", "registry.k8s.io/nginx-slim:0.24")),
        )
        .ok();
    assert!(eventually(T, || names(&server) == ["web-0"]));
    // web-1 waits for web-0 to be Running and Ready.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(names(&server), ["web-0"]);
    let claims = jsonpath(&server, &["get", "pvc"], "{.items[*].metadata.name}");
    assert_eq!(claims, "www-web-0");
    assert!(mark_ready(&server, "default", "web-0"));
    assert!(eventually(T, || names(&server) == ["web-0", "web-1"]));
    assert!(ready_up(&server, "2/2"));

    let rows = table_rows(server.kubectl(&["get", "sts", "-o", "wide"]).ok());
    assert_eq!(rows[0], ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]);
    assert_eq!(rows[1][..2], ["web", "2/2"]);
    assert_eq!(rows[1][3..], ["nginx", "registry.k8s.io/nginx-slim:0.24"]);

    // Stable identity: hostname, subdomain, labels, the claim as the pod's volume.
    let identity = jsonpath(
        &server,
        &["get", "pod", "web-1"],
        "{.spec.hostname} {.spec.subdomain} {.metadata.labels.statefulset\\.kubernetes\\.io/pod-name} {.metadata.labels.apps\\.kubernetes\\.io/pod-index} {.spec.volumes[0].persistentVolumeClaim.claimName} {.metadata.ownerReferences[0].kind}",
    );
    assert_eq!(identity, "web-1 nginx web-1 1 www-web-1 StatefulSet");
    let revision = jsonpath(
        &server,
        &["get", "pod", "web-0"],
        "{.metadata.labels.controller-revision-hash}",
    );
    assert!(revision.starts_with("web-"), "{revision}");
    assert_eq!(
        jsonpath(
            &server,
            &["get", "sts", "web"],
            "{.status.currentRevision} {.status.updateRevision}"
        ),
        format!("{revision} {revision}")
    );
    let events = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=web",
        "-o",
        "jsonpath={range .items[*]}{.reason}: {.message}\n{end}",
    ]);
    let events = events.ok();
    for line in [
        "SuccessfulCreate: create Claim www-web-0 Pod web-0 in StatefulSet web success",
        "SuccessfulCreate: create Pod web-0 in StatefulSet web successful",
        "SuccessfulCreate: create Pod web-1 in StatefulSet web successful",
    ] {
        assert!(events.contains(line), "{line} in {events}");
    }

    // A deleted pod comes back with the same name and claim.
    let uid = jsonpath(&server, &["get", "pod", "web-0"], "{.metadata.uid}");
    server.kubectl(&["delete", "pod", "web-0"]).ok();
    assert!(eventually(T, || {
        mark_all_ready(&server, "default", "app=nginx");
        let now = jsonpath(
            &server,
            &["get", "pod", "web-0", "--ignore-not-found"],
            "{.metadata.uid}",
        );
        !now.is_empty() && now != uid
    }));
    assert_eq!(
        jsonpath(&server, &["get", "pvc"], "{.items[*].metadata.name}"),
        "www-web-0 www-web-1"
    );

    // Scale up: web-2..4 in order; down: web-4 then web-3, the claims kept.
    assert!(ready_up(&server, "2/2"));
    let rv = resource_version(&server);
    server
        .kubectl(&["scale", "sts", "web", "--replicas=5"])
        .ok();
    assert!(ready_up(&server, "5/5"));
    assert_eq!(watched(&server, &rv, "ADDED"), ["web-2", "web-3", "web-4"]);
    let rv = resource_version(&server);
    server
        .kubectl(&["scale", "sts", "web", "--replicas=3"])
        .ok();
    assert!(eventually(T, || names(&server) == ["web-0", "web-1", "web-2"]));
    assert_eq!(watched(&server, &rv, "DELETED"), ["web-4", "web-3"]);
    assert_eq!(
        jsonpath(&server, &["get", "pvc"], "{.items[*].metadata.name}"),
        "www-web-0 www-web-1 www-web-2 www-web-3 www-web-4"
    );
    let scale = server.kubectl(&[
        "get",
        "--raw",
        "/apis/apps/v1/namespaces/default/statefulsets/web/scale",
    ]);
    let scale = scale.ok();
    assert!(scale.contains("\"selector\":\"app=nginx\""), "{scale}");

    // Only some spec fields may change.
    let refused = server.kubectl(&[
        "patch",
        "sts",
        "web",
        "-p",
        r#"{"spec":{"serviceName":"other"}}"#,
    ]);
    assert!(
        refused.fails().contains("spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"),
        "{}",
        refused.stderr
    );
}

fn mark_while<T>(server: &ApiServer, f: impl FnOnce() -> T) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                mark_all_ready(server, "default", "app=nginx");
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let out = f();
        done.store(true, Ordering::Relaxed);
        out
    })
}

fn images(server: &ApiServer) -> String {
    let mut by_pod: Vec<(String, String)> = names(server)
        .into_iter()
        .map(|n| {
            let image = jsonpath(server, &["get", "pod", &n], "{.spec.containers[0].image}");
            (n, image)
        })
        .collect();
    by_pod.sort();
    by_pod
        .iter()
        .map(|(_, i)| i.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn partitioned_rolling_update_with_rollout_status_history_and_undo() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=statefulset"]).unwrap();
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&web(3, "OrderedReady", "nginx:1.24")),
        )
        .ok();
    assert!(ready_up(&server, "3/3"));
    let status = mark_while(&server, || {
        server.kubectl(&["rollout", "status", "sts/web", "--timeout=10s"])
    });
    assert_eq!(
        status.ok(),
        "partitioned roll out complete: 3 new pods have been updated...\n"
    );

    // Partition 2: only web-2 gets the new template.
    server
        .kubectl(&["patch", "sts", "web", "-p", r#"{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}}}"#])
        .ok();
    server
        .kubectl(&["set", "image", "sts/web", "nginx=nginx:1.25"])
        .ok();
    assert!(eventually(T, || {
        mark_all_ready(&server, "default", "app=nginx");
        images(&server) == "nginx:1.24 nginx:1.24 nginx:1.25"
    }));
    let out = mark_while(&server, || {
        server.kubectl(&["rollout", "status", "sts/web", "--timeout=10s"])
    });
    assert_eq!(
        out.ok(),
        "partitioned roll out complete: 1 new pods have been updated...\n"
    );
    let status = jsonpath(
        &server,
        &["get", "sts", "web"],
        "{.status.currentReplicas} {.status.updatedReplicas}",
    );
    assert_eq!(status, "2 1");

    // Partition 0: the rest, from the top down.
    let rv = resource_version(&server);
    server
        .kubectl(&[
            "patch",
            "sts",
            "web",
            "-p",
            r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}"#,
        ])
        .ok();
    let out = mark_while(&server, || {
        let out = server.kubectl(&["rollout", "status", "sts/web", "--timeout=20s"]);
        eventually(T, || images(&server) == "nginx:1.25 nginx:1.25 nginx:1.25");
        out
    });
    assert!(
        out.ok()
            .ends_with("partitioned roll out complete: 3 new pods have been updated...\n"),
        "{}",
        out.stdout
    );
    assert_eq!(watched(&server, &rv, "DELETED"), ["web-1", "web-0"]);
    assert!(eventually(T, || {
        let s = jsonpath(
            &server,
            &["get", "sts", "web"],
            "{.status.currentRevision} {.status.updateRevision} {.status.currentReplicas}",
        );
        let parts: Vec<&str> = s.split(' ').collect();
        parts.len() == 3 && parts[0] == parts[1] && parts[2] == "3"
    }));

    let history = table_rows(server.kubectl(&["rollout", "history", "sts/web"]).ok());
    assert_eq!(history[0], ["statefulset.apps/web"]);
    assert_eq!(
        history[1..],
        [
            vec!["REVISION", "CHANGE-CAUSE"],
            vec!["1", "<none>"],
            vec!["2", "<none>"]
        ]
    );

    // Undo: back to nginx:1.24, as revision 3.
    server.kubectl(&["rollout", "undo", "sts/web"]).ok();
    assert!(eventually(T, || {
        mark_all_ready(&server, "default", "app=nginx");
        images(&server) == "nginx:1.24 nginx:1.24 nginx:1.24"
    }));
    let history = table_rows(server.kubectl(&["rollout", "history", "sts/web"]).ok());
    assert_eq!(history[2..], [vec!["2", "<none>"], vec!["3", "<none>"]]);
}

#[test]
fn parallel_pods_come_up_together_and_on_delete_waits_for_deletes() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=statefulset"]).unwrap();
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&web(3, "Parallel", "nginx:1.24")),
        )
        .ok();
    // No pod is ready, yet all three are there.
    assert!(eventually(T, || names(&server) == ["web-0", "web-1", "web-2"]));
    assert!(ready_up(&server, "3/3"));
    server
        .kubectl(&[
            "patch",
            "sts",
            "web",
            "-p",
            r#"{"spec":{"updateStrategy":{"type":"OnDelete","rollingUpdate":null}}}"#,
        ])
        .ok();
    server
        .kubectl(&["set", "image", "sts/web", "nginx=nginx:1.25"])
        .ok();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(images(&server), "nginx:1.24 nginx:1.24 nginx:1.24");
    server.kubectl(&["delete", "pod", "web-1"]).ok();
    assert!(eventually(T, || images(&server) == "nginx:1.24 nginx:1.25 nginx:1.24"));
    // Scaling to 0 in Parallel removes every pod at once.
    server
        .kubectl(&["scale", "sts", "web", "--replicas=0"])
        .ok();
    assert!(eventually(T, || names(&server).is_empty()));
}

#[test]
fn a_manager_killed_mid_rollout_converges_without_an_extra_pod() {
    let server = ApiServer::start().unwrap();
    let mut cm = ControllerManager::start(&server, &["--controllers=statefulset"]).unwrap();
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some(&web(4, "OrderedReady", "nginx:1.24")),
        )
        .ok();
    assert!(ready_up(&server, "4/4"));
    server
        .kubectl(&["set", "image", "sts/web", "nginx=nginx:1.25"])
        .ok();
    // Let the rollout start, then kill the manager without warning.
    assert!(eventually(T, || {
        mark_all_ready(&server, "default", "app=nginx");
        images(&server).contains("nginx:1.25")
    }));
    cm.kill9();
    server
        .kubectl(&["scale", "sts", "web", "--replicas=5"])
        .ok();
    cm.restart().unwrap();
    assert!(eventually(Duration::from_secs(30), || {
        mark_all_ready(&server, "default", "app=nginx");
        images(&server) == "nginx:1.25 nginx:1.25 nginx:1.25 nginx:1.25 nginx:1.25"
    }));
    assert_eq!(
        names(&server),
        ["web-0", "web-1", "web-2", "web-3", "web-4"]
    );
    assert!(ready_up(&server, "5/5"));
    let revisions = server.kubectl(&["get", "controllerrevisions", "-o", "name"]);
    assert_eq!(revisions.ok().lines().count(), 2, "{}", revisions.stdout);
}
