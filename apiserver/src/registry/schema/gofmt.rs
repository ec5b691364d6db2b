//! JSON values printed as upstream's Go code prints them in messages: `%v` of numbers
//! (`1e+06`), `%#v` of maps and slices (`map[string]interface {}{"a":1}`), and
//! `encoding/json` of enum values.

use serde_json::{Number, Value};

use crate::registry::field::BadValue;

/// A JSON number as the apiserver decodes it: whole numbers that fit become `int64`, the rest
/// `float64`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub(super) fn of(n: &Number) -> Num {
        match n.as_i64() {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
        }
    }

    pub(super) fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// Go's `%v`.
    pub(super) fn go(self) -> String {
        match self {
            Num::Int(i) => i.to_string(),
            Num::Float(f) => go_float(f),
        }
    }
}

/// Go's `%v` of a float64: the shortest representation, in exponent form (`1e+06`,
/// `1.5e-05`) when the exponent is below -4 or at least 6.
pub(super) fn go_float(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let (mantissa, exp) = split_exp(f);
    if !(-4..6).contains(&exp) {
        go_exp(&mantissa, exp)
    } else {
        format!("{f}")
    }
}

/// `encoding/json` of a float64: plain unless the exponent is below -6 or at least 21.
fn json_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return "0".into();
    }
    let a = f.abs();
    if (1e-6..1e21).contains(&a) {
        format!("{f}")
    } else {
        let (mantissa, exp) = split_exp(f);
        let mut s = go_exp(&mantissa, exp);
        // encoding/json writes e-07 as e-7.
        if let Some(i) = s.find("e-0") {
            s.remove(i + 2);
        }
        s
    }
}

/// The shortest mantissa (`-1.5`) and decimal exponent of `f`.
fn split_exp(f: f64) -> (String, i32) {
    let e = format!("{f:e}");
    let (m, x) = e.split_once('e').unwrap_or((&e, "0"));
    (m.to_string(), x.parse().unwrap_or(0))
}

fn go_exp(mantissa: &str, exp: i32) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// Go's `%q` of a string, close enough: Rust's debug quoting matches it for printable text.
pub(super) fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// Go's `%#v` of a decoded JSON value (`interface{}`).
pub(super) fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => Num::of(n).go(),
        Value::String(s) => quote(s),
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", quote(k), go_sharp_v(&m[k])))
                .collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// `encoding/json` of a decoded value: numbers as Go writes them, map keys sorted.
pub(super) fn go_json(v: &Value) -> String {
    match v {
        Value::Number(n) => match Num::of(n) {
            Num::Int(i) => i.to_string(),
            Num::Float(f) => json_float(f),
        },
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(go_json).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), go_json(&m[k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// The offending value of a field error as upstream's `ErrorBody` prints a decoded value:
/// strings quoted, numbers and bools bare, null as `"null"`, maps and slices in Go syntax.
pub(super) fn bad(v: &Value) -> BadValue {
    match v {
        Value::Number(n) => BadValue::Go(Num::of(n).go()),
        Value::Array(_) | Value::Object(_) => BadValue::Go(go_sharp_v(v)),
        other => BadValue::Json(other.clone()),
    }
}

/// Whether two decoded values are equal as Go's `reflect.DeepEqual` sees them: an `int64`
/// never equals a `float64`.
pub(super) fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Num::of(x) == Num::of(y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| deep_equal(p, q)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_print_as_go_does() {
        let cases = [
            (10.0, "10"),
            (1.5, "1.5"),
            (-0.25, "-0.25"),
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e21, "1e+21"),
        ];
        for (f, go) in cases {
            assert_eq!(go_float(f), go, "{f}");
        }
        assert_eq!(go_json(&json!(1e-7)), "1e-7");
        assert_eq!(go_json(&json!(1.5)), "1.5");
        assert_eq!(
            go_json(&json!({"b": 1, "a": [true, null]})),
            r#"{"a":[true,null],"b":1}"#
        );
    }

    #[test]
    fn compound_values_print_as_go_syntax() {
        assert_eq!(
            go_sharp_v(&json!({"b": [1, "x"], "a": null, "c": 2.5})),
            r#"map[string]interface {}{"a":interface {}(nil), "b":[]interface {}{1, "x"}, "c":2.5}"#
        );
    }
}
