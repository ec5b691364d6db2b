//! Pods: defaults, the initial status, the spec/status split, and which spec fields an update
//! may change.

use serde_json::{json, Value};

use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::podspec::{default_pod_spec, default_tolerations, qos_class, validate_pod_spec};
use super::Strategy;

pub struct PodStrategy;

/// Spec fields an update may change, as upstream's ValidatePodUpdate allows.
const MUTABLE_MESSAGE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The spec with the fields an update may change blanked out.
fn frozen_part(spec: &Value) -> Value {
    let mut s = spec.clone();
    if let Some(m) = s.as_object_mut() {
        m.remove("activeDeadlineSeconds");
        m.remove("tolerations");
        m.remove("terminationGracePeriodSeconds");
        for list in ["containers", "initContainers"] {
            if let Some(Value::Array(cs)) = m.get_mut(list) {
                for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                    c.remove("image");
                }
            }
        }
    }
    s
}

impl Strategy for PodStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec") {
            default_pod_spec(spec, true);
            default_tolerations(spec);
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        let qos = obj.get("spec").map(qos_class).unwrap_or("BestEffort");
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": qos}),
            );
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(validate_pod_spec(
            obj.get("spec").unwrap_or(&Value::Null),
            "spec",
        ));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(new, NameRule::Subdomain);
        let (ns, os) = (
            new.get("spec").unwrap_or(&Value::Null),
            old.get("spec").unwrap_or(&Value::Null),
        );
        errs.extend(validate_pod_spec(ns, "spec"));
        if ns.get("nodeName") != os.get("nodeName") {
            errs.push(FieldError::forbidden(
                "spec.nodeName",
                "may not be changed by an update; use pods/binding",
            ));
        } else if frozen_part(ns) != frozen_part(os) {
            errs.push(FieldError::forbidden("spec", MUTABLE_MESSAGE));
        }
        // Tolerations may only be added to.
        let old_tol = os
            .get("tolerations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let new_tol = ns
            .get("tolerations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if old_tol.iter().any(|t| !new_tol.contains(t)) {
            errs.push(FieldError::forbidden(
                "spec.tolerations",
                "existing toleration can not be modified except its tolerationSeconds",
            ));
        }
        errs
    }

    fn warnings(&self, obj: &Value) -> Vec<String> {
        super::deprecated_master_warnings(obj.get("spec"), "spec")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Value {
        let mut p = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}], "nodeName": "w0"}});
        PodStrategy.default(&mut p);
        PodStrategy.prepare_for_create(&mut p);
        p
    }

    #[test]
    fn image_changes_are_allowed_others_are_not() {
        let old = pod();
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = "nginx:2".into();
        assert!(PodStrategy.validate_update(&new, &old).is_empty());
        let mut moved = old.clone();
        moved["spec"]["nodeName"] = "w1".into();
        assert_eq!(
            PodStrategy.validate_update(&moved, &old)[0].field,
            "spec.nodeName"
        );
        let mut renamed = old.clone();
        renamed["spec"]["restartPolicy"] = "Never".into();
        assert_eq!(
            PodStrategy.validate_update(&renamed, &old)[0].to_string(),
            format!("spec: Forbidden: {MUTABLE_MESSAGE}")
        );
    }

    #[test]
    fn status_is_split_from_spec() {
        let old = pod();
        assert_eq!(
            old["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
        let mut new = old.clone();
        new["status"]["phase"] = "Running".into();
        new["spec"]["containers"][0]["image"] = "other".into();
        let mut main = new.clone();
        crate::registry::keep_status(&mut main, &old);
        assert_eq!(main["status"]["phase"], "Pending");
        let mut status = new.clone();
        crate::registry::keep_spec_take_status(&mut status, &old);
        assert_eq!(status["status"]["phase"], "Running");
        assert_eq!(status["spec"]["containers"][0]["image"], "nginx:1");
    }
}
