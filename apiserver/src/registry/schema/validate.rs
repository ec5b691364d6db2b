//! kube-openapi's schema validator as apiextensions-apiserver runs it on a custom object, and
//! its results as field errors (`kubeOpenAPIResultToFieldErrors`).
//!
//! Per schema node the checks run in kube-openapi's order, each only for the value kinds it
//! applies to: type, composition (`anyOf`, `oneOf`, `allOf`, `not`), string, format, number,
//! array, `enum`, object. A failed type check does not stop the others. Messages name the
//! value's path and `in body` (`spec.replicas in body must be of type integer: "string"`);
//! composition failures, which kube-openapi reports without a field, print `<nil>` as their
//! field as upstream does.

use serde_json::{Map, Value};

use super::gofmt::{bad, deep_equal, go_json, Num};
use super::{format, pattern, ratchet, Additional};
use crate::registry::field::{BadValue, ErrorType, FieldError};

/// Validate `data` at `path` (kube-openapi's name: `spec.items[0]`, `""` at the root) against
/// schema `s`, appending field errors to `out`. `old` is the value `data` replaces in an update,
/// where one corresponds: a value equal to its old one is not checked (upstream's ratcheting).
pub(super) fn schema_errors(
    s: &Value,
    data: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    if old.is_some_and(|o| ratchet::unchanged(s, o, data)) {
        return;
    }
    let types = types(s);
    let fmt = s
        .get("format")
        .and_then(Value::as_str)
        .filter(|f| format::is_supported(f))
        .unwrap_or("");

    if data.is_null() {
        if !types.is_empty() && !types.contains(&"null") && !super::is_nullable(s) {
            out.push(type_error(path, &types.join(","), "null"));
        }
        enum_check(s, data, path, out);
        return;
    }
    if !types.is_empty() || !fmt.is_empty() {
        type_check(&types, fmt, data, path, out);
    }
    composition(s, data, old, path, out);
    match data {
        Value::String(text) => {
            string_checks(s, text, path, out);
            if !fmt.is_empty() && !format::is_valid(fmt, text) {
                out.push(type_error(path, fmt, text));
            }
        }
        Value::Number(n) => number_checks(s, Num::of(n), path, out),
        Value::Array(a) => array_checks(s, a, old, path, out),
        _ => {}
    }
    enum_check(s, data, path, out);
    if let Value::Object(m) = data {
        object_checks(s, m, old, path, out);
    }
}

/// The schema's types: `x-kubernetes-int-or-string` is integer and string.
fn types(s: &Value) -> Vec<&str> {
    if super::flag(s, "x-kubernetes-int-or-string") {
        return vec!["integer", "string"];
    }
    match s.get("type").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => vec![t],
        _ => Vec::new(),
    }
}

/// The field a kube-openapi error names: its name without a leading `.`, or upstream's nil
/// path (printed `<nil>`) for the root.
fn field_of(name: &str) -> String {
    if name.is_empty() || name == "." {
        "<nil>".into()
    } else {
        name.strip_prefix('.').unwrap_or(name).into()
    }
}

fn invalid(name: &str, value: BadValue, detail: String) -> FieldError {
    FieldError {
        kind: ErrorType::Invalid,
        field: field_of(name),
        value: Some(value),
        detail,
    }
}

/// `<path> in body must be of type <t>: "<found>"` (upstream's TypeInvalid, printed as
/// Invalid value).
fn type_error(name: &str, typ: &str, found: &str) -> FieldError {
    FieldError {
        kind: ErrorType::TypeInvalid,
        ..invalid(
            name,
            BadValue::Json(found.into()),
            format!("{name} in body must be of type {typ}: {found:?}"),
        )
    }
}

/// An error kube-openapi raises without a field (composition): field `<nil>`, value `""`.
fn unnamed(detail: String) -> FieldError {
    invalid("", BadValue::Json("".into()), detail)
}

/// `Too many: <actual>: must have at most <max> items`.
fn too_many(name: &str, actual: usize, max: i64) -> FieldError {
    FieldError::too_many(field_of(name), actual, usize::try_from(max).unwrap_or(0))
}

