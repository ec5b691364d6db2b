//! Server-side apply of custom objects with real kubectl: the CRD's schema decides how lists
//! and maps merge (`x-kubernetes-list-type: set` by value, `map` by its keys, atomic lists and
//! `x-kubernetes-map-type: atomic` maps whole), two field managers share a list element by
//! element and conflict on one element's field, and `--show-managed-fields` shows upstream's
//! `f:`/`k:`/`v:` field sets, for applies and for JSON merge patches alike.

use serde_json::{json, Value};
use tinykube_tests::ApiServer;

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              tags:
                type: array
                x-kubernetes-list-type: set
                items:
                  type: string
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name:
                      type: string
                    port:
                      type: integer
              args:
                type: array
                x-kubernetes-list-type: atomic
                items:
                  type: string
              labels:
                type: object
                additionalProperties:
                  type: string
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties:
                  type: string
"#;

fn install(server: &ApiServer) {
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(WIDGET_CRD))
        .ok();
    server
        .kubectl(&[
            "wait",
            "--for",
            "condition=established",
            "--timeout=20s",
            "crd/widgets.example.com",
        ])
        .ok();
}

/// A Widget named `w` with this spec, as YAML.
fn widget(spec: Value) -> String {
    let obj = json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
    });
    obj.to_string()
}

fn apply_args(manager: &str, force: bool) -> Vec<String> {
    let mut args = vec![
        "apply".to_string(),
        "--server-side".to_string(),
        format!("--field-manager={manager}"),
        "-f".to_string(),
        "-".to_string(),
    ];
    if force {
        args.push("--force-conflicts".to_string());
    }
    args
}

/// `kubectl apply --server-side` of a Widget with `spec` as `manager`; must succeed.
fn apply(server: &ApiServer, manager: &str, spec: Value, force: bool) {
    let args = apply_args(manager, force);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    server.kubectl_stdin(&args, Some(&widget(spec))).ok();
}

/// The same, expected to fail: kubectl's error output.
fn apply_fails(server: &ApiServer, manager: &str, spec: Value) -> String {
    let args = apply_args(manager, false);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    server
        .kubectl_stdin(&args, Some(&widget(spec)))
        .fails()
        .to_string()
}

fn get(server: &ApiServer, name: &str) -> Value {
    let out = server.kubectl(&["get", "widget", name, "-o", "json", "--show-managed-fields"]);
    serde_json::from_str(out.ok()).expect("kubectl printed JSON")
}

/// The fieldsV1 of `manager`'s entry (Null when it has none).
fn fields<'v>(obj: &'v Value, manager: &str) -> &'v Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|list| list.iter().find(|e| e["manager"] == manager))
        .map(|e| &e["fieldsV1"])
        .unwrap_or(&Value::Null)
}

