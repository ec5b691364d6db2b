//! Node lifecycle, as a demo shows it: a node that reports Ready loses the not-ready taint, a
//! cordoned node gets the unschedulable taint, and a killed kubelet leaves its node Unknown and
//! tainted unreachable (pods without a long enough toleration evicted) until it comes back.

use std::time::Duration;

use tinykube_tests::{eventually, ApiServer, ControllerManager, Kubelet};

const NODE_LIFECYCLE: &[&str] = &[
    "--controllers",
    "nodelifecycle",
    "--node-monitor-period",
    "200ms",
    "--node-monitor-grace-period",
    "3s",
];

fn taints(server: &ApiServer, node: &str) -> String {
    let path = "jsonpath={range .spec.taints[*]}{.key}:{.effect} {end}";
    server
        .kubectl(&["get", "node", node, "-o", path])
        .ok()
        .trim()
        .to_string()
}

/// The TTL controller annotates every node with the cache TTL of a small cluster, 0 s, and puts
/// it back when someone changes it.
#[test]
fn nodes_carry_upstreams_ttl_annotation() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers", "ttl"]).unwrap();
    let yaml = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker0\n";
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(yaml))
        .ok();
    let ttl = || {
        server
            .kubectl(&[
                "get",
                "node",
                "worker0",
                "-o",
                "jsonpath={.metadata.annotations.node\\.alpha\\.kubernetes\\.io/ttl}",
            ])
            .ok()
            .to_string()
    };
    assert!(
        eventually(Duration::from_secs(10), || ttl() == "0"),
        "{}",
        ttl()
    );
    server
        .kubectl(&[
            "annotate",
            "--overwrite",
            "node",
            "worker0",
            "node.alpha.kubernetes.io/ttl=60",
        ])
        .ok();
    assert!(
        eventually(Duration::from_secs(10), || ttl() == "0"),
        "{}",
        ttl()
    );
}

#[test]
fn nodes_coming_and_going_are_announced_as_upstream() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, NODE_LIFECYCLE).unwrap();
    let yaml = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker0\n";
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(yaml))
        .ok();
    let events = |reason: &str| {
        server
            .kubectl(&[
                "get",
                "events",
                "--field-selector",
                &format!("reason={reason}"),
                "-o",
                "custom-columns=KIND:.involvedObject.kind,NAME:.involvedObject.name,NS:.involvedObject.namespace,RV:.involvedObject.resourceVersion,FROM:.source.component,MESSAGE:.message",
                "--no-headers",
            ])
            .ok()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let registered =
        "Node worker0 <none> <none> node-controller Node worker0 event: Registered Node worker0 in Controller";
    assert!(
        eventually(Duration::from_secs(10), || events("RegisteredNode")
            == registered),
        "{}",
        events("RegisteredNode")
    );
    // kubectl describe node finds it (by the node's UID, without a namespace).
    let describe = server
        .kubectl(&["describe", "node", "worker0"])
        .ok()
        .to_string();
    assert!(
        describe.contains("Registered Node worker0 in Controller"),
        "{describe}"
    );
    server.kubectl(&["delete", "node", "worker0"]).ok();
    let removing =
        "Node worker0 <none> <none> node-controller Node worker0 event: Removing Node worker0 from Controller";
    assert!(
        eventually(Duration::from_secs(10), || events("RemovingNode")
            == removing),
        "{}",
        events("RemovingNode")
    );
    assert_eq!(events("RegisteredNode"), registered, "announced once");
}

#[test]
fn condition_taints_follow_readiness_and_cordoning() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, NODE_LIFECYCLE).unwrap();
    let yaml = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker0\n";
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(yaml))
        .ok();
    // Upstream's controller drops the API server's not-ready taint from a node that has posted
    // no conditions yet, and puts it back (with NoExecute) once the node reports NotReady.
    let set_ready = |status: &str| {
        let patch = format!(
            r#"{{"status":{{"conditions":[{{"type":"Ready","status":"{status}","reason":"KubeletReady","message":"kubelet is posting ready status"}}]}}}}"#
        );
        server.patch_status("node", "worker0", &patch);
    };
    set_ready("False");
    assert!(
        eventually(Duration::from_secs(10), || {
            taints(&server, "worker0")
                == "node.kubernetes.io/not-ready:NoSchedule node.kubernetes.io/not-ready:NoExecute"
        }),
        "a NotReady node has {}",
        taints(&server, "worker0")
    );
    set_ready("True");
    assert!(
        eventually(Duration::from_secs(10), || taints(&server, "worker0")
            .is_empty()),
        "a Ready node keeps {}",
        taints(&server, "worker0")
    );

    server.kubectl(&["cordon", "worker0"]).ok();
    assert!(eventually(Duration::from_secs(10), || taints(
        &server, "worker0"
    )
        == "node.kubernetes.io/unschedulable:NoSchedule"));
    server.kubectl(&["uncordon", "worker0"]).ok();
    assert!(eventually(Duration::from_secs(10), || taints(
        &server, "worker0"
    )
    .is_empty()));
}

