//! admissionregistration.k8s.io/v1: ValidatingAdmissionPolicy and its bindings, as upstream's
//! strategies: defaults (`failurePolicy: Fail`, `matchPolicy: Equivalent`, empty selectors, rule
//! scope `*`), a fresh status on create, and upstream's validation with its paths and words
//! (`policy`, `binding`, and the match rules both share in `rules`). The policies act through the
//! admission plugin in `crate::policy`.

mod binding;
mod policy;
mod rules;
#[cfg(test)]
mod tests;

use serde_json::{json, Map, Value};

use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::Strategy;

/// Set `key` to `value` in `obj` when it is absent or null.
fn default_to(obj: &mut Map<String, Value>, key: &str, value: Value) {
    if obj.get(key).is_none_or(Value::is_null) {
        obj.insert(key.into(), value);
    }
}

/// Upstream's SetDefaults_MatchResources and SetDefaults_Rule, on a MatchResources object.
fn default_match_resources(m: &mut Value) {
    let Some(m) = m.as_object_mut() else {
        return;
    };
    default_to(m, "matchPolicy", json!("Equivalent"));
    default_to(m, "namespaceSelector", json!({}));
    default_to(m, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        for rule in m
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(r) = rule.as_object_mut() {
                default_to(r, "scope", json!("*"));
            }
        }
    }
}

pub struct PolicyStrategy;

impl Strategy for PolicyStrategy {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        default_to(spec, "failurePolicy", json!("Fail"));
        if let Some(mc) = spec.get_mut("matchConstraints") {
            default_match_resources(mc);
        }
    }

    /// A new policy starts with an empty status; the type-checking loop fills it in.
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({}));
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(policy::validate_spec(obj));
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        policy::validate_status(new.get("status"))
    }
}

pub struct BindingStrategy;

impl Strategy for BindingStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(mr) = obj.pointer_mut("/spec/matchResources") {
            default_match_resources(mr);
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(binding::validate_spec(obj));
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }
}