fn int_kw(s: &Value, key: &str) -> Option<i64> {
    let n = s.get(key)?.as_number()?;
    n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))
}

fn float_kw(s: &Value, key: &str) -> Option<f64> {
    s.get(key)?.as_f64()
}

/// The type a decoded value has for kube-openapi, and the format it infers for it.
fn kind_of(data: &Value) -> (&'static str, &'static str) {
    match data {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) => match Num::of(n) {
            Num::Int(_) => ("integer", "int64"),
            Num::Float(_) => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Null => ("null", ""),
    }
}

fn type_check(types: &[&str], fmt: &str, data: &Value, path: &str, out: &mut Vec<FieldError>) {
    let (found, found_format) = kind_of(data);
    let has = |t: &str| types.contains(&t);
    // A whole float passes for an integer, an integer for a number.
    let float_int = matches!(data, Value::Number(n)
        if matches!(Num::of(n), Num::Float(f) if is_json_integer(f)))
        && has("integer");
    let int_float = found == "integer" && has("number");
    let stringish = matches!(data, Value::String(_) | Value::Array(_));
    // The value's type, or a type the schema takes it as.
    let accepted = has(found) || float_int || int_float;
    if !stringish && !fmt.is_empty() && !accepted && found_format != fmt {
        out.push(type_error(path, fmt, found_format));
        return;
    }
    let numeric = has("number") || has("integer");
    if !numeric && !fmt.is_empty() && stringish {
        return;
    }
    if !accepted {
        out.push(type_error(path, &types.join(","), found));
    }
}

/// go-openapi's `IsFloat64AJSONInteger`: whole within a relative error of 1e-9.
fn is_json_integer(f: f64) -> bool {
    if !f.is_finite() {
        return false;
    }
    let diff = (f - f.trunc()).abs();
    diff == 0.0 || diff / f.abs() < 1e-9
}

fn sub_schemas<'a>(s: &'a Value, key: &str) -> &'a [Value] {
    s.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn errors_of(s: &Value, data: &Value, old: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    schema_errors(s, data, old, path, &mut errs);
    errs
}

/// The failures kube-openapi reports with a failed `anyOf`/`oneOf`: those of the alternative
/// that came closest (here: the first with the fewest errors).
fn best_failure(failures: Vec<Vec<FieldError>>) -> Vec<FieldError> {
    let mut best: Option<Vec<FieldError>> = None;
    for f in failures {
        if best.as_ref().is_none_or(|b| f.len() < b.len()) {
            best = Some(f);
        }
    }
    best.unwrap_or_default()
}

fn composition(
    s: &Value,
    data: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let quoted = format!("{path:?}");
    let any = sub_schemas(s, "anyOf");
    if !any.is_empty() {
        let mut failures = Vec::new();
        let mut ok = false;
        for alt in any {
            let errs = errors_of(alt, data, old, path);
            if errs.is_empty() {
                ok = true;
                break;
            }
            failures.push(errs);
        }
        if !ok {
            out.push(unnamed(format!(
                "{quoted} must validate at least one schema (anyOf)"
            )));
            out.extend(best_failure(failures));
        }
    }
    let one = sub_schemas(s, "oneOf");
    if !one.is_empty() {
        let mut failures = Vec::new();
        let mut valid = 0;
        for alt in one {
            let errs = errors_of(alt, data, old, path);
            if errs.is_empty() {
                valid += 1;
            } else if valid == 0 {
                failures.push(errs);
            }
        }
        if valid != 1 {
            let found = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            out.push(unnamed(format!(
                "{quoted} must validate one and only one schema (oneOf). {found}"
            )));
            if valid == 0 {
                out.extend(best_failure(failures));
            }
        }
    }
    let all = sub_schemas(s, "allOf");
    if !all.is_empty() {
        let mut valid = 0;
        for alt in all {
            let errs = errors_of(alt, data, old, path);
            if errs.is_empty() {
                valid += 1;
            }
            out.extend(errs);
        }
        if valid != all.len() {
            let none = if valid == 0 { ". None validated" } else { "" };
            out.push(unnamed(format!(
                "{quoted} must validate all the schemas (allOf){none}"
            )));
        }
    }
    if let Some(not) = s.get("not").filter(|v| v.is_object()) {
        if errors_of(not, data, old, path).is_empty() {
            out.push(unnamed(format!(
                "{quoted} must not validate the schema (not)"
            )));
        }
    }
}

