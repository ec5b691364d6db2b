//! Upstream's storage admission plugins: DefaultStorageClass (a claim that names no class gets
//! the default one: the class annotated `storageclass.kubernetes.io/is-default-class: "true"`,
//! the newest when several are) and StorageObjectInUseProtection (new claims and volumes get
//! the `kubernetes.io/pvc-protection` and `kubernetes.io/pv-protection` finalizers).

use serde_json::Value;
use tinykube_proto::registry;

use crate::error::ApiResult;
use crate::object;
use crate::state::AppState;

/// The annotation that marks the default StorageClass.
pub const IS_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// The beta annotation that named a claim's class before `spec.storageClassName`.
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

/// Whether a StorageClass is marked default.
pub fn is_default(class: &Value) -> bool {
    class
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(IS_DEFAULT_CLASS))
        .and_then(Value::as_str)
        == Some("true")
}

/// The default class among `classes`: the newest marked one (then by name, as upstream).
pub fn default_class(classes: &[Value]) -> Option<&Value> {
    classes.iter().filter(|c| is_default(c)).max_by(|a, b| {
        let at = |c: &Value| {
            object::meta_str(c, "creationTimestamp")
                .unwrap_or("")
                .to_string()
        };
        at(a)
            .cmp(&at(b))
            .then_with(|| object::name(b).cmp(object::name(a)))
    })
}

/// DefaultStorageClass: a claim with no `spec.storageClassName` (absent, not `""`) and no beta
/// annotation gets the default class, if there is one.
pub fn default_claim_class(state: &AppState, claim: &mut Value) -> ApiResult<()> {
    let named = claim
        .pointer("/spec/storageClassName")
        .is_some_and(|v| !v.is_null());
    let annotated = claim
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(BETA_CLASS))
        .is_some();
    if named || annotated {
        return Ok(());
    }
    let info = registry::builtin("storage.k8s.io", "v1", "storageclasses").expect("served");
    let classes = state.objects.list(info, None, None, None)?.items;
    let Some(name) = default_class(&classes).map(|c| object::name(c).to_string()) else {
        return Ok(());
    };
    if let Some(spec) = claim.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("storageClassName".into(), name.into());
    }
    Ok(())
}

/// StorageObjectInUseProtection: the protection finalizer of a new claim or volume.
pub fn protect(obj: &mut Value, finalizer: &str) {
    let mut finalizers = object::finalizers(obj);
    if !finalizers.iter().any(|f| f == finalizer) {
        finalizers.push(finalizer.to_string());
        object::set_finalizers(obj, &finalizers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(name: &str, default: bool, created: &str) -> Value {
        let annotations = if default {
            json!({IS_DEFAULT_CLASS: "true"})
        } else {
            json!({})
        };
        json!({"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations}})
    }

    #[test]
    fn the_newest_default_class_wins() {
        let table: &[(Vec<Value>, Option<&str>)] = &[
            (vec![], None),
            (vec![class("a", false, "2024-01-01T00:00:00Z")], None),
            (
                vec![
                    class("old", true, "2024-01-01T00:00:00Z"),
                    class("new", true, "2024-02-01T00:00:00Z"),
                    class("plain", false, "2024-03-01T00:00:00Z"),
                ],
                Some("new"),
            ),
            (
                vec![
                    class("b", true, "2024-01-01T00:00:00Z"),
                    class("a", true, "2024-01-01T00:00:00Z"),
                ],
                Some("a"),
            ),
        ];
        for (classes, want) in table {
            assert_eq!(default_class(classes).map(object::name), *want);
        }
    }

    #[test]
    fn protection_is_added_once() {
        let mut pvc = json!({"metadata": {"name": "c", "finalizers": ["x"]}});
        protect(&mut pvc, PVC_PROTECTION);
        protect(&mut pvc, PVC_PROTECTION);
        assert_eq!(pvc["metadata"]["finalizers"], json!(["x", PVC_PROTECTION]));
    }
}
