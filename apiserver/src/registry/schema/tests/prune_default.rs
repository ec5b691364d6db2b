//! Pruning (with the unknown-field paths strict decoding reports) and defaulting.

use serde_json::{json, Value};

use crate::registry::schema::{apply_defaults, prune};

fn crontab_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "cronSpec": {
                        "type": "string",
                        "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$",
                        "default": "5 0 * * *"
                    },
                    "image": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}
                }
            }
        }
    })
}

/// Each case: schema, object before, object after, paths reported.
fn check_prune(cases: &[(Value, Value, Value, &[&str])]) {
    for (schema, before, after, want) in cases {
        let mut obj = before.clone();
        let paths = prune(schema, &mut obj);
        assert_eq!(&obj, after, "pruning {before}");
        assert_eq!(paths, *want, "paths of {before}");
    }
}

#[test]
fn pruning() {
    let items = json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"a": {"type": "string"}}}
                    },
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "byName": {
                        "type": "object",
                        "additionalProperties": {"type": "object", "properties": {"x": {"type": "integer"}}}
                    },
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                             "properties": {"known": {"type": "object", "properties": {"k": {"type": "string"}}}}},
                    "opaque": {"type": "object"}
                }
            }
        }
    });
    check_prune(&[
        // The docs' example: an unknown field in spec, and one at the root.
        (
            crontab_schema(),
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                   "metadata": {"name": "x"}, "spec": {"image": "i", "someRandomField": 42}, "extra": true}),
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                   "metadata": {"name": "x"}, "spec": {"image": "i"}}),
            &["extra", "spec.someRandomField"],
        ),
        (
            items.clone(),
            json!({"spec": {
                "items": [{"a": "x", "bar": 1}, {"baz": {"q": 1}}],
                "labels": {"k": "v"},
                "byName": {"n": {"x": 1, "y": 2}},
                "free": {"anything": {"deep": 1}, "known": {"k": "v", "drop": 1}},
                "opaque": {"gone": 1}
            }}),
            json!({"spec": {
                "items": [{"a": "x"}, {}],
                "labels": {"k": "v"},
                "byName": {"n": {"x": 1}},
                "free": {"anything": {"deep": 1}, "known": {"k": "v"}},
                "opaque": {}
            }}),
            &[
                "spec.byName.n.y",
                "spec.free.known.drop",
                "spec.items[0].bar",
                "spec.items[1].baz",
                "spec.opaque.gone",
            ],
        ),
        // Metadata keeps ObjectMeta's fields only, whatever the schema says; its paths come
        // first.
        (
            json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
            json!({"apiVersion": "a/v1", "kind": "K",
                   "metadata": {"name": "x", "foo": 1, "ownerReferences": [{"name": "o", "bar": 2}]},
                   "spec": {"z": 1}}),
            json!({"apiVersion": "a/v1", "kind": "K",
                   "metadata": {"name": "x", "ownerReferences": [{"name": "o"}]},
                   "spec": {}}),
            &["metadata.foo", "metadata.ownerReferences[0].bar", "spec.z"],
        ),
        // The whole object preserved: nothing pruned, but metadata still cut down.
        (
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x", "foo": 1}, "any": {"b": 1}}),
            json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x"}, "any": {"b": 1}}),
            &["metadata.foo"],
        ),
    ]);
}

#[test]
fn pruning_embedded_resources() {
    let schema = json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}
                }
            }}
        }
    });
    check_prune(&[(
        schema,
        json!({"spec": {"template": {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "bogus": true, "labels": {}, "creationTimestamp": null},
            "spec": {"a": "x", "b": "y"},
            "other": 1
        }}}),
        json!({"spec": {"template": {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"a": "x"}
        }}}),
        // Schema pruning first (sorted), then embedded metadata, written back without its
        // empty fields as upstream re-encodes an ObjectMeta.
        &[
            "spec.template.other",
            "spec.template.spec.b",
            "spec.template.metadata.bogus",
        ],
    )]);
}

#[test]
fn pruning_nulls() {
    let schema = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "plain": {"type": "string"},
            "nullable": {"type": "string", "nullable": true},
            "defaulted": {"type": "string", "default": "d"},
            "list": {"type": "array", "items": {"type": "string"}}
        }}}
    });
    let mut obj =
        json!({"spec": {"plain": null, "nullable": null, "defaulted": null, "list": [null]}});
    assert!(prune(&schema, &mut obj).is_empty());
    assert_eq!(
        obj,
        json!({"spec": {"nullable": null, "defaulted": null, "list": [null]}})
    );
    // Defaulting then fills the defaulted null.
    apply_defaults(&schema, &mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"nullable": null, "defaulted": "d", "list": [null]}})
    );
}

/// Each case: schema, object before, object after defaulting.
fn check_defaults(cases: &[(Value, Value, Value)]) {
    for (schema, before, after) in cases {
        let mut obj = before.clone();
        apply_defaults(schema, &mut obj);
        assert_eq!(&obj, after, "defaulting {before}");
    }
}

#[test]
fn defaulting() {
    let nested = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "outer": {"type": "object", "properties": {"inner": {"type": "integer", "default": 3}}},
            "withDefault": {"type": "object", "default": {},
                            "properties": {"inner": {"type": "string", "default": "x"}}},
            "list": {"type": "array", "items": {"type": "object", "default": {"n": 0},
                     "properties": {"n": {"type": "integer"}, "m": {"type": "integer", "default": 7}}}},
            "map": {"type": "object", "additionalProperties": {"type": "string", "default": "v"}}
        }}}
    });
    check_defaults(&[
        // The docs' CronTab: defaults fill the missing fields.
        (
            crontab_schema(),
            json!({"spec": {"image": "my-awesome-cron-image"}}),
            json!({"spec": {"image": "my-awesome-cron-image", "cronSpec": "5 0 * * *", "replicas": 1}}),
        ),
        // Given values stay.
        (
            crontab_schema(),
            json!({"spec": {"cronSpec": "* * * * *", "replicas": 4}}),
            json!({"spec": {"cronSpec": "* * * * *", "replicas": 4}}),
        ),
        // No spec, no defaults inside spec.
        (
            crontab_schema(),
            json!({"kind": "CronTab"}),
            json!({"kind": "CronTab"}),
        ),
        // A default inside an object applies where the object exists, also when the object
        // was itself defaulted; null items and map values take the item default.
        (
            nested.clone(),
            json!({"spec": {"list": [null, {"n": 1}], "map": {"a": null, "b": "given"}}}),
            json!({"spec": {
                "list": [{"n": 0, "m": 7}, {"n": 1, "m": 7}],
                "map": {"a": "v", "b": "given"},
                "withDefault": {"inner": "x"}
            }}),
        ),
        (
            nested,
            json!({"spec": {"outer": {}}}),
            json!({"spec": {"outer": {"inner": 3}, "withDefault": {"inner": "x"}}}),
        ),
    ]);
}

#[test]
fn defaults_replace_nulls_of_non_nullable_fields_only() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "string", "default": "d"},
        "b": {"type": "string", "nullable": true, "default": "d"}
    }}}});
    check_defaults(&[(
        schema,
        json!({"spec": {"a": null, "b": null}}),
        json!({"spec": {"a": "d", "b": null}}),
    )]);
}
