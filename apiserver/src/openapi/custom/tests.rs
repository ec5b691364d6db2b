//! The OpenAPI v3 document of the upstream docs' CronTab CRD and of CRDs with the other schema
//! shapes, and their serving through `openapi::serve`.

use axum::http::{header, HeaderMap, StatusCode};
use serde_json::{json, Value};

use super::{custom_document, custom_group_versions};

/// The CronTab CRD of "Extend the Kubernetes API with CustomResourceDefinitions", with
/// descriptions for `kubectl explain` and the status and scale subresources.
fn crontab_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                      "listKind": "CronTabList", "shortNames": ["ct"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {
                     "type": "object",
                     "properties": {
                         "spec": {"type": "object", "description": "The desired CronTab.",
                                  "properties": {
                                      "cronSpec": {"type": "string", "description": "The cron spec defining the interval a CronJob is run"},
                                      "image": {"type": "string"},
                                      "replicas": {"type": "integer", "minimum": 1},
                                      "port": {"x-kubernetes-int-or-string": true},
                                      "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                                   "x-kubernetes-preserve-unknown-fields": true},
                                  }},
                         "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                     }}},
                 "subresources": {"status": {}, "scale": {
                     "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                 "selectableFields": [{"jsonPath": ".spec.image"}]},
                {"name": "v2", "served": false, "storage": false},
            ],
        },
    })
}

fn doc() -> Value {
    custom_document("stable.example.com", "v1", &[crontab_crd()])
}

#[test]
fn group_versions_are_the_served_ones() {
    let mut other = crontab_crd();
    other["spec"]["group"] = json!("other.example.org");
    other["spec"]["versions"][1]["served"] = json!(true);
    assert_eq!(
        custom_group_versions(&[crontab_crd(), other, json!({"spec": "broken"})]),
        vec![
            ("other.example.org".to_string(), "v1".to_string()),
            ("other.example.org".into(), "v2".into()),
            ("stable.example.com".into(), "v1".into()),
        ]
    );
}

#[test]
fn crontab_schemas() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    let kind = &schemas["com.example.stable.v1.CronTab"];
    assert_eq!(
        kind["x-kubernetes-group-version-kind"],
        json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
    );
    assert_eq!(
        kind["x-kubernetes-selectable-fields"],
        json!([{"fieldPath": "spec.image"}])
    );
    let props = &kind["properties"];
    assert!(props["apiVersion"]["description"]
        .as_str()
        .unwrap()
        .starts_with("APIVersion defines the versioned schema"));
    assert_eq!(props["kind"]["type"], "string");
    assert_eq!(
        props["metadata"]["allOf"],
        json!([{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}])
    );
    // What `kubectl explain crontab.spec` prints.
    let spec = &props["spec"];
    assert_eq!(spec["description"], "The desired CronTab.");
    assert_eq!(
        spec["properties"]["cronSpec"]["description"],
        "The cron spec defining the interval a CronJob is run"
    );
    assert_eq!(
        spec["properties"]["replicas"],
        json!({"type": "integer", "minimum": 1})
    );
    assert_eq!(
        spec["properties"]["port"]["anyOf"],
        json!([{"type": "integer"}, {"type": "string"}])
    );
    let template = &spec["properties"]["template"];
    assert_eq!(template["required"], json!(["kind", "apiVersion"]));
    assert_eq!(template["properties"]["kind"]["type"], "string");
    assert!(template["properties"]["metadata"]["allOf"].is_array());

    let list = &schemas["com.example.stable.v1.CronTabList"];
    assert_eq!(list["required"], json!(["items"]));
    assert_eq!(
        list["properties"]["items"]["items"],
        json!({"$ref": "#/components/schemas/com.example.stable.v1.CronTab"})
    );
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "CronTabList"
    );
    // Every reference resolves inside the document.
    let text = doc.to_string();
    for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = &piece[..piece.find('"').unwrap()];
        assert!(schemas.get(name).is_some(), "dangling reference {name}");
    }
    for meta in ["ObjectMeta", "ListMeta", "Status", "DeleteOptions", "Patch"] {
        let name = format!("io.k8s.apimachinery.pkg.apis.meta.v1.{meta}");
        assert!(schemas.get(&name).is_some(), "{name}");
    }
}

