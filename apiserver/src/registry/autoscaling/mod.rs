//! autoscaling: HorizontalPodAutoscalers, stored as autoscaling/v2 and also served as v1 (the
//! conversion is in [`v1`]). Upstream's defaults (minReplicas 1, an 80% CPU utilization target
//! when no metric is given, and when `behavior` is given every rule it leaves out), its
//! validation ([`validation`]) and an empty status on create.

pub mod v1;
pub mod validation;

use serde_json::{json, Map, Value};

use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::Strategy;

/// The default scale-up rules: no stabilization, at most 4 pods or 100% more per 15 s,
/// whichever allows more.
fn default_scale_up() -> Value {
    json!({
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    })
}

/// The default scale-down rules: everything may go in 15 s. The stabilization window is left
/// unset: the controller fills it from `--horizontal-pod-autoscaler-downscale-stabilization`.
fn default_scale_down() -> Value {
    json!({
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    })
}

/// Fill what a given rule set leaves out (upstream's GenerateHPAScale{Up,Down}Rules).
fn fill_rules(given: Option<&Value>, defaults: Value) -> Value {
    let Some(Value::Object(given)) = given.filter(|v| !v.is_null()) else {
        return defaults;
    };
    let mut out: Map<String, Value> = Map::new();
    let unset = |k: &str| given.get(k).is_none_or(Value::is_null);
    for key in ["stabilizationWindowSeconds", "selectPolicy", "policies"] {
        let empty_policies = key == "policies"
            && given
                .get(key)
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
        if unset(key) || empty_policies {
            if let Some(d) = defaults.get(key) {
                out.insert(key.into(), d.clone());
            }
        } else if let Some(v) = given.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(t) = given.get("tolerance").filter(|v| !v.is_null()) {
        out.insert("tolerance".into(), t.clone());
    }
    Value::Object(out)
}

/// Upstream's SetDefaults_HorizontalPodAutoscaler for autoscaling/v2.
pub fn set_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("minReplicas").is_none_or(Value::is_null) {
        spec.insert("minReplicas".into(), json!(1));
    }
    if spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": v1::DEFAULT_CPU_UTILIZATION}}}]),
        );
    }
    if let Some(Value::Object(b)) = spec.get_mut("behavior") {
        let up = fill_rules(b.get("scaleUp"), default_scale_up());
        let down = fill_rules(b.get("scaleDown"), default_scale_down());
        b.insert("scaleUp".into(), up);
        b.insert("scaleDown".into(), down);
    }
}

/// `behavior.*.tolerance` is behind the HPAConfigurableTolerance feature gate, off by
/// default: dropped unless the stored object already uses it.
fn drop_disabled_fields(obj: &mut Value, old: Option<&Value>) {
    let in_use = |o: &Value| {
        ["scaleUp", "scaleDown"].iter().any(|side| {
            o.pointer(&format!("/spec/behavior/{side}/tolerance"))
                .is_some_and(|t| !t.is_null())
        })
    };
    if old.is_some_and(in_use) {
        return;
    }
    for side in ["scaleUp", "scaleDown"] {
        if let Some(rules) = obj
            .pointer_mut(&format!("/spec/behavior/{side}"))
            .and_then(Value::as_object_mut)
        {
            rules.remove("tolerance");
        }
    }
}

fn spec_of(obj: &Value) -> Value {
    obj.get("spec").cloned().unwrap_or_else(|| json!({}))
}

pub struct HpaStrategy;

impl Strategy for HpaStrategy {
    fn default(&self, obj: &mut Value) {
        if obj.get("spec").is_none_or(Value::is_null) {
            if let Some(m) = obj.as_object_mut() {
                m.insert("spec".into(), json!({}));
            }
        }
        set_defaults(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({"desiredReplicas": 0}));
        }
        drop_disabled_fields(obj, None);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        drop_disabled_fields(new, Some(old));
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(validation::spec(&spec_of(obj), 1));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        // A stored object that scales to zero may keep doing so.
        let floor = if old.pointer("/spec/minReplicas").and_then(Value::as_i64) == Some(0) {
            0
        } else {
            1
        };
        validation::spec(&spec_of(new), floor)
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        validation::status(new)
    }
}

#[cfg(test)]
mod tests;
