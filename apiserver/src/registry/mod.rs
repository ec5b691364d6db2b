//! Per-kind rules of the API server, as upstream's registry strategies: defaulting, validation,
//! what create and update may change, and the spec/status split.
//!
//! Objects are handled as `serde_json::Value` with the fields named as on the wire.

pub mod field;
pub mod names;

use field::FieldError;
use serde_json::Value;
use tinykube_proto::registry::ResourceInfo;

/// What a kind does at each stage of a write. Every method has a neutral default so a kind only
/// overrides what it needs. `obj` always has `apiVersion`, `kind` and `metadata` set.
pub trait Strategy: Send + Sync {
    /// Fill defaults (pod `restartPolicy: Always`, deployment `replicas: 1`, …), on create and
    /// on update of the main resource, after decoding and before validation.
    fn default(&self, _obj: &mut Value) {}

    /// Adjust a new object before it is stored: e.g. clear `status` of kinds whose status only
    /// controllers write, set a pod's initial `status.phase: Pending` and `qosClass`.
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// Adjust an update of the main resource: e.g. keep the old `status` where the kind has a
    /// status subresource.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// Adjust an update through the `status` subresource: keep everything but `status` (and
    /// what upstream lets status writers change) from the old object.
    fn prepare_for_status_update(&self, _new: &mut Value, _old: &Value) {}

    /// Validate a new object (metadata included: name, labels, annotations).
    fn validate_create(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Validate an update of the main resource against the stored object (immutable fields).
    fn validate_update(&self, _new: &Value, _old: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Validate an update through the `status` subresource.
    fn validate_status_update(&self, _new: &Value, _old: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Warnings returned to the client in `Warning:` headers on create and update
    /// (e.g. the deprecated `node-role.kubernetes.io/master` node-affinity key).
    fn warnings(&self, _obj: &Value) -> Vec<String> {
        Vec::new()
    }
}

/// A kind with no rules beyond the generic metadata checks.
pub struct Plain;
impl Strategy for Plain {}

/// The strategy of a served resource.
pub fn strategy(_info: &ResourceInfo) -> &'static dyn Strategy {
    &Plain
}
