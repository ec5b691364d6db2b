//! The strategy of custom resources, as upstream's `customresource` registry: the version's
//! schema defaults and validates (`schema`), its `x-kubernetes-validations` rules run (`cel`),
//! names are DNS subdomains, and with a status subresource the main resource and `status` each
//! ignore the other's changes (the split itself is shared with the built-in kinds).

use std::sync::Arc;

use serde_json::Value;
use tinykube_proto::registry::Custom;

use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::{cel, schema, Strategy};

/// The rules of one served version of a custom resource.
pub struct CustomStrategy(pub Arc<Custom>);

impl CustomStrategy {
    fn has_status(&self) -> bool {
        self.0.version.pointer("/subresources/status").is_some()
    }

    /// The schema and rule errors of an object, with `old` for transition rules.
    fn validate_value(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let Some(schema) = self.0.schema() else {
            return Vec::new();
        };
        // Updates ratchet: what was already invalid and did not change is let through.
        let mut errs = match old {
            Some(old) => schema::validate_update(schema, obj, old),
            None => schema::validate(schema, obj),
        };
        errs.extend(cel::validate(schema, obj, old));
        errs
    }
}

impl Strategy for CustomStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(schema) = self.0.schema() {
            schema::apply_defaults(schema, obj);
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if self.has_status() {
            if let Some(m) = obj.as_object_mut() {
                m.remove("status");
            }
        }
    }

    /// A status update sets the status alone: the metadata stays the stored object's, but for
    /// the request's resourceVersion precondition and managedFields.
    fn prepare_for_status_update(&self, new: &mut Value, old: &Value, _now: super::Now) {
        let kept: Vec<(&str, Value)> = ["resourceVersion", "managedFields"]
            .into_iter()
            .filter_map(|k| Some((k, new.pointer(&format!("/metadata/{k}"))?.clone())))
            .collect();
        let mut meta = old
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()));
        if let Some(m) = meta.as_object_mut() {
            for k in ["resourceVersion", "managedFields"] {
                m.remove(k);
            }
            for (k, v) in kept {
                m.insert(k.into(), v);
            }
        }
        if let Some(obj) = new.as_object_mut() {
            obj.insert("metadata".into(), meta);
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(self.validate_value(obj, None));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(new, NameRule::Subdomain);
        errs.extend(self.validate_value(new, Some(old)));
        errs
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.validate_update(new, old)
    }
}
