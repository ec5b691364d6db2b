//! Custom resources: list and map types from a CRD's `openAPIV3Schema`, as upstream's
//! structured-merge-diff reads them.

use std::sync::OnceLock;

use serde_json::{json, Value};

use super::*;

/// A small CRD schema with one of each kind of list and object.
fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let port = json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "port": {"type": "integer"},
            "protocol": {"type": "string", "default": "TCP"}
        }});
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "tags": {"type": "array", "x-kubernetes-list-type": "set",
                    "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"], "items": port},
                "listeners": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "protocol"], "items": port},
                "args": {"type": "array", "items": {"type": "string"}},
                "rules": {"type": "array", "x-kubernetes-list-type": "atomic",
                    "items": port},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"}},
                "limits": {"type": "object", "x-kubernetes-map-type": "atomic",
                    "properties": {"cpu": {"type": "string"}, "memory": {"type": "string"}}},
                "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true}
            }},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
        }})
    })
}

fn info() -> TypeInfo<'static> {
    TypeInfo::custom(schema(), true)
}

fn writer(manager: &'static str) -> Writer<'static> {
    Writer {
        manager,
        api_version: "example.com/v1",
        subresource: None,
        time: "2026-11-24T10:00:00Z",
    }
}

fn object(spec: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": spec
    })
}

fn entry<'v>(obj: &'v Value, manager: &str) -> &'v Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|list| list.iter().find(|e| e["manager"] == manager))
        .map(|e| &e["fieldsV1"])
        .unwrap_or(&Value::Null)
}

fn managed_of(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// `obj` as applied by `manager` onto `live`.
fn apply_as(live: Option<&Value>, manager: &'static str, spec: Value, force: bool) -> Value {
    let managed = live.map(managed_of).unwrap_or_default();
    apply(
        live,
        &object(spec),
        &managed,
        &writer(manager),
        force,
        info(),
    )
    .unwrap_or_else(|c| panic!("{}", conflict_message(&c)))
}

#[test]
fn an_applied_configuration_owns_what_the_schema_says() {
    let config = object(json!({
        "tags": ["b", "a"],
        "ports": [{"name": "http", "port": 80}],
        "listeners": [{"name": "l", "port": 1}],
        "args": ["x"],
        "rules": [{"name": "r"}],
        "labels": {"app": "w"},
        "selector": {"app": "w"},
        "limits": {"cpu": "1"},
        "config": {"nested": {"a": 1}, "list": [1, 2]},
        "template": {"metadata": {"labels": {"x": "y"}}, "spec": {"n": 1}}
    }));
    let fields = fields_of(&config, Scope::Main, info());
    assert_eq!(
        fields.to_fields_v1(),
        json!({"f:spec": {
            "f:args": {},
            "f:config": {"f:list": {}, "f:nested": {".": {}, "f:a": {}}},
            "f:labels": {"f:app": {}},
            "f:limits": {},
            "f:listeners": {"k:{\"name\":\"l\",\"protocol\":\"TCP\"}": {
                ".": {}, "f:name": {}, "f:port": {}}},
            "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:rules": {},
            "f:selector": {},
            "f:tags": {"v:\"a\"": {}, "v:\"b\"": {}},
            "f:template": {
                "f:metadata": {"f:labels": {".": {}, "f:x": {}}},
                "f:spec": {".": {}, "f:n": {}}
            }
        }})
    );
    assert!(fields
        .paths()
        .contains(&".spec.ports[name=\"http\"].port".to_string()));
}

#[test]
fn an_update_owns_every_node_it_added() {
    let created =
        object(json!({"tags": ["a"], "ports": [{"name": "http", "port": 80}], "args": []}));
    let managed = update(&[], None, &created, &writer("kubectl-create"), info());
    assert_eq!(
        managed[0]["fieldsV1"],
        json!({"f:spec": {
            ".": {},
            "f:args": {},
            "f:ports": {".": {}, "k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:tags": {".": {}, "v:\"a\"": {}}
        }})
    );
    // A JSON or merge patch that changes a port's number moves that field only.
    let mut patched = created.clone();
    patched["spec"]["ports"][0]["port"] = json!(81);
    let after = update(
        &managed,
        Some(&created),
        &patched,
        &writer("patcher"),
        info(),
    );
    assert_eq!(
        after[1]["fieldsV1"],
        json!({"f:spec": {"f:ports": {"k:{\"name\":\"http\"}": {"f:port": {}}}}})
    );
    assert_eq!(
        after[0]["fieldsV1"]["f:spec"]["f:ports"]["k:{\"name\":\"http\"}"],
        json!({".": {}, "f:name": {}})
    );
}

#[test]
fn lists_and_maps_merge_by_their_types() {
    let live = object(json!({
        "tags": ["a", "b"],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "dns", "port": 53}],
        "args": ["x", "y"],
        "labels": {"app": "w"},
        "selector": {"app": "w"},
        "limits": {"cpu": "1", "memory": "1Gi"},
        "config": {"keep": 1, "nested": {"a": 1}}
    }));
    let config = object(json!({
        "tags": ["c", "a"],
        "ports": [{"name": "https", "port": 443}, {"name": "http", "port": 8080}],
        "args": ["z"],
        "labels": {"tier": "web"},
        "selector": {"tier": "web"},
        "limits": {"cpu": "2"},
        "config": {"nested": {"b": 2}}
    }));
    let merged = merge(&live, &config, info());
    assert_eq!(
        merged["spec"],
        json!({
            "tags": ["a", "b", "c"],
            "ports": [
                {"name": "http", "port": 8080, "protocol": "TCP"},
                {"name": "dns", "port": 53},
                {"name": "https", "port": 443}
            ],
            "args": ["z"],
            "labels": {"app": "w", "tier": "web"},
            "selector": {"tier": "web"},
            "limits": {"cpu": "2"},
            "config": {"keep": 1, "nested": {"a": 1, "b": 2}}
        })
    );
}

