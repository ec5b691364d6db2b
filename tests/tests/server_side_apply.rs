//! Server-side apply and managedFields, as `kubectl apply --server-side`, kube-rs'
//! `Patch::Apply` and client-go's `Apply` use them: the first apply creates, a re-apply without
//! a field removes it, a field another manager set is a conflict (409, upstream's message)
//! until `--force-conflicts`, and every write names its manager in `metadata.managedFields`.

use serde_json::{json, Value};
use tinykube_tests::{manifest, ApiServer};

const WEB: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    team: blue
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
"#;

/// The deployment as JSON, managedFields included.
fn deployment(server: &ApiServer) -> Value {
    let out = server.kubectl(&[
        "get",
        "deployment",
        "web",
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    serde_json::from_str(out.ok()).unwrap()
}

/// `(manager, operation, subresource)` of each managedFields entry.
fn managers(obj: &Value) -> Vec<(String, String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (s("manager"), s("operation"), s("subresource"))
        })
        .collect()
}

fn entry<'a>(obj: &'a Value, manager: &str, operation: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|e| e["manager"] == manager && e["operation"] == operation)
        })
        .unwrap_or_else(|| panic!("no {manager}/{operation} entry in {obj:#}"))
}

#[test]
fn kubectl_apply_server_side_creates_prunes_and_reports_conflicts() {
    let server = ApiServer::start().unwrap();
    let file = manifest(&server.scratch(), "web.yaml", WEB);
    let file = file.to_str().unwrap();
    let out = server.kubectl(&["apply", "--server-side", "-f", file]);
    assert_eq!(out.ok().trim(), "deployment.apps/web serverside-applied");
    let obj = deployment(&server);
    assert_eq!(
        managers(&obj),
        [("kubectl".into(), "Apply".into(), String::new())]
    );
    let applied = &entry(&obj, "kubectl", "Apply")["fieldsV1"];
    assert_eq!(applied["f:spec"]["f:replicas"], json!({}));
    assert!(
        applied["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"]
            ["f:image"]
            .is_object(),
        "{applied:#}"
    );
    // Defaulted fields belong to nobody.
    assert!(applied["f:spec"].get("f:strategy").is_none(), "{applied:#}");
    assert_eq!(obj["spec"]["strategy"]["type"], "RollingUpdate");

    // The same configuration again changes nothing.
    let rv = obj["metadata"]["resourceVersion"].clone();
    let out = server.kubectl(&["apply", "--server-side", "-f", file]);
    assert_eq!(out.ok().trim(), "deployment.apps/web serverside-applied");
    assert_eq!(deployment(&server)["metadata"]["resourceVersion"], rv);

    // A field the applier stops applying is removed; one it changes is changed.
    let without = WEB
        .replace("  annotations:\n    team: blue\n", "")
        .replace("nginx:1.27", "nginx:1.28");
    let file2 = manifest(&server.scratch(), "web2.yaml", &without);
    server
        .kubectl(&["apply", "--server-side", "-f", file2.to_str().unwrap()])
        .ok();
    let obj = deployment(&server);
    assert!(
        obj["metadata"]["annotations"].get("team").is_none(),
        "{:#}",
        obj["metadata"]
    );
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.28"
    );
    assert_eq!(obj["metadata"]["generation"], 2);

    // Another manager takes .spec.replicas: applying a different value is a conflict.
    server
        .kubectl(&["scale", "deployment", "web", "--replicas=5"])
        .ok();
    let obj = deployment(&server);
    let scaler = managers(&obj)
        .into_iter()
        .find(|(_, op, _)| op == "Update")
        .unwrap_or_else(|| panic!("no Update entry in {obj:#}"));
    assert_eq!(scaler.2, "scale", "{obj:#}");
    let err = server
        .kubectl(&["apply", "--server-side", "-f", file2.to_str().unwrap()])
        .fails()
        .to_string();
    let want = format!(
        "Apply failed with 1 conflict: conflict with {:?} with subresource \"scale\" using apps/v1: .spec.replicas",
        scaler.0
    );
    assert!(err.contains(&want), "{err}");
    assert_eq!(deployment(&server)["spec"]["replicas"], 5);

    // --force-conflicts takes it over.
    server
        .kubectl(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            file2.to_str().unwrap(),
        ])
        .ok();
    let obj = deployment(&server);
    assert_eq!(obj["spec"]["replicas"], 3);
    assert_eq!(
        managers(&obj),
        [("kubectl".into(), "Apply".into(), String::new())],
        "the scaler owned only replicas"
    );
}

