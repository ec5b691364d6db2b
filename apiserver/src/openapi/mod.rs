//! OpenAPI v3: the root index and one document per group version, with the operations kubectl
//! looks for (a PATCH that takes `fieldValidation`, tagged with its group-version-kind) and the
//! schemas `kubectl explain` reads, generated from the k8s-openapi types; the group versions of
//! CustomResourceDefinitions are built from their schemas (`custom`).

pub mod custom;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};
use tinykube_proto::api::api::admissionregistration::v1 as admissionregistration;
use tinykube_proto::api::api::{
    apps::v1 as apps, coordination::v1 as coordination, core::v1 as core,
};
use tinykube_proto::api::api::{
    events::v1 as events, policy::v1 as policy, scheduling::v1 as scheduling,
};
use tinykube_proto::registry::{self, ResourceInfo};

use crate::error::ApiResult;
use custom::custom_group_versions;
use tinykube_proto::hash::{fnv1a_64, OFFSET_BASIS_64};

/// A served group version's document and its hash.
struct Doc {
    body: Vec<u8>,
    hash: String,
}

/// A stable content hash for cache URLs: two FNV-1a passes with different seeds.
fn hash_hex(bytes: &[u8]) -> String {
    format!(
        "{:016X}{:016X}",
        fnv1a_64(OFFSET_BASIS_64, bytes),
        fnv1a_64(0x8422_2325_cbf2_9ce4, bytes)
    )
}

/// Path segment of a group version in `/openapi/v3/<here>`.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn served_gvs() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    for r in registry::RESOURCES {
        if !out.contains(&(r.group, r.version)) {
            out.push((r.group, r.version));
        }
    }
    out
}

fn docs() -> &'static BTreeMap<String, Doc> {
    static DOCS: OnceLock<BTreeMap<String, Doc>> = OnceLock::new();
    DOCS.get_or_init(|| {
        served_gvs()
            .into_iter()
            .map(|(g, v)| {
                let body = serde_json::to_vec(&document(g, v)).unwrap_or_default();
                let hash = hash_hex(&body);
                (gv_path(g, v), Doc { body, hash })
            })
            .collect()
    })
}

fn schemas_for(group: &str) -> Map<String, Value> {
    let mut gen = SchemaSettings::openapi3().into_generator();
    fn add<T: JsonSchema>(gen: &mut schemars::SchemaGenerator) {
        let _ = gen.subschema_for::<T>();
    }
    match group {
        "" => {
            add::<core::Pod>(&mut gen);
            add::<core::Node>(&mut gen);
            add::<core::Namespace>(&mut gen);
            add::<core::Event>(&mut gen);
            add::<core::ConfigMap>(&mut gen);
            add::<core::Binding>(&mut gen);
            add::<core::LimitRange>(&mut gen);
            add::<core::ResourceQuota>(&mut gen);
            add::<core::Secret>(&mut gen);
            add::<core::ServiceAccount>(&mut gen);
            add::<core::Service>(&mut gen);
            add::<core::Endpoints>(&mut gen);
            add::<core::PersistentVolume>(&mut gen);
            add::<core::PersistentVolumeClaim>(&mut gen);
            add::<core::ReplicationController>(&mut gen);
            add::<tinykube_proto::api::apimachinery::pkg::apis::meta::v1::Status>(&mut gen);
        }
        "apps" => {
            add::<apps::Deployment>(&mut gen);
            add::<apps::ReplicaSet>(&mut gen);
            add::<apps::DaemonSet>(&mut gen);
            add::<apps::ControllerRevision>(&mut gen);
            add::<apps::StatefulSet>(&mut gen);
            add::<tinykube_proto::api::api::autoscaling::v1::Scale>(&mut gen);
        }
        "batch" => {
            add::<tinykube_proto::api::api::batch::v1::CronJob>(&mut gen);
            add::<tinykube_proto::api::api::batch::v1::Job>(&mut gen);
        }
        "storage.k8s.io" => add::<tinykube_proto::api::api::storage::v1::StorageClass>(&mut gen),
        "coordination.k8s.io" => add::<coordination::Lease>(&mut gen),
        "events.k8s.io" => add::<events::Event>(&mut gen),
        "networking.k8s.io" => {
            use tinykube_proto::api::api::networking::v1 as networking;
            add::<networking::IngressClass>(&mut gen);
            add::<networking::Ingress>(&mut gen);
            add::<networking::NetworkPolicy>(&mut gen);
        }
        "autoscaling" => {
            use tinykube_proto::api::api::autoscaling::{v1, v2};
            add::<v2::HorizontalPodAutoscaler>(&mut gen);
            add::<v1::HorizontalPodAutoscaler>(&mut gen);
        }
        "policy" => {
            add::<policy::PodDisruptionBudget>(&mut gen);
            add::<policy::Eviction>(&mut gen);
        }
        "scheduling.k8s.io" => add::<scheduling::PriorityClass>(&mut gen),
        "admissionregistration.k8s.io" => {
            add::<admissionregistration::ValidatingAdmissionPolicy>(&mut gen);
            add::<admissionregistration::ValidatingAdmissionPolicyBinding>(&mut gen);
        }
        "apiregistration.k8s.io" => add::<
            tinykube_proto::api::kube_aggregator::pkg::apis::apiregistration::v1::APIService,
        >(&mut gen),
        "node.k8s.io" => add::<tinykube_proto::api::api::node::v1::RuntimeClass>(&mut gen),
        "discovery.k8s.io" => {
            add::<tinykube_proto::api::api::discovery::v1::EndpointSlice>(&mut gen)
        }
        "rbac.authorization.k8s.io" => {
            use tinykube_proto::api::api::rbac::v1 as rbac;
            add::<rbac::ClusterRoleBinding>(&mut gen);
            add::<rbac::ClusterRole>(&mut gen);
            add::<rbac::RoleBinding>(&mut gen);
            add::<rbac::Role>(&mut gen);
        }
        "authorization.k8s.io" => {
            use tinykube_proto::api::api::authorization::v1 as authorization;
            add::<authorization::LocalSubjectAccessReview>(&mut gen);
            add::<authorization::SelfSubjectAccessReview>(&mut gen);
            add::<authorization::SelfSubjectRulesReview>(&mut gen);
            add::<authorization::SubjectAccessReview>(&mut gen);
        }
        "authentication.k8s.io" => {
            use tinykube_proto::api::api::authentication::v1 as authentication;
            add::<authentication::SelfSubjectReview>(&mut gen);
            add::<authentication::TokenReview>(&mut gen);
        }
        _ => {}
    }
    gen.take_definitions(true)
}

