//! ValidatePersistentVolumeSpec and its update rules: access modes, a capacity of `storage`
//! only, the reclaim policy, node affinity, exactly one volume source (with the source's own
//! rules), the class name and volume mode; the source, volume mode and node affinity may not
//! change once set.

use serde_json::Value;

use super::super::field::FieldError;
use super::super::podspec::{no_backsteps, node_selector_term, source_rules};
use super::super::rules::{go_quantity, quantity};
use super::super::semantic;
use super::{access_modes, class_name, diff, volume_mode, volume_mode_unchanged};

const RECLAIM_POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];

/// A persistent volume's sources in upstream's order, each with the name its "more than 1"
/// error uses.
pub(crate) const SOURCES: &[(&str, &str)] = &[
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
];

/// How Go prints a ResourceList with `%#v`, as upstream's Unsupported value shows it.
fn go_resource_list(list: Option<&Value>) -> String {
    let entries: Vec<String> = list
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let q = quantity(v).map(|q| go_quantity(&q)).unwrap_or_default();
            format!("{k:?}:{q}")
        })
        .collect();
    format!("core.ResourceList{{{}}}", entries.join(", "))
}

fn capacity(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let cap = spec.get("capacity").filter(|v| !v.is_null());
    let entries = cap.and_then(Value::as_object);
    if entries.is_none_or(|m| m.is_empty()) {
        errs.push(FieldError::required("spec.capacity", ""));
    }
    if entries.is_none_or(|m| !m.contains_key("storage") || m.len() > 1) {
        errs.push(FieldError {
            kind: super::super::field::ErrorType::NotSupported,
            field: "spec.capacity".into(),
            value: Some(super::super::field::BadValue::Go(go_resource_list(cap))),
            detail: "supported values: \"storage\"".into(),
        });
    }
    for (name, v) in entries.into_iter().flatten() {
        let at = format!("spec.capacity[{name}]");
        match quantity(v) {
            None => errs.push(super::super::rules::invalid_quantity(&at, v)),
            Some(q) if q.milli_value() <= 0 => errs.push(FieldError::invalid(
                at,
                q.to_string(),
                "must be greater than zero",
            )),
            Some(_) => {}
        }
    }
    errs
}

/// `spec.nodeAffinity`: a required node selector with at least one term. Whether one was given.
fn node_affinity(spec: &Value) -> (bool, Vec<FieldError>) {
    let Some(na) = spec.get("nodeAffinity").filter(|v| !v.is_null()) else {
        return (false, Vec::new());
    };
    let mut errs = Vec::new();
    let path = "spec.nodeAffinity.required";
    match na.get("required").filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(
            path,
            "must specify required node constraints",
        )),
        Some(sel) => {
            let terms = sel.get("nodeSelectorTerms").and_then(Value::as_array);
            match terms.filter(|t| !t.is_empty()) {
                None => errs.push(FieldError::required(
                    format!("{path}.nodeSelectorTerms"),
                    "must have at least one node selector term",
                )),
                Some(terms) => {
                    for (i, t) in terms.iter().enumerate() {
                        errs.extend(node_selector_term(
                            t,
                            false,
                            &format!("{path}.nodeSelectorTerms[{i}]"),
                        ));
                    }
                }
            }
        }
    }
    (true, errs)
}

/// The rules of a persistent volume's source `key` at `path`.
fn persistent_source(key: &str, s: &Value, path: &str) -> Vec<FieldError> {
    let str_at = |f: &str| s.get(f).and_then(Value::as_str).unwrap_or("");
    match key {
        "hostPath" | "nfs" => source_rules(key, s, path),
        "local" => {
            let p = str_at("path");
            if p.is_empty() {
                return vec![FieldError::required(format!("{path}.path"), "")];
            }
            no_backsteps(p, &format!("{path}.path"))
                .into_iter()
                .collect()
        }
        "csi" => {
            let mut errs = source_rules(key, s, path);
            if str_at("volumeHandle").is_empty() {
                errs.push(FieldError::required(format!("{path}.volumeHandle"), ""));
            }
            errs
        }
        _ => Vec::new(),
    }
}

