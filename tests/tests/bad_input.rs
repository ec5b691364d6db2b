//! Bad input gets upstream's status code and a clear message, and stores nothing.

use serde_json::{json, Value};
use tinykube_tests::{manifest, ApiServer};

fn status(resp: reqwest::blocking::Response) -> (u16, Value) {
    let code = resp.status().as_u16();
    let body: Value = resp.json().unwrap_or(Value::Null);
    (code, body)
}

fn pod_count(server: &ApiServer) -> usize {
    let list: Value = server
        .http()
        .get(format!("{}/api/v1/pods", server.url))
        .send()
        .unwrap()
        .json()
        .unwrap();
    list["items"].as_array().unwrap().len()
}

#[test]
fn http_clients_get_upstream_statuses() {
    let server = ApiServer::start().unwrap();
    let http = server.http();
    let pods = format!("{}/api/v1/namespaces/default/pods", server.url);

    // Malformed JSON.
    let (code, body) = status(
        http.post(&pods)
            .header("Content-Type", "application/json")
            .body("{\"apiVersion\":\"v1\",\"kind\":\"Pod")
            .send()
            .unwrap(),
    );
    assert_eq!(code, 400);
    assert_eq!(body["reason"], "BadRequest");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("unexpected end of JSON input"),
        "{body}"
    );

    // Invalid name.
    let bad_name = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "Bad_Name"},
                          "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}});
    let (code, body) = status(http.post(&pods).json(&bad_name).send().unwrap());
    assert_eq!(code, 422);
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.name");
    assert!(body["message"].as_str().unwrap().starts_with("Pod \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"), "{body}");

    // No containers.
    let empty =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"}, "spec": {}});
    let (code, body) = status(http.post(&pods).json(&empty).send().unwrap());
    assert_eq!(code, 422, "{body}");

    // Unknown resources: JSON 404 in a known group, plain text for an unknown group.
    let (code, body) = status(
        http.get(format!("{}/api/v1/foos", server.url))
            .send()
            .unwrap(),
    );
    assert_eq!(
        (code, body["message"].as_str()),
        (
            404,
            Some("the server could not find the requested resource")
        )
    );
    let resp = http
        .get(format!("{}/apis/example.com/v1/widgets", server.url))
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    assert_eq!(resp.text().unwrap(), "404 page not found\n");

    // Missing namespace.
    let (code, body) = status(
        http.post(format!("{}/api/v1/namespaces/nope/pods", server.url))
            .json(&bad_name)
            .send()
            .unwrap(),
    );
    assert_eq!(code, 404, "{body}");

    // Wrong content type.
    let resp = http
        .post(&pods)
        .header("Content-Type", "text/plain")
        .body("hello")
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 415);

    // Invalid selectors.
    let (code, body) = status(
        http.get(format!("{pods}?labelSelector=a%20in%20("))
            .send()
            .unwrap(),
    );
    assert_eq!(code, 400, "{body}");
    let (code, _) = status(
        http.get(format!("{pods}?fieldSelector=spec.nope%3Dx"))
            .send()
            .unwrap(),
    );
    assert_eq!(code, 400);

    // A 4 MiB body.
    let huge = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "huge"},
                      "data": {"k": "x".repeat(4 * 1024 * 1024)}});
    let (code, body) = status(
        http.post(format!(
            "{}/api/v1/namespaces/default/configmaps",
            server.url
        ))
        .json(&huge)
        .send()
        .unwrap(),
    );
    assert_eq!(code, 413);
    assert_eq!(
        body["message"],
        "Request entity too large: limit is 3145728"
    );

    // Stale resourceVersion.
    let good = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "good"},
                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let (code, created) = status(http.post(&pods).json(&good).send().unwrap());
    assert_eq!(code, 201);
    let mut stale = created.clone();
    http.patch(format!("{pods}/good"))
        .header("Content-Type", "application/merge-patch+json")
        .body(r#"{"metadata":{"labels":{"a":"b"}}}"#)
        .send()
        .unwrap();
    stale["metadata"]["labels"] = json!({"c": "d"});
    let (code, body) = status(
        http.put(format!("{pods}/good"))
            .json(&stale)
            .send()
            .unwrap(),
    );
    assert_eq!(code, 409);
    assert_eq!(body["message"], "Operation cannot be fulfilled on pods \"good\": the object has been modified; please apply your changes to the latest version and try again");

    assert_eq!(pod_count(&server), 1, "only the good pod was stored");
    let alive = http.get(format!("{}/healthz", server.url)).send().unwrap();
    assert!(alive.status().is_success());
}

#[test]
fn kubectl_reports_bad_manifests() {
    let server = ApiServer::start().unwrap();
    let dir = server.scratch();
    let broken = manifest(
        &dir,
        "broken.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n spec: [\n",
    );
    let out = server.kubectl(&["apply", "-f", broken.to_str().unwrap()]);
    assert!(out.fails().contains("error"), "{out:?}");

    let unknown_kind = manifest(
        &dir,
        "widget.yaml",
        "apiVersion: v1\nkind: Widget\nmetadata:\n  name: w\n",
    );
    let out = server.kubectl(&["apply", "-f", unknown_kind.to_str().unwrap()]);
    assert!(out.fails().contains("Widget"), "{out:?}");

    let bad_name = manifest(&dir, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers:\n  - name: c\n    image: nginx\n");
    let out = server.kubectl(&["apply", "-f", bad_name.to_str().unwrap()]);
    assert!(
        out.fails().contains("Invalid value: \"Bad_Name\""),
        "{out:?}"
    );

    let unknown_field = manifest(&dir, "field.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ok\nspec:\n  colour: red\n  containers:\n  - name: c\n    image: nginx\n");
    let out = server.kubectl(&["apply", "-f", unknown_field.to_str().unwrap()]);
    assert!(
        out.fails().contains("unknown field \"spec.colour\""),
        "{out:?}"
    );

    let bad_selector = server.kubectl(&["get", "pods", "-l", "a in ("]);
    bad_selector.fails();
    assert_eq!(pod_count(&server), 0);
}
