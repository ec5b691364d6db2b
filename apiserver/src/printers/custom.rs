//! Tables of custom resources, as upstream's CRD table convertor builds them: a Name column,
//! then the version's `additionalPrinterColumns` (or an Age column when it declares none), each
//! cell the first result of the column's JSONPath, typed by the column's type.

mod jsonpath;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

pub use jsonpath::{JsonPath, JsonPathError};

use super::{human_duration, Column};

/// ObjectMeta's descriptions of `name` and `creationTimestamp`, as upstream's columns carry them.
pub(super) const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
pub(super) const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The Table columns of a CRD version (`version` = one element of the CRD's spec.versions, with
/// its additionalPrinterColumns): Name first, then the declared columns (or the default `Age`
/// column of upstream when none are declared), as upstream's column definitions (name, type,
/// format, description, priority).
pub fn columns(version: &Value) -> Vec<Column> {
    let mut out = vec![Column {
        name: "Name".into(),
        type_: "string".into(),
        format: "name".into(),
        description: NAME_DESCRIPTION.into(),
        priority: 0,
    }];
    out.extend(printer_columns(version).into_iter().map(|(c, _)| c));
    out
}

/// One object's cells, same length as `columns(version)`, with the time `date` columns count
/// ages up to (the server's clock).
pub fn cells_at(version: &Value, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut out = vec![Value::String(super::name(obj).to_string())];
    for (column, path) in printer_columns(version) {
        let first = match path.find(obj) {
            Ok(results) => results
                .into_iter()
                .next()
                .and_then(|r| r.into_iter().next()),
            Err(_) => None,
        };
        out.push(match first {
            None => Value::Null,
            Some(v) if column.type_ == "string" => Value::String(text(&v)),
            Some(v) => typed_cell(&column.type_, &v, now),
        });
    }
    out
}

/// The declared columns (or the default) with their parsed paths. A path that does not parse
/// ends the list there, as upstream falls back to the columns built so far.
fn printer_columns(version: &Value) -> Vec<(Column, JsonPath)> {
    let declared = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty());
    let Some(declared) = declared else {
        let age = Column {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: CREATION_TIMESTAMP_DESCRIPTION.into(),
            priority: 0,
        };
        let path = JsonPath::parse("{.metadata.creationTimestamp}");
        return path.map(|p| vec![(age, p)]).unwrap_or_default();
    };
    let mut out = Vec::new();
    for col in declared {
        let field = |k: &str| col.get(k).and_then(Value::as_str).unwrap_or("");
        let json_path = field("jsonPath");
        let Ok(path) = JsonPath::parse(&format!("{{{json_path}}}")) else {
            break;
        };
        let description = match field("description") {
            "" => format!("Custom resource definition column (in JSONPath format): {json_path}"),
            d => d.to_string(),
        };
        let priority = col.get("priority").and_then(Value::as_i64).unwrap_or(0);
        let column = Column {
            name: field("name").into(),
            type_: field("type").into(),
            format: field("format").into(),
            description,
            priority: i32::try_from(priority).unwrap_or(0),
        };
        out.push((column, path));
    }
    out
}

/// A non-string column's cell: the value when it has the column's type, else null. Dates
/// become ages on the server, as upstream sends them.
fn typed_cell(type_: &str, v: &Value, now: DateTime<Utc>) -> Value {
    match (type_, v) {
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, go_number),
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("date", Value::String(s)) => Value::String(age(s, now)),
        _ => Value::Null,
    }
}

/// A float as Go's JSON writes it: integral values without a fraction.
fn go_number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        Value::from(f as i64)
    } else {
        Value::from(f)
    }
}

/// The age of an RFC 3339 timestamp; `<unknown>` for an empty or zero time, `<invalid>` for
/// one that does not parse.
fn age(timestamp: &str, now: DateTime<Utc>) -> String {
    if timestamp.is_empty() || timestamp == "null" {
        return "<unknown>".into();
    }
    match DateTime::parse_from_rfc3339(timestamp) {
        Ok(t) if t.timestamp() == -62_135_596_800 && t.timestamp_subsec_nanos() == 0 => {
            "<unknown>".into()
        }
        Ok(t) => human_duration(now - t.with_timezone(&Utc)),
        Err(_) => "<invalid>".into(),
    }
}

/// A value as kubectl's JSONPath prints it: scalars as Go's `fmt` does, lists and maps as Go's
/// compact JSON, null as `<no value>`.
fn text(v: &Value) -> String {
    match v {
        Value::Null => "<no value>".into(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => go_float(f, -4, 21, false),
            _ => n.to_string(),
        },
        Value::Array(_) | Value::Object(_) => {
            let mut out = String::new();
            go_json(v, &mut out);
            out
        }
    }
}

/// Go's shortest float formatting: exponent form outside `[10^min_exp, 10^max_exp)`, with a
/// two-digit exponent (`1e-05`) unless `short_exp` (encoding/json's `1e-7`).
fn go_float(f: f64, min_exp: i32, max_exp: i32, short_exp: bool) -> String {
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if f == 0.0 || (min_exp..max_exp).contains(&exp) {
        return f.to_string();
    }
    let sign = if exp < 0 { '-' } else { '+' };
    if short_exp && exp < 0 {
        format!("{mantissa}e{sign}{}", exp.abs())
    } else {
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// Go's `json.Marshal` of a decoded JSON value: sorted keys, HTML characters escaped.
fn go_json(v: &Value, out: &mut String) {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => out.push_str(&go_float(f, -6, 21, true)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => {
            let quoted = serde_json::to_string(s).unwrap_or_default();
            for c in quoted.chars() {
                match c {
                    '<' => out.push_str("\\u003c"),
                    '>' => out.push_str("\\u003e"),
                    '&' => out.push_str("\\u0026"),
                    '\u{2028}' => out.push_str("\\u2028"),
                    '\u{2029}' => out.push_str("\\u2029"),
                    c => out.push(c),
                }
            }
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, key) in sorted_keys(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(&Value::String(key.clone()), out);
                out.push(':');
                go_json(&map[key], out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn sorted_keys(map: &Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    keys
}

#[cfg(test)]
mod tests;