/// ValidatePersistentVolumeSpec of a PersistentVolume (not an inline one).
pub fn validate_spec(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let modes = spec.get("accessModes");
    if modes.and_then(Value::as_array).is_none_or(Vec::is_empty) {
        errs.push(FieldError::required("spec.accessModes", ""));
    }
    errs.extend(access_modes(modes, "spec.accessModes"));
    errs.extend(capacity(spec));
    if let Some(p) = spec
        .get("persistentVolumeReclaimPolicy")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        if !RECLAIM_POLICIES.contains(&p) {
            errs.push(FieldError::not_supported(
                "spec.persistentVolumeReclaimPolicy",
                p,
                RECLAIM_POLICIES,
            ));
        }
    }
    let (has_affinity, affinity_errs) = node_affinity(spec);
    errs.extend(affinity_errs);
    let mut found = None;
    for &(key, shown) in SOURCES {
        let Some(s) = spec.get(key).filter(|s| !s.is_null()) else {
            continue;
        };
        if found.is_some() {
            errs.push(FieldError::forbidden(
                format!("spec.{shown}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        found = Some(key);
        errs.extend(persistent_source(key, s, &format!("spec.{key}")));
        if key == "local" && !has_affinity {
            errs.push(FieldError::required(
                "spec.nodeAffinity",
                "Local volume requires node affinity",
            ));
        }
    }
    if found.is_none() {
        errs.push(FieldError::required("spec", "must specify a volume type"));
    }
    let host_root = spec
        .pointer("/hostPath/path")
        .and_then(Value::as_str)
        .is_some_and(|p| p.trim_end_matches('/').is_empty() && p.starts_with('/'));
    if host_root && spec.get("persistentVolumeReclaimPolicy") == Some(&"Recycle".into()) {
        errs.push(FieldError::forbidden(
            "spec.persistentVolumeReclaimPolicy",
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
    }
    if let Some(c) = spec
        .get("storageClassName")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
    {
        errs.extend(class_name(c, "spec.storageClassName"));
    }
    errs.extend(volume_mode(spec, "spec.volumeMode"));
    errs
}

/// The source of a volume: every source field there is.
fn source_of(spec: Option<&Value>) -> Value {
    let mut out = serde_json::Map::new();
    for &(key, _) in SOURCES {
        if let Some(v) = spec.and_then(|s| s.get(key)).filter(|v| !v.is_null()) {
            out.insert(key.into(), v.clone());
        }
    }
    Value::Object(out)
}

/// What may not change in an update of a PersistentVolume.
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (new_source, old_source) = (source_of(new.get("spec")), source_of(old.get("spec")));
    if !semantic::equal(Some(&new_source), Some(&old_source)) {
        errs.push(FieldError::forbidden(
            "spec.persistentvolumesource",
            format!(
                "spec.persistentvolumesource is immutable after creation\n{}",
                diff(Some(&old_source), Some(&new_source))
            ),
        ));
    }
    errs.extend(volume_mode_unchanged(new, old));
    let old_affinity = old.pointer("/spec/nodeAffinity").filter(|v| !v.is_null());
    if old_affinity.is_some() {
        let new_affinity = new.pointer("/spec/nodeAffinity").filter(|v| !v.is_null());
        if !semantic::equal(new_affinity, old_affinity) {
            errs.push(FieldError::invalid(
                "nodeAffinity",
                new_affinity.cloned().unwrap_or(Value::Null),
                "field is immutable",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(spec: Value) -> Vec<String> {
        validate_spec(&spec)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn specs_are_checked_with_upstreams_messages() {
        let ok = json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/data"}});
        let table: &[(Value, &[&str])] = &[
            (ok.clone(), &[]),
            (
                json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}),
                &["spec: Required value: must specify a volume type"],
            ),
            (
                json!({"accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"}}),
                &[
                    "spec.capacity: Required value",
                    "spec.capacity: Unsupported value: core.ResourceList{}: supported values: \"storage\"",
                ],
            ),
            (
                json!({"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/d"}}),
                &["spec.accessModes: Required value"],
            ),
            (
                json!({"capacity": {"storage": "0"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"}}),
                &["spec.capacity[storage]: Invalid value: \"0\": must be greater than zero"],
            ),
            (
                json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": "/d"}, "nfs": {"server": "s", "path": "/x"}}),
                &["spec.nfs: Forbidden: may not specify more than 1 volume type"],
            ),
            (
                json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "local": {"path": "/d"}}),
                &["spec.nodeAffinity: Required value: Local volume requires node affinity"],
            ),
            (
                json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": "/d"}, "persistentVolumeReclaimPolicy": "Keep"}),
                &["spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\""],
            ),
            (
                json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": "/d"}, "nodeAffinity": {"required": {"nodeSelectorTerms": []}}}),
                &["spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term"],
            ),
        ];
        for (spec, want) in table {
            assert_eq!(shown(spec.clone()), *want, "{spec}");
        }
    }

    #[test]
    fn sources_are_immutable_but_the_rest_may_change() {
        let old = json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/a", "type": ""},
            "volumeMode": "Filesystem"}});
        let mut grown = old.clone();
        grown["spec"]["capacity"]["storage"] = "2Gi".into();
        assert!(validate_update(&grown, &old).is_empty());
        let mut moved = old.clone();
        moved["spec"]["hostPath"]["path"] = "/b".into();
        let errs = validate_update(&moved, &old);
        assert_eq!(errs.len(), 1);
        assert!(errs[0]
            .to_string()
            .starts_with("spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n"));
        let mut block = old.clone();
        block["spec"]["volumeMode"] = "Block".into();
        assert_eq!(
            validate_update(&block, &old)[0].to_string(),
            "volumeMode: Invalid value: \"Block\": field is immutable"
        );
    }
}
