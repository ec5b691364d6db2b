//! Core kinds are validated as upstream: what a real cluster refuses with 422 is refused with
//! the same field path and message (real kubectl prints them word for word), and nothing is
//! stored.

use serde_json::{json, Value};
use tinykube_tests::ApiServer;

fn pod_with_resources(resources: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: nginx\n    resources:\n{resources}"
    )
}

/// `kubectl <args> -f -` with `manifest` must fail and print exactly `want`.
#[track_caller]
fn refused(server: &ApiServer, args: &[&str], manifest: &str, want: &str) {
    let out = server.kubectl_stdin(args, Some(manifest));
    assert_eq!(out.fails().trim_end(), want, "{out:?}");
}

fn get(server: &ApiServer, path: &str) -> (u16, Value) {
    let resp = server
        .http()
        .get(format!("{}{path}", server.url))
        .send()
        .unwrap();
    let code = resp.status().as_u16();
    (code, resp.json().unwrap_or(Value::Null))
}

#[test]
fn negative_requests_are_refused() {
    let server = ApiServer::start().unwrap();
    refused(
        &server,
        &["apply", "-f", "-"],
        &pod_with_resources("      requests:\n        cpu: \"-1\"\n"),
        "The Pod \"p\" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
    );
    assert_eq!(get(&server, "/api/v1/namespaces/default/pods/p").0, 404);
}

#[test]
fn requests_over_limits_are_refused() {
    let server = ApiServer::start().unwrap();
    refused(
        &server,
        &["create", "-f", "-"],
        &pod_with_resources("      requests:\n        cpu: \"2\"\n      limits:\n        cpu: \"1\"\n"),
        "The Pod \"p\" is invalid: spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
    );
    assert_eq!(get(&server, "/api/v1/namespaces/default/pods/p").0, 404);
}

#[test]
fn config_map_keys_naming_directories_are_refused() {
    let server = ApiServer::start().unwrap();
    let config_map = |key: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  \"{key}\": x\n")
    };
    for (key, problem) in [
        ("..", "must not be '..'"),
        (".", "must not be '.'"),
        ("..data", "must not start with '..'"),
    ] {
        refused(
            &server,
            &["apply", "-f", "-"],
            &config_map(key),
            &format!(
                "The ConfigMap \"cm\" is invalid: data[{key}]: Invalid value: \"{key}\": {problem}"
            ),
        );
    }
    assert_eq!(
        get(&server, "/api/v1/namespaces/default/configmaps/cm").0,
        404
    );
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&config_map(".hidden")))
        .ok();
}

#[test]
fn pod_status_writes_are_validated() {
    let server = ApiServer::start().unwrap();
    server
        .kubectl(&["run", "p", "--image=nginx", "--restart=Never"])
        .ok();
    let out = server.kubectl(&[
        "patch",
        "pod",
        "p",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"podIP":"999.1.1.1"}}"#,
    ]);
    assert_eq!(
        out.fails().trim_end(),
        "The Pod \"p\" is invalid: status.podIPs[0]: Invalid value: \"999.1.1.1\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        "{out:?}"
    );
    let (_, pod) = get(&server, "/api/v1/namespaces/default/pods/p");
    assert!(pod["status"].get("podIP").is_none(), "{pod}");
    assert!(pod["status"].get("podIPs").is_none(), "{pod}");

    let out = server.kubectl(&[
        "patch",
        "pod",
        "p",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"qosClass":"Guaranteed"}}"#,
    ]);
    assert_eq!(
        out.fails().trim_end(),
        "The Pod \"p\" is invalid: status.qosClass: Invalid value: \"Guaranteed\": field is immutable"
    );

    // A valid one is stored, podIPs following podIP as upstream's conversion does.
    server.patch_status(
        "pod",
        "p",
        r#"{"status":{"phase":"Running","podIP":"10.244.1.7","hostIP":"192.168.1.1","hostIPs":[{"ip":"192.168.1.1"}]}}"#,
    );
    let (_, pod) = get(&server, "/api/v1/namespaces/default/pods/p");
    assert_eq!(pod["status"]["podIPs"], json!([{"ip": "10.244.1.7"}]));
}