fn pod(name: &str, toleration: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  nodeName: worker0\n  containers:\n  - name: c\n    image: nginx\n{toleration}"
    )
}

#[test]
fn a_killed_kubelet_leaves_its_node_unknown_and_unreachable_until_it_returns() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, NODE_LIFECYCLE).unwrap();
    let mut kubelet = Kubelet::start(
        &server,
        &[
            "--hostname-override",
            "worker0",
            "--node-status-update-frequency",
            "500ms",
        ],
    )
    .unwrap();
    let ready = |want: &str| {
        server
            .kubectl(&[
                "get",
                "node",
                "worker0",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            ])
            .ok()
            == want
    };
    assert!(eventually(Duration::from_secs(10), || ready("True")
        && taints(&server, "worker0").is_empty()));

    let briefly = "  tolerations:\n  - key: node.kubernetes.io/unreachable\n    operator: Exists\n    effect: NoExecute\n    tolerationSeconds: 1\n";
    let forever = "  tolerations:\n  - key: node.kubernetes.io/unreachable\n    operator: Exists\n    effect: NoExecute\n";
    for (name, toleration) in [("brief", briefly), ("steadfast", forever), ("plain", "")] {
        server
            .kubectl_stdin(&["create", "-f", "-"], Some(&pod(name, toleration)))
            .ok();
    }
    assert!(eventually(Duration::from_secs(10), || {
        server
            .kubectl(&["get", "pods", "-o", "jsonpath={.items[*].status.phase}"])
            .ok()
            == "Running Running Running"
    }));

    kubelet.kill9();
    assert!(
        eventually(Duration::from_secs(15), || ready("Unknown")),
        "the node never went Unknown"
    );
    let message = server
        .kubectl(&[
            "get",
            "node",
            "worker0",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].message}",
        ])
        .ok()
        .to_string();
    assert_eq!(message, "Kubelet stopped posting node status.");
    assert!(eventually(Duration::from_secs(10), || {
        taints(&server, "worker0")
            == "node.kubernetes.io/unreachable:NoSchedule node.kubernetes.io/unreachable:NoExecute"
    }));

    // With no kubelet to finish it, the evicted pod stays Terminating, as upstream.
    let deleting = |name: &str| {
        !server
            .kubectl(&[
                "get",
                "pod",
                name,
                "-o",
                "jsonpath={.metadata.deletionTimestamp}",
            ])
            .ok()
            .is_empty()
    };
    assert!(eventually(Duration::from_secs(10), || deleting("brief")));
    let reason = server
        .kubectl(&[
            "get",
            "pod",
            "brief",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"DisruptionTarget\")].reason}",
        ])
        .ok()
        .to_string();
    assert_eq!(reason, "DeletionByTaintManager");
    let events = server
        .kubectl(&[
            "get",
            "events",
            "--field-selector",
            "reason=TaintManagerEviction",
        ])
        .ok()
        .to_string();
    assert!(
        events.contains("Marking for deletion Pod default/brief"),
        "{events}"
    );
    assert!(!deleting("steadfast"));
    assert!(!deleting("plain"), "the admission default tolerates 300 s");
    // The node lifecycle controller marked the pods of the lost node not ready.
    let pod_ready = |name: &str| {
        server
            .kubectl(&[
                "get",
                "pod",
                name,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            ])
            .ok()
            .to_string()
    };
    assert_eq!(pod_ready("steadfast"), "False");
    assert_eq!(pod_ready("plain"), "False");

    kubelet.restart().unwrap();
    assert!(
        eventually(Duration::from_secs(15), || ready("True")
            && taints(&server, "worker0").is_empty()),
        "taints left after the kubelet returned: {}",
        taints(&server, "worker0")
    );
    // The kubelet that came back re-asserts the status of the pods it runs, as upstream's
    // status manager does when the API's copy differs from its own.
    assert!(
        eventually(Duration::from_secs(10), || pod_ready("steadfast") == "True"
            && pod_ready("plain") == "True"),
        "pods left not ready: steadfast {}, plain {}",
        pod_ready("steadfast"),
        pod_ready("plain")
    );
}
