//! Uniqueness in lists with `x-kubernetes-list-type: set` (every item unique) and `map` (items
//! are objects, unique by their `x-kubernetes-list-map-keys`), as upstream's
//! `schema/listtype` validates them: one Duplicate error per repeated value, at the index where
//! it repeats first.

use serde_json::{Map, Value};

use super::gofmt::{bad, go_json};
use crate::registry::field::{BadValue, ErrorType, FieldError};

/// Check every list in `x` that the schema types as a set or a map.
pub(super) fn validate(s: &Value, x: &Value, path: &str, out: &mut Vec<FieldError>) {
    match x {
        Value::Object(m) => {
            let props = super::properties(s);
            let known = |k: &str| props.is_some_and(|p| p.contains_key(k));
            if let Some(extra) = super::additional_schema(s) {
                for (k, v) in m.iter().filter(|(k, _)| !known(k)) {
                    validate(extra, v, &format!("{path}[{k}]"), out);
                }
            }
            for (k, v) in m {
                if let Some(sub) = super::property(s, k) {
                    validate(sub, v, &super::child(path, k), out);
                }
            }
        }
        Value::Array(a) => {
            match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => {
                    for i in repeats(a) {
                        out.push(duplicate(path, i, bad(&a[i])));
                    }
                }
                Some("map") => out.extend(map_errors(s, a, path)),
                _ => {}
            }
            if let Some(items) = super::items(s) {
                for (i, v) in a.iter().enumerate() {
                    validate(items, v, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

fn duplicate(path: &str, i: usize, value: BadValue) -> FieldError {
    FieldError {
        kind: ErrorType::Duplicate,
        field: format!("{path}[{i}]"),
        value: Some(value),
        detail: String::new(),
    }
}

/// The index of the second occurrence of each value that occurs more than once. Compound
/// values compare by their JSON, scalars by value (an integer never equals a float).
fn repeats(items: &[Value]) -> Vec<usize> {
    repeats_by(items.iter().map(identity).collect())
}

/// How upstream tells values apart in a set.
fn identity(x: &Value) -> String {
    match x {
        Value::Object(_) | Value::Array(_) => format!("c{}", go_json(x)),
        Value::Number(n) => format!("n{n}"),
        other => format!("s{other}"),
    }
}

fn repeats_by(identities: Vec<String>) -> Vec<usize> {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    let mut out = Vec::new();
    for (i, key) in identities.iter().enumerate() {
        match seen.iter_mut().find(|(k, _)| *k == key) {
            Some((_, times)) => {
                *times += 1;
                if *times == 2 {
                    out.push(i);
                }
            }
            None => seen.push((key, 1)),
        }
    }
    out
}

/// A list-type map: items must be objects (or null); two items with the same key values
/// collide. A missing key counts as its own value, shared by every item without it.
fn map_errors(s: &Value, a: &[Value], path: &str) -> Vec<FieldError> {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            return vec![FieldError {
                kind: ErrorType::Invalid,
                field: format!("{path}[{i}]"),
                value: Some(bad(x)),
                detail: "must be an object for an array of list-type map".into(),
            }];
        }
    }
    if a.len() <= 1 {
        return Vec::new();
    }
    let keys: Vec<&str> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let key_maps: Vec<Value> = a
        .iter()
        .map(|x| {
            let mut m = Map::new();
            for k in &keys {
                if let Some(v) = x.get(*k) {
                    m.insert((*k).to_string(), v.clone());
                }
            }
            Value::Object(m)
        })
        .collect();
    if keys.len() == 1 {
        // One key: the key values themselves are compared; an item without the key has the
        // "unspecified" value, which only equals another unspecified one.
        let identities = key_maps
            .iter()
            .map(|m| {
                m.get(keys[0])
                    .map_or_else(|| "unspecified".into(), identity)
            })
            .collect();
        return repeats_by(identities)
            .into_iter()
            .map(|i| duplicate(path, i, bad(&key_maps[i])))
            .collect();
    }
    repeats(&key_maps)
        .into_iter()
        .map(|i| duplicate(path, i, bad(&key_maps[i])))
        .collect()
}
