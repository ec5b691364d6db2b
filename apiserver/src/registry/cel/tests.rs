//! Table tests of CRD validation rules: upstream's documented examples, rendered as upstream.

use serde_json::{json, Value};

use super::{compile_errors, validate};

fn render(errs: Vec<crate::registry::field::FieldError>) -> Vec<String> {
    errs.iter().map(|e| e.to_string()).collect()
}

fn obj_schema(props: Value, rules: Value) -> Value {
    json!({"type": "object", "properties": props, "x-kubernetes-validations": rules})
}

#[test]
fn smoke() {
    let schema = obj_schema(
        json!({"spec": {"type": "object", "properties": {"a": {"type": "integer"}}}}),
        json!([{"rule": "self.spec.a > 1"}]),
    );
    let errs = render(validate(&schema, &json!({"spec": {"a": 0}}), None));
    assert_eq!(
        errs,
        vec!["<nil>: Invalid value: \"object\": failed rule: self.spec.a > 1"]
    );
    assert!(compile_errors(&schema, "x").is_empty());
}