/// maxLength, minLength, pattern: the first that fails. Lengths count characters.
fn string_checks(s: &Value, text: &str, path: &str, out: &mut Vec<FieldError>) {
    let len = text.chars().count() as i64;
    if let Some(max) = int_kw(s, "maxLength") {
        if len > max {
            let unit = if max == 1 { "byte" } else { "bytes" };
            out.push(FieldError {
                kind: ErrorType::TooLong,
                field: field_of(path),
                value: None,
                detail: format!("may not be more than {max} {unit}"),
            });
            return;
        }
    }
    if let Some(min) = int_kw(s, "minLength") {
        if len < min {
            out.push(invalid(
                path,
                BadValue::Json(text.into()),
                format!("{path} in body should be at least {min} chars long"),
            ));
            return;
        }
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str) {
        let failed = match pattern::compiled(pattern) {
            Ok(re) => (!re.is_match(text)).then(|| pattern.to_string()),
            Err(e) => Some(format!("{pattern}, but pattern is invalid: {e}")),
        };
        if let Some(shown) = failed {
            out.push(invalid(
                path,
                BadValue::Json(text.into()),
                format!("{path} in body should match '{shown}'"),
            ));
        }
    }
}

/// multipleOf, minimum, maximum, in that order. An integer is compared with the bounds cut
/// to integers (kube-openapi's native-type checks), a float with the float bounds.
fn number_checks(s: &Value, n: Num, path: &str, out: &mut Vec<FieldError>) {
    let value = BadValue::Go(n.go());
    if let Some(factor) = float_kw(s, "multipleOf") {
        let shown = match n {
            Num::Int(i) if factor as i64 != 0 => {
                let f = factor as i64;
                (i % f != 0).then(|| f.to_string())
            }
            _ => {
                let d = n.as_f64();
                let mult = if factor < 1.0 {
                    1.0 / factor * d
                } else {
                    d / factor
                };
                (!is_json_integer(mult)).then(|| Num::Float(factor).go())
            }
        };
        if let Some(shown) = shown {
            out.push(invalid(
                path,
                value.clone(),
                format!("{path} in body should be a multiple of {shown}"),
            ));
        }
    }
    let bound = |key: &str, exclusive_key: &str, below: bool| -> Option<String> {
        let b = float_kw(s, key)?;
        let exclusive = super::flag(s, exclusive_key);
        let (fails, shown) = match n {
            Num::Int(i) => {
                let b = b as i64;
                let fails = if below {
                    i < b || (exclusive && i == b)
                } else {
                    i > b || (exclusive && i == b)
                };
                (fails, b.to_string())
            }
            Num::Float(f) => {
                let fails = if below {
                    f < b || (exclusive && f == b)
                } else {
                    f > b || (exclusive && f == b)
                };
                (fails, Num::Float(b).go())
            }
        };
        let relation = match (below, exclusive) {
            (true, false) => "greater than or equal to",
            (true, true) => "greater than",
            (false, false) => "less than or equal to",
            (false, true) => "less than",
        };
        fails.then(|| format!("{path} in body should be {relation} {shown}"))
    };
    for (key, exclusive, below) in [
        ("minimum", "exclusiveMinimum", true),
        ("maximum", "exclusiveMaximum", false),
    ] {
        if let Some(detail) = bound(key, exclusive, below) {
            out.push(invalid(path, value.clone(), detail));
        }
    }
}

