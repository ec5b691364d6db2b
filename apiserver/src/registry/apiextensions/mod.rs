//! apiextensions.k8s.io/v1 CustomResourceDefinitions: the registry strategy (upstream's
//! `pkg/registry/customresourcedefinition/strategy.go` with v1 defaulting and
//! `pkg/apis/apiextensions/validation`) and the status controllers' decisions as pure
//! functions.
//!
//! # Strategy
//! [`CrdStrategy`] defaults (`names.singular` = lower-case kind, `names.listKind` = kind +
//! `List`, `conversion.strategy: None`, webhook service port 443, `status.storedVersions` from
//! the storage version), resets the status on create (empty accepted names, the storage version
//! stored), records a new storage version in `status.storedVersions` on update, and validates
//! with upstream's field paths and messages. Upstream validates the internal type, to which v1
//! moves per-version schemas, subresources, columns and selectable fields when all versions
//! agree, so a one-version CRD's schema errors read `spec.validation.openAPIV3Schema…`
//! (`view`). The parts: `spec` (metadata name, group, scope, versions, names, stored versions,
//! API approval, update rules), `parts` (subresources, columns, selectable fields, conversion),
//! `schema` (OpenAPI keywords), `listtype` (list and map extensions) and `structural` (structural schemas).
//! `metadata.generation` is bumped by the server's update path (`handlers::persist`) when the
//! spec changes, as upstream's PrepareForUpdate does.
//!
//! Left to others: CEL rules are compiled by registry/cel at the one hook
//! `schema::x_validations` (TODO(cel)); `default` values are checked against their schema by
//! the value validator of registry/schema (TODO(defaults) in `schema::validate_validation`).
//!
//! # Status controllers
//! The CRD status controller calls, for each CRD and the list of all CRDs:
//! - [`naming_status`]`(crd, all, now) -> Option<Value>`: the new `status` when the naming
//!   controller would write one (accepted names, `NamesAccepted` True/`NoConflicts`/"no
//!   conflicts found" or False/`PluralConflict`… with `"crontabs" is already in use`, and
//!   `Established` False/`Installing` until established); [`accepted_names`] is the
//!   computation alone, as a [`NamesOutcome`].
//! - [`establish_status`]`(crd, now) -> Option<Value>`: Established True/`InitialNamesAccepted`
//!   once the names are accepted.
//! - [`Termination`]`::…​.condition()`: the `Terminating` conditions of deletion
//!   (`InstanceDeletionPending` on the first DELETE with [`CLEANUP_FINALIZER`],
//!   `InstanceDeletionInProgress`, …, `InstanceDeletionCompleted`), to store with
//!   [`set_condition`]`(status, condition, now)`, which keeps `lastTransitionTime` while the
//!   condition's status stays the same.
//! - [`api_approval_condition`]: `KubernetesAPIApprovalPolicyConformant` for `*.k8s.io` groups.

mod listtype;
mod naming;
mod parts;
mod schema;
mod spec;
mod structural;
mod view;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_schema;
#[cfg(test)]
mod tests_status;

use serde_json::{json, Value};

pub use naming::{
    accepted_names, api_approval_condition, condition, establish_status, established_condition,
    find_condition, is_condition_true, naming_status, set_condition, NamesOutcome, Termination,
    CLEANUP_FINALIZER,
};

use super::field::FieldError;
use super::Strategy;
use view::{get, text};

/// The strategy of `customresourcedefinitions`.
pub struct CrdStrategy;

/// The name of the version marked `storage`, if one is.
fn storage_version(obj: &Value) -> Option<String> {
    view::items(obj.get("spec").unwrap_or(&Value::Null), "versions")
        .iter()
        .find(|v| view::flag(v, "storage"))
        .map(|v| text(v, "name").to_string())
}

/// Append the storage version to `status.storedVersions` unless it is there.
fn record_storage_version(obj: &mut Value) {
    let Some(version) = storage_version(obj) else {
        return;
    };
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    let status = m.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let stored = status
        .as_object_mut()
        .expect("an object")
        .entry("storedVersions")
        .or_insert_with(|| json!([]));
    if !stored.is_array() {
        *stored = json!([]);
    }
    let list = stored.as_array_mut().expect("an array");
    if !list.iter().any(|v| v == version.as_str()) {
        list.push(json!(version));
    }
}

impl Strategy for CrdStrategy {
    /// v1's SetDefaults_CustomResourceDefinition and its nested defaulters.
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
                let kind = names
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let empty = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").is_empty();
                if empty(names.get("singular")) {
                    names.insert("singular".into(), json!(kind.to_lowercase()));
                }
                if empty(names.get("listKind")) && !kind.is_empty() {
                    names.insert("listKind".into(), json!(format!("{kind}List")));
                }
            }
            let conversion = spec.entry("conversion");
            let conversion = conversion.or_insert_with(|| json!({"strategy": "None"}));
            if conversion.is_null() {
                *conversion = json!({"strategy": "None"});
            }
            if let Some(service) = conversion
                .pointer_mut("/webhook/clientConfig/service")
                .and_then(Value::as_object_mut)
            {
                if service.get("port").is_none_or(Value::is_null) {
                    service.insert("port".into(), json!(443));
                }
            }
        }
        let stored = obj
            .pointer("/status/storedVersions")
            .and_then(Value::as_array);
        if stored.is_none_or(Vec::is_empty) {
            record_storage_version(obj);
        }
    }

    /// Upstream's PrepareForCreate: an empty status but for the storage version, generation 1.
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "status".into(),
                json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": []}),
            );
        }
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("generation".into(), json!(1));
        }
        record_storage_version(obj);
    }

    /// Upstream's PrepareForUpdate: the stored status (kept by the generic split) plus a new
    /// storage version in `status.storedVersions`.
    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        record_storage_version(new);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        spec::validate_create(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        spec::validate_update(new, old)
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        spec::validate_status_update(new)
    }
}

/// Whether the CRD is being deleted and still holds the cleanup finalizer.
pub fn awaiting_cleanup(crd: &Value) -> bool {
    get(
        crd.get("metadata").unwrap_or(&Value::Null),
        "deletionTimestamp",
    )
    .is_some()
        && view::strings(crd.get("metadata").unwrap_or(&Value::Null), "finalizers")
            .contains(&CLEANUP_FINALIZER)
}