#[test]
fn two_appliers_share_a_map_list_and_conflict_on_one_element_field() {
    let a = apply_as(
        None,
        "a",
        json!({"ports": [{"name": "http", "port": 80}]}),
        false,
    );
    let both = apply_as(
        Some(&a),
        "b",
        json!({"ports": [{"name": "metrics", "port": 9090}]}),
        false,
    );
    assert_eq!(
        both["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    );
    assert_eq!(
        entry(&both, "b"),
        &json!({"f:spec": {"f:ports": {"k:{\"name\":\"metrics\"}": {
            ".": {}, "f:name": {}, "f:port": {}}}}})
    );
    // The same element, another value for a field "a" owns: a conflict on that field only.
    let config = object(json!({"ports": [
        {"name": "http", "port": 81},
        {"name": "metrics", "port": 9090}
    ]}));
    let managed = managed_of(&both);
    let conflicts = apply(Some(&both), &config, &managed, &writer("b"), false, info()).unwrap_err();
    assert_eq!(
        conflict_message(&conflicts),
        "Apply failed with 1 conflict: conflict with \"a\": .spec.ports[name=\"http\"].port"
    );
    // Forced, "b" takes the field over; "a" keeps the element and its name.
    let forced = apply(Some(&both), &config, &managed, &writer("b"), true, info()).unwrap();
    assert_eq!(
        forced["spec"]["ports"][0],
        json!({"name": "http", "port": 81})
    );
    assert_eq!(
        entry(&forced, "a"),
        &json!({"f:spec": {"f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}}}}})
    );
    // "b" no longer applying metrics removes it; http stays ("a" still owns it).
    let dropped = apply_as(
        Some(&forced),
        "b",
        json!({"ports": [{"name": "http", "port": 81}]}),
        false,
    );
    assert_eq!(
        dropped["spec"]["ports"],
        json!([{"name": "http", "port": 81}])
    );
}

#[test]
fn set_lists_merge_by_value_and_lose_only_their_appliers_values() {
    let a = apply_as(None, "a", json!({"tags": ["a", "shared"]}), false);
    let b = apply_as(Some(&a), "b", json!({"tags": ["b", "shared"]}), false);
    assert_eq!(b["spec"]["tags"], json!(["a", "shared", "b"]));
    let a_left = apply_as(Some(&b), "a", json!({}), false);
    assert_eq!(a_left["spec"]["tags"], json!(["shared", "b"]));
}

#[test]
fn atomic_lists_and_maps_are_replaced_whole_and_conflict_whole() {
    let a = apply_as(
        None,
        "a",
        json!({"args": ["x", "y"], "selector": {"app": "w"}, "labels": {"app": "w"}}),
        false,
    );
    let config = object(json!({"args": ["z"], "selector": {"tier": "t"}, "labels": {"tier": "t"}}));
    let conflicts = apply(
        Some(&a),
        &config,
        &managed_of(&a),
        &writer("b"),
        false,
        info(),
    )
    .unwrap_err();
    let paths: Vec<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, [".spec.args", ".spec.selector"]);
    let forced = apply(
        Some(&a),
        &config,
        &managed_of(&a),
        &writer("b"),
        true,
        info(),
    )
    .unwrap();
    assert_eq!(
        forced["spec"],
        json!({"args": ["z"], "selector": {"tier": "t"}, "labels": {"app": "w", "tier": "t"}})
    );
    assert_eq!(
        entry(&forced, "a"),
        &json!({"f:spec": {"f:labels": {"f:app": {}}}})
    );
}

#[test]
fn list_elements_without_their_keys_make_the_list_atomic() {
    // No schema default for `name`: the element cannot be named, so the list is one leaf.
    let config = object(json!({"ports": [{"port": 80}]}));
    assert_eq!(
        fields_of(&config, Scope::Main, info()).paths(),
        [".spec.ports"]
    );
}

#[test]
fn a_kind_without_a_schema_deduces_types_from_values() {
    let untyped = TypeInfo::custom(&Value::Null, false);
    let obj = object(json!({"a": {"b": 1}, "list": [{"name": "x"}]}));
    assert_eq!(
        fields_of(&obj, Scope::Main, untyped).to_fields_v1(),
        json!({"f:spec": {".": {}, "f:a": {".": {}, "f:b": {}}, "f:list": {}}})
    );
}
