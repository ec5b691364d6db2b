//! policy/v1: PodDisruptionBudget, as upstream's policy validation.

use serde_json::{json, Value};

use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::Strategy;

pub struct PdbStrategy;

impl Strategy for PdbStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "status".into(),
                json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
            );
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let has = |k: &str| {
            obj.pointer(&format!("/spec/{k}"))
                .is_some_and(|v| !v.is_null())
        };
        if has("minAvailable") && has("maxUnavailable") {
            errs.push(FieldError::invalid(
                "spec",
                obj.get("spec").cloned().unwrap_or(Value::Null),
                "minAvailable and maxUnavailable cannot be both set",
            ));
        }
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }
}
