//! node.k8s.io: RuntimeClass (a handler that is a DNS label and never changes, a non-negative
//! pod overhead, scheduling constraints), as upstream's node validation.

use serde_json::Value;
use tinykube_proto::quantity::Quantity;

use super::field::FieldError;
use super::names::{label_errors, validate_object_meta, NameRule};
use super::Strategy;

pub struct RuntimeClassStrategy;

impl Strategy for RuntimeClassStrategy {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let handler = obj.get("handler").and_then(Value::as_str).unwrap_or("");
        if handler.is_empty() {
            errs.push(FieldError::required("handler", ""));
        } else {
            for problem in label_errors(handler) {
                errs.push(FieldError::invalid("handler", handler, problem));
            }
        }
        if let Some(Value::Object(fixed)) = obj.pointer("/overhead/podFixed") {
            for (resource, q) in fixed {
                let field = format!("overhead.podFixed[{resource}]");
                let text = q.as_str().unwrap_or("");
                match Quantity::parse(text) {
                    Ok(q) if q < Quantity::from_milli(0) => errs.push(FieldError::invalid(
                        field,
                        text,
                        "must be greater than or equal to 0",
                    )),
                    Ok(_) => {}
                    Err(_) => errs.push(FieldError::invalid(
                        field,
                        text,
                        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                    )),
                }
            }
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        if new.get("handler") != old.get("handler") {
            let handler = new.get("handler").and_then(Value::as_str).unwrap_or("");
            errs.push(FieldError::invalid(
                "handler",
                handler,
                "field is immutable",
            ));
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(handler: &str, overhead: Value) -> Value {
        json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
               "metadata": {"name": "kata"}, "handler": handler, "overhead": overhead})
    }

    #[test]
    fn runtime_classes_are_checked_as_upstream() {
        let cases = [
            (
                class(
                    "runc",
                    json!({"podFixed": {"cpu": "250m", "memory": "120Mi"}}),
                ),
                vec![],
            ),
            (class("", json!(null)), vec!["handler"]),
            (class("Not_A_Label", json!(null)), vec!["handler"]),
            (
                class("kata", json!({"podFixed": {"cpu": "-1"}})),
                vec!["overhead.podFixed[cpu]"],
            ),
            (
                class("kata", json!({"podFixed": {"memory": "lots"}})),
                vec!["overhead.podFixed[memory]"],
            ),
        ];
        for (obj, fields) in cases {
            let errs = RuntimeClassStrategy.validate_create(&obj);
            let got: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
            assert_eq!(got, fields, "{obj}");
        }
        let old = class("runc", json!(null));
        let errs = RuntimeClassStrategy.validate_update(&class("kata", json!(null)), &old);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "handler");
    }
}
