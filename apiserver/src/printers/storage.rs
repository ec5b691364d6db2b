//! Rows of the storage kinds, as upstream's printers: PersistentVolume, PersistentVolumeClaim
//! (access modes abbreviated RWO, ROX, RWX, RWOP; `Terminating` while deleted) and
//! StorageClass (`(default)` after the default class's name).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tinykube_proto::quantity::Quantity;

use super::{age, name, s};

const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// Upstream's GetAccessModesAsString: known modes abbreviated in a fixed order, once each.
pub fn access_modes(modes: Option<&Value>) -> String {
    let given: Vec<&str> = modes
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| given.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// A quantity in its canonical form (`""` when absent).
fn quantity(obj: &Value, pointer: &str) -> String {
    match obj.pointer(pointer) {
        Some(Value::String(q)) => Quantity::parse(q).map_or_else(|_| q.clone(), |q| q.to_string()),
        Some(other) if !other.is_null() => other.to_string(),
        _ => "0".into(),
    }
}

/// The class of a volume or claim: the beta annotation, else `spec.storageClassName`.
fn class(obj: &Value) -> String {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(BETA_CLASS))
        .and_then(Value::as_str)
        .unwrap_or_else(|| s(obj, "/spec/storageClassName"))
        .to_string()
}

fn phase(obj: &Value) -> String {
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating".into()
    } else {
        s(obj, "/status/phase").to_string()
    }
}

fn or_unset(obj: &Value, pointer: &str) -> String {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("<unset>")
        .to_string()
}

pub fn persistent_volume(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let claim = match obj.pointer("/spec/claimRef").filter(|c| !c.is_null()) {
        Some(c) => format!("{}/{}", s(c, "/namespace"), s(c, "/name")),
        None => String::new(),
    };
    vec![
        name(obj).into(),
        quantity(obj, "/spec/capacity/storage").into(),
        access_modes(obj.pointer("/spec/accessModes")).into(),
        s(obj, "/spec/persistentVolumeReclaimPolicy").into(),
        phase(obj).into(),
        claim.into(),
        class(obj).into(),
        or_unset(obj, "/spec/volumeAttributesClassName").into(),
        s(obj, "/status/reason").into(),
        age(obj, now).into(),
        or_unset(obj, "/spec/volumeMode").into(),
    ]
}

pub fn persistent_volume_claim(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let volume = s(obj, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(obj, "/status/capacity/storage"),
            access_modes(obj.pointer("/status/accessModes")),
        )
    };
    vec![
        name(obj).into(),
        phase(obj).into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        class(obj).into(),
        or_unset(obj, "/spec/volumeAttributesClassName").into(),
        age(obj, now).into(),
        or_unset(obj, "/spec/volumeMode").into(),
    ]
}

pub fn storage_class(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let annotations = obj.pointer("/metadata/annotations");
    let is_default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|k| annotations.and_then(|a| a.get(*k)).and_then(Value::as_str) == Some("true"));
    let mut shown = name(obj).to_string();
    if is_default {
        shown.push_str(" (default)");
    }
    let text = |key: &str, default: &str| {
        obj.get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_string()
    };
    vec![
        shown.into(),
        s(obj, "/provisioner").into(),
        text("reclaimPolicy", "Delete").into(),
        text("volumeBindingMode", "Immediate").into(),
        json!(obj
            .get("allowVolumeExpansion")
            .and_then(Value::as_bool)
            .unwrap_or(false)),
        age(obj, now).into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_as_upstreams() {
        let now = Utc::now();
        let pv = json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1024Mi"},
            "accessModes": ["ReadWriteMany", "ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "default", "name": "c"}, "storageClassName": "manual",
            "volumeMode": "Filesystem"}, "status": {"phase": "Bound"}});
        let row = persistent_volume(&pv, now);
        assert_eq!(
            &row[..9],
            &[
                json!("pv1"),
                json!("1Gi"),
                json!("RWO,RWX"),
                json!("Retain"),
                json!("Bound"),
                json!("default/c"),
                json!("manual"),
                json!("<unset>"),
                json!("")
            ]
        );
        assert_eq!(row[10], "Filesystem");
        let pending = json!({"metadata": {"name": "c", "deletionTimestamp": "x"},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Pending"}});
        let row = persistent_volume_claim(&pending, now);
        assert_eq!(
            &row[..6],
            &[
                json!("c"),
                json!("Terminating"),
                json!(""),
                json!(""),
                json!(""),
                json!("")
            ]
        );
        let sc = json!({"metadata": {"name": "standard", "annotations":
            {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "rancher.io/local-path",
            "volumeBindingMode": "WaitForFirstConsumer"});
        let row = storage_class(&sc, now);
        assert_eq!(
            &row[..5],
            &[
                json!("standard (default)"),
                json!("rancher.io/local-path"),
                json!("Delete"),
                json!("WaitForFirstConsumer"),
                json!(false)
            ]
        );
    }
}
