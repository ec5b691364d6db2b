//! Structural schemas, as upstream's `pkg/apiserver/schema` defines them (NewStructural and
//! ValidateStructural): every field typed (unless `x-kubernetes-int-or-string` or
//! `x-kubernetes-preserve-unknown-fields`), value validations (`allOf`, `anyOf`, `oneOf`,
//! `not`) that only restrict what the structure declares and carry no type, default,
//! description or extension, an object at the root without `additionalProperties`, and
//! `metadata` at the root limited to `name` and `generateName`.

use serde_json::Value;

use super::view::{flag, get, items, text};
use crate::registry::field::FieldError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Why upstream's NewStructural refuses `schema` (keywords generic validation already
/// forbids), or None when it converts.
pub(super) fn unsupported(schema: &Value) -> Option<String> {
    if !schema.is_object() {
        return None;
    }
    let non_empty = |k: &str| {
        get(schema, k).is_some_and(|v| {
            v.as_str().is_none_or(|t| !t.is_empty()) && v.as_object().is_none_or(|m| !m.is_empty())
        })
    };
    for (key, name) in [
        ("id", "id"),
        ("$schema", "schema"),
        ("$ref", "$ref"),
        ("patternProperties", "patternProperties"),
        ("dependencies", "dependencies"),
        ("additionalItems", "additionalItems"),
        ("definitions", "definitions"),
    ] {
        let present = if key == "additionalItems" {
            get(schema, key).is_some()
        } else {
            non_empty(key)
        };
        if present {
            return Some(format!("OpenAPIV3Schema '{name}' is not supported"));
        }
    }
    let nested = get(schema, "not")
        .into_iter()
        .chain(items(schema, "allOf"))
        .chain(items(schema, "anyOf"))
        .chain(items(schema, "oneOf"))
        .chain(get(schema, "additionalProperties").filter(|a| a.is_object()));
    for sub in nested {
        if let Some(why) = unsupported(sub) {
            return Some(why);
        }
    }
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        return Some(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                .to_string(),
        );
    }
    match get(schema, "items") {
        Some(Value::Array(list)) if !list.is_empty() => {
            return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".to_string())
        }
        Some(item) => {
            if let Some(why) = unsupported(item) {
                return Some(why);
            }
        }
        None => {}
    }
    get(schema, "properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .find_map(|(_, p)| unsupported(p))
}

/// ValidateStructural of the schema at `path`, errors sorted as upstream sorts them.
pub(super) fn validate(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    invariants(schema, Level::Root, path, &mut errs);
    completeness(schema, Some(schema), path, path, false, &mut errs);
    errs.sort_by_key(|e| e.to_string());
    errs
}

/// `{type: integer}` or `{type: string}` with nothing a structural schema keeps beside it.
fn only_type(s: &Value, kind: &str) -> bool {
    text(s, "type") == kind
        && s.as_object().is_some_and(|m| {
            m.iter()
                .all(|(k, v)| k == "type" || v.is_null() || k == "example" || k == "externalDocs")
        })
}

/// `anyOf: [{type: integer}, {type: string}]`, the int-or-string pattern.
fn int_or_string_any_of(s: &Value) -> bool {
    matches!(items(s, "anyOf"), [a, b] if only_type(a, "integer") && only_type(b, "string"))
}

/// `allOf: [{anyOf: [{type: integer}, {type: string}]}, …]`.
fn int_or_string_all_of(s: &Value) -> bool {
    items(s, "allOf").first().is_some_and(int_or_string_any_of)
}

