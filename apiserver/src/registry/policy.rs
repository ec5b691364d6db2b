//! policy/v1: PodDisruptionBudget, as upstream's policy validation: minAvailable or
//! maxUnavailable (not both; a count or a percentage up to 100%), a valid selector, a known
//! unhealthyPodEvictionPolicy, and status counts that are never negative.

use serde_json::{json, Value};

use super::field::FieldError;
use super::generic::kind_then_generic;
use super::rules::{int_or_percent, label_selector, non_negative_int};
use super::Strategy;

const EVICTION_POLICIES: &[&str] = &["AlwaysAllow", "IfHealthyBudget"];

/// A field of the spec, `null` read as absent.
fn spec_field<'a>(obj: &'a Value, name: &str) -> Option<&'a Value> {
    obj.pointer(&format!("/spec/{name}"))
        .filter(|v| !v.is_null())
}

/// Upstream's ValidatePodDisruptionBudgetSpec.
fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (min, max) = (
        spec_field(obj, "minAvailable"),
        spec_field(obj, "maxUnavailable"),
    );
    if min.is_some() && max.is_some() {
        errs.push(FieldError::invalid(
            "spec",
            obj.get("spec").cloned().unwrap_or(Value::Null),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    errs.extend(int_or_percent("spec.minAvailable", min, false));
    errs.extend(int_or_percent("spec.maxUnavailable", max, false));
    errs.extend(label_selector("spec.selector", spec_field(obj, "selector")));
    if let Some(policy) = spec_field(obj, "unhealthyPodEvictionPolicy") {
        let text = policy.as_str().unwrap_or("");
        if !EVICTION_POLICIES.contains(&text) {
            errs.push(FieldError::not_supported(
                "spec.unhealthyPodEvictionPolicy",
                text,
                EVICTION_POLICIES,
            ));
        }
    }
    errs
}

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
        kind_then_generic(validate_spec(obj), obj)
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }

    /// Upstream's ValidatePodDisruptionBudgetStatusUpdate for policy/v1.
    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        [
            "disruptionsAllowed",
            "currentHealthy",
            "desiredHealthy",
            "expectedPods",
        ]
        .iter()
        .filter_map(|name| {
            let v = new.pointer(&format!("/status/{name}"));
            non_negative_int(&format!("status.{name}"), v)
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pdb(spec: Value) -> Value {
        json!({"metadata": {"name": "web-pdb", "namespace": "default"}, "spec": spec})
    }

    #[test]
    fn budgets_as_upstream() {
        let selector = json!({"matchLabels": {"app": "web"}});
        let cases = [
            (json!({"minAvailable": 2, "selector": selector}), vec![]),
            (json!({"maxUnavailable": "25%", "selector": selector}), vec![]),
            (json!({"minAvailable": "100%"}), vec![]),
            (
                json!({"maxUnavailable": "200%", "selector": selector}),
                vec!["spec.maxUnavailable: Invalid value: 200%: must not be greater than 100%"],
            ),
            (
                json!({"minAvailable": "-5%"}),
                vec!["spec.minAvailable: Invalid value: -5%: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"],
            ),
            (
                json!({"minAvailable": -1}),
                vec!["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (
                json!({"minAvailable": 1, "maxUnavailable": 1}),
                vec!["spec: Invalid value: {\"minAvailable\":1,\"maxUnavailable\":1}: minAvailable and maxUnavailable cannot be both set"],
            ),
            (
                json!({"minAvailable": 1, "selector": {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}}),
                vec!["spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"],
            ),
            (
                json!({"minAvailable": 1, "unhealthyPodEvictionPolicy": "Never"}),
                vec!["spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\""],
            ),
            (json!({"minAvailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow"}), vec![]),
        ];
        for (spec, want) in cases {
            let got: Vec<String> = PdbStrategy
                .validate_create(&pdb(spec.clone()))
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, want, "{spec}");
        }
        // Names are only path segments, checked once the spec is valid.
        let mut upper = pdb(json!({"minAvailable": 1}));
        upper["metadata"]["name"] = "Web_PDB".into();
        assert!(PdbStrategy.validate_create(&upper).is_empty());
    }

    #[test]
    fn status_counts_are_never_negative() {
        let status =
            json!({"status": {"disruptionsAllowed": -1, "currentHealthy": 1, "expectedPods": -2}});
        let got: Vec<String> = PdbStrategy
            .validate_status_update(&status, &json!({}))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            [
                "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0",
                "status.expectedPods: Invalid value: -2: must be greater than or equal to 0"
            ]
        );
    }
}
