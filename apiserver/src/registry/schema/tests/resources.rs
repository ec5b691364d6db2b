//! Validation of what makes a custom object a resource: the schema's say on `metadata`,
//! embedded resources, list types, and the upstream docs' CronTab.

use serde_json::{json, Value};

use super::validate::{messages, spec_with};

#[test]
fn metadata_name_constraints_in_the_schema_apply() {
    let schema = json!({
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}
        }
    });
    let obj = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "toolong"}});
    assert_eq!(
        messages(&schema, &obj),
        ["metadata.name: Too long: may not be more than 5 bytes"]
    );
}

#[test]
fn embedded_resources() {
    let schema = spec_with(json!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true
    }));
    let cases: &[(Value, &[&str])] = &[
        (
            json!({}),
            &[
                "spec.field.apiVersion: Required value",
                "spec.field.kind: Required value",
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
            &[],
        ),
        (
            json!({"apiVersion": 1, "kind": ""}),
            &[
                "spec.field.apiVersion: Invalid value: 1: must be a string",
                "spec.field.kind: Required value",
            ],
        ),
        (
            json!({"apiVersion": "a/b/c", "kind": "Bad_Kind"}),
            &[
                r#"spec.field.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
                r#"spec.field.kind: Invalid value: "Bad_Kind": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "a/b", "labels": {"k": "bad value"}}}),
            &[
                r#"spec.field.metadata.name: Invalid value: "a/b": may not contain '/'"#,
                r#"spec.field.metadata.labels: Invalid value: "bad value": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "K", "metadata": null}),
            &[],
        ),
        (
            json!({"apiVersion": "v1", "kind": "K", "metadata": "x"}),
            &[
                r#"spec.field.metadata: Invalid value: "x": json: cannot unmarshal string into Go value of type v1.ObjectMeta"#,
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "a/b", "labels": {"k": 1}, "generation": 1.5}}),
            &[
                r#"spec.field.metadata: Invalid value: map[string]interface {}{"generation":1.5, "labels":map[string]interface {}{"k":1}, "name":"a/b"}: json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.generation of type int64"#,
            ],
        ),
    ];
    for (value, want) in cases {
        let obj = json!({"spec": {"field": value}});
        assert_eq!(messages(&schema, &obj), *want, "{value}");
    }
}

#[test]
fn list_types() {
    let set = spec_with(json!({
        "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}
    }));
    assert_eq!(
        messages(&set, &json!({"spec": {"field": ["a", "b", "a", "a", "b"]}})),
        [
            r#"spec.field[2]: Duplicate value: "a""#,
            r#"spec.field[4]: Duplicate value: "b""#
        ]
    );
    let map = spec_with(json!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}
    }));
    assert_eq!(
        messages(
            &map,
            &json!({"spec": {"field": [{"name": "a", "port": 1}, {"name": "b"}, {"name": "a", "port": 2}]}})
        ),
        [r#"spec.field[2]: Duplicate value: map[string]interface {}{"name":"a"}"#]
    );
    let two_keys = spec_with(json!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name", "protocol"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "protocol": {"type": "string"}}}
    }));
    assert_eq!(
        messages(
            &two_keys,
            &json!({"spec": {"field": [
                {"name": "a", "protocol": "TCP"},
                {"name": "a", "protocol": "UDP"},
                {"protocol": "TCP", "name": "a"}
            ]}})
        ),
        [
            r#"spec.field[2]: Duplicate value: map[string]interface {}{"name":"a", "protocol":"TCP"}"#
        ]
    );
}

/// The upstream docs' CronTab with validation: a bad cronSpec and too many replicas.
#[test]
fn crontab_validation_example() {
    let schema = json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                    "image": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10}
                }
            }
        }
    });
    let obj = json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "my-new-cron-object"},
        "spec": {"cronSpec": "* * * *", "image": "my-awesome-cron-image", "replicas": 15}
    });
    assert_eq!(
        messages(&schema, &obj),
        [
            r#"spec.cronSpec: Invalid value: "* * * *": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#,
            "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10",
        ]
    );
    let good = json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "my-new-cron-object"},
        "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "replicas": 3}
    });
    assert_eq!(messages(&schema, &good), Vec::<String>::new());
}

