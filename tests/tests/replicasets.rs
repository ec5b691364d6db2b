//! ReplicaSets as the course uses them: pods named after the set come up, a deleted pod comes
//! back, `kubectl scale` both ways, orphans are adopted and relabelled pods released, and a
//! controller manager killed mid-scale never leaves duplicates.

use std::time::Duration;

use tinykube_tests::{eventually, mark_all_ready, pod_names, ApiServer, ControllerManager};

fn frontend(replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: frontend\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      tier: frontend\n  template:\n    metadata:\n      labels:\n        tier: frontend\n    spec:\n      containers:\n      - name: php-redis\n        image: gcr.io/google_samples/gb-frontend:v3\n"
    )
}

fn count(server: &ApiServer, want: usize) -> bool {
    pod_names(server, "default", "tier=frontend").len() == want
}

#[test]
fn replicaset_keeps_its_pods_scales_and_reports_status() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=replicaset"]).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&frontend(3)))
        .ok();
    assert!(eventually(Duration::from_secs(10), || count(&server, 3)));
    let names = pod_names(&server, "default", "tier=frontend");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("frontend-") && n.len() == "frontend-".len() + 5),
        "{names:?}"
    );
    let owner = server.kubectl(&[
        "get",
        "pod",
        &names[0],
        "-o",
        "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.metadata.ownerReferences[0].controller} {.metadata.ownerReferences[0].blockOwnerDeletion}",
    ]);
    assert_eq!(owner.ok(), "ReplicaSet/frontend true true");

    // Deleting a pod brings a replacement.
    server.kubectl(&["delete", "pod", &names[0]]).ok();
    assert!(eventually(Duration::from_secs(10), || {
        let now = pod_names(&server, "default", "tier=frontend");
        now.len() == 3 && !now.contains(&names[0])
    }));

    // Ready pods show in the READY column.
    assert!(eventually(Duration::from_secs(10), || {
        mark_all_ready(&server, "default", "tier=frontend");
        let rows = server.kubectl(&["get", "rs", "frontend", "--no-headers"]);
        let cols: Vec<String> = rows.ok().split_whitespace().map(String::from).collect();
        cols.get(1..4) == Some(&["3".to_string(), "3".to_string(), "3".to_string()][..])
    }));

    server
        .kubectl(&["scale", "rs", "frontend", "--replicas=6"])
        .ok();
    assert!(eventually(Duration::from_secs(10), || count(&server, 6)));
    server
        .kubectl(&["scale", "rs", "frontend", "--replicas=2"])
        .ok();
    assert!(eventually(Duration::from_secs(10), || count(&server, 2)));
    // The ready pods survive the scale-down: the not-ready newcomers go first.
    let left = pod_names(&server, "default", "tier=frontend");
    let ready = server.kubectl(&[
        "get",
        "pods",
        "-l",
        "tier=frontend",
        "-o",
        "jsonpath={.items[*].status.phase}",
    ]);
    assert_eq!(ready.ok(), "Running Running", "{left:?}");

    let status = server.kubectl(&[
        "get",
        "rs",
        "frontend",
        "-o",
        "jsonpath={.status.replicas} {.status.fullyLabeledReplicas} {.status.readyReplicas} {.status.availableReplicas} {.status.observedGeneration} {.metadata.generation}",
    ]);
    assert!(
        eventually(Duration::from_secs(5), || {
            let s = server.kubectl(&[
            "get",
            "rs",
            "frontend",
            "-o",
            "jsonpath={.status.replicas} {.status.fullyLabeledReplicas} {.status.readyReplicas} {.status.availableReplicas}",
        ]);
            s.stdout == "2 2 2 2"
        }),
        "{status:?}"
    );

    let events = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.kind=ReplicaSet",
    ]);
    let text = events.ok();
    assert!(
        text.contains("SuccessfulCreate") && text.contains("Created pod: frontend-"),
        "{text}"
    );
    assert!(
        text.contains("SuccessfulDelete") && text.contains("Deleted pod: frontend-"),
        "{text}"
    );
}

#[test]
fn orphans_are_adopted_and_relabelled_pods_released() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=replicaset"]).unwrap();
    for name in ["orphan-a", "orphan-b"] {
        server
            .kubectl(&["run", name, "--image=nginx", "--labels=tier=frontend"])
            .ok();
    }
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&frontend(3)))
        .ok();
    assert!(eventually(Duration::from_secs(10), || {
        let o = server.kubectl(&[
            "get",
            "pod",
            "orphan-a",
            "-o",
            "jsonpath={.metadata.ownerReferences[0].name}",
        ]);
        o.stdout == "frontend"
    }));
    assert!(eventually(Duration::from_secs(10), || count(&server, 3)));
    // Only one new pod was needed.
    let names = pod_names(&server, "default", "tier=frontend");
    assert!(names.contains(&"orphan-b".to_string()), "{names:?}");

    server
        .kubectl(&["label", "pod", "orphan-a", "tier=other", "--overwrite"])
        .ok();
    assert!(eventually(Duration::from_secs(10), || {
        let o = server.kubectl(&[
            "get",
            "pod",
            "orphan-a",
            "-o",
            "jsonpath={.metadata.ownerReferences}",
        ]);
        o.success && o.stdout.is_empty() && count(&server, 3)
    }));
}

