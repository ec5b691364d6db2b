//! Objects that are resources themselves: the root, and values with
//! `x-kubernetes-embedded-resource: true`. Their `apiVersion`, `kind` and `metadata` are not
//! the schema's to prune; `metadata` is cut down to ObjectMeta's fields instead (upstream's
//! `schema/objectmeta`: GetObjectMeta at the root, Coerce below it), and an embedded resource's
//! TypeMeta and ObjectMeta are validated (`objectmeta.Validate`).

use serde_json::{Map, Value};

use super::gofmt::bad;
use crate::registry::field::{ErrorType, FieldError};
use crate::registry::meta;
use crate::registry::names::NameRule;

/// ObjectMeta's JSON fields, and those of the lists inside it.
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];
const OWNER_REFERENCE: &[&str] = &[
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
];
const MANAGED_FIELDS_ENTRY: &[&str] = &[
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
];

/// Drop the fields of `obj.metadata` that ObjectMeta does not have, returning their paths
/// (`<parent>.metadata.foo`, `…metadata.ownerReferences[0].foo`), sorted.
pub(super) fn prune_object_meta(obj: &mut Value, parent: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let base = super::child(parent, "metadata");
    let Some(Value::Object(meta)) = obj.get_mut("metadata") else {
        return paths;
    };
    drop_unknown(meta, OBJECT_META, &base, &mut paths);
    for (list, fields) in [
        ("ownerReferences", OWNER_REFERENCE),
        ("managedFields", MANAGED_FIELDS_ENTRY),
    ] {
        if let Some(Value::Array(entries)) = meta.get_mut(list) {
            for (i, entry) in entries.iter_mut().enumerate() {
                if let Value::Object(e) = entry {
                    drop_unknown(e, fields, &format!("{base}.{list}[{i}]"), &mut paths);
                }
            }
        }
    }
    paths.sort();
    paths
}

fn drop_unknown(m: &mut Map<String, Value>, known: &[&str], base: &str, paths: &mut Vec<String>) {
    m.retain(|k, _| {
        let keep = known.contains(&k.as_str());
        if !keep {
            paths.push(format!("{base}.{k}"));
        }
        keep
    });
}

/// The `metadata` of every embedded resource below the root, cut down to ObjectMeta's fields
/// (upstream's Coerce); the dropped paths, sorted.
pub(super) fn prune_embedded_meta(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut paths = Vec::new();
    coerce(schema, obj, "", false, &mut paths);
    paths.sort();
    paths
}