#[test]
fn crontab_paths() {
    let doc = doc();
    let paths = doc["paths"].as_object().unwrap();
    let root = "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs";
    let mut names: Vec<&String> = paths.keys().collect();
    names.sort();
    let expect = [
        "/apis/stable.example.com/v1/crontabs".to_string(),
        root.to_string(),
        format!("{root}/{{name}}"),
        format!("{root}/{{name}}/scale"),
        format!("{root}/{{name}}/status"),
    ];
    assert_eq!(names, expect.iter().collect::<Vec<_>>());
    let item = &paths[&format!("{root}/{{name}}")];
    let patch = &item["patch"];
    // What kubectl looks for to use server-side field validation.
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "stable.example.com", "version": "v1", "kind": "CronTab"})
    );
    let params: Vec<&str> = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        params,
        ["dryRun", "fieldManager", "fieldValidation", "force"]
    );
    assert_eq!(patch["parameters"][2]["in"], "query");
    let mut types: Vec<&String> = patch["requestBody"]["content"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    types.sort();
    assert_eq!(
        types,
        [
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json"
        ]
    );
    assert_eq!(
        patch["operationId"],
        "patchStableExampleComV1NamespacedCronTab"
    );
    assert_eq!(
        patch["description"],
        "partially update the specified CronTab"
    );
    assert_eq!(patch["tags"], json!(["stableExampleCom_v1"]));
    assert_eq!(item["delete"]["description"], "delete a CronTab");
    assert_eq!(item["parameters"][0]["name"], "name");
    assert_eq!(item["parameters"][1]["name"], "namespace");
    let collection = &paths[root];
    assert_eq!(
        collection["get"]["operationId"],
        "listStableExampleComV1NamespacedCronTab"
    );
    assert_eq!(collection["post"]["description"], "create a CronTab");
    assert_eq!(
        collection["delete"]["operationId"],
        "deletecollectionStableExampleComV1NamespacedCronTab"
    );
    let status = &paths[&format!("{root}/{{name}}/status")];
    assert_eq!(
        status["get"]["operationId"],
        "readStableExampleComV1NamespacedCronTabStatus"
    );
    assert_eq!(
        status["put"]["description"],
        "replace status of the specified CronTab"
    );
    assert!(status.get("delete").is_none());
    let scale = &paths[&format!("{root}/{{name}}/scale")];
    assert_eq!(
        scale["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"
    );
    assert!(doc["components"]["schemas"]
        .get("io.k8s.api.autoscaling.v1.Scale")
        .is_some());
    let all = &paths["/apis/stable.example.com/v1/crontabs"];
    assert_eq!(
        all["get"]["operationId"],
        "listStableExampleComV1CronTabForAllNamespaces"
    );
    // No strategic merge patch for custom resources, so kubectl does not attempt one.
    assert!(!doc.to_string().contains("strategic-merge-patch"));
}

#[test]
fn other_shapes() {
    // Cluster-scoped, no schema, no listKind, a kind starting with a vowel.
    let crd = json!({"spec": {
        "group": "example.org", "scope": "Cluster",
        "names": {"plural": "apples", "kind": "Apple"},
        "versions": [{"name": "v1alpha1", "served": true, "storage": true}],
    }});
    let doc = custom_document("example.org", "v1alpha1", std::slice::from_ref(&crd));
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["org.example.v1alpha1.Apple"],
        json!({"type": "object", "x-kubernetes-group-version-kind":
               [{"group": "example.org", "kind": "Apple", "version": "v1alpha1"}]})
    );
    assert!(schemas.get("org.example.v1alpha1.AppleList").is_some());
    let paths = doc["paths"].as_object().unwrap();
    let item = &paths["/apis/example.org/v1alpha1/apples/{name}"];
    assert_eq!(item["post"], Value::Null);
    assert_eq!(item["delete"]["description"], "delete an Apple");
    assert_eq!(item["patch"]["operationId"], "patchExampleOrgV1alpha1Apple");
    assert_eq!(item["parameters"].as_array().unwrap().len(), 2);
    assert_eq!(paths.len(), 2);

    // Unknown fields kept at the root: the schema is published with the object fields.
    let mut open = crd;
    open["spec"]["versions"][0]["schema"] = json!({"openAPIV3Schema": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    let doc = custom_document("example.org", "v1alpha1", &[open.clone()]);
    let apple = &doc["components"]["schemas"]["org.example.v1alpha1.Apple"];
    assert_eq!(apple["x-kubernetes-preserve-unknown-fields"], true);
    assert!(apple["properties"]["metadata"].is_object());

    // Two CRDs share a group version; a version of another group is not in it.
    let mut pear = open.clone();
    pear["spec"]["names"] = json!({"plural": "pears", "kind": "Pear"});
    let mut other = open;
    other["spec"]["group"] = json!("example.com");
    let doc = custom_document("example.org", "v1alpha1", &[pear, other.clone(), other]);
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    assert!(schemas.contains_key("org.example.v1alpha1.Pear"));
    assert!(!schemas.contains_key("com.example.v1alpha1.Apple"));
}

async fn body(resp: axum::response::Response) -> Value {
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn served_beside_the_built_ins() {
    let crds = [crontab_crd()];
    let headers = HeaderMap::new();
    let index = super::super::serve(&[], None, &headers, &crds).unwrap();
    let index = body(index).await;
    let url = index["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(index["paths"]["api/v1"].is_object());
    assert!(index["paths"].get("apis/stable.example.com/v2").is_none());
    let hash = url.split("hash=").nth(1).unwrap();

    let rest = ["apis", "stable.example.com", "v1"];
    let query = format!("hash={hash}");
    let resp = super::super::serve(&rest, Some(&query), &headers, &crds).unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CACHE_CONTROL], "public, immutable");
    assert_eq!(body(resp).await, doc());

    // A changed CRD changes the hash; the old URL redirects to the new document.
    let mut changed = crontab_crd();
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = json!("new");
    let resp = super::super::serve(&rest, Some(&query), &headers, &[changed]).unwrap();
    assert_eq!(resp.status(), StatusCode::MOVED_PERMANENTLY);

    let gone = super::super::serve(&rest, None, &headers, &[]).unwrap();
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}