fn schema_name(info: &ResourceInfo) -> String {
    if info.group == "apiregistration.k8s.io" {
        return format!(
            "io.k8s.kube-aggregator.pkg.apis.apiregistration.{}.{}",
            info.version, info.kind
        );
    }
    let package = match info.group {
        "" => "core".to_string(),
        "coordination.k8s.io" => "coordination".to_string(),
        "events.k8s.io" => "events".to_string(),
        "scheduling.k8s.io" => "scheduling".to_string(),
        "node.k8s.io" => "node".to_string(),
        "networking.k8s.io" => "networking".to_string(),
        "discovery.k8s.io" => "discovery".to_string(),
        "admissionregistration.k8s.io" => "admissionregistration".to_string(),
        "rbac.authorization.k8s.io" => "rbac".to_string(),
        "authorization.k8s.io" => "authorization".to_string(),
        "authentication.k8s.io" => "authentication".to_string(),
        g => g.to_string(),
    };
    format!("io.k8s.api.{package}.{}.{}", info.version, info.kind)
}

fn param(name: &str, location: &str, description: &str) -> Value {
    let mut p = json!({"name": name, "in": location, "description": description,
                       "schema": {"type": "string", "uniqueItems": true}});
    if location == "path" {
        p["required"] = true.into();
    }
    p
}

fn operation(
    info: &ResourceInfo,
    action: &str,
    verb_word: &str,
    query: &[&str],
    body: bool,
) -> Value {
    let gvk = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let reference = json!({"$ref": format!("#/components/schemas/{}", schema_name(info))});
    let mut op = json!({
        "description": format!("{verb_word} {}", info.kind),
        "operationId": format!("{action}{}", info.kind),
        "parameters": query.iter().map(|q| param(q, "query", q)).collect::<Vec<_>>(),
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": reference.clone()}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    });
    if body {
        let content = if action == "patch" {
            let patch =
                json!({"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"});
            // Strategic merge patch is served, but not announced here: kubectl then computes
            // apply patches from its built-in types, which carry the merge keys.
            json!({
                "application/json-patch+json": {"schema": patch.clone()},
                "application/merge-patch+json": {"schema": patch},
            })
        } else {
            json!({"application/json": {"schema": reference}})
        };
        op["requestBody"] = json!({"content": content, "required": true});
    }
    op
}

fn paths(info: &ResourceInfo) -> Vec<(String, Value)> {
    let base = if info.group.is_empty() {
        format!("/api/{}", info.version)
    } else {
        format!("/apis/{}/{}", info.group, info.version)
    };
    let scope = if info.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", info.plural)
    } else {
        format!("{base}/{}", info.plural)
    };
    let write_q: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
    let mut collection = Map::new();
    if info.verbs.contains(&"list") {
        collection.insert(
            "get".into(),
            operation(
                info,
                "list",
                "list or watch objects of kind",
                &[
                    "labelSelector",
                    "fieldSelector",
                    "limit",
                    "continue",
                    "watch",
                    "resourceVersion",
                ],
                false,
            ),
        );
    }
    if info.verbs.contains(&"create") {
        collection.insert(
            "post".into(),
            operation(info, "create", "create a", write_q, true),
        );
    }
    let mut item = Map::new();
    if info.verbs.contains(&"get") {
        item.insert(
            "get".into(),
            operation(info, "get", "read the specified", &[], false),
        );
    }
    if info.verbs.contains(&"update") {
        item.insert(
            "put".into(),
            operation(info, "put", "replace the specified", write_q, true),
        );
    }
    if info.verbs.contains(&"delete") {
        item.insert(
            "delete".into(),
            operation(
                info,
                "delete",
                "delete a",
                &["dryRun", "gracePeriodSeconds", "propagationPolicy"],
                false,
            ),
        );
    }
    if info.verbs.contains(&"patch") {
        item.insert(
            "patch".into(),
            operation(
                info,
                "patch",
                "partially update the specified",
                &["dryRun", "fieldManager", "fieldValidation", "force"],
                true,
            ),
        );
    }
    let mut out = Vec::new();
    if !collection.is_empty() {
        out.push((scope.clone(), Value::Object(collection)));
    }
    if !item.is_empty() {
        out.push((format!("{scope}/{{name}}"), Value::Object(item)));
    }
    out
}

fn document(group: &str, version: &str) -> Value {
    let mut schemas = schemas_for(group);
    let mut all_paths = Map::new();
    for info in registry::group_version(group, version) {
        for (p, item) in paths(info) {
            all_paths.insert(p, item);
        }
        if let Some(Value::Object(s)) = schemas.get_mut(&schema_name(info)) {
            s.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": info.group, "kind": info.kind, "version": info.version}]),
            );
        }
    }
    schemas.insert(
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch".into(),
        json!({"description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.", "type": "object"}),
    );
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "1.36"},
        "paths": all_paths,
        "components": {"schemas": schemas},
    })
}

