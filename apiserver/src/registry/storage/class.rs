//! ValidateStorageClass and ValidateStorageClassUpdate: a qualified provisioner name,
//! parameters, the reclaim policy and binding mode; provisioner, parameters, reclaim policy
//! and binding mode never change.

use serde_json::Value;

use super::super::field::FieldError;
use super::super::rules::qualified_name_errors;
use super::super::semantic;

const RECLAIM_POLICIES: &[&str] = &["Delete", "Retain"];
const BINDING_MODES: &[&str] = &["Immediate", "WaitForFirstConsumer"];
const MAX_PARAMETERS: usize = 512;
const MAX_PARAMETERS_SIZE: usize = 256 * 1024;

/// The fields of a new StorageClass.
pub fn validate(sc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let provisioner = sc.get("provisioner").and_then(Value::as_str).unwrap_or("");
    if provisioner.is_empty() {
        errs.push(FieldError::required("provisioner", ""));
    } else {
        for m in qualified_name_errors(&provisioner.to_lowercase()) {
            errs.push(FieldError::invalid("provisioner", provisioner, m));
        }
    }
    if let Some(params) = sc.get("parameters").and_then(Value::as_object) {
        if params.len() > MAX_PARAMETERS {
            errs.push(FieldError::too_long("parameters", "", MAX_PARAMETERS));
        } else {
            let mut size = 0;
            for (k, v) in params {
                if k.is_empty() {
                    errs.push(FieldError::invalid(
                        "parameters",
                        "",
                        "field can not be empty.",
                    ));
                }
                size += k.len() + v.as_str().map_or(0, str::len);
            }
            if size > MAX_PARAMETERS_SIZE {
                errs.push(FieldError::too_long("parameters", "", MAX_PARAMETERS_SIZE));
            }
        }
    }
    if let Some(p) = sc.get("reclaimPolicy").and_then(Value::as_str) {
        if !p.is_empty() && !RECLAIM_POLICIES.contains(&p) {
            errs.push(FieldError::not_supported(
                "reclaimPolicy",
                p,
                RECLAIM_POLICIES,
            ));
        }
    }
    match sc.get("volumeBindingMode").and_then(Value::as_str) {
        None => errs.push(FieldError::required("volumeBindingMode", "")),
        Some(m) if !BINDING_MODES.contains(&m) => errs.push(FieldError::not_supported(
            "volumeBindingMode",
            m,
            BINDING_MODES,
        )),
        Some(_) => {}
    }
    errs
}

/// What an update may not change.
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !semantic::equal(new.get("parameters"), old.get("parameters")) {
        errs.push(FieldError::forbidden(
            "parameters",
            "updates to parameters are forbidden.",
        ));
    }
    if new.get("provisioner") != old.get("provisioner") {
        errs.push(FieldError::forbidden(
            "provisioner",
            "updates to provisioner are forbidden.",
        ));
    }
    if new.get("reclaimPolicy") != old.get("reclaimPolicy") {
        errs.push(FieldError::forbidden(
            "reclaimPolicy",
            "updates to reclaimPolicy are forbidden.",
        ));
    }
    errs.extend(super::super::names::immutable(
        "volumeBindingMode",
        new.get("volumeBindingMode"),
        old.get("volumeBindingMode"),
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn classes_are_checked_with_upstreams_messages() {
        let ok = json!({"provisioner": "rancher.io/local-path", "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer"});
        let table: &[(Value, &[&str])] = &[
            (ok.clone(), &[]),
            (
                json!({"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}),
                &["provisioner: Required value"],
            ),
            (
                json!({"provisioner": "p", "reclaimPolicy": "Recycle", "volumeBindingMode": "Later"}),
                &[
                    "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
                    "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
                ],
            ),
        ];
        for (sc, want) in table {
            assert_eq!(shown(validate(sc)), *want, "{sc}");
        }
        let mut changed = ok.clone();
        changed["provisioner"] = "other.io/p".into();
        changed["reclaimPolicy"] = "Retain".into();
        changed["parameters"] = json!({"a": "b"});
        changed["volumeBindingMode"] = "Immediate".into();
        assert_eq!(
            shown(validate_update(&changed, &ok)),
            [
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
                "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
                "volumeBindingMode: Invalid value: \"Immediate\": field is immutable",
            ]
        );
        let mut annotated = ok.clone();
        annotated["allowVolumeExpansion"] = true.into();
        assert!(validate_update(&annotated, &ok).is_empty());
    }
}
