//! coordination.k8s.io/v1: Lease, as upstream's coordination validation: a positive duration,
//! transitions never negative, a known (or qualified) coordinated strategy, and a preferred
//! holder only with a strategy.

use serde_json::Value;

use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::rules::{non_negative_int, qualified_name_errors};
use super::Strategy;

/// Upstream's validLeaseStrategies.
const STRATEGIES: &[&str] = &["OldestEmulationVersion"];

fn spec_field<'a>(obj: &'a Value, name: &str) -> Option<&'a Value> {
    obj.pointer(&format!("/spec/{name}"))
        .filter(|v| !v.is_null())
}

/// Upstream's ValidateLeaseSpec.
fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(d) = spec_field(obj, "leaseDurationSeconds") {
        if d.as_i64().is_none_or(|d| d <= 0) {
            errs.push(FieldError::invalid(
                "spec.leaseDurationSeconds",
                d.clone(),
                "must be greater than 0",
            ));
        }
    }
    errs.extend(non_negative_int(
        "spec.leaseTransitions",
        spec_field(obj, "leaseTransitions"),
    ));
    let strategy = spec_field(obj, "strategy").and_then(Value::as_str);
    if let Some(s) = strategy {
        // Upstream names the field twice (`fldPath.Child("strategy")` on `spec.strategy`).
        let path = "spec.strategy.strategy";
        if !s.contains('/') {
            if !STRATEGIES.contains(&s) {
                errs.push(FieldError::not_supported(path, s, STRATEGIES));
            }
        } else {
            for msg in qualified_name_errors(s) {
                errs.push(FieldError::invalid(path, s, msg));
            }
        }
    }
    let preferred = spec_field(obj, "preferredHolder").and_then(Value::as_str);
    if preferred.is_some_and(|p| !p.is_empty()) && strategy.is_none_or(str::is_empty) {
        errs.push(FieldError::forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
    errs
}

pub struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(validate_spec(obj));
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leases_as_upstream() {
        let cases = [
            (json!({"holderIdentity": "kcm-1", "leaseDurationSeconds": 15, "leaseTransitions": 0}), vec![]),
            (json!({}), vec![]),
            (
                json!({"leaseDurationSeconds": 0}),
                vec!["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"],
            ),
            (
                json!({"leaseTransitions": -1}),
                vec!["spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (json!({"strategy": "OldestEmulationVersion", "preferredHolder": "a"}), vec![]),
            (json!({"strategy": "example.com/mine"}), vec![]),
            (
                json!({"strategy": "Newest"}),
                vec!["spec.strategy.strategy: Unsupported value: \"Newest\": supported values: \"OldestEmulationVersion\""],
            ),
            (
                json!({"preferredHolder": "a"}),
                vec!["spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"],
            ),
        ];
        for (spec, want) in cases {
            let lease = json!({"metadata": {"name": "kube-controller-manager", "namespace": "kube-system"}, "spec": spec});
            let got: Vec<String> = LeaseStrategy
                .validate_create(&lease)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, want, "{spec}");
        }
    }
}
