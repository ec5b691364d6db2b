//! JSON values as CEL sees them, typed by their OpenAPI schema as upstream's CEL type mapping:
//! integer → int, number → double, `date-time`/`date` strings → timestamp, `duration` strings →
//! duration, `byte` strings → bytes, objects → maps whose keys are the escaped property names.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::Value as Cel;
use chrono::{DateTime, FixedOffset, NaiveDate, TimeZone};
use serde_json::Value;

/// What a schema node says about its value, read from the CRD's JSON schema.
pub struct Node<'a>(pub Option<&'a Value>);

impl<'a> Node<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.and_then(|s| s.get(key))
    }

    fn flag(&self, key: &str) -> bool {
        self.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    /// The schema's `type`, `""` when it has none (int-or-string, preserve-unknown-fields).
    pub fn type_name(&self) -> &'a str {
        self.get("type").and_then(Value::as_str).unwrap_or("")
    }

    pub fn properties(&self) -> Option<&'a serde_json::Map<String, Value>> {
        self.get("properties").and_then(Value::as_object)
    }

    pub fn property(&self, name: &str) -> Node<'a> {
        Node(self.properties().and_then(|p| p.get(name)))
    }

    pub fn items(&self) -> Node<'a> {
        Node(self.get("items"))
    }

    /// `additionalProperties` when it is a schema (not `true`/`false`).
    pub fn additional(&self) -> Option<Node<'a>> {
        self.get("additionalProperties")
            .filter(|a| a.is_object())
            .map(|a| Node(Some(a)))
    }

    pub fn embedded(&self) -> bool {
        self.flag("x-kubernetes-embedded-resource")
    }

    pub fn preserve_unknown(&self) -> bool {
        self.flag("x-kubernetes-preserve-unknown-fields")
    }

    pub fn int_or_string(&self) -> bool {
        self.flag("x-kubernetes-int-or-string")
    }

    pub fn list_type(&self) -> &'a str {
        self.get("x-kubernetes-list-type")
            .and_then(Value::as_str)
            .unwrap_or("atomic")
    }

    pub fn list_map_keys(&self) -> Vec<&'a str> {
        self.get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|keys| keys.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// Maps are correlatable (an old value is looked up by key) unless `x-kubernetes-map-type`
    /// is `atomic`.
    pub fn map_correlatable(&self) -> bool {
        self.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic")
    }

    pub fn validations(&self) -> &'a [Value] {
        self.get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    fn format(&self) -> &'a str {
        self.get("format").and_then(Value::as_str).unwrap_or("")
    }
}

