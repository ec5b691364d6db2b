//! Structural defaulting: a property that is missing, or null without being nullable, takes
//! a copy of its schema's `default`; so do null map values and list items of a non-nullable
//! schema with a default. Defaulting then goes on inside every value, the defaulted ones
//! included, so a default inside an object applies exactly where that object exists.

use serde_json::Value;

use super::{additional_schema, default_of, is_nullable, items, properties, property};

pub(super) fn apply(s: &Value, x: &mut Value) {
    match x {
        Value::Object(m) => {
            for (k, prop) in properties(s).into_iter().flatten() {
                let Some(default) = default_of(prop) else {
                    continue;
                };
                let fill = match m.get(k) {
                    None => true,
                    Some(v) => v.is_null() && !is_nullable(prop),
                };
                if fill {
                    m.insert(k.clone(), default.clone());
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = property(s, k) {
                    apply(prop, v);
                } else if let Some(extra) = additional_schema(s) {
                    fill_null(extra, v);
                    apply(extra, v);
                }
            }
        }
        Value::Array(a) => {
            if let Some(item) = items(s) {
                for v in a.iter_mut() {
                    fill_null(item, v);
                    apply(item, v);
                }
            }
        }
        _ => {}
    }
}

/// A null where the schema is not nullable becomes the schema's default, if it has one.
fn fill_null(s: &Value, v: &mut Value) {
    if v.is_null() && !is_nullable(s) {
        if let Some(default) = default_of(s) {
            *v = default.clone();
        }
    }
}
