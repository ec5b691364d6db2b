//! Deployments as the course drives them: a rollout to READY n/n, `kubectl set image` followed
//! by `kubectl rollout status`, `rollout history` and `rollout undo`, Recreate, pause/resume,
//! a progress deadline, deletion through the ReplicaSet chain, and a controller manager killed
//! in the middle of scaling to 500 that ends with exactly 500 pods.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tinykube_tests::{eventually, pod_names, ApiServer, ControllerManager};

fn nginx(replicas: u32, image: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nginx\nspec:\n  replicas: {replicas}\n{extra_spec}  selector:\n    matchLabels:\n      app: nginx\n  template:\n    metadata:\n      labels:\n        app: nginx\n    spec:\n      containers:\n      - name: nginx\n        image: {image}\n"
    )
}

fn start(yaml: &str) -> (ApiServer, ControllerManager) {
    let server = ApiServer::start().unwrap();
    let cm = ControllerManager::start(&server, &[]).unwrap();
    server.kubectl_stdin(&["apply", "-f", "-"], Some(yaml)).ok();
    (server, cm)
}

/// Keep marking the deployment's pods ready (a stand-in kubelet) until dropped.
struct Kubelet {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Kubelet {
    fn start(server: &ApiServer) -> Kubelet {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let url = server.url.clone();
        let thread = std::thread::spawn(move || {
            let server = ApiServerView { url };
            while !flag.load(Ordering::Relaxed) {
                server.mark();
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Kubelet {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Just enough of the server for the marker thread: mark pods ready over HTTP.
struct ApiServerView {
    url: String,
}

impl ApiServerView {
    fn mark(&self) {
        let http = reqwest::blocking::Client::new();
        let Ok(list) = http
            .get(format!("{}/api/v1/namespaces/default/pods", self.url))
            .query(&[("labelSelector", "app=nginx")])
            .send()
            .and_then(|r| r.json::<serde_json::Value>())
        else {
            return;
        };
        for pod in list["items"].as_array().into_iter().flatten() {
            let ready = pod["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready"));
            let Some(name) = pod["metadata"]["name"].as_str() else {
                continue;
            };
            if !ready {
                let _ = http
                    .patch(format!("{}/api/v1/namespaces/default/pods/{name}/status", self.url))
                    .header("Content-Type", "application/merge-patch+json")
                    .body(r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2020-01-01T00:00:00Z"}]}}"#)
                    .send();
            }
        }
    }
}

/// How many pods match `selector` in `default`, over plain HTTP (faster than kubectl).
fn pod_count(server: &ApiServer, selector: &str) -> usize {
    server
        .http()
        .get(format!("{}/api/v1/namespaces/default/pods", server.url))
        .query(&[("labelSelector", selector)])
        .send()
        .and_then(|r| r.json::<serde_json::Value>())
        .map(|v| v["items"].as_array().map_or(0, Vec::len))
        .unwrap_or(0)
}

fn jsonpath(server: &ApiServer, what: &[&str], path: &str) -> String {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    let expr = format!("jsonpath={path}");
    args.extend_from_slice(&["-o", &expr]);
    server.kubectl(&args).stdout
}

#[test]
fn rollout_set_image_history_and_undo() {
    let (server, _cm) = start(&nginx(3, "nginx:1.14.2", ""));
    assert!(eventually(Duration::from_secs(10), || pod_names(
        &server,
        "default",
        "app=nginx"
    )
    .len()
        == 3));
    let rs = jsonpath(&server, &["rs"], "{.items[0].metadata.name}");
    let hash = jsonpath(
        &server,
        &["rs", &rs],
        "{.metadata.labels.pod-template-hash}",
    );
    assert_eq!(rs, format!("nginx-{hash}"));
    assert!(hash.len() >= 8, "{hash}");
    assert_eq!(
        jsonpath(
            &server,
            &["rs", &rs],
            "{.spec.selector.matchLabels.pod-template-hash}"
        ),
        hash
    );
    assert!(pod_names(&server, "default", "app=nginx")
        .iter()
        .all(|p| p.starts_with(&format!("{rs}-"))));
    // Not ready yet: rollout status waits (and times out).
    let waiting = server.kubectl(&["rollout", "status", "deploy/nginx", "--timeout=1s"]);
    assert!(
        waiting.stdout.contains("Waiting for deployment \"nginx\" rollout to finish: 0 of 3 updated replicas are available..."),
        "{waiting:?}"
    );
    waiting.fails();

    let kubelet = Kubelet::start(&server);
    let done = server.kubectl(&["rollout", "status", "deploy/nginx", "--timeout=20s"]);
    assert!(done
        .ok()
        .ends_with("deployment \"nginx\" successfully rolled out\n"));
    let table = server.kubectl(&["get", "deploy", "nginx", "--no-headers"]);
    let cols: Vec<&str> = table.ok().split_whitespace().collect();
    assert_eq!(&cols[..4], &["nginx", "3/3", "3", "3"]);
    let events = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.kind=Deployment",
    ]);
    assert!(
        events
            .ok()
            .contains(&format!("Scaled up replica set {rs} from 0 to 3")),
        "{events:?}"
    );
    assert_eq!(
        jsonpath(
            &server,
            &["deploy", "nginx"],
            "{.status.conditions[?(@.type==\"Progressing\")].reason}"
        ),
        "NewReplicaSetAvailable"
    );

    server
        .kubectl(&["set", "image", "deployment/nginx", "nginx=nginx:1.16.1"])
        .ok();
    let done = server.kubectl(&["rollout", "status", "deployment/nginx", "--timeout=30s"]);
    assert!(
        done.ok()
            .ends_with("deployment \"nginx\" successfully rolled out\n"),
        "{done:?}"
    );
    assert_eq!(pod_names(&server, "default", "app=nginx").len(), 3);
    let images = jsonpath(
        &server,
        &["pods", "-l", "app=nginx"],
        "{.items[*].spec.containers[0].image}",
    );
    assert_eq!(images, "nginx:1.16.1 nginx:1.16.1 nginx:1.16.1");
    let history = server.kubectl(&["rollout", "history", "deployment/nginx"]);
    let text = history.ok();
    assert!(text.contains("\n1 ") && text.contains("\n2 "), "{text}");
    assert_eq!(
        jsonpath(
            &server,
            &["deploy", "nginx"],
            "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}"
        ),
        "2"
    );
    let events = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.kind=Deployment",
    ]);
    assert!(
        events
            .ok()
            .contains(&format!("Scaled down replica set {rs} from 3 to")),
        "{events:?}"
    );

    // Undo patches the template back: the first ReplicaSet comes back as revision 3.
    server
        .kubectl(&["rollout", "undo", "deployment/nginx"])
        .ok();
    assert_eq!(
        jsonpath(
            &server,
            &["deploy", "nginx"],
            "{.spec.template.spec.containers[0].image}"
        ),
        "nginx:1.14.2"
    );
    let done = server.kubectl(&["rollout", "status", "deployment/nginx", "--timeout=30s"]);
    done.ok();
    assert!(eventually(Duration::from_secs(5), || jsonpath(
        &server,
        &["rs", &rs],
        "{.spec.replicas} {.metadata.annotations.deployment\\.kubernetes\\.io/revision}"
    ) == "3 3"));
    let history = server.kubectl(&["rollout", "history", "deployment/nginx"]);
    let text = history.ok();
    assert!(
        text.contains("\n2 ") && text.contains("\n3 ") && !text.contains("\n1 "),
        "{text}"
    );
    drop(kubelet);
}

#[test]
fn scaling_during_a_rollout_is_proportional() {
    let (server, _cm) = start(&nginx(10, "nginx:1.14.2", ""));
    let kubelet = Kubelet::start(&server);
    server
        .kubectl(&["rollout", "status", "deploy/nginx", "--timeout=20s"])
        .ok();
    drop(kubelet);
    // A rollout that cannot progress (new pods never get ready).
    server
        .kubectl(&["set", "image", "deployment/nginx", "nginx=nginx:broken"])
        .ok();
    let sizes = || {
        let mut v: Vec<i64> = jsonpath(&server, &["rs"], "{.items[*].spec.replicas}")
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect();
        v.sort();
        v
    };
    // maxSurge 3, maxUnavailable 2: the old set goes to 8, the new one to 5.
    assert!(
        eventually(Duration::from_secs(10), || sizes() == vec![5, 8]),
        "{:?}",
        sizes()
    );
    server
        .kubectl(&["scale", "deploy/nginx", "--replicas=20"])
        .ok();
    // 13 -> 25 allowed (20 + surge 5): 12 more shared by size, as upstream.
    assert!(
        eventually(Duration::from_secs(10), || sizes().iter().sum::<i64>()
            == 25),
        "{:?}",
        sizes()
    );
    let s = sizes();
    assert!(s[0] > 5 && s[1] > 8, "both grew: {s:?}");
}

#[test]
fn recreate_scales_down_before_up() {
    let (server, _cm) = start(&nginx(
        2,
        "nginx:1.14.2",
        "  strategy:\n    type: Recreate\n",
    ));
    let kubelet = Kubelet::start(&server);
    server
        .kubectl(&["rollout", "status", "deploy/nginx", "--timeout=20s"])
        .ok();
    let old = jsonpath(&server, &["rs"], "{.items[0].metadata.name}");
    server
        .kubectl(&["set", "image", "deployment/nginx", "nginx=nginx:1.16.1"])
        .ok();
    server
        .kubectl(&["rollout", "status", "deploy/nginx", "--timeout=20s"])
        .ok();
    drop(kubelet);
    let events = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.kind=Deployment",
        "--sort-by=.metadata.creationTimestamp",
        "-o",
        "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}",
    ]);
    let lines: Vec<&str> = events.ok().lines().collect();
    let down = lines
        .iter()
        .position(|l| *l == format!("Scaled down replica set {old} from 2 to 0"));
    let up = lines
        .iter()
        .position(|l| l.starts_with("Scaled up replica set") && !l.contains(&old));
    assert!(down.is_some() && up.is_some() && down < up, "{lines:?}");
}

#[test]
fn paused_deployments_do_not_roll_out_until_resumed() {
    let (server, _cm) = start(&nginx(2, "nginx:1.14.2", ""));
    assert!(eventually(Duration::from_secs(10), || pod_names(
        &server,
        "default",
        "app=nginx"
    )
    .len()
        == 2));
    server.kubectl(&["rollout", "pause", "deploy/nginx"]).ok();
    server
        .kubectl(&["set", "image", "deployment/nginx", "nginx=nginx:1.16.1"])
        .ok();
    assert!(eventually(Duration::from_secs(5), || jsonpath(
        &server,
        &["deploy", "nginx"],
        "{.status.conditions[?(@.type==\"Progressing\")].reason}"
    )
        == "DeploymentPaused"));
    assert_eq!(
        jsonpath(&server, &["rs"], "{.items[*].metadata.name}")
            .split_whitespace()
            .count(),
        1
    );
    server.kubectl(&["rollout", "resume", "deploy/nginx"]).ok();
    assert!(eventually(Duration::from_secs(10), || jsonpath(
        &server,
        &["rs"],
        "{.items[*].metadata.name}"
    )
    .split_whitespace()
    .count()
        == 2));
}

#[test]
fn a_stuck_rollout_exceeds_its_progress_deadline() {
    let (server, _cm) = start(&nginx(1, "nginx:1.14.2", "  progressDeadlineSeconds: 2\n"));
    let out = server.kubectl(&["rollout", "status", "deploy/nginx", "--timeout=20s"]);
    assert!(
        out.fails()
            .contains("error: deployment \"nginx\" exceeded its progress deadline"),
        "{out:?}"
    );
    assert_eq!(
        jsonpath(&server, &["deploy", "nginx"], "{.status.conditions[?(@.type==\"Progressing\")].status} {.status.conditions[?(@.type==\"Progressing\")].reason}"),
        "False ProgressDeadlineExceeded"
    );
}

#[test]
fn deleting_a_deployment_removes_its_replicasets_and_pods() {
    let (server, _cm) = start(&nginx(3, "nginx:1.14.2", ""));
    assert!(eventually(Duration::from_secs(10), || pod_names(
        &server,
        "default",
        "app=nginx"
    )
    .len()
        == 3));
    server
        .kubectl(&["delete", "deploy", "nginx", "--cascade=foreground"])
        .ok();
    assert!(pod_names(&server, "default", "app=nginx").is_empty());
    assert_eq!(jsonpath(&server, &["rs"], "{.items[*].metadata.name}"), "");
}

#[test]
fn a_manager_killed_while_scaling_to_500_ends_with_exactly_500_pods() {
    let (server, mut cm) = start(&nginx(1, "nginx:1.14.2", ""));
    assert!(eventually(Duration::from_secs(10), || pod_names(
        &server,
        "default",
        "app=nginx"
    )
    .len()
        == 1));
    server
        .kubectl(&["scale", "deploy/nginx", "--replicas=500"])
        .ok();
    // Kill as soon as the scale-up has begun (a quick HTTP count, not kubectl), so creates are
    // in flight.
    assert!(eventually(Duration::from_secs(20), || pod_count(
        &server,
        "app=nginx"
    ) > 1));
    cm.kill9();
    let at_kill = pod_count(&server, "app=nginx");
    assert!(at_kill < 500, "killed too late to test anything: {at_kill}");
    cm.restart().unwrap();
    assert!(
        eventually(Duration::from_secs(30), || pod_names(
            &server,
            "default",
            "app=nginx"
        )
        .len()
            == 500),
        "killed at {at_kill}, now {}",
        pod_names(&server, "default", "app=nginx").len()
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(pod_names(&server, "default", "app=nginx").len(), 500);
    assert_eq!(
        jsonpath(&server, &["rs"], "{.items[*].spec.replicas}"),
        "500"
    );
}

#[test]
fn background_and_orphan_deletion_of_a_deployment() {
    let (server, _cm) = start(&nginx(2, "nginx:1.14.2", ""));
    assert!(eventually(Duration::from_secs(10), || pod_names(
        &server,
        "default",
        "app=nginx"
    )
    .len()
        == 2));
    // Orphan: the ReplicaSet and its pods stay, without the owner reference.
    let out = server.kubectl(&[
        "delete",
        "deploy",
        "nginx",
        "--cascade=orphan",
        "--wait=false",
    ]);
    assert_eq!(out.ok(), "deployment.apps \"nginx\" deleted\n");
    assert!(eventually(Duration::from_secs(10), || !server
        .kubectl(&["get", "deploy", "nginx"])
        .success));
    let rs = jsonpath(&server, &["rs"], "{.items[*].metadata.name}");
    assert!(rs.starts_with("nginx-"), "{rs:?}");
    assert_eq!(
        jsonpath(&server, &["rs", &rs], "{.metadata.ownerReferences}"),
        ""
    );
    assert_eq!(pod_names(&server, "default", "app=nginx").len(), 2);

    // The same Deployment again adopts that ReplicaSet instead of making another.
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&nginx(2, "nginx:1.14.2", "")))
        .ok();
    assert!(eventually(Duration::from_secs(10), || jsonpath(
        &server,
        &["rs", &rs],
        "{.metadata.ownerReferences[0].name}"
    ) == "nginx"));
    assert_eq!(jsonpath(&server, &["rs"], "{.items[*].metadata.name}"), rs);

