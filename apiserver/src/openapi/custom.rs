//! OpenAPI v3 documents of the group versions that CustomResourceDefinitions serve, built as
//! upstream's CRD OpenAPI builder does: the version's schema as the kind's definition (named
//! after the reversed group, `com.example.stable.v1.CronTab`) with `apiVersion`, `kind` and
//! `metadata` added, a list definition, the REST paths with their operations (JSON, merge and
//! apply patches; no strategic merge patch), and the meta schemas they refer to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};
use tinykube_proto::api::api::autoscaling::v1 as autoscaling;
use tinykube_proto::api::apimachinery::pkg::apis::meta::v1 as meta;

use super::{hash_hex, Doc};

mod paths;

const SCHEMAS: &str = "#/components/schemas/";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_METADATA_DOC: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const EMBEDDED_API_VERSION_DOC: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DOC: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// What the document needs of one CRD version.
struct Served<'a> {
    group: &'a str,
    version: &'a str,
    kind: &'a str,
    list_kind: String,
    plural: &'a str,
    namespaced: bool,
    /// The version element of `spec.versions`.
    spec: &'a Value,
}

impl Served<'_> {
    fn schema_name(&self, kind: &str) -> String {
        let mut parts: Vec<&str> = self.group.split('.').collect();
        parts.reverse();
        format!("{}.{}.{kind}", parts.join("."), self.version)
    }

    fn gvk(&self, kind: &str) -> Value {
        json!({"group": self.group, "kind": kind, "version": self.version})
    }

    fn subresource(&self, name: &str) -> bool {
        self.spec
            .pointer(&format!("/subresources/{name}"))
            .is_some_and(|v| !v.is_null())
    }
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The served versions of the CRDs, each with what the document needs.
fn served(crds: &[Value]) -> impl Iterator<Item = Served<'_>> {
    crds.iter().flat_map(|crd| {
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        versions
            .iter()
            .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
            .filter(|v| !s(v, "/name").is_empty())
            .filter_map(move |v| {
                let kind = s(crd, "/spec/names/kind");
                let (group, plural) = (s(crd, "/spec/group"), s(crd, "/spec/names/plural"));
                if kind.is_empty() || group.is_empty() || plural.is_empty() {
                    return None;
                }
                let list_kind = match s(crd, "/spec/names/listKind") {
                    "" => format!("{kind}List"),
                    l => l.to_string(),
                };
                Some(Served {
                    group,
                    version: s(v, "/name"),
                    kind,
                    list_kind,
                    plural,
                    namespaced: s(crd, "/spec/scope") != "Cluster",
                    spec: v,
                })
            })
    })
}

