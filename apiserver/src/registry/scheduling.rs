//! scheduling.k8s.io/v1: PriorityClass, as upstream's scheduling validation.

use serde_json::{json, Value};

use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::Strategy;

pub struct PriorityClassStrategy;

impl Strategy for PriorityClassStrategy {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        if name.starts_with("system-")
            && !["system-cluster-critical", "system-node-critical"].contains(&name)
        {
            errs.push(FieldError::forbidden(
                "metadata.name",
                "priority class names with 'system-' prefix are reserved",
            ));
        }
        let value = obj.get("value").and_then(Value::as_i64).unwrap_or(0);
        if value > 1_000_000_000 && !name.starts_with("system-") {
            errs.push(FieldError::forbidden(
                "value",
                "maximum allowed value of a user defined priority is 1000000000",
            ));
        }
        if let Some(p) = obj.get("preemptionPolicy").and_then(Value::as_str) {
            if !["PreemptLowerPriority", "Never"].contains(&p) {
                errs.push(FieldError::not_supported(
                    "preemptionPolicy",
                    p,
                    &["Never", "PreemptLowerPriority"],
                ));
            }
        }
        errs
    }

    fn default(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.entry("preemptionPolicy")
                .or_insert(json!("PreemptLowerPriority"));
        }
    }

    /// Upstream sets `generation: 1` on create, and never bumps it.
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("generation".into(), json!(1));
        }
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(new, NameRule::Subdomain);
        if new.get("value") != old.get("value") {
            errs.push(FieldError::forbidden(
                "value",
                "may not be changed in an update.",
            ));
        }
        errs
    }
}