#[test]
fn a_manager_killed_mid_scale_converges_without_duplicates() {
    let server = ApiServer::start().unwrap();
    let mut cm = ControllerManager::start(&server, &["--controllers=replicaset"]).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&frontend(300)))
        .ok();
    // Kill as soon as creating has begun (a quick HTTP count), so creates are in flight.
    let quick_count = || {
        server
            .http()
            .get(format!("{}/api/v1/namespaces/default/pods", server.url))
            .query(&[("labelSelector", "tier=frontend")])
            .send()
            .and_then(|r| r.json::<serde_json::Value>())
            .map(|v| v["items"].as_array().map_or(0, Vec::len))
            .unwrap_or(0)
    };
    assert!(eventually(Duration::from_secs(20), || quick_count() > 0));
    cm.kill9();
    let at_kill = quick_count();
    assert!(at_kill < 300, "killed too late to test anything: {at_kill}");
    cm.restart().unwrap();
    assert!(
        eventually(Duration::from_secs(30), || count(&server, 300)),
        "killed at {at_kill}, now {}",
        pod_names(&server, "default", "tier=frontend").len()
    );
    // And it stays there: no late duplicates.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(pod_names(&server, "default", "tier=frontend").len(), 300);
}

#[test]
fn failed_creates_are_reported_and_retried() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=replicaset"]).unwrap();
    let rs = frontend(2).replace(
        "    spec:\n      containers:",
        "    spec:\n      priorityClassName: high\n      containers:",
    );
    server.kubectl_stdin(&["apply", "-f", "-"], Some(&rs)).ok();
    let failure = || {
        server
            .kubectl(&[
                "get",
                "rs",
                "frontend",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"ReplicaFailure\")].reason}",
            ])
            .stdout
    };
    assert!(eventually(Duration::from_secs(10), || failure() == "FailedCreate"));
    let events = server.kubectl(&["get", "events", "--field-selector", "reason=FailedCreate"]);
    assert!(
        events
            .ok()
            .contains("no PriorityClass with name high was found"),
        "{events:?}"
    );
    // Once the class exists the retries succeed and the condition goes.
    server
        .kubectl(&["create", "priorityclass", "high", "--value=1000"])
        .ok();
    assert!(eventually(Duration::from_secs(20), || count(&server, 2)
        && failure().is_empty()));
}

#[test]
fn many_similar_events_are_combined_as_upstream() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=replicaset"]).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&frontend(15)))
        .ok();
    assert!(eventually(Duration::from_secs(10), || count(&server, 15)));
    // Nine events as they are, then one "(combined from similar events)" event counting the
    // other six.
    let summary = || {
        let out = server.kubectl(&[
            "get",
            "events",
            "--field-selector",
            "reason=SuccessfulCreate",
            "-o",
            "jsonpath={range .items[*]}{.count} {.message}{\"\\n\"}{end}",
        ]);
        let lines: Vec<String> = out.stdout.lines().map(str::to_string).collect();
        let plain = lines
            .iter()
            .filter(|l| l.starts_with("1 Created pod: frontend-"))
            .count();
        let combined: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains("(combined from similar events): Created pod: frontend-"))
            .collect();
        (
            plain,
            combined
                .iter()
                .map(|l| l.split(' ').next().unwrap_or("").to_string())
                .collect::<Vec<_>>(),
        )
    };
    assert!(
        eventually(Duration::from_secs(5), || summary()
            == (9, vec!["6".to_string()])),
        "{:?}",
        summary()
    );
}

#[test]
fn the_manager_survives_an_api_server_restart() {
    let mut server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=replicaset"]).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&frontend(2)))
        .ok();
    assert!(eventually(Duration::from_secs(10), || count(&server, 2)));
    server.restart().unwrap();
    server
        .kubectl(&["scale", "rs", "frontend", "--replicas=4"])
        .ok();
    assert!(eventually(Duration::from_secs(20), || count(&server, 4)));
    std::thread::sleep(Duration::from_millis(500));
    assert!(count(&server, 4), "no duplicates after re-listing");
}

#[test]
fn pods_become_available_after_min_ready_seconds() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=replicaset"]).unwrap();
    let rs = frontend(1).replace(
        "spec:\n  replicas: 1\n",
        "spec:\n  replicas: 1\n  minReadySeconds: 2\n",
    );
    server.kubectl_stdin(&["apply", "-f", "-"], Some(&rs)).ok();
    assert!(eventually(Duration::from_secs(10), || count(&server, 1)));
    let pod = pod_names(&server, "default", "tier=frontend")[0].clone();
    let now = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    let now = String::from_utf8_lossy(&now.stdout).trim().to_string();
    let status = format!(
        r#"{{"status":{{"phase":"Running","conditions":[{{"type":"Ready","status":"True","lastTransitionTime":"{now}"}}]}}}}"#
    );
    server.patch_status("pod", &pod, &status);
    let counts = || {
        server
            .kubectl(&[
                "get",
                "rs",
                "frontend",
                "-o",
                "jsonpath={.status.readyReplicas}/{.status.availableReplicas}",
            ])
            .stdout
    };
    assert!(
        eventually(Duration::from_secs(5), || counts() == "1/"),
        "{}",
        counts()
    );
    assert!(
        eventually(Duration::from_secs(10), || counts() == "1/1"),
        "{}",
        counts()
    );
}