    // Background (kubectl's default): the Deployment goes at once, then its ReplicaSet and
    // pods through the garbage collector.
    server.kubectl(&["delete", "deploy", "nginx"]).ok();
    assert!(eventually(Duration::from_secs(10), || pod_names(
        &server,
        "default",
        "app=nginx"
    )
    .is_empty()
        && jsonpath(&server, &["rs"], "{.items[*].metadata.name}")
            .is_empty()));
}

#[test]
fn revision_history_limit_removes_the_oldest_replica_sets() {
    let (server, _cm) = start(&nginx(2, "nginx:1.14.2", "  revisionHistoryLimit: 1\n"));
    let kubelet = Kubelet::start(&server);
    server
        .kubectl(&["rollout", "status", "deploy/nginx", "--timeout=20s"])
        .ok();
    for image in ["nginx:1.15", "nginx:1.16", "nginx:1.17"] {
        server
            .kubectl(&[
                "set",
                "image",
                "deployment/nginx",
                &format!("nginx={image}"),
            ])
            .ok();
        server
            .kubectl(&["rollout", "status", "deploy/nginx", "--timeout=20s"])
            .ok();
    }
    // The current ReplicaSet and one old one (revisions 4 and 3) are left.
    assert!(eventually(Duration::from_secs(10), || {
        let revs = jsonpath(
            &server,
            &["rs"],
            "{.items[*].metadata.annotations.deployment\\.kubernetes\\.io/revision}",
        );
        let mut v: Vec<&str> = revs.split_whitespace().collect();
        v.sort();
        v == ["3", "4"]
    }));
    let history = server.kubectl(&["rollout", "history", "deployment/nginx"]);
    let text = history.ok();
    assert!(
        text.contains("\n3 ") && text.contains("\n4 ") && !text.contains("\n2 "),
        "{text}"
    );
    drop(kubelet);
}
