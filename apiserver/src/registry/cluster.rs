//! Cluster kinds: Node (`nodes`: taints, pod CIDRs, resources), Namespace (finalizers, phase)
//! and ConfigMap (keys, size, immutability).

use serde_json::{json, Value};

mod nodes;
#[cfg(test)]
mod tests;

use super::field::FieldError;
use super::names::{config_key_errors, validate_object_meta, NameRule};
use super::rules::qualified_name_errors;
use super::Strategy;

pub struct NodeStrategy;

impl Strategy for NodeStrategy {
    fn default(&self, obj: &mut Value) {
        nodes::default(obj);
    }

    fn prepare_for_status_update(&self, new: &mut Value, _old: &Value, _now: super::Now) {
        nodes::default_status(new);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        nodes::validate(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = nodes::validate(new);
        errs.extend(nodes::validate_update(new, old));
        errs
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        nodes::validate_update(new, old)
    }
}

pub struct NamespaceStrategy;

/// `spec.finalizers` of a namespace: qualified names, standard ones without a domain.
fn namespace_finalizers(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let list = obj.pointer("/spec/finalizers").and_then(Value::as_array);
    for f in list.into_iter().flatten().filter_map(Value::as_str) {
        for m in qualified_name_errors(f) {
            errs.push(FieldError::invalid("spec.finalizers", f, m));
        }
        if !f.contains('/') && !["kubernetes", "orphan", "foregroundDeletion"].contains(&f) {
            errs.push(FieldError::invalid(
                "spec.finalizers",
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errs
}

impl Strategy for NamespaceStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            let spec = m.entry("spec").or_insert_with(|| json!({}));
            if let Some(s) = spec.as_object_mut() {
                s.entry("finalizers").or_insert(json!(["kubernetes"]));
            }
        }
    }

    /// A new namespace is Active and always held by the `kubernetes` finalizer.
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({"phase": "Active"}));
        }
        if let Some(list) = obj
            .pointer_mut("/spec/finalizers")
            .and_then(Value::as_array_mut)
        {
            if !list.iter().any(|f| f == "kubernetes") {
                list.push("kubernetes".into());
            }
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // spec.finalizers change only through the finalize subresource.
        if let (Some(spec), Some(old_f)) = (
            new.get_mut("spec").and_then(Value::as_object_mut),
            old.pointer("/spec/finalizers"),
        ) {
            spec.insert("finalizers".into(), old_f.clone());
        }
    }

    /// An unset phase reads as Active (upstream's SetDefaults_NamespaceStatus).
    fn prepare_for_status_update(&self, new: &mut Value, _old: &Value, _now: super::Now) {
        if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
            if status
                .get("phase")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                status.insert("phase".into(), "Active".into());
            }
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Label);
        errs.extend(namespace_finalizers(obj));
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }

    /// Active while not being deleted, Terminating once it is.
    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        let phase = new
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        let deleting = new
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null());
        match (deleting, phase) {
            (false, "Active") | (true, "Terminating") => Vec::new(),
            (false, _) => vec![FieldError::invalid(
                "status.Phase",
                phase,
                "may only be 'Active' if `deletionTimestamp` is empty",
            )],
            (true, _) => vec![FieldError::invalid(
                "status.Phase",
                phase,
                "may only be 'Terminating' if `deletionTimestamp` is not empty",
            )],
        }
    }
}

pub struct ConfigMapStrategy;

/// Upstream's limit on a ConfigMap's (and a Secret's) data.
const CONFIG_MAP_MAX: usize = 1024 * 1024;

/// The bytes a `binaryData` value (base64) holds.
fn decoded_len(b64: &str) -> usize {
    let padding = b64.bytes().rev().take_while(|&b| b == b'=').count();
    (b64.len() / 4 * 3).saturating_sub(padding)
}

impl ConfigMapStrategy {
    /// Upstream's ValidateConfigMap: keys of both maps, no key in both, at most 1 MiB.
    fn validate(obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let binary = obj.get("binaryData").and_then(Value::as_object);
        let mut size = 0;
        for field in ["data", "binaryData"] {
            let Some(Value::Object(m)) = obj.get(field) else {
                continue;
            };
            for (k, v) in m {
                let text = v.as_str().unwrap_or("");
                size += if field == "data" {
                    text.len()
                } else {
                    decoded_len(text)
                };
                let path = format!("{field}[{k}]");
                for problem in config_key_errors(k) {
                    errs.push(FieldError::invalid(&path, k.as_str(), problem));
                }
                if field == "data" && binary.is_some_and(|b| b.contains_key(k)) {
                    errs.push(FieldError::invalid(
                        &path,
                        k.as_str(),
                        "duplicate of key present in binaryData",
                    ));
                }
            }
        }
        if size > CONFIG_MAP_MAX {
            errs.push(FieldError::too_long("[]", "", CONFIG_MAP_MAX));
        }
        errs
    }
}

impl Strategy for ConfigMapStrategy {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        Self::validate(obj)
    }

    /// Once `immutable: true`, the flag and the data stay.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if old.get("immutable").and_then(Value::as_bool) == Some(true) {
            const MSG: &str = "field is immutable when `immutable` is set";
            if new.get("immutable").and_then(Value::as_bool) != Some(true) {
                errs.push(FieldError::forbidden("immutable", MSG));
            }
            for field in ["data", "binaryData"] {
                let present = |o: &Value| o.get(field).filter(|v| !v.is_null()).cloned();
                if present(new) != present(old) {
                    errs.push(FieldError::forbidden(field, MSG));
                }
            }
        }
        errs.extend(Self::validate(new));
        errs
    }
}
