//! node.k8s.io: RuntimeClass (a handler that is a DNS label and never changes, a non-negative
//! pod overhead, scheduling constraints), as upstream's node validation.

use serde_json::{json, Value};

use super::field::FieldError;
use super::names::{immutable, label_errors, validate_labels, validate_object_meta, NameRule};
use super::rules::resource_requirements;
use super::Strategy;

pub struct RuntimeClassStrategy;

impl Strategy for RuntimeClassStrategy {
    /// Upstream's ValidateRuntimeClass.
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let handler = obj.get("handler").and_then(Value::as_str).unwrap_or("");
        for problem in label_errors(handler) {
            errs.push(FieldError::invalid("handler", handler, problem));
        }
        // The overhead is checked as a container's limits would be (upstream reuses that rule).
        if let Some(fixed) = obj.pointer("/overhead/podFixed").filter(|v| !v.is_null()) {
            errs.extend(resource_requirements(
                "overhead",
                Some(&json!({ "limits": fixed })),
            ));
        }
        errs.extend(validate_labels(
            "scheduling.nodeSelector",
            obj.pointer("/scheduling/nodeSelector"),
        ));
        errs
    }

    /// Upstream's ValidateRuntimeClassUpdate: the metadata, and the handler unchanged.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(new, NameRule::Subdomain);
        errs.extend(immutable("handler", new.get("handler"), old.get("handler")));
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
            (class("kata", json!({"podFixed": {"cpu": "250m"}})), vec![]),
            (class("Not_A_Label", json!(null)), vec!["handler"]),
            (
                class("kata", json!({"podFixed": {"cpu": "-1"}})),
                vec!["overhead.limits[cpu]"],
            ),
            (
                class("kata", json!({"podFixed": {"memory": "lots"}})),
                vec!["overhead.limits[memory]"],
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