/// CEL's reserved words, which a property name is escaped from as `__word__` and which no
/// identifier may be.
pub const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The name a property has in CEL (`foo-bar` is `foo__dash__bar`), or `None` when it can't be
/// named there (such properties are left out, as upstream does).
pub fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || "_.-/".contains(c));
    if !first_ok
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c))
    {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            other => out.push(other),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// `value` as CEL sees it under `schema`. `root` marks the root of a resource (the custom
/// object, or an embedded resource), where `apiVersion`, `kind` and `metadata.name` and
/// `metadata.generateName` are visible even when the schema doesn't declare them.
pub fn to_cel(value: &Value, schema: &Node, root: bool) -> Cel {
    if value.is_null() {
        return Cel::Null;
    }
    if schema.0.is_none() {
        return dynamic(value);
    }
    if schema.int_or_string() {
        return match value {
            Value::Number(_) => number(value, "integer"),
            Value::String(s) => Cel::String(Arc::new(s.clone())),
            other => dynamic(other),
        };
    }
    match (schema.type_name(), value) {
        ("integer", Value::Number(_)) | ("number", Value::Number(_)) => {
            number(value, schema.type_name())
        }
        ("string", Value::String(s)) => string(s, schema.format()),
        ("boolean", Value::Bool(b)) => Cel::Bool(*b),
        ("array", Value::Array(items)) => {
            let item_schema = schema.items();
            let embedded = item_schema.embedded();
            Cel::List(Arc::new(
                items
                    .iter()
                    .map(|i| to_cel(i, &item_schema, embedded))
                    .collect(),
            ))
        }
        (_, Value::Object(fields)) => object(fields, schema, root || schema.embedded()),
        (_, other) => dynamic(other),
    }
}

fn object(fields: &serde_json::Map<String, Value>, schema: &Node, root: bool) -> Cel {
    let mut map: HashMap<Key, Cel> = HashMap::with_capacity(fields.len());
    if let Some(extra) = schema.additional() {
        let embedded = extra.embedded();
        for (k, v) in fields {
            map.insert(Key::from(k.as_str()), to_cel(v, &extra, embedded));
        }
        return cel_map(map);
    }
    if schema.properties().is_none() && schema.preserve_unknown() && !root {
        return dynamic(&Value::Object(fields.clone()));
    }
    for (k, v) in fields {
        let Some(name) = escape(k) else { continue };
        let prop = schema.property(k);
        if prop.0.is_none() {
            if root && (k == "apiVersion" || k == "kind") {
                map.insert(Key::from(name), to_cel(v, &Node(None), false));
            } else if root && k == "metadata" {
                map.insert(Key::from(name), root_metadata(v));
            } else if schema.preserve_unknown() {
                map.insert(Key::from(name), dynamic(v));
            }
            continue;
        }
        let embedded = prop.embedded();
        map.insert(Key::from(name), to_cel(v, &prop, embedded));
    }
    cel_map(map)
}

/// A resource root's `metadata` as upstream shows it to rules: `name` and `generateName`.
fn root_metadata(meta: &Value) -> Cel {
    let mut map = HashMap::new();
    for field in ["name", "generateName"] {
        if let Some(Value::String(s)) = meta.get(field) {
            map.insert(Key::from(field), Cel::String(Arc::new(s.clone())));
        }
    }
    cel_map(map)
}

fn cel_map(map: HashMap<Key, Cel>) -> Cel {
    Cel::Map(Map { map: Arc::new(map) })
}

fn number(value: &Value, ty: &str) -> Cel {
    if ty == "number" {
        return Cel::Float(value.as_f64().unwrap_or(0.0));
    }
    match value.as_i64() {
        Some(i) => Cel::Int(i),
        None => match value.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Cel::Int(f as i64),
            Some(f) => Cel::Float(f),
            None => Cel::UInt(value.as_u64().unwrap_or(0)),
        },
    }
}

fn string(s: &str, format: &str) -> Cel {
    match format {
        "date-time" => match DateTime::parse_from_rfc3339(s) {
            Ok(t) => Cel::Timestamp(t),
            Err(_) => Cel::String(Arc::new(s.to_string())),
        },
        "date" => match NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            Ok(d) => {
                let utc = FixedOffset::east_opt(0).expect("zero offset");
                let midnight = d.and_hms_opt(0, 0, 0).expect("midnight");
                match utc.from_local_datetime(&midnight).single() {
                    Some(t) => Cel::Timestamp(t),
                    None => Cel::String(Arc::new(s.to_string())),
                }
            }
            Err(_) => Cel::String(Arc::new(s.to_string())),
        },
        "duration" => match parse_duration(s) {
            Some(d) => Cel::Duration(d),
            None => Cel::String(Arc::new(s.to_string())),
        },
        "byte" => {
            use base64::Engine;
            match base64::engine::general_purpose::STANDARD.decode(s) {
                Ok(b) => Cel::Bytes(Arc::new(b)),
                Err(_) => Cel::String(Arc::new(s.to_string())),
            }
        }
        _ => Cel::String(Arc::new(s.to_string())),
    }
}

/// JSON without a schema (`x-kubernetes-preserve-unknown-fields`): numbers without a fraction
/// are ints, objects are maps keyed by their raw names.
pub fn dynamic(value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cel::Int(i),
            None => match n.as_u64() {
                Some(u) => Cel::UInt(u),
                None => Cel::Float(n.as_f64().unwrap_or(0.0)),
            },
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(dynamic).collect())),
        Value::Object(fields) => cel_map(
            fields
                .iter()
                .map(|(k, v)| (Key::from(k.as_str()), dynamic(v)))
                .collect(),
        ),
    }
}

/// A Go duration string (`1h30m`, `-1.5s`, `300ms`), as upstream's `duration` format parses it.
pub fn parse_duration(s: &str) -> Option<chrono::Duration> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        nanos += num * scale;
    }
    if nanos > i64::MAX as f64 {
        return None;
    }
    let d = chrono::Duration::nanoseconds(nanos as i64);
    Some(if neg { -d } else { d })
}
