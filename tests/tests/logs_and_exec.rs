//! `kubectl logs`, `kubectl exec` and their refusals, as a user meets them: the kubelet
//! publishes where it is reached; the API server checks the container, the node and the log
//! options with upstream's messages before it proxies to that kubelet; a node that publishes
//! no address is answered as an unreachable kubelet (and never dialled); then the containers'
//! logs and commands themselves (nginx's start-up lines, `ls /`, an exit code, stdin, an
//! absent previous run) through the real kubectl over WebSocket.

use std::time::Duration;

use serde_json::Value;
use tinykube_tests::{eventually, ApiServer, Kubelet};

const WAIT: Duration = Duration::from_secs(20);

fn json(server: &ApiServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(server.kubectl(&all).ok()).expect("kubectl printed JSON")
}

fn apply(server: &ApiServer, manifest: &str) {
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(manifest))
        .ok();
}

fn pod(name: &str, node: &str, containers: &[(&str, &str)]) -> String {
    let containers: Vec<String> = containers
        .iter()
        .map(|(n, image)| format!("    - name: {n}\n      image: {image}\n"))
        .collect();
    let node = if node.is_empty() {
        String::new()
    } else {
        format!("  nodeName: {node}\n")
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n{node}  containers:\n{}",
        containers.concat()
    )
}

fn running(server: &ApiServer, name: &str) -> bool {
    json(server, &["get", "pod", name])["status"]["phase"] == "Running"
}

