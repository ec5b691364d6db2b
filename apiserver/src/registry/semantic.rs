//! Upstream's semantic equality of API values (apimachinery's `Semantic.DeepEqual`, what
//! ValidateImmutableField compares with) on JSON: an absent field, `null`, `""`, `0`, `false`,
//! `{}` and `[]` are all a Go zero value, so `{"matchLabels": {"a": "b"}}` equals
//! `{"matchLabels": {"a": "b"}, "matchExpressions": []}`.

use serde_json::{Map, Value};

/// The value with every zero value dropped (`None`: the whole value is zero).
fn pruned(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Bool(false) => None,
        Value::String(s) if s.is_empty() => None,
        Value::Number(n) if n.as_f64() == Some(0.0) => None,
        Value::Object(m) => {
            let kept: Map<String, Value> = m
                .iter()
                .filter_map(|(k, v)| pruned(v).map(|v| (k.clone(), v)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        // List items keep their places: a zero item is still an item.
        Value::Array(a) if a.is_empty() => None,
        Value::Array(a) => Some(Value::Array(
            a.iter().map(|v| pruned(v).unwrap_or(Value::Null)).collect(),
        )),
        other => Some(other.clone()),
    }
}

/// Whether two optional values are equal as upstream's typed objects would be.
pub fn equal(a: Option<&Value>, b: Option<&Value>) -> bool {
    a.and_then(pruned) == b.and_then(pruned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zero_values_are_absent() {
        let cases = [
            (
                json!({"a": 1}),
                json!({"a": 1, "b": null, "c": [], "d": {}, "e": ""}),
                true,
            ),
            (
                json!({"m": {"x": "y"}}),
                json!({"m": {"x": "y"}, "n": 0}),
                true,
            ),
            (json!(null), json!({}), true),
            (json!({"a": 1}), json!({"a": 2}), false),
            (json!([1, 0]), json!([1]), false),
            (json!({"l": ["a"]}), json!({"l": ["a", "b"]}), false),
        ];
        for (a, b, same) in cases {
            assert_eq!(equal(Some(&a), Some(&b)), same, "{a} {b}");
            assert_eq!(equal(Some(&b), Some(&a)), same, "{b} {a}");
        }
        assert!(equal(None, Some(&json!(""))));
        assert!(!equal(None, Some(&json!("x"))));
    }
}