fn invariants(s: &Value, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    if !s.is_object() {
        return;
    }
    let kind = text(s, "type");
    let item = get(s, "items");
    if kind == "array" && item.is_none() {
        errs.push(FieldError::required(
            format!("{path}.items"),
            "must be specified",
        ));
    }
    if let Some(i) = item {
        invariants(i, Level::Item, &format!("{path}.items"), errs);
    }
    let properties = get(s, "properties").and_then(Value::as_object);
    for (k, p) in properties.into_iter().flatten() {
        invariants(p, Level::Field, &format!("{path}.properties[{k}]"), errs);
    }
    let extra = get(s, "additionalProperties");
    if let Some(a) = extra {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                format!("{path}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        invariants(
            a,
            Level::Field,
            &format!("{path}.additionalProperties"),
            errs,
        );
    }
    let (int_or_string, preserve, embedded) = (
        flag(s, "x-kubernetes-int-or-string"),
        flag(s, "x-kubernetes-preserve-unknown-fields"),
        flag(s, "x-kubernetes-embedded-resource"),
    );
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            format!("{path}.x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            format!("{path}.x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    value_validation(
        s,
        int_or_string_any_of(s),
        int_or_string_all_of(s),
        lvl,
        path,
        errs,
    );

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && kind != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(if kind.is_empty() {
            FieldError::required(format!("{path}.type"), detail)
        } else {
            FieldError::invalid(format!("{path}.type"), kind, detail)
        });
    } else if kind.is_empty() && !int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(format!("{path}.type"), detail));
    }
    if embedded && extra.is_some() {
        errs.push(FieldError::forbidden(
            format!("{path}.additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !kind.is_empty() && kind != "object" {
        errs.push(FieldError::invalid(
            format!("{path}.type"),
            kind,
            "must be object at the root",
        ));
    }
    let prop = |k: &str| properties.and_then(|p| p.get(k));
    for k in ["kind", "apiVersion"] {
        if let Some(p) = prop(k).filter(|_| check_metadata) {
            if text(p, "type") != "string" {
                errs.push(FieldError::invalid(
                    format!("{path}.properties[{k}].type"),
                    text(p, "type"),
                    "must be string",
                ));
            }
        }
    }
    if let Some(m) = prop("metadata") {
        metadata(
            m,
            check_metadata,
            lvl,
            &format!("{path}.properties[metadata]"),
            errs,
        );
    }
    if embedded && !preserve && properties.is_none_or(|p| p.is_empty()) {
        errs.push(FieldError::required(
            format!("{path}.properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// What a structural schema keeps of a keyword's value: false, "" and empty lists or maps are
/// Go zero values (except `additionalProperties`, a pointer even when false).
fn is_zero(key: &str, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b && key != "additionalProperties",
        Value::String(t) => t.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty() && key == "properties",
        Value::Number(_) => false,
    }
}

fn metadata(m: &Value, check: bool, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    if check && text(m, "type") != "object" {
        errs.push(FieldError::invalid(
            format!("{path}.type"),
            text(m, "type"),
            "must be object",
        ));
    }
    if lvl != Level::Root {
        return;
    }
    let names_only = |p: &Value| {
        p.as_object()
            .is_some_and(|p| !p.is_empty() && p.keys().all(|k| k == "name" || k == "generateName"))
    };
    let restricted = m.as_object().into_iter().flatten().any(|(k, v)| {
        !(matches!(k.as_str(), "type" | "default" | "example" | "externalDocs")
            || is_zero(k, v)
            || (k == "properties" && names_only(v)))
    });
    if restricted {
        errs.push(FieldError::forbidden(
            path,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// The value validations of a node: its `anyOf`, `allOf`, `oneOf` and `not`.
fn value_validation(
    s: &Value,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, v) in items(s, "anyOf").iter().enumerate() {
            nested(v, false, lvl, &format!("{path}.anyOf[{i}]"), errs);
        }
    }
    for (i, v) in items(s, "allOf").iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(v, skip, lvl, &format!("{path}.allOf[{i}]"), errs);
    }
    for (i, v) in items(s, "oneOf").iter().enumerate() {
        nested(v, false, lvl, &format!("{path}.oneOf[{i}]"), errs);
    }
    if let Some(v) = get(s, "not") {
        nested(v, false, lvl, &format!("{path}.not"), errs);
    }
    // Upstream also compiles `pattern` with Go's regexp here ("must be a valid regular
    // expression, but isn't: …"); the value validator of registry/schema owns patterns.
}

/// A schema under a value validation: it may only restrict.
fn nested(v: &Value, skip_any_of: bool, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    if !v.is_object() {
        return;
    }
    value_validation(v, skip_any_of, false, lvl, path, errs);
    if let Some(i) = get(v, "items") {
        nested(i, false, lvl, &format!("{path}.items"), errs);
    }
    let properties = get(v, "properties").and_then(Value::as_object);
    for (k, p) in properties.into_iter().flatten() {
        nested(
            p,
            false,
            Level::Field,
            &format!("{path}.properties[{k}]"),
            errs,
        );
    }
    let mut forbid = |key: &str, detail: &str| {
        errs.push(FieldError::forbidden(format!("{path}.{key}"), detail));
    };
    const EMPTY: &str = "must be empty to be structural";
    const UNDEFINED: &str = "must be undefined to be structural";
    const FALSE: &str = "must be false to be structural";
    if !text(v, "type").is_empty() {
        forbid("type", EMPTY);
    }
    if get(v, "additionalProperties").is_some() {
        forbid("additionalProperties", UNDEFINED);
    }
    if get(v, "default").is_some() {
        forbid("default", UNDEFINED);
    }
    for key in ["title", "description"] {
        if !text(v, key).is_empty() {
            forbid(key, EMPTY);
        }
    }
    for key in [
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(v, key) {
            forbid(key, FALSE);
        }
    }
    if !items(v, "x-kubernetes-list-map-keys").is_empty() {
        forbid("x-kubernetes-list-map-keys", EMPTY);
    }
    for key in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if get(v, key).is_some() {
            forbid(key, UNDEFINED);
        }
    }
    if !items(v, "x-kubernetes-validations").is_empty() {
        forbid("x-kubernetes-validations", EMPTY);
    }
    if properties.is_some_and(|p| p.contains_key("metadata")) {
        forbid(
            "properties[metadata]",
            "must not be specified in a nested context",
        );
    }
}

/// Every field or item a value validation names must be in the structure too. Upstream checks
/// the value validations of the root only.
fn completeness(
    v: &Value,
    s: Option<&Value>,
    s_path: &str,
    v_path: &str,
    is_nested: bool,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    if let Some(not) = get(v, "not") {
        completeness(not, Some(s), s_path, &format!("{v_path}.not"), true, errs);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, sub) in items(v, key).iter().enumerate() {
            completeness(
                sub,
                Some(s),
                s_path,
                &format!("{v_path}.{key}[{i}]"),
                true,
                errs,
            );
        }
    }
    if !is_nested {
        return;
    }
    if let Some(vi) = get(v, "items") {
        let si = get(s, "items").filter(|i| i.is_object());
        completeness(
            vi,
            si,
            &format!("{s_path}.items"),
            &format!("{v_path}.items"),
            true,
            errs,
        );
    }
    for (k, vp) in get(v, "properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let sp = s.get("properties").and_then(|p| p.get(k));
        let (sk, vk) = (
            format!("{s_path}.properties[{k}]"),
            format!("{v_path}.properties[{k}]"),
        );
        match sp {
            Some(sp) => completeness(vp, Some(sp), &sk, &vk, true, errs),
            None => errs.push(FieldError::required(
                sk,
                format!("because it is defined in {vk}"),
            )),
        }
    }
}
