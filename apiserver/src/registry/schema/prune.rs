//! Structural pruning: every object field the schema does not specify is dropped, except below
//! `x-kubernetes-preserve-unknown-fields` (where the fields the schema does specify are still
//! pruned by their own schemas) and the `apiVersion`, `kind` and `metadata` of the root and of
//! embedded resources, which are left to `embedded`. Then nulls of non-nullable fields without
//! a default go (upstream's `PruneNonNullableNullsWithoutDefaults`).

use serde_json::Value;

use super::{additional, additional_schema, default_of, is_nullable, items, Additional};

const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// Prune `obj`, the root of a resource, against `schema`; the paths of the dropped fields,
/// sorted as upstream sorts them.
pub(super) fn prune(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut paths = Vec::new();
    prune_value(Some(schema), obj, "", true, &mut paths);
    paths.sort();
    paths
}

/// `parent.key`, or `key` at the root, as upstream's unknown-field paths read.
fn key_path(parent: &str, key: &str) -> String {
    super::child(parent, key)
}

/// The schema of the values of a map's other keys; `Some(None)` where the map admits them
/// without a schema (`additionalProperties` a bare boolean, which structural schemas only
/// allow as `true`): the keys stay, their contents are pruned as unspecified.
fn extra_schema(s: &Value) -> Option<Option<&Value>> {
    match additional(s)? {
        Additional::Schema(v) => Some(Some(v)),
        Additional::Bool(_) => Some(None),
    }
}

/// `s` is None where upstream's structural schema is nil: everything inside goes.
fn prune_value(
    s: Option<&Value>,
    x: &mut Value,
    path: &str,
    resource: bool,
    paths: &mut Vec<String>,
) {
    if let Some(schema) = s.filter(|s| super::preserves_unknown(s)) {
        skip_prune(schema, x, path, resource, paths);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(schema) = s else {
                paths.extend(m.keys().map(|k| key_path(path, k)));
                m.clear();
                return;
            };
            let resource = resource || super::is_embedded(schema);
            m.retain(|k, v| {
                if resource && META_FIELDS.contains(&k.as_str()) {
                    return true;
                }
                let here = key_path(path, k);
                if let Some(prop) = super::property(schema, k) {
                    prune_value(Some(prop), v, &here, false, paths);
                    true
                } else if let Some(extra) = extra_schema(schema) {
                    prune_value(extra, v, &here, false, paths);
                    true
                } else {
                    paths.push(here);
                    false
                }
            });
        }
        Value::Array(a) => {
            let item = s.and_then(items);
            for (i, v) in a.iter_mut().enumerate() {
                prune_value(item, v, &format!("{path}[{i}]"), false, paths);
            }
        }
        _ => {}
    }
}

/// Below `x-kubernetes-preserve-unknown-fields`: unknown fields stay, known ones are pruned by
/// their schemas.
fn skip_prune(s: &Value, x: &mut Value, path: &str, resource: bool, paths: &mut Vec<String>) {
    match x {
        Value::Object(m) => {
            let resource = resource || super::is_embedded(s);
            for (k, v) in m.iter_mut() {
                if resource && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let here = key_path(path, k);
                if let Some(prop) = super::property(s, k) {
                    prune_value(Some(prop), v, &here, false, paths);
                } else if let Some(extra) = extra_schema(s) {
                    prune_value(extra, v, &here, false, paths);
                }
            }
        }
        Value::Array(a) => {
            if let Some(item) = items(s) {
                for (i, v) in a.iter_mut().enumerate() {
                    skip_prune(item, v, &format!("{path}[{i}]"), false, paths);
                }
            }
        }
        _ => {}
    }
}

/// Drop map entries that are null where their schema is neither nullable nor defaulted; list
/// items stay (a list keeps its length).
pub(super) fn drop_non_nullable_nulls(s: &Value, x: &mut Value) {
    match x {
        Value::Object(m) => m.retain(|k, v| {
            let Some(sub) = super::property(s, k).or_else(|| additional_schema(s)) else {
                return true;
            };
            if v.is_null() {
                return is_nullable(sub) || default_of(sub).is_some();
            }
            drop_non_nullable_nulls(sub, v);
            true
        }),
        Value::Array(a) => {
            if let Some(item) = items(s) {
                for v in a.iter_mut() {
                    drop_non_nullable_nulls(item, v);
                }
            }
        }
        _ => {}
    }
}