fn coerce(s: &Value, x: &mut Value, path: &str, check_self: bool, paths: &mut Vec<String>) {
    match x {
        Value::Object(_) => {
            if check_self && super::is_embedded(s) {
                paths.extend(prune_object_meta(x, path));
                drop_empty_meta(x);
            }
            let Value::Object(m) = x else { return };
            for (k, v) in m.iter_mut() {
                if let Some(sub) = super::property(s, k) {
                    coerce(sub, v, &super::child(path, k), true, paths);
                } else if let Some(extra) = super::additional_schema(s) {
                    coerce(extra, v, &format!("{path}[{k}]"), true, paths);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = super::items(s) {
                for (i, v) in a.iter_mut().enumerate() {
                    coerce(items, v, &format!("{path}[{i}]"), true, paths);
                }
            }
        }
        _ => {}
    }
}

/// An embedded resource's `metadata` as upstream writes it back from an ObjectMeta: empty
/// fields (all `omitempty`) and a zero `creationTimestamp` left out.
fn drop_empty_meta(x: &mut Value) {
    if let Some(meta @ Value::Null) = x.get_mut("metadata") {
        *meta = Value::Object(Map::new());
    }
    if let Some(Value::Object(meta)) = x.get_mut("metadata") {
        meta.retain(|_, v| match v {
            Value::Null => false,
            Value::String(s) => !s.is_empty(),
            Value::Number(n) => n.as_f64() != Some(0.0),
            Value::Array(a) => !a.is_empty(),
            Value::Object(m) => !m.is_empty(),
            Value::Bool(_) => true,
        });
    }
}

/// TypeMeta and ObjectMeta of the embedded resources in `x` (not of the root, whose metadata
/// the server validates), in upstream's field paths (`spec.template.kind`, map values as
/// `spec.byName[key]`).
pub(super) fn validate(s: &Value, x: &Value, path: &str, out: &mut Vec<FieldError>) {
    match x {
        Value::Object(m) => {
            if super::is_embedded(s) {
                validate_resource(m, path, out);
            }
            for (k, v) in m {
                if let Some(sub) = super::property(s, k) {
                    validate(sub, v, &super::child(path, k), out);
                } else if let Some(extra) = super::additional_schema(s) {
                    validate(extra, v, &format!("{path}[{k}]"), out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = super::items(s) {
                for (i, v) in a.iter().enumerate() {
                    validate(items, v, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

fn validate_resource(m: &Map<String, Value>, path: &str, out: &mut Vec<FieldError>) {
    for key in ["apiVersion", "kind"] {
        if !m.contains_key(key) {
            out.push(FieldError::required(super::child(path, key), ""));
        }
    }
    for (k, v) in m {
        let field = super::child(path, k);
        match (k.as_str(), v) {
            ("apiVersion" | "kind", Value::String(s)) if s.is_empty() => {
                out.push(FieldError::required(field.as_str(), ""));
            }
            ("apiVersion" | "kind", Value::String(_)) => {}
            ("apiVersion" | "kind", other) => out.push(FieldError {
                kind: ErrorType::Invalid,
                field: field.clone(),
                value: Some(bad(other)),
                detail: "must be a string".into(),
            }),
            _ => {}
        }
        match (k.as_str(), v) {
            ("apiVersion", Value::String(s)) if s.matches('/').count() > 1 => {
                out.push(FieldError::invalid(
                    field,
                    s.as_str(),
                    format!("unexpected GroupVersion string: {s}"),
                ));
            }
            ("kind", Value::String(s)) if !s.is_empty() => {
                let errs = dns1035_label_errors(&s.to_lowercase());
                if !errs.is_empty() {
                    out.push(FieldError::invalid(
                        field,
                        s.as_str(),
                        format!(
                            "may have mixed case, but should otherwise match: {}",
                            errs.join(",")
                        ),
                    ));
                }
            }
            ("metadata", meta) => match decode_error(meta) {
                Some(detail) => out.push(FieldError {
                    kind: ErrorType::Invalid,
                    field,
                    value: Some(bad(meta)),
                    detail,
                }),
                None => {
                    if let Value::Object(meta) = meta {
                        validate_meta(meta, &field, out);
                    }
                }
            },
            _ => {}
        }
    }
}

/// The error Go's `encoding/json` reports decoding `meta` into an ObjectMeta (the first, in
/// key order), for the fields of plain JSON types; None when it decodes.
fn decode_error(meta: &Value) -> Option<String> {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let m = match meta {
        Value::Object(m) => m,
        Value::Null => return None,
        other => {
            return Some(format!(
                "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
                kind(other)
            ))
        }
    };
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    for k in keys {
        let v = &m[k];
        let fail = |found: String, typ: &str| {
            Some(format!(
                "json: cannot unmarshal {found} into Go struct field ObjectMeta.{k} of type {typ}"
            ))
        };
        let strings_in = |items: Vec<&Value>| {
            items
                .into_iter()
                .find(|x| !x.is_string() && !x.is_null())
                .map(|x| kind(x).to_string())
        };
        let found = match (k.as_str(), v) {
            (_, Value::Null) => None,
            ("name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion", v)
                if !v.is_string() =>
            {
                fail(kind(v).into(), "string")
            }
            ("generation" | "deletionGracePeriodSeconds", Value::Number(n)) if !n.is_i64() => {
                fail(format!("number {n}"), "int64")
            }
            ("generation" | "deletionGracePeriodSeconds", v) if !v.is_number() => {
                fail(kind(v).into(), "int64")
            }
            ("labels" | "annotations", Value::Object(entries)) => {
                strings_in(entries.values().collect()).and_then(|f| fail(f, "string"))
            }
            ("labels" | "annotations", v) => fail(kind(v).into(), "map[string]string"),
            ("finalizers", Value::Array(items)) => {
                strings_in(items.iter().collect()).and_then(|f| fail(f, "string"))
            }
            ("finalizers", v) => fail(kind(v).into(), "[]string"),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Upstream's `ValidateObjectMeta` of an embedded resource: names as path segments (a missing
/// name is fine), the namespace a DNS label, and the ObjectMeta rules every object shares.
fn validate_meta(meta: &Map<String, Value>, field: &str, out: &mut Vec<FieldError>) {
    let text = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    let generate = text("generateName");
    for m in path_segment_errors(generate, true) {
        out.push(FieldError::invalid(
            format!("{field}.generateName"),
            generate,
            m,
        ));
    }
    let name = text("name");
    if !name.is_empty() {
        for m in path_segment_errors(name, false) {
            out.push(FieldError::invalid(format!("{field}.name"), name, m));
        }
    }
    let namespace = text("namespace");
    if !namespace.is_empty() {
        for m in crate::registry::names::label_errors(namespace) {
            out.push(FieldError::invalid(
                format!("{field}.namespace"),
                namespace,
                m,
            ));
        }
    }
    // The shared rules, with the names already checked above set aside.
    let mut shared = meta.clone();
    shared.insert("name".into(), "fakename".into());
    shared.remove("generateName");
    let wrapped = serde_json::json!({ "metadata": shared });
    for mut e in meta::validate(&wrapped, NameRule::Subdomain) {
        if let Some(rest) = e.field.strip_prefix("metadata") {
            e.field = format!("{field}{rest}");
        }
        out.push(e);
    }
}

/// `ValidatePathSegmentName`: not `.` or `..` (names only), no `/` or `%`.
fn path_segment_errors(name: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for bad in [".", ".."] {
            if name == bad {
                return vec![format!("may not be '{bad}'")];
            }
        }
    }
    ["/", "%"]
        .iter()
        .filter(|c| name.contains(*c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// `IsDNS1035Label`.
pub(crate) fn dns1035_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-';
    if !ok {
        errs.push("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string());
    }
    errs
}