#[test]
fn every_write_records_its_manager() {
    let server = ApiServer::start().unwrap();
    server
        .kubectl(&["create", "deployment", "web", "--image=nginx"])
        .ok();
    server
        .kubectl(&["label", "deployment", "web", "tier=front"])
        .ok();
    let obj = deployment(&server);
    let ms = managers(&obj);
    assert!(
        ms.contains(&("kubectl-create".into(), "Update".into(), String::new())),
        "{ms:?}"
    );
    let label = ms
        .iter()
        .find(|(m, _, _)| m != "kubectl-create")
        .unwrap_or_else(|| panic!("no entry for the label write: {ms:?}"));
    let labeled = &entry(&obj, &label.0, "Update")["fieldsV1"];
    assert_eq!(
        labeled["f:metadata"]["f:labels"]["f:tier"],
        json!({}),
        "{labeled:#}"
    );
    // The creator's entry covers what it set, defaults included, as upstream.
    let created = &entry(&obj, "kubectl-create", "Update")["fieldsV1"];
    assert!(created["f:spec"]["f:replicas"].is_object(), "{created:#}");
    assert!(created["f:spec"]["f:strategy"].is_object(), "{created:#}");

    // A status write gets an entry of its own, for the status subresource.
    server.patch_status("deployment", "web", r#"{"status":{"replicas":1}}"#);
    let obj = deployment(&server);
    let status = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["subresource"] == "status")
        .unwrap_or_else(|| panic!("no status entry in {obj:#}"));
    assert_eq!(status["fieldsV1"]["f:status"]["f:replicas"], json!({}));
}

#[test]
fn apply_over_http_as_client_libraries_send_it() {
    let server = ApiServer::start().unwrap();
    let http = server.http();
    let url = format!("{}/api/v1/namespaces/default/pods/p", server.url);
    let body = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    })
    .to_string();
    let send = |query: &str, body: &str| {
        http.patch(format!("{url}{query}"))
            .header("Content-Type", "application/apply-patch+yaml")
            .body(body.to_string())
            .send()
            .unwrap()
    };

    // No field manager: upstream's 422.
    let resp = send("", &body);
    assert_eq!(resp.status().as_u16(), 422);
    let status: Value = resp.json().unwrap();
    assert_eq!(
        status["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );

    // The first apply creates (201), the next ones update (200).
    let resp = send("?fieldManager=ctrl", &body);
    assert_eq!(resp.status().as_u16(), 201);
    let created: Value = resp.json().unwrap();
    assert_eq!(created["metadata"]["managedFields"][0]["manager"], "ctrl");
    assert_eq!(
        created["metadata"]["managedFields"][0]["operation"],
        "Apply"
    );
    assert_eq!(created["spec"]["restartPolicy"], "Always");

    // Another applier changing the label conflicts, with upstream's Status.
    let other =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "2"}}})
            .to_string();
    let resp = send("?fieldManager=other", &other);
    assert_eq!(resp.status().as_u16(), 409);
    let status: Value = resp.json().unwrap();
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["message"],
        "Apply failed with 1 conflict: conflict with \"ctrl\": .metadata.labels.a"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"ctrl\"", "field": ".metadata.labels.a"}])
    );
    // Forced, it takes the label; the first applier no longer owns it.
    let resp = send("?fieldManager=other&force=true", &other);
    assert_eq!(resp.status().as_u16(), 200);
    let pod: Value = resp.json().unwrap();
    assert_eq!(pod["metadata"]["labels"]["a"], "2");

    // A name that differs from the URL's is refused and changes nothing.
    let renamed = body.replace("\"name\":\"p\"", "\"name\":\"q\"");
    let resp = send("?fieldManager=ctrl", &renamed);
    assert_eq!(resp.status().as_u16(), 400);
    let after: Value = http.get(&url).send().unwrap().json().unwrap();
    assert_eq!(after["metadata"]["labels"]["a"], "2");
}

#[test]
fn concurrent_first_applies_all_land() {
    let server = ApiServer::start().unwrap();
    let url = format!("{}/api/v1/namespaces/default/configmaps/shared", server.url);
    // Eight controllers apply their own key of one ConfigMap that does not exist yet.
    let codes: Vec<u16> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..8)
            .map(|i| {
                let url = url.clone();
                let http = server.http();
                s.spawn(move || {
                    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "shared"}, "data": {format!("k{i}"): "v"}});
                    http.patch(format!("{url}?fieldManager=ctrl-{i}"))
                        .header("Content-Type", "application/apply-patch+yaml")
                        .body(body.to_string())
                        .send()
                        .unwrap()
                        .status()
                        .as_u16()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 200).count(), 7, "{codes:?}");
    let cm: Value = server.http().get(&url).send().unwrap().json().unwrap();
    let data = cm["data"].as_object().unwrap();
    assert_eq!(data.len(), 8, "{cm:#}");
    assert_eq!(cm["metadata"]["managedFields"].as_array().unwrap().len(), 8);
}
