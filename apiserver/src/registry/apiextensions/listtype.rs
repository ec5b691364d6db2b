//! The list and map extensions of a schema node as upstream validates them:
//! `x-kubernetes-map-type` (atomic or granular, on objects), `x-kubernetes-list-type` (atomic,
//! set or map, on arrays; set items atomic), `x-kubernetes-list-map-keys` (scalar, distinct
//! item properties, required or defaulted, not nullable).

use serde_json::Value;

use super::schema::SchemaOptions;
use super::view::{flag, get, strings, text};
use crate::registry::field::FieldError;

/// A `set` list whose items are not atomic.
pub(super) fn non_atomic_set(s: &Value) -> bool {
    if text(s, "x-kubernetes-list-type") != "set" {
        return false;
    }
    let Some(item) = get(s, "items").filter(|i| i.is_object()) else {
        return false;
    };
    match text(item, "type") {
        "array" => get(item, "x-kubernetes-list-type").is_some_and(|t| t != "atomic"),
        "object" => text(item, "x-kubernetes-map-type") != "atomic",
        _ => false,
    }
}

/// `type` must be `want` when `extension` is set.
fn type_for(s: &Value, path: &str, want: &str, extension: &str) -> Option<FieldError> {
    let kind = text(s, "type");
    let detail = format!("must be {want} if {extension} is specified");
    match kind {
        k if k == want => None,
        "" => Some(FieldError::required(format!("{path}.type"), detail)),
        k => Some(FieldError::invalid(format!("{path}.type"), k, detail)),
    }
}

/// The consistency of `x-kubernetes-map-type`, `-list-type` and `-list-map-keys`.
pub(super) fn list_and_map_types(
    s: &Value,
    path: &str,
    opts: &SchemaOptions,
    errs: &mut Vec<FieldError>,
) {
    if let Some(map_type) = get(s, "x-kubernetes-map-type") {
        errs.extend(type_for(s, path, "object", "x-kubernetes-map-type"));
        let t = map_type.as_str().unwrap_or("");
        if t != "atomic" && t != "granular" {
            errs.push(FieldError::not_supported(
                format!("{path}.x-kubernetes-map-type"),
                t,
                &["atomic", "granular"],
            ));
        }
    }
    let list_type = get(s, "x-kubernetes-list-type").map(|t| t.as_str().unwrap_or(""));
    let item = get(s, "items");
    let item_schema = item.filter(|i| i.is_object());
    if let Some(lt) = list_type {
        if text(s, "type") != "array" {
            errs.extend(type_for(s, path, "array", "x-kubernetes-list-type"));
        } else if opts.atomic_set_type && lt == "set" && non_atomic_set(s) {
            let is = item_schema.unwrap_or(&Value::Null);
            let (key, shown) = if text(is, "type") == "array" {
                ("x-kubernetes-list-type", is.get("x-kubernetes-list-type"))
            } else {
                // Upstream shows the items' list type here too (null for an object).
                ("x-kubernetes-map-type", is.get("x-kubernetes-list-type"))
            };
            errs.push(FieldError::invalid(
                format!("{path}.items.{key}"),
                shown.cloned().unwrap_or(Value::Null),
                "must be atomic as item of a list with x-kubernetes-list-type=set",
            ));
        }
        if !["atomic", "set", "map"].contains(&lt) {
            errs.push(FieldError::not_supported(
                format!("{path}.x-kubernetes-list-type"),
                lt,
                &["atomic", "set", "map"],
            ));
        }
    }
    let keys: Vec<&str> = strings(s, "x-kubernetes-list-map-keys");
    let keys_value = || {
        s.get("x-kubernetes-list-map-keys")
            .cloned()
            .unwrap_or(Value::Null)
    };
    if !keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(FieldError::required(
                format!("{path}.x-kubernetes-list-type"),
                detail,
            )),
            Some("map") => {}
            Some(lt) => errs.push(FieldError::invalid(
                format!("{path}.x-kubernetes-list-type"),
                lt,
                detail,
            )),
        }
    }
    if list_type != Some("map") {
        return;
    }
    if keys.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    match item {
        None => errs.push(FieldError::required(
            format!("{path}.items"),
            "must have a schema if x-kubernetes-list-type is map",
        )),
        Some(i) if !i.is_object() => errs.push(FieldError::invalid(
            format!("{path}.items"),
            i.clone(),
            "must only have a single schema if x-kubernetes-list-type is map",
        )),
        Some(i) if text(i, "type") != "object" => errs.push(FieldError::invalid(
            format!("{path}.items.type"),
            text(i, "type"),
            "must be object if parent array's x-kubernetes-list-type is map",
        )),
        Some(i) => {
            let mut seen: Vec<&str> = Vec::new();
            for k in &keys {
                match i.get("properties").and_then(|p| p.get(*k)) {
                    Some(p) if matches!(text(p, "type"), "array" | "object") => {
                        errs.push(FieldError::invalid(
                            format!("{path}.items.properties[{k}].type"),
                            // Upstream shows the item's type, not the key's.
                            text(i, "type"),
                            "must be a scalar type if parent array's x-kubernetes-list-type is map",
                        ))
                    }
                    Some(_) => {}
                    None => errs.push(FieldError::invalid(
                        format!("{path}.x-kubernetes-list-map-keys"),
                        keys_value(),
                        "entries must all be names of item properties",
                    )),
                }
                if seen.contains(k) {
                    errs.push(FieldError::invalid(
                        format!("{path}.x-kubernetes-list-map-keys"),
                        keys_value(),
                        "must not contain duplicate entries",
                    ));
                }
                seen.push(k);
            }
        }
    }
}

/// Upstream's validateMapListKeysMapSet: set and map items are not nullable, map keys are
/// required or defaulted and not nullable.
pub(super) fn map_list_keys_map_set(s: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(item) = get(s, "items").filter(|i| i.is_object()) else {
        return errs;
    };
    let list_type = text(s, "x-kubernetes-list-type");
    if list_type != "set" && list_type != "map" {
        return errs;
    }
    if flag(item, "nullable") {
        errs.push(FieldError::forbidden(
            format!("{path}.items.nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
        ));
    }
    if list_type == "map" {
        let required = strings(item, "required");
        for k in strings(s, "x-kubernetes-list-map-keys") {
            let Some(p) = item.get("properties").and_then(|p| p.get(k)) else {
                continue;
            };
            if !required.contains(&k) && get(p, "default").is_none() {
                errs.push(FieldError::required(
                    format!("{path}.items.properties[{k}].default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if flag(p, "nullable") {
                errs.push(FieldError::forbidden(
                    format!("{path}.items.properties[{k}].nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errs
}