#[test]
fn logs_and_exec_as_upstream() {
    let server = ApiServer::start().unwrap();
    let _kubelet = Kubelet::start(
        &server,
        &[
            "--hostname-override",
            "worker0",
            "--node-ip",
            "192.168.10.10",
        ],
    )
    .unwrap();
    assert!(eventually(WAIT, || server
        .kubectl(&["get", "node", "worker0"])
        .success));

    // The kubelet publishes the port it listens on and the address to reach it on.
    let node = json(&server, &["get", "node", "worker0"]);
    let address = node["metadata"]["annotations"]["kubelet.tinykube.io/address"]
        .as_str()
        .expect("the kubelet publishes its address")
        .to_string();
    assert!(address.starts_with("127.0.0.1:"), "{address}");
    let port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"].clone();
    assert_eq!(address.rsplit(':').next().unwrap(), port.to_string());

    // Discovery lists the subresources as upstream.
    let v1: Value =
        serde_json::from_str(server.kubectl(&["get", "--raw", "/api/v1"]).ok()).unwrap();
    let sub = |name: &str| {
        v1["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} is not served"))
    };
    assert_eq!(sub("pods/log")["kind"], "Pod");
    assert_eq!(sub("pods/log")["verbs"], serde_json::json!(["get"]));
    assert_eq!(sub("pods/exec")["kind"], "PodExecOptions");
    assert_eq!(
        sub("pods/exec")["verbs"],
        serde_json::json!(["create", "get"])
    );
    assert_eq!(sub("pods/attach")["kind"], "PodAttachOptions");

    apply(&server, &pod("web", "worker0", &[("nginx", "nginx")]));
    apply(
        &server,
        &pod("two", "worker0", &[("a", "busybox"), ("b", "busybox")]),
    );
    apply(&server, &pod("pending", "", &[("app", "nginx")]));
    // A Node that publishes no kubelet address (its InternalIP is simulated: never dialled).
    apply(
        &server,
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: silent\n",
    );
    server.patch_status(
        "node",
        "silent",
        r#"{"status":{"addresses":[{"type":"InternalIP","address":"192.168.99.9"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}}}}"#,
    );
    apply(&server, &pod("far", "silent", &[("app", "nginx")]));
    // A completed pod on a node no kubelet plays (nothing rewrites its phase).
    apply(&server, &pod("done", "gone", &[("app", "busybox")]));
    server.patch_status("pod", "done", r#"{"status":{"phase":"Succeeded"}}"#);

    // The API server's checks, with upstream's messages.
    // kubectl checks the container itself, with the API server's words; the server too.
    let nope = server.kubectl(&["logs", "web", "-c", "nope"]);
    assert!(
        nope.fails()
            .contains("container nope is not valid for pod web"),
        "{}",
        nope.stderr
    );
    let raw_nope = server.kubectl(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/web/log?container=nope",
    ]);
    assert!(
        raw_nope
            .fails()
            .contains("Error from server (BadRequest): container nope is not valid for pod web"),
        "{}",
        raw_nope.stderr
    );
    let unnamed = server.kubectl(&["get", "--raw", "/api/v1/namespaces/default/pods/two/log"]);
    assert!(
        unnamed
            .fails()
            .contains("a container name must be specified for pod two, choose one of: [a b]"),
        "{}",
        unnamed.stderr
    );
    // kubectl itself picks the first container and says so.
    let defaulted = server.kubectl(&["logs", "two"]);
    assert!(
        defaulted
            .stderr
            .contains(r#"Defaulted container "a" out of: a, b"#),
        "{}",
        defaulted.stderr
    );
    let negative = server.kubectl(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/web/log?tailLines=-1",
    ]);
    assert!(
        negative.fails().contains(
            r#"PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0"#
        ),
        "{}",
        negative.stderr
    );
    let unbound = server.kubectl(&["exec", "pending", "--", "ls"]);
    assert!(
        unbound
            .fails()
            .contains("pod pending does not have a host assigned"),
        "{}",
        unbound.stderr
    );
    // Logs of a pod on no node yet: empty, as upstream.
    assert_eq!(server.kubectl(&["logs", "pending"]).ok(), "");
    let completed = server.kubectl(&["exec", "done", "--", "ls"]);
    assert!(
        completed.fails().contains(
            "cannot exec into a container in a completed pod; current phase is Succeeded"
        ),
        "{}",
        completed.stderr
    );
    let far = server.kubectl(&["logs", "far"]);
    assert!(
        far.fails().contains(
            r#"Get "https://192.168.99.9:10250/containerLogs/default/far/app": dial tcp 192.168.99.9:10250"#
        ),
        "{}",
        far.stderr
    );

    // ---- From here on, the containers themselves: these need the kubelet's runner. ----
    assert!(eventually(WAIT, || running(&server, "web")));
    assert!(eventually(WAIT, || {
        server
            .kubectl(&["logs", "web"])
            .stdout
            .contains("Configuration complete; ready for start up")
    }));
    let stamped = server
        .kubectl(&["logs", "web", "--timestamps", "--tail=1"])
        .ok()
        .to_string();
    let (stamp, _) = stamped.split_once(' ').expect("a timestamp, then the line");
    assert!(
        stamp.len() == 30 && stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T',
        "{stamped}"
    );
    let ls = server
        .kubectl(&["exec", "web", "--", "ls", "/"])
        .ok()
        .to_string();
    let entries: Vec<&str> = ls.split_whitespace().collect();
    for dir in ["bin", "dev", "etc", "proc", "usr"] {
        assert!(entries.contains(&dir), "{ls}");
    }
    let exit3 = server.kubectl(&["exec", "web", "--", "sh", "-c", "exit 3"]);
    assert!(
        exit3
            .fails()
            .contains("command terminated with exit code 3"),
        "{}",
        exit3.stderr
    );
    let echoed = server.kubectl_stdin(&["exec", "-i", "web", "--", "cat"], Some("hello\n"));
    assert_eq!(echoed.ok(), "hello\n");
    let previous = server.kubectl(&["logs", "web", "--previous"]);
    assert!(
        previous.fails().contains(
            r#"Error from server (BadRequest): previous terminated container "nginx" in pod "web" not found"#
        ),
        "{}",
        previous.stderr
    );
}