#[test]
fn pod_specs_and_updates_are_validated() {
    let server = ApiServer::start().unwrap();
    let http = server.http();
    let pods = format!("{}/api/v1/namespaces/default/pods", server.url);
    let post = |body: &Value| {
        let resp = http.post(&pods).json(body).send().unwrap();
        let code = resp.status().as_u16();
        (code, resp.json::<Value>().unwrap())
    };
    let pod = |containers: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": containers}})
    };
    let cases = [
        (
            json!([{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "name": "web"}, {"containerPort": 81, "name": "web"}]}]),
            "spec.containers[0].ports[1].name",
            "Duplicate value: \"web\"",
        ),
        (
            json!([{"name": "c", "image": "nginx", "env": [{"name": "A", "valueFrom": {}}]}]),
            "spec.containers[0].env[0].valueFrom",
            "Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ),
        (
            json!([{"name": "c", "image": "nginx", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]),
            "spec.containers[0].volumeMounts[0].name",
            "Not found: \"data\"",
        ),
        (
            json!([{"name": "c", "image": "nginx", "livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2}}]),
            "spec.containers[0].livenessProbe.successThreshold",
            "Invalid value: 2: must be 1",
        ),
    ];
    for (containers, field, message) in cases {
        let (code, status) = post(&pod(containers));
        assert_eq!(code, 422, "{status}");
        assert_eq!(status["details"]["causes"][0]["field"], field, "{status}");
        assert_eq!(
            status["details"]["causes"][0]["message"], message,
            "{status}"
        );
    }
    let (code, status) = post(&json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["hold"]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}));
    assert_eq!(code, 422);
    assert_eq!(status["message"], "Pod \"p\" is invalid: metadata.finalizers[0]: Invalid value: \"hold\": name is neither a standard finalizer name nor is it fully qualified");
    assert_eq!(get(&server, "/api/v1/namespaces/default/pods/p").0, 404);

    // Updates: images may change, other fields may not.
    server
        .kubectl(&["run", "p", "--image=nginx", "--restart=Never"])
        .ok();
    server
        .kubectl(&["set", "image", "pod/p", "p=nginx:1.27"])
        .ok();
    let out = server.kubectl(&[
        "patch",
        "pod",
        "p",
        "--type=merge",
        "-p",
        r#"{"spec":{"restartPolicy":"Always"}}"#,
    ]);
    assert!(
        out.fails().starts_with("The Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"),
        "{out:?}"
    );
    let (_, stored) = get(&server, "/api/v1/namespaces/default/pods/p");
    assert_eq!(stored["spec"]["restartPolicy"], "Never");
    assert_eq!(stored["spec"]["containers"][0]["image"], "nginx:1.27");
}

#[test]
fn metadata_rules_hold_for_every_kind() {
    let server = ApiServer::start().unwrap();
    // No finalizer may be added once deletion started (here on a ConfigMap).
    server
        .kubectl_stdin(
            &["apply", "-f", "-"],
            Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n"),
        )
        .ok();
    server
        .kubectl(&["delete", "configmap", "held", "--wait=false"])
        .ok();
    let out = server.kubectl(&[
        "patch",
        "configmap",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/more"}]"#,
    ]);
    assert_eq!(
        out.fails().trim_end(),
        "The ConfigMap \"held\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/more\"}"
    );
    // Owner references need a uid, on a Deployment as on any kind.
    let out = server.kubectl_stdin(
        &["create", "-f", "-"],
        Some("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: held}\nspec:\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec:\n      containers: [{name: c, image: nginx}]\n"),
    );
    assert!(
        out.fails()
            .contains("metadata.ownerReferences.uid: Invalid value: \"\": must not be empty"),
        "{out:?}"
    );
    // Node taints and namespace names.
    let out = server.kubectl_stdin(
        &["create", "-f", "-"],
        Some("apiVersion: v1\nkind: Node\nmetadata:\n  name: w9\nspec:\n  podCIDR: 10.244.9.0\n  taints:\n  - {key: a, effect: NoSchedule}\n  - {key: a, effect: NoSchedule}\n"),
    );
    let text = out.fails();
    assert!(text.starts_with("The Node \"w9\" is invalid: \n"), "{text}");
    // Upstream shows the taint as a Go struct; the path, kind and detail are the same.
    assert!(
        text.contains("* metadata.taints[1]: Duplicate value: "),
        "{text}"
    );
    assert!(
        text.contains(": taints must be unique by key and effect pair\n"),
        "{text}"
    );
    assert!(text.contains("* spec.podCIDRs[0]: Invalid value: \"10.244.9.0\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"), "{text}");
    let out = server.kubectl(&["create", "namespace", "team.a"]);
    assert_eq!(
        out.fails().trim_end(),
        "The Namespace \"team.a\" is invalid: metadata.name: Invalid value: \"team.a\": must not contain dots"
    );
    assert_eq!(get(&server, "/api/v1/nodes/w9").0, 404);
    assert_eq!(
        get(&server, "/apis/apps/v1/namespaces/default/deployments/d").0,
        404
    );
}
