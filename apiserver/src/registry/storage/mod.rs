//! PersistentVolumes, PersistentVolumeClaims and StorageClasses: upstream's defaults
//! (SetDefaults_PersistentVolume, _PersistentVolumeClaim, _StorageClass), their create and
//! status preparation, and ValidatePersistentVolume, ValidatePersistentVolumeClaim and
//! ValidateStorageClass with their update rules. `volume`, `claim` and `class` hold the
//! validation of each kind; the strategies live here.

mod claim;
mod class;
mod volume;

use serde_json::{json, Map, Value};

use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::Strategy;

/// The access modes a volume or claim may ask for, in upstream's (sorted) order.
pub(crate) const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];

/// Set `key` unless it has a value (absent, null and `""` have none).
fn default_to(m: &mut Map<String, Value>, key: &str, value: Value) {
    if m.get(key).is_none_or(|v| v.is_null() || v == "") {
        m.insert(key.into(), value);
    }
}

fn spec_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj.get_mut("spec").and_then(Value::as_object_mut)
}

/// A fresh status with `phase` and (as upstream's PersistentVolumeLastPhaseTransitionTime)
/// when it was entered: on create, the object's creationTimestamp (the server's clock).
fn set_status_phase(obj: &mut Value, phase: &str, stamp_transition: bool) {
    let created = obj.pointer("/metadata/creationTimestamp").cloned();
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    let mut status = json!({"phase": phase});
    if let Some(created) = created.filter(|_| stamp_transition) {
        status["lastPhaseTransitionTime"] = created;
    }
    m.insert("status".into(), status);
}

