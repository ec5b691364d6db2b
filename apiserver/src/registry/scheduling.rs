//! scheduling.k8s.io/v1: PriorityClass, as upstream's scheduling validation: `system-` names are
//! the two system classes with their values, user classes stay at or below one billion, the
//! preemption policy is a known one, and neither value nor policy changes.

use serde_json::{json, Value};

use super::field::FieldError;
use super::names::{immutable, validate_object_meta, NameRule};
use super::Strategy;

/// Upstream's HighestUserDefinablePriority.
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// Upstream's SystemPriorityClasses: name and value (neither is the global default).
const SYSTEM_CLASSES: &[(&str, i64)] = &[
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// Upstream's IsKnownSystemPriorityClass: why a `system-` class is not one.
fn unknown_system_class(name: &str, value: i64, global_default: bool) -> Option<String> {
    let Some((_, want)) = SYSTEM_CLASSES.iter().find(|(n, _)| *n == name) else {
        return Some(format!("{name} is not a known system priority class"));
    };
    if value != *want {
        return Some(format!("value of {name} PriorityClass must be {want}"));
    }
    global_default.then(|| format!("globalDefault of {name} PriorityClass must be false"))
}

pub struct PriorityClassStrategy;

impl Strategy for PriorityClassStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            if m.get("preemptionPolicy").is_none_or(Value::is_null) {
                m.insert("preemptionPolicy".into(), json!("PreemptLowerPriority"));
            }
        }
    }

    /// Upstream sets `generation: 1` on create, and never bumps it.
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("generation".into(), json!(1));
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let value = obj.get("value").and_then(Value::as_i64).unwrap_or(0);
        let global_default = obj
            .get("globalDefault")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if name.starts_with("system-") {
            if let Some(why) = unknown_system_class(name, value, global_default) {
                errs.push(FieldError::forbidden(
                    "metadata.name",
                    format!("priority class names with 'system-' prefix are reserved for system use only. error: {why}"),
                ));
            }
        } else if value > HIGHEST_USER_PRIORITY {
            errs.push(FieldError::forbidden(
                "value",
                format!(
                    "maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"
                ),
            ));
        }
        match obj.get("preemptionPolicy").and_then(Value::as_str) {
            None | Some("PreemptLowerPriority" | "Never") => {}
            Some("") => errs.push(FieldError::required("preemptionPolicy", "")),
            Some(p) => errs.push(FieldError::not_supported(
                "preemptionPolicy",
                p,
                &["PreemptLowerPriority", "Never"],
            )),
        }
        errs
    }

    /// Upstream's ValidatePriorityClassUpdate: only the metadata, and value and preemptionPolicy
    /// unchanged.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(new, NameRule::Subdomain);
        if new.get("value") != old.get("value") {
            errs.push(FieldError::forbidden(
                "value",
                "may not be changed in an update.",
            ));
        }
        errs.extend(immutable(
            "preemptionPolicy",
            new.get("preemptionPolicy"),
            old.get("preemptionPolicy"),
        ));
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, value: i64) -> Value {
        let mut c = json!({"metadata": {"name": name}, "value": value});
        PriorityClassStrategy.default(&mut c);
        c
    }

    #[test]
    fn priority_classes_as_upstream() {
        let reserved = "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error:";
        let cases = [
            (class("high", 1000), vec![]),
            (class("system-node-critical", 2_000_001_000), vec![]),
            (
                class("system-node-critical", 5),
                vec![format!("{reserved} value of system-node-critical PriorityClass must be 2000001000")],
            ),
            (
                class("system-anything", 5),
                vec![format!("{reserved} system-anything is not a known system priority class")],
            ),
            (
                class("huge", 1_000_000_001),
                vec!["value: Forbidden: maximum allowed value of a user defined priority is 1000000000".into()],
            ),
        ];
        for (obj, want) in cases {
            let got: Vec<String> = PriorityClassStrategy
                .validate_create(&obj)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, want, "{obj}");
        }
        let mut policy = class("p", 1);
        policy["preemptionPolicy"] = "Sometimes".into();
        assert_eq!(
            PriorityClassStrategy.validate_create(&policy)[0].to_string(),
            "preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\""
        );
        let old = class("p", 1);
        let mut changed = old.clone();
        changed["value"] = 2.into();
        changed["preemptionPolicy"] = "Never".into();
        let got: Vec<String> = PriorityClassStrategy
            .validate_update(&changed, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            [
                "value: Forbidden: may not be changed in an update.",
                "preemptionPolicy: Invalid value: \"Never\": field is immutable"
            ]
        );
    }
}