/// The group versions served by these CRDs (a version is served when `served: true`).
pub fn custom_group_versions(crds: &[Value]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = served(crds)
        .map(|sv| (sv.group.to_string(), sv.version.to_string()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The OpenAPI v3 document of one group version served by CRDs (several CRDs can share it).
pub fn custom_document(group: &str, version: &str, crds: &[Value]) -> Value {
    let mut schemas = meta_schemas();
    let mut all_paths = Map::new();
    for sv in served(crds).filter(|sv| sv.group == group && sv.version == version) {
        schemas.insert(sv.schema_name(sv.kind), kind_schema(&sv));
        schemas.insert(sv.schema_name(&sv.list_kind), list_schema(&sv));
        for (path, item) in paths::paths(&sv) {
            all_paths.insert(path, item);
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": all_paths,
        "components": {"schemas": schemas},
    })
}

/// The document of `apis/G/V` for these CRDs, built once per distinct input: the key is a hash
/// of the specs of the CRDs that serve the group version.
pub(super) fn cached_document(path: &str, crds: &[Value]) -> Option<Arc<Doc>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Doc>>>> = OnceLock::new();
    let (group, version) = path.strip_prefix("apis/")?.split_once('/')?;
    let relevant: Vec<&Value> = crds
        .iter()
        .filter(|crd| s(crd, "/spec/group") == group)
        .filter_map(|crd| crd.get("spec"))
        .collect();
    if !custom_group_versions(crds).contains(&(group.to_string(), version.to_string())) {
        return None;
    }
    let key = format!(
        "{path}#{}",
        hash_hex(&serde_json::to_vec(&relevant).unwrap_or_default())
    );
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(doc) = cache.lock().ok()?.get(&key) {
        return Some(doc.clone());
    }
    let body = serde_json::to_vec(&custom_document(group, version, crds)).unwrap_or_default();
    let doc = Arc::new(Doc {
        hash: hash_hex(&body),
        body,
    });
    let mut cache = cache.lock().ok()?;
    // Old versions of changed CRDs are not worth keeping around forever.
    if cache.len() >= 256 {
        cache.clear();
    }
    cache.insert(key, doc.clone());
    Some(doc)
}

/// The meta schemas the paths and definitions refer to.
fn meta_schemas() -> Map<String, Value> {
    static SCHEMAS: OnceLock<Map<String, Value>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            let mut gen = SchemaSettings::openapi3().into_generator();
            fn add<T: JsonSchema>(gen: &mut schemars::SchemaGenerator) {
                let _ = gen.subschema_for::<T>();
            }
            add::<meta::ObjectMeta>(&mut gen);
            add::<meta::ListMeta>(&mut gen);
            add::<meta::Status>(&mut gen);
            add::<meta::DeleteOptions>(&mut gen);
            add::<meta::Patch>(&mut gen);
            add::<autoscaling::Scale>(&mut gen);
            gen.take_definitions(true)
        })
        .clone()
}

fn reference(name: &str) -> Value {
    json!({ "$ref": format!("{SCHEMAS}{name}") })
}

/// A reference with a description beside it, wrapped in `allOf` as OpenAPI v3 requires.
fn described_reference(name: &str, description: &str) -> Value {
    json!({"description": description, "allOf": [reference(name)]})
}

fn type_meta(properties: &mut Map<String, Value>) {
    properties.insert(
        "apiVersion".into(),
        json!({"description": API_VERSION_DOC, "type": "string"}),
    );
    properties.insert(
        "kind".into(),
        json!({"description": KIND_DOC, "type": "string"}),
    );
}

/// The kind's definition: the version's schema with the Kubernetes object fields, or a plain
/// object when the version has no schema.
fn kind_schema(sv: &Served) -> Value {
    let gvk = json!([sv.gvk(sv.kind)]);
    let Some(source) = sv
        .spec
        .pointer("/schema/openAPIV3Schema")
        .filter(|v| v.is_object())
    else {
        return json!({"type": "object", "x-kubernetes-group-version-kind": gvk});
    };
    let mut schema = structural(source);
    let obj = schema.as_object_mut().expect("structural gives an object");
    let mut properties = match obj.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    type_meta(&mut properties);
    properties.insert(
        "metadata".into(),
        described_reference(OBJECT_META, METADATA_DOC),
    );
    obj.insert("properties".into(), Value::Object(sorted(properties)));
    obj.insert("x-kubernetes-group-version-kind".into(), gvk);
    let selectable: Vec<Value> = sv
        .spec
        .get("selectableFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
        .map(|p| json!({"fieldPath": p.trim_start_matches('.')}))
        .collect();
    if !selectable.is_empty() {
        obj.insert("x-kubernetes-selectable-fields".into(), selectable.into());
    }
    schema
}

fn list_schema(sv: &Served) -> Value {
    let mut properties = Map::new();
    type_meta(&mut properties);
    properties.insert(
        "items".into(),
        json!({
            "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", sv.plural),
            "type": "array",
            "items": reference(&sv.schema_name(sv.kind)),
        }),
    );
    properties.insert(
        "metadata".into(),
        described_reference(LIST_META, LIST_METADATA_DOC),
    );
    json!({
        "description": format!("{} is a list of {}", sv.list_kind, sv.kind),
        "required": ["items"],
        "properties": sorted(properties),
        "x-kubernetes-group-version-kind": [sv.gvk(&sv.list_kind)],
    })
}

