//! The annotations pods give a meaning to (upstream's ValidatePodSpecificAnnotations and
//! ValidatePodSpecificAnnotationUpdates): a mirror pod names its node and keeps its mirror
//! annotation, the deletion cost is a 32-bit integer, AppArmor annotations stay as created.

use serde_json::Value;

use super::super::field::FieldError;

const MIRROR: &str = "kubernetes.io/config.mirror";
const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
const APPARMOR_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

fn annotations(obj: &Value) -> Option<&serde_json::Map<String, Value>> {
    obj.pointer("/metadata/annotations")
        .and_then(Value::as_object)
}

/// Upstream's GetDeletionCostFromPodAnnotations: a decimal int32, without `+` or leading zeros.
fn valid_cost(v: &str) -> bool {
    let first_ok = match v.as_bytes().first() {
        Some(b'-') => true,
        Some(b'0') => v == "0",
        Some(b'1'..=b'9') => true,
        _ => false,
    };
    first_ok && v.parse::<i32>().is_ok()
}

fn cost_of(obj: &Value) -> Option<&str> {
    annotations(obj)?.get(DELETION_COST)?.as_str()
}

/// The pod-specific annotations of `pod`; an invalid deletion cost passes when `old` had one
/// already (upstream's AllowInvalidPodDeletionCost).
pub fn validate(pod: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(ann) = annotations(pod) else {
        return errs;
    };
    if let Some(v) = ann.get(MIRROR) {
        let node = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if node.is_empty() {
            errs.push(FieldError::invalid(
                format!("metadata.annotations[{MIRROR}]"),
                v.clone(),
                "must set spec.nodeName if mirror pod annotation is set",
            ));
        }
    }
    let allow_invalid = old.and_then(cost_of).is_some_and(|c| !valid_cost(c));
    if let Some(cost) = cost_of(pod) {
        if !allow_invalid && !valid_cost(cost) {
            errs.push(FieldError::invalid(
                format!("metadata.annotations[{DELETION_COST}]"),
                cost,
                "must be a 32bit integer",
            ));
        }
    }
    errs
}

/// Updates (of the pod or its status) may not add, change or remove the mirror and AppArmor
/// annotations; the result must still be valid.
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = serde_json::Map::new();
    let (na, oa) = (
        annotations(new).unwrap_or(&empty),
        annotations(old).unwrap_or(&empty),
    );
    for (k, v) in oa {
        if na.get(k) == Some(v) {
            continue;
        }
        if k.starts_with(APPARMOR_PREFIX) {
            errs.push(FieldError::forbidden(
                format!("metadata.annotations[{k}]"),
                "may not remove or update AppArmor annotations",
            ));
        }
        if k == MIRROR {
            errs.push(FieldError::forbidden(
                format!("metadata.annotations[{k}]"),
                "may not remove or update mirror pod annotation",
            ));
        }
    }
    for k in na.keys().filter(|k| !oa.contains_key(*k)) {
        if k.starts_with(APPARMOR_PREFIX) {
            errs.push(FieldError::forbidden(
                format!("metadata.annotations[{k}]"),
                "may not add AppArmor annotations",
            ));
        }
        if k == MIRROR {
            errs.push(FieldError::forbidden(
                format!("metadata.annotations[{k}]"),
                "may not add mirror pod annotation",
            ));
        }
    }
    errs.extend(validate(new, Some(old)));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ann: Value, node: &str) -> Value {
        json!({"metadata": {"name": "p", "annotations": ann}, "spec": {"nodeName": node}})
    }

    #[test]
    fn pod_annotations_as_upstream() {
        assert!(validate(&pod(json!({MIRROR: "x"}), "w0"), None).is_empty());
        assert_eq!(
            validate(&pod(json!({MIRROR: "x"}), ""), None)[0].to_string(),
            "metadata.annotations[kubernetes.io/config.mirror]: Invalid value: \"x\": must set spec.nodeName if mirror pod annotation is set"
        );
        for ok in ["0", "-5", "2147483647"] {
            assert!(
                validate(&pod(json!({DELETION_COST: ok}), ""), None).is_empty(),
                "{ok}"
            );
        }
        for bad in ["+1", "007", "2147483648", "x", ""] {
            assert_eq!(
                validate(&pod(json!({DELETION_COST: bad}), ""), None).len(),
                1,
                "{bad}"
            );
        }
        let old = pod(json!({DELETION_COST: "x"}), "");
        assert!(validate(&pod(json!({DELETION_COST: "y"}), ""), Some(&old)).is_empty());
    }

    #[test]
    fn mirror_annotation_stays() {
        let mirror = pod(json!({MIRROR: "x"}), "w0");
        let plain = pod(json!({}), "w0");
        assert_eq!(
            validate_update(&plain, &mirror)[0].to_string(),
            "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not remove or update mirror pod annotation"
        );
        assert_eq!(
            validate_update(&mirror, &plain)[0].to_string(),
            "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation"
        );
        assert!(validate_update(&mirror, &mirror).is_empty());
    }
}
