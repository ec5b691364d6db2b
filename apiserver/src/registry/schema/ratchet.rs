//! Validation ratcheting on updates (upstream's CRDValidationRatcheting): which old value a
//! new one replaces, and whether it is unchanged, in which case its errors are not reported.

use serde_json::Value;

use super::gofmt::deep_equal;

/// The old item an item of a list corresponds to: only `x-kubernetes-list-type: map` lists
/// correlate items, by their key fields; other lists are compared only as a whole.
pub(super) fn old_item<'a>(s: &Value, old: &'a Value, item: &Value) -> Option<&'a Value> {
    if s.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return None;
    }
    let keys: Vec<&str> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let key_of =
        |x: &Value| -> Vec<Option<Value>> { keys.iter().map(|k| x.get(*k).cloned()).collect() };
    let wanted = key_of(item);
    old.as_array()?.iter().find(|o| {
        key_of(o).iter().zip(&wanted).all(|(a, b)| match (a, b) {
            (Some(a), Some(b)) => deep_equal(a, b),
            (None, None) => true,
            _ => false,
        })
    })
}

/// Whether `new` equals `old` as upstream's ratcheting compares them: objects key by key,
/// `x-kubernetes-list-type: map` lists item by corresponding item (in any order), anything
/// else as a whole.
pub(super) fn unchanged(s: &Value, old: &Value, new: &Value) -> bool {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            o.len() == n.len()
                && n.iter().all(|(k, v)| {
                    let sub = super::property(s, k).or_else(|| super::additional_schema(s));
                    o.get(k).is_some_and(|ov| match sub {
                        Some(sub) => unchanged(sub, ov, v),
                        None => deep_equal(ov, v),
                    })
                })
        }
        (Value::Array(o), Value::Array(n))
            if s.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map") =>
        {
            let items = super::items(s).unwrap_or(&Value::Null);
            o.len() == n.len()
                && n.iter()
                    .all(|v| old_item(s, old, v).is_some_and(|ov| unchanged(items, ov, v)))
        }
        _ => deep_equal(old, new),
    }
}