fn sorted(map: Map<String, Value>) -> Map<String, Value> {
    let mut entries: Vec<(String, Value)> = map.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().collect()
}

/// What a structural schema publishes: the fields upstream's structural schema keeps, with
/// `x-kubernetes-int-or-string` unfolded into its `anyOf` and embedded resources given their
/// object fields. A malformed node publishes as much as it can rather than failing the document.
fn structural(source: &Value) -> Value {
    const KEPT: &[&str] = &[
        "description",
        "type",
        "title",
        "default",
        "nullable",
        "format",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "enum",
        "maxProperties",
        "minProperties",
        "required",
    ];
    let Some(src) = source.as_object() else {
        return json!({});
    };
    let mut out = Map::new();
    for (k, v) in src {
        let value = match k.as_str() {
            k if KEPT.contains(&k) || k.starts_with("x-kubernetes-") => v.clone(),
            "properties" => match v.as_object() {
                Some(props) => Value::Object(
                    props
                        .iter()
                        .map(|(name, p)| (name.clone(), structural(p)))
                        .collect(),
                ),
                None => continue,
            },
            "items" | "additionalProperties" | "not" if v.is_object() => structural(v),
            "additionalProperties" if v.is_boolean() => v.clone(),
            "allOf" | "anyOf" | "oneOf" => match v.as_array() {
                Some(list) => list.iter().map(structural).collect(),
                None => continue,
            },
            _ => continue,
        };
        out.insert(k.clone(), value);
    }
    if out.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        unfold_int_or_string(&mut out);
    }
    if out.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)) {
        embed_object_fields(&mut out);
    }
    Value::Object(out)
}

fn is_int_or_string_pair(list: Option<&Value>) -> bool {
    let types = |v: &Value| -> Option<Vec<String>> {
        v.as_array()?
            .iter()
            .map(|x| x.get("type").and_then(Value::as_str).map(str::to_string))
            .collect()
    };
    list.and_then(types)
        .is_some_and(|t| t == ["integer", "string"])
}

/// `x-kubernetes-int-or-string` as its `anyOf: [integer, string]`, unless the schema already
/// spells that out (directly, or as the first `allOf`).
fn unfold_int_or_string(schema: &mut Map<String, Value>) {
    let first_all_of_any_of = schema
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|first| first.get("anyOf"));
    if is_int_or_string_pair(schema.get("anyOf")) || is_int_or_string_pair(first_all_of_any_of) {
        return;
    }
    let pair = json!([{"type": "integer"}, {"type": "string"}]);
    if !schema.contains_key("anyOf") {
        schema.insert("anyOf".into(), pair);
        return;
    }
    let mut all_of = vec![json!({ "anyOf": pair })];
    if let Some(Value::Array(rest)) = schema.remove("allOf") {
        all_of.extend(rest);
    }
    schema.insert("allOf".into(), Value::Array(all_of));
}

/// An `x-kubernetes-embedded-resource` object gets `apiVersion`, `kind` and `metadata`, and
/// requires the first two.
fn embed_object_fields(schema: &mut Map<String, Value>) {
    let properties = schema
        .entry("properties")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(p) = properties {
        p.insert(
            "apiVersion".into(),
            json!({"description": EMBEDDED_API_VERSION_DOC, "type": "string"}),
        );
        p.insert(
            "kind".into(),
            json!({"description": EMBEDDED_KIND_DOC, "type": "string"}),
        );
        p.insert(
            "metadata".into(),
            described_reference(OBJECT_META, METADATA_DOC),
        );
    }
    let required = schema.entry("required").or_insert_with(|| json!([]));
    if let Some(r) = required.as_array_mut() {
        for field in ["kind", "apiVersion"] {
            if !r.iter().any(|x| x == field) {
                r.push(field.into());
            }
        }
    }
}

#[cfg(test)]
mod tests;