/// The access-mode rules both kinds share: each known, ReadWriteOncePod alone.
fn access_modes(modes: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (mut rwop, mut other) = (false, false);
    for m in modes.and_then(Value::as_array).into_iter().flatten() {
        let text = m.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&text) {
            errs.push(FieldError::not_supported(path, m.clone(), ACCESS_MODES));
        } else if text == "ReadWriteOncePod" {
            rwop = true;
        } else {
            other = true;
        }
    }
    if rwop && other {
        errs.push(FieldError::forbidden(
            path,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

/// A class name (storage or volume attributes) at `path`: a DNS subdomain.
fn class_name(name: &str, path: &str) -> Vec<FieldError> {
    super::names::subdomain_errors(name)
        .into_iter()
        .map(|m| FieldError::invalid(path, name, m))
        .collect()
}

fn volume_mode(spec: &Value, path: &str) -> Option<FieldError> {
    let mode = spec.get("volumeMode").filter(|v| !v.is_null())?;
    let ok = mode.as_str().is_some_and(|m| VOLUME_MODES.contains(&m));
    (!ok).then(|| FieldError::not_supported(path, mode.clone(), VOLUME_MODES))
}

/// `spec.volumeMode` may not change (upstream reports it at `volumeMode`).
fn volume_mode_unchanged(new: &Value, old: &Value) -> Option<FieldError> {
    super::names::immutable(
        "volumeMode",
        new.pointer("/spec/volumeMode"),
        old.pointer("/spec/volumeMode"),
    )
}

/// A small rendering of what changed in an immutable spec, after upstream's message (which
/// appends a Go `cmp.Diff`).
fn diff(old: Option<&Value>, new: Option<&Value>) -> String {
    let show = |v: Option<&Value>| v.map(Value::to_string).unwrap_or_else(|| "nil".into());
    format!("- {}\n+ {}", show(old), show(new))
}

pub struct PersistentVolumeStrategy;

impl Strategy for PersistentVolumeStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = spec_mut(obj) {
            default_to(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
            default_to(spec, "volumeMode", json!("Filesystem"));
            if let Some(h) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
                h.entry("type").or_insert(json!(""));
            }
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        set_status_phase(obj, "Pending", true);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        super::keep_status(new, old);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value, now: super::Now) {
        let phase = |o: &Value| o.pointer("/status/phase").cloned();
        if phase(new) != phase(old) {
            if let Some(s) = new.get_mut("status").and_then(Value::as_object_mut) {
                s.insert(
                    "lastPhaseTransitionTime".into(),
                    crate::object::timestamp(now).into(),
                );
            }
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(volume::validate_spec(
            obj.get("spec").unwrap_or(&Value::Null),
        ));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        errs.extend(volume::validate_update(new, old));
        errs
    }
}

pub struct PersistentVolumeClaimStrategy;

impl Strategy for PersistentVolumeClaimStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = spec_mut(obj) {
            default_to(spec, "volumeMode", json!("Filesystem"));
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        set_status_phase(obj, "Pending", false);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        super::keep_status(new, old);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(claim::validate_spec(
            obj.get("spec").unwrap_or(&Value::Null),
            "spec",
        ));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        errs.extend(claim::validate_update(new, old));
        errs
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        claim::validate_status(new)
    }
}

pub struct StorageClassStrategy;

impl Strategy for StorageClassStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            default_to(m, "reclaimPolicy", json!("Delete"));
            default_to(m, "volumeBindingMode", json!("Immediate"));
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(class::validate(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        errs.extend(class::validate_update(new, old));
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn defaults_match_upstream() {
        let mut pv = json!({"metadata": {"name": "v", "creationTimestamp": "2030-01-02T03:04:05Z"},
                            "spec": {"hostPath": {"path": "/d"}}});
        PersistentVolumeStrategy.default(&mut pv);
        PersistentVolumeStrategy.prepare_for_create(&mut pv);
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pv["spec"]["hostPath"]["type"], "");
        assert_eq!(pv["status"]["phase"], "Pending");
        assert_eq!(
            pv["status"]["lastPhaseTransitionTime"],
            "2030-01-02T03:04:05Z"
        );

        let mut pvc = json!({"metadata": {"name": "c"}, "spec": {}, "status": {"phase": "Bound"}});
        PersistentVolumeClaimStrategy.default(&mut pvc);
        PersistentVolumeClaimStrategy.prepare_for_create(&mut pvc);
        assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pvc["status"], json!({"phase": "Pending"}));

        let mut sc = json!({"metadata": {"name": "s"}, "provisioner": "x.io/p"});
        StorageClassStrategy.default(&mut sc);
        assert_eq!(sc["reclaimPolicy"], "Delete");
        assert_eq!(sc["volumeBindingMode"], "Immediate");
        assert!(StorageClassStrategy.validate_create(&sc).is_empty());
    }

    #[test]
    fn access_modes_are_known_and_rwop_alone() {
        let table: &[(Value, Vec<&str>)] = &[
            (json!(["ReadWriteOnce", "ReadOnlyMany"]), vec![]),
            (
                json!(["ReadWriteSometimes"]),
                vec!["m: Unsupported value: \"ReadWriteSometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\""],
            ),
            (
                json!(["ReadWriteOncePod", "ReadWriteOnce"]),
                vec!["m: Forbidden: may not use ReadWriteOncePod with other access modes"],
            ),
        ];
        for (modes, want) in table {
            assert_eq!(shown(&access_modes(Some(modes), "m")), *want, "{modes}");
        }
    }

    #[test]
    fn status_updates_stamp_phase_transitions() {
        let old = json!({"status": {"phase": "Pending", "lastPhaseTransitionTime": "x"}});
        let mut new = json!({"status": {"phase": "Bound", "lastPhaseTransitionTime": "x"}});
        let now = "2030-01-02T03:04:05Z".parse().expect("a time");
        PersistentVolumeStrategy.prepare_for_status_update(&mut new, &old, now);
        assert_eq!(
            new["status"]["lastPhaseTransitionTime"],
            "2030-01-02T03:04:05Z"
        );
        let mut same = old.clone();
        PersistentVolumeStrategy.prepare_for_status_update(&mut same, &old, now);
        assert_eq!(same["status"]["lastPhaseTransitionTime"], "x");
    }
}
