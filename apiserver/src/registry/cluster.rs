//! Cluster kinds: Node (taints, spec/status split), Namespace (finalizers, phase), ConfigMap
//! (size).

use serde_json::{json, Value};

use super::field::FieldError;
use super::names::{config_key_errors, validate_object_meta, NameRule};
use super::Strategy;

const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

pub struct NodeStrategy;

impl Strategy for NodeStrategy {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let mut seen = Vec::new();
        for (i, t) in obj
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let key = t.get("key").and_then(Value::as_str).unwrap_or("");
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
            if key.is_empty() {
                errs.push(FieldError::required(format!("spec.taints[{i}].key"), ""));
            }
            if !EFFECTS.contains(&effect) {
                errs.push(FieldError::not_supported(
                    format!("spec.taints[{i}].effect"),
                    effect,
                    EFFECTS,
                ));
            }
            if seen.contains(&(key, effect)) {
                errs.push(FieldError::duplicate(
                    format!("spec.taints[{i}]"),
                    format!("{key}:{effect}"),
                ));
            }
            seen.push((key, effect));
        }
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }
}

pub struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            let spec = m.entry("spec").or_insert_with(|| json!({}));
            if let Some(s) = spec.as_object_mut() {
                s.entry("finalizers").or_insert(json!(["kubernetes"]));
            }
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({"phase": "Active"}));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // spec.finalizers change only through the finalize subresource.
        if let (Some(spec), Some(old_f)) = (
            new.get_mut("spec").and_then(Value::as_object_mut),
            old.pointer("/spec/finalizers"),
        ) {
            spec.insert("finalizers".into(), old_f.clone());
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        validate_object_meta(obj, NameRule::Label)
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        validate_object_meta(new, NameRule::Label)
    }
}

pub struct ConfigMapStrategy;

const CONFIG_MAP_MAX: usize = 1024 * 1024;

impl Strategy for ConfigMapStrategy {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let mut size = 0;
        for field in ["data", "binaryData"] {
            if let Some(Value::Object(m)) = obj.get(field) {
                for (k, v) in m {
                    size += v.as_str().map(str::len).unwrap_or(0);
                    for problem in config_key_errors(k) {
                        errs.push(FieldError::invalid(
                            format!("{field}[{k}]"),
                            k.as_str(),
                            problem,
                        ));
                    }
                }
            }
        }
        if size > CONFIG_MAP_MAX {
            errs.push(FieldError::too_long("[]", "", CONFIG_MAP_MAX));
        }
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }
}