/// Items first, then minItems, maxItems, uniqueItems.
fn array_checks(
    s: &Value,
    a: &[Value],
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    if let Some(items) = super::items(s) {
        for (i, item) in a.iter().enumerate() {
            let before = old.and_then(|o| ratchet::old_item(s, o, item));
            schema_errors(items, item, before, &format!("{path}[{i}]"), out);
        }
    }
    let size = a.len();
    if let Some(min) = int_kw(s, "minItems") {
        if (size as i64) < min {
            out.push(invalid(
                path,
                BadValue::Go(size.to_string()),
                format!("{path} in body should have at least {min} items"),
            ));
        }
    }
    if let Some(max) = int_kw(s, "maxItems") {
        if size as i64 > max {
            out.push(too_many(path, size, max));
        }
    }
    if super::flag(s, "uniqueItems")
        && a.iter()
            .enumerate()
            .any(|(i, x)| a[..i].iter().any(|y| deep_equal(x, y)))
    {
        out.push(invalid(
            path,
            BadValue::Json("".into()),
            format!("{path} in body shouldn't contain duplicates"),
        ));
    }
}

/// Whether `data` equals enum value `e` as kube-openapi compares them: after converting the
/// value to the enum value's Go type where Go can (numbers to numbers).
fn enum_matches(data: &Value, e: &Value) -> bool {
    match (data, e) {
        (Value::Number(d), Value::Number(e)) => match (Num::of(d), Num::of(e)) {
            (Num::Float(f), Num::Int(i)) => f as i64 == i,
            (Num::Int(i), Num::Float(f)) => i as f64 == f,
            (a, b) => a == b,
        },
        _ => deep_equal(data, e),
    }
}

fn enum_check(s: &Value, data: &Value, path: &str, out: &mut Vec<FieldError>) {
    let values = sub_schemas(s, "enum");
    if values.is_empty() {
        return;
    }
    // A null never matches: kube-openapi skips null enum values and cannot convert a null.
    if !data.is_null() && values.iter().any(|e| enum_matches(data, e)) {
        return;
    }
    let supported: Vec<String> = values
        .iter()
        .map(|v| match v {
            Value::String(s) => format!("{s:?}"),
            other => format!("{:?}", go_json(other)),
        })
        .collect();
    out.push(FieldError {
        kind: ErrorType::NotSupported,
        field: field_of(path),
        value: Some(bad(data)),
        detail: format!("supported values: {}", supported.join(", ")),
    });
}

/// min/maxProperties (either failing ends the object's checks), additional properties,
/// properties, required.
fn object_checks(
    s: &Value,
    m: &Map<String, Value>,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let before = |k: &str| old.and_then(|o| o.get(k));
    let count = m.len();
    if let Some(min) = int_kw(s, "minProperties") {
        if (count as i64) < min {
            out.push(invalid(
                path,
                BadValue::Go(count.to_string()),
                format!("{path} in body should have at least {min} properties"),
            ));
            return;
        }
    }
    if let Some(max) = int_kw(s, "maxProperties") {
        if count as i64 > max {
            out.push(too_many(path, count, max));
            return;
        }
    }
    let props = super::properties(s);
    let known = |k: &str| props.is_some_and(|p| p.contains_key(k));
    match super::additional(s) {
        Some(Additional::Bool(false)) => {
            for k in m.keys().filter(|k| !known(k)) {
                out.push(invalid(
                    path,
                    BadValue::Json(k.as_str().into()),
                    format!("{path}.{k} in body is a forbidden property"),
                ));
            }
        }
        Some(Additional::Schema(extra)) => {
            for (k, v) in m.iter().filter(|(k, _)| !known(k)) {
                schema_errors(extra, v, before(k), &format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
    for (name, sub) in props.into_iter().flatten() {
        if let Some(v) = m.get(name) {
            schema_errors(sub, v, before(name), &super::child(path, name), out);
        }
    }
    for req in sub_schemas(s, "required").iter().filter_map(Value::as_str) {
        if !m.contains_key(req) {
            out.push(FieldError::required(field_of(&format!("{path}.{req}")), ""));
        }
    }
}