#[test]
fn two_managers_apply_a_custom_object_by_its_schema() {
    let server = ApiServer::start().unwrap();
    install(&server);

    apply(
        &server,
        "alice",
        json!({"tags": ["a"], "ports": [{"name": "http", "port": 80}], "args": ["x"],
               "labels": {"owner": "alice"}, "selector": {"app": "w"}}),
        false,
    );
    apply(
        &server,
        "bob",
        json!({"tags": ["b"], "ports": [{"name": "metrics", "port": 9090}],
               "labels": {"team": "b"}}),
        false,
    );
    let obj = get(&server, "w");
    // A set merges by value, a map list by its key, a granular map by key.
    assert_eq!(obj["spec"]["tags"], json!(["a", "b"]));
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    );
    assert_eq!(
        obj["spec"]["labels"],
        json!({"owner": "alice", "team": "b"})
    );
    assert_eq!(
        fields(&obj, "alice"),
        &json!({"f:spec": {
            "f:args": {},
            "f:labels": {"f:owner": {}},
            "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:selector": {},
            "f:tags": {"v:\"a\"": {}}
        }})
    );
    assert_eq!(
        fields(&obj, "bob"),
        &json!({"f:spec": {
            "f:labels": {"f:team": {}},
            "f:ports": {"k:{\"name\":\"metrics\"}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:tags": {"v:\"b\"": {}}
        }})
    );

    // Bob changing alice's port: a conflict on that one field of that one element.
    let bob_http = json!({"tags": ["b"], "labels": {"team": "b"},
        "ports": [{"name": "metrics", "port": 9090}, {"name": "http", "port": 8080}]});
    let err = apply_fails(&server, "bob", bob_http.clone());
    assert!(
        err.contains(
            "Apply failed with 1 conflict: conflict with \"alice\": .spec.ports[name=\"http\"].port"
        ),
        "{err}"
    );
    assert_eq!(get(&server, "w")["spec"]["ports"][0]["port"], 80);

    // Forced, bob owns the port; alice keeps the element and its name.
    apply(&server, "bob", bob_http, true);
    let obj = get(&server, "w");
    assert_eq!(
        obj["spec"]["ports"][0],
        json!({"name": "http", "port": 8080})
    );
    assert_eq!(
        fields(&obj, "alice")["f:spec"]["f:ports"],
        json!({"k:{\"name\":\"http\"}": {".": {}, "f:name": {}}})
    );

    // An atomic list and an atomic map are replaced whole, and conflict whole.
    let err = apply_fails(
        &server,
        "bob",
        json!({"args": ["y"], "selector": {"tier": "t"}}),
    );
    assert!(err.contains("Apply failed with 2 conflicts"), "{err}");
    assert!(err.contains("- .spec.args\n- .spec.selector"), "{err}");
    apply(
        &server,
        "bob",
        json!({"tags": ["b"], "labels": {"team": "b"}, "args": ["y"], "selector": {"tier": "t"},
               "ports": [{"name": "metrics", "port": 9090}, {"name": "http", "port": 8080}]}),
        true,
    );
    let obj = get(&server, "w");
    assert_eq!(obj["spec"]["args"], json!(["y"]));
    assert_eq!(obj["spec"]["selector"], json!({"tier": "t"}));

    // Bob dropping his tag and his element removes exactly those.
    apply(
        &server,
        "bob",
        json!({"labels": {"team": "b"}, "args": ["y"], "selector": {"tier": "t"},
               "ports": [{"name": "http", "port": 8080}]}),
        false,
    );
    let obj = get(&server, "w");
    assert_eq!(obj["spec"]["tags"], json!(["a"]));
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"name": "http", "port": 8080}])
    );

    // The YAML kubectl shows reads as upstream's.
    let yaml = server
        .kubectl(&["get", "widget", "w", "-o", "yaml", "--show-managed-fields"])
        .ok()
        .to_string();
    for line in [
        "manager: alice",
        "operation: Apply",
        "fieldsType: FieldsV1",
        "k:{\"name\":\"http\"}:",
        "v:\"a\": {}",
        "f:selector: {}",
    ] {
        assert!(yaml.contains(line), "no {line:?} in\n{yaml}");
    }
}

#[test]
fn updates_of_custom_objects_record_fields_by_the_schema() {
    let server = ApiServer::start().unwrap();
    install(&server);
    server
        .kubectl_stdin(
            &["create", "-f", "-"],
            Some(&widget(
                json!({"tags": ["a"], "ports": [{"name": "http", "port": 80}]}),
            )),
        )
        .ok();
    let obj = get(&server, "w");
    // An Update-type write owns every node it added, as upstream's field manager records it.
    assert_eq!(
        fields(&obj, "kubectl-create"),
        &json!({"f:spec": {
            ".": {},
            "f:ports": {".": {}, "k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:tags": {".": {}, "v:\"a\"": {}}
        }})
    );

    // A merge patch adding a tag and changing a port owns just those.
    server
        .kubectl(&[
            "patch",
            "widget",
            "w",
            "--type=merge",
            "-p",
            r#"{"spec":{"tags":["a","c"],"ports":[{"name":"http","port":81}]}}"#,
        ])
        .ok();
    let obj = get(&server, "w");
    assert_eq!(
        fields(&obj, "kubectl-patch"),
        &json!({"f:spec": {
            "f:ports": {"k:{\"name\":\"http\"}": {"f:port": {}}},
            "f:tags": {"v:\"c\"": {}}
        }})
    );
    assert_eq!(
        fields(&obj, "kubectl-create")["f:spec"]["f:ports"],
        json!({".": {}, "k:{\"name\":\"http\"}": {".": {}, "f:name": {}}})
    );

    // A JSON patch removing the tag gives its field up.
    server
        .kubectl(&[
            "patch",
            "widget",
            "w",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/spec/tags/1"}]"#,
        ])
        .ok();
    let obj = get(&server, "w");
    assert_eq!(obj["spec"]["tags"], json!(["a"]));
    assert_eq!(fields(&obj, "kubectl-patch")["f:spec"].get("f:tags"), None);
}
