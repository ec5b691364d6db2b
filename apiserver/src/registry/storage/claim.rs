//! ValidatePersistentVolumeClaimSpec and its update and status rules: access modes, a positive
//! `storage` request, the selector, class name, volume mode and data sources; after creation
//! only the volume name (once), the class name (from unset), and a bound claim's storage
//! request may change.

use serde_json::Value;

use super::super::field::FieldError;
use super::super::rules::{label_selector, quantity, resource_list};
use super::super::semantic;
use super::{access_modes, class_name, diff, volume_mode, volume_mode_unchanged};

/// The beta annotation that named a claim's class before `spec.storageClassName`.
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

fn data_source(ds: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let text = |k: &str| ds.get(k).and_then(Value::as_str).unwrap_or("");
    if text("name").is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    }
    if text("kind").is_empty() {
        errs.push(FieldError::required(format!("{path}.kind"), ""));
    }
    if text("apiGroup").is_empty() && text("kind") != "PersistentVolumeClaim" {
        errs.push(FieldError::invalid(
            path,
            text("kind"),
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    errs
}

/// ValidatePersistentVolumeClaimSpec at `path` (`spec`, or a claim template's).
pub fn validate_spec(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let modes = spec.get("accessModes");
    if modes.and_then(Value::as_array).is_none_or(Vec::is_empty) {
        errs.push(FieldError::required(
            format!("{path}.accessModes"),
            "at least 1 access mode is required",
        ));
    }
    if let Some(sel) = spec.get("selector").filter(|v| !v.is_null()) {
        errs.extend(label_selector(&format!("{path}.selector"), Some(sel)));
    }
    errs.extend(access_modes(modes, &format!("{path}.accessModes")));
    let at = format!("{path}.resources[storage]");
    match spec.pointer("/resources/requests/storage") {
        None | Some(Value::Null) => errs.push(FieldError::required(at, "")),
        Some(v) => match quantity(v) {
            None => errs.push(super::super::rules::invalid_quantity(&at, v)),
            Some(q) if q.milli_value() <= 0 => errs.push(FieldError::invalid(
                at,
                q.to_string(),
                "must be greater than zero",
            )),
            Some(_) => {}
        },
    }
    if let Some(c) = spec
        .get("storageClassName")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
    {
        errs.extend(class_name(c, &format!("{path}.storageClassName")));
    }
    errs.extend(volume_mode(spec, &format!("{path}.volumeMode")));
    for key in ["dataSource", "dataSourceRef"] {
        if let Some(ds) = spec.get(key).filter(|v| !v.is_null()) {
            errs.extend(data_source(ds, &format!("{path}.{key}")));
        }
    }
    if let Some(c) = spec
        .get("volumeAttributesClassName")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
    {
        errs.extend(class_name(c, &format!("{path}.volumeAttributesClassName")));
    }
    errs
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
}

fn storage(obj: &Value, pointer: &str) -> Option<tinykube_proto::quantity::Quantity> {
    obj.pointer(pointer).and_then(quantity)
}

/// ValidatePersistentVolumeClaimUpdate's own rules (the new claim is validated as a new one
/// by the caller).
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut new_spec = new.get("spec").cloned().unwrap_or(Value::Null);
    let mut old_spec = old.get("spec").cloned().unwrap_or(Value::Null);
    let set = |spec: &mut Value, key: &str, v: Option<Value>| {
        if let Some(m) = spec.as_object_mut() {
            match v {
                Some(v) => m.insert(key.into(), v),
                None => m.remove(key),
            };
        }
    };
    // The binder sets the volume name once.
    if old_spec
        .get("volumeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        let v = new_spec.get("volumeName").cloned();
        set(&mut old_spec, "volumeName", v);
    }
    // The class may be set once when it was unset (matching the beta annotation, if any).
    let old_class = old_spec
        .get("storageClassName")
        .filter(|v| !v.is_null())
        .cloned();
    let new_class = new_spec
        .get("storageClassName")
        .filter(|v| !v.is_null())
        .cloned();
    let old_beta = annotation(old, BETA_CLASS);
    if old_class.is_none()
        && new_class.is_some()
        && old_beta.is_none_or(|b| Some(b) == new_class.as_ref())
    {
        set(&mut new_spec, "storageClassName", None);
    }
    if let Some(e) = super::super::names::immutable(
        &format!("metadata.annotations[{BETA_CLASS}]"),
        annotation(new, BETA_CLASS),
        old_beta,
    ) {
        errs.push(e);
    }
    let bound = new.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    if bound {
        if let Some(r) = new_spec.pointer_mut("/resources/requests") {
            if let Some(m) = r.as_object_mut() {
                match old.pointer("/spec/resources/requests/storage") {
                    Some(v) => m.insert("storage".into(), v.clone()),
                    None => m.remove("storage"),
                };
            }
        }
    }
    let vac = old_spec.get("volumeAttributesClassName").cloned();
    set(&mut new_spec, "volumeAttributesClassName", vac);
    if !semantic::equal(Some(&new_spec), Some(&old_spec)) {
        errs.push(FieldError::forbidden(
            "spec",
            format!(
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n{}",
                diff(Some(&old_spec), Some(&new_spec))
            ),
        ));
    }
    let size = "/spec/resources/requests/storage";
    if let (Some(new_size), Some(old_size)) = (storage(new, size), storage(old, size)) {
        // As upstream with RecoverVolumeExpansionFailure: a request may shrink back, but not
        // to the capacity the claim has.
        let capacity = storage(old, "/status/capacity/storage")
            .unwrap_or(tinykube_proto::quantity::Quantity::from_milli(0));
        if new_size < old_size && new_size <= capacity {
            errs.push(FieldError::forbidden(
                "spec.resources.requests.storage",
                "field can not be less than status.capacity",
            ));
        }
    }
    errs.extend(volume_mode_unchanged(new, old));
    errs
}

/// ValidatePersistentVolumeClaimStatusUpdate's own rules.
pub fn validate_status(new: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if new
        .pointer("/spec/accessModes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        errs.push(FieldError::required("Spec.accessModes", ""));
    }
    errs.extend(resource_list(
        "status.capacity",
        new.pointer("/status/capacity"),
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim() -> Value {
        json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
            "status": {"phase": "Pending"}})
    }

    fn shown(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn specs_are_checked_with_upstreams_messages() {
        let table: &[(Value, &[&str])] = &[
            (claim()["spec"].clone(), &[]),
            (
                json!({"resources": {"requests": {"storage": "1Gi"}}}),
                &["spec.accessModes: Required value: at least 1 access mode is required"],
            ),
            (
                json!({"accessModes": ["ReadWriteOnce"]}),
                &["spec.resources[storage]: Required value"],
            ),
            (
                json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "0"}}}),
                &["spec.resources[storage]: Invalid value: \"0\": must be greater than zero"],
            ),
            (
                json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1"}},
                    "storageClassName": "Bad_Class", "volumeMode": "Raw"}),
                &[
                    "spec.storageClassName: Invalid value: \"Bad_Class\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                    "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
                ],
            ),
        ];
        for (spec, want) in table {
            assert_eq!(shown(validate_spec(spec, "spec")), *want, "{spec}");
        }
    }

    #[test]
    fn only_binding_class_and_bound_growth_may_change_the_spec() {
        let old = claim();
        let mut bind = old.clone();
        bind["spec"]["volumeName"] = "pv1".into();
        bind["spec"]["storageClassName"] = "standard".into();
        assert!(validate_update(&bind, &old).is_empty());
        let mut rebind = bind.clone();
        rebind["spec"]["volumeName"] = "pv2".into();
        let errs = shown(validate_update(&rebind, &bind));
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"));
        let mut grow = old.clone();
        grow["spec"]["resources"]["requests"]["storage"] = "2Gi".into();
        assert_eq!(validate_update(&grow, &old).len(), 1, "not bound yet");
        let mut bound = old.clone();
        bound["status"] = json!({"phase": "Bound", "capacity": {"storage": "1Gi"}});
        let mut grow = bound.clone();
        grow["spec"]["resources"]["requests"]["storage"] = "2Gi".into();
        assert!(validate_update(&grow, &bound).is_empty());
        let mut shrink = bound.clone();
        shrink["spec"]["resources"]["requests"]["storage"] = "512Mi".into();
        assert_eq!(
            shown(validate_update(&shrink, &bound)),
            ["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
        );
    }
}