/// The index: built-in group versions, then those served by CRDs (a built-in one wins a clash).
fn root(crds: &[Value]) -> Value {
    let mut hashes: BTreeMap<String, String> = docs()
        .iter()
        .map(|(path, doc)| (path.clone(), doc.hash.clone()))
        .collect();
    for (group, version) in custom_group_versions(crds) {
        let path = gv_path(&group, &version);
        if hashes.contains_key(&path) {
            continue;
        }
        if let Some(doc) = custom::cached_document(&path, crds) {
            hashes.insert(path, doc.hash.clone());
        }
    }
    let paths: Map<String, Value> = hashes
        .into_iter()
        .map(|(path, hash)| {
            let url = format!("/openapi/v3/{path}?hash={hash}");
            (path, json!({ "serverRelativeURL": url }))
        })
        .collect();
    json!({ "paths": paths })
}

/// Serve `/openapi/v3` and `/openapi/v3/<group version>`, for the built-in kinds and for the
/// served versions of `crds` (the Established CustomResourceDefinitions).
pub fn serve(
    rest: &[&str],
    raw_query: Option<&str>,
    _headers: &HeaderMap,
    crds: &[Value],
) -> ApiResult<Response> {
    if rest.is_empty() || rest == [""] {
        let mut body = serde_json::to_vec(&root(crds)).unwrap_or_default();
        body.push(b'\n');
        let mut resp = (StatusCode::OK, body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return Ok(resp);
    }
    let path = rest.join("/");
    let custom_doc: Arc<Doc>;
    let doc: &Doc = match docs().get(&path) {
        Some(doc) => doc,
        None => match custom::cached_document(&path, crds) {
            Some(doc) => {
                custom_doc = doc;
                &custom_doc
            }
            None => return Ok(StatusCode::NOT_FOUND.into_response()),
        },
    };
    let asked = raw_query
        .unwrap_or("")
        .split('&')
        .find_map(|p| p.strip_prefix("hash="));
    let etag = HeaderValue::from_str(&format!("\"{}\"", doc.hash)).ok();
    let mut resp = match asked {
        Some(h) if h != doc.hash => {
            let mut r = StatusCode::MOVED_PERMANENTLY.into_response();
            if let Ok(loc) = HeaderValue::from_str(&format!("/openapi/v3/{path}?hash={}", doc.hash))
            {
                r.headers_mut().insert(header::LOCATION, loc);
            }
            r
        }
        Some(_) => {
            let mut r = (StatusCode::OK, doc.body.clone()).into_response();
            r.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, immutable"),
            );
            r
        }
        None => {
            let mut r = (StatusCode::OK, doc.body.clone()).into_response();
            r.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("no-cache, private"),
            );
            r
        }
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(e) = etag {
        h.insert(header::ETAG, e);
    }
    Ok(resp)
}

/// `/openapi/v2`: an empty document. kubectl reads it (as protobuf) to validate kinds the
/// server's OpenAPI v3 does not describe; finding nothing there, it leaves the verdict to the
/// server, which answers as upstream does for an unknown kind.
pub fn v2(headers: &HeaderMap) -> Response {
    let wants_json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json"));
    let (body, content_type) = if wants_json {
        (
            br#"{"swagger":"2.0","info":{"title":"Kubernetes","version":"v1.36.2"},"paths":{},"definitions":{}}"#.to_vec(),
            "application/json",
        )
    } else {
        (
            Vec::new(),
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        )
    };
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}