/// Updates ratchet: errors in values left as they were are not reported, changed ones are.
#[test]
fn updates_ratchet_unchanged_values() {
    let schema = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "integer", "maximum": 10},
            "b": {"type": "integer", "maximum": 10},
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "port": {"type": "integer", "maximum": 100}
                }}
            },
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}}
        }}}
    });
    let old = json!({"spec": {
        "a": 50, "b": 1,
        "ports": [{"name": "x", "port": 500}, {"name": "y", "port": 1}],
        "tags": ["long1"]
    }});
    let update = |new: Value| -> Vec<String> {
        crate::registry::schema::validate_update(&schema, &new, &old)
            .iter()
            .map(|e| e.to_string())
            .collect()
    };
    // Nothing changed: nothing reported, though a and ports[x] break the schema.
    assert_eq!(update(old.clone()), Vec::<String>::new());
    // b changed to a bad value; a and the reordered map-list item x stay ratcheted.
    assert_eq!(
        update(json!({"spec": {
            "a": 50, "b": 11,
            "ports": [{"name": "y", "port": 1}, {"name": "x", "port": 500}],
            "tags": ["long1"]
        }})),
        ["spec.b: Invalid value: 11: spec.b in body should be less than or equal to 10"]
    );
    // A changed item of an atomic list is checked with the whole list.
    assert_eq!(
        update(json!({"spec": {"a": 50, "b": 1, "ports": [], "tags": ["long1", "ok"]}})),
        ["spec.tags[0]: Too long: may not be more than 3 bytes"]
    );
    // Creates check everything.
    assert_eq!(messages(&schema, &old).len(), 3);
}

/// Schemas as controller-gen and kube-rs write them: int-or-string as `anyOf`, and the
/// `conditions` of metav1.Condition.
#[test]
fn generated_schemas() {
    let condition = json!({
        "type": "object",
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "message": {"type": "string", "maxLength": 32768},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "reason": {"type": "string", "maxLength": 1024, "minLength": 1,
                       "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "type": {"type": "string", "maxLength": 316,
                     "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"}
        }
    });
    let schema = json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "maxUnavailable": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                                   "x-kubernetes-int-or-string": true}
            }},
            "status": {"type": "object", "properties": {
                "conditions": {"type": "array", "items": condition,
                               "x-kubernetes-list-type": "map",
                               "x-kubernetes-list-map-keys": ["type"]}
            }}
        }
    });
    let good = json!({
        "spec": {"maxUnavailable": "25%"},
        "status": {"conditions": [{
            "type": "Ready", "status": "True", "reason": "AsExpected", "message": "",
            "lastTransitionTime": "2024-05-01T10:00:00Z", "observedGeneration": 2
        }]}
    });
    assert_eq!(messages(&schema, &good), Vec::<String>::new());
    let bad = json!({
        "spec": {"maxUnavailable": true},
        "status": {"conditions": [
            {"type": "Ready", "status": "Maybe", "reason": "As Expected", "message": "",
             "lastTransitionTime": "yesterday"},
            {"type": "Ready", "status": "True", "reason": "R", "message": "",
             "lastTransitionTime": "2024-05-01T10:00:00Z"}
        ]}
    });
    assert_eq!(
        messages(&schema, &bad),
        [
            r#"spec.maxUnavailable: Invalid value: "boolean": spec.maxUnavailable in body must be of type integer,string: "boolean""#,
            r#"<nil>: Invalid value: "": "spec.maxUnavailable" must validate at least one schema (anyOf)"#,
            r#"spec.maxUnavailable: Invalid value: "boolean": spec.maxUnavailable in body must be of type integer: "boolean""#,
            r#"status.conditions[0].lastTransitionTime: Invalid value: "yesterday": status.conditions[0].lastTransitionTime in body must be of type date-time: "yesterday""#,
            r#"status.conditions[0].reason: Invalid value: "As Expected": status.conditions[0].reason in body should match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'"#,
            r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#,
            r#"status.conditions[1]: Duplicate value: map[string]interface {}{"type":"Ready"}"#,
        ]
    );
}
