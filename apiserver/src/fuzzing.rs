//! Fuzz entry points shared by the `fuzz/` targets (cargo fuzz, for long campaigns) and the
//! corpus tests that `cargo test` runs: request bodies (arbitrary bytes decoded as JSON, YAML
//! and Kubernetes protobuf, as the API server decodes a body, answer an object or a 400),
//! custom objects against a CRD's schema and rules, and CRDs themselves. None may panic.

use serde_json::{json, Value};

use crate::registry::{self, cel, schema, Strategy};
use crate::request::{decode_body, BodyFormat};

/// Decode `data` in every body format the API server accepts.
pub fn bodies(data: &[u8]) {
    for format in [BodyFormat::Json, BodyFormat::Yaml, BodyFormat::Protobuf] {
        if let Ok(v) = decode_body(data, format, "Pod") {
            assert!(v.is_object(), "{format:?} decoded a non-object: {v}");
            tinykube_proto::fuzzing::objects(v.to_string().as_bytes());
        }
    }
}

/// The schema of the custom objects target: every keyword family the validator knows, list
/// types, an embedded resource, int-or-string, defaults and CEL rules (one a transition rule).
fn widget_schema() -> Value {
    json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "!has(self.spec) || self.spec.min <= self.spec.max", "message": "min above max"}],
        "properties": {
            "spec": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
                    "min": {"type": "integer", "minimum": 0, "default": 1},
                    "max": {"type": "integer", "maximum": 10, "exclusiveMaximum": true, "multipleOf": 2},
                    "ratio": {"type": "number", "nullable": true},
                    "size": {"type": "string", "enum": ["S", "M", "L"], "default": "M"},
                    "port": {"x-kubernetes-int-or-string": true},
                    "when": {"type": "string", "format": "date-time"},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "maxItems": 4,
                             "items": {"type": "string"}},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "required": ["name"],
                                        "properties": {"name": {"type": "string"},
                                                       "port": {"type": "integer"}},
                                        "x-kubernetes-validations": [{"rule": "self.port > 0"}]}},
                    "labels": {"type": "object", "maxProperties": 3,
                               "additionalProperties": {"type": "string"}},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                 "x-kubernetes-preserve-unknown-fields": true},
                    "immutable": {"type": "string",
                                  "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]},
                    "choice": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                },
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        },
    })
}

/// A custom object (arbitrary bytes as JSON) through what a write does to it: pruning,
/// defaulting, schema validation with and without an old object, CEL rules (transition rules
/// against itself and against a pruned copy), as the API server runs them.
pub fn custom_objects(data: &[u8]) {
    let Ok(mut obj) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let schema = widget_schema();
    let raw = obj.clone();
    schema::prune(&schema, &mut obj);
    schema::apply_defaults(&schema, &mut obj);
    let _ = schema::validate(&schema, &obj);
    let _ = schema::validate_update(&schema, &obj, &raw);
    let _ = cel::validate(&schema, &obj, None);
    let _ = cel::validate(&schema, &obj, Some(&raw));
}

/// A CustomResourceDefinition (arbitrary bytes as JSON) through the CRD's defaulting and
/// validation (structural schemas, CEL rules compiled), then, when valid, a sample object
/// through its first version's schema.
pub fn definitions(data: &[u8]) {
    let Ok(mut crd) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if !crd.is_object() {
        return;
    }
    let strategy = registry::apiextensions::CrdStrategy;
    strategy.default(&mut crd);
    strategy.prepare_for_create(&mut crd);
    let errors = strategy.validate_create(&crd);
    let _ = strategy.validate_update(&crd, &crd);
    if !errors.is_empty() {
        return;
    }
    if let Some(schema) = crd.pointer("/spec/versions/0/schema/openAPIV3Schema") {
        let mut sample = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "x"},
                                "spec": {"a": 1, "b": "two", "c": [1, 2], "d": {"e": null}}});
        schema::prune(schema, &mut sample);
        schema::apply_defaults(schema, &mut sample);
        let _ = schema::validate(schema, &sample);
        let _ = cel::validate(schema, &sample, Some(&sample));
    }
}
