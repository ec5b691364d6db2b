//! What an update of a Pod may change, as upstream's ValidatePodUpdate: container images,
//! `activeDeadlineSeconds` (set, or lowered), tolerations (added, or their `tolerationSeconds`),
//! scheduling gates (removed), a negative termination grace period (to 1); anything else is
//! Forbidden, with the changed fields listed.

use serde_json::Value;

use super::super::field::FieldError;
use super::super::podspec::tolerations;

const MAX_INT32: i64 = 2_147_483_647;

/// Upstream's message for any other change (its list of updatable fields).
pub const MUTABLE_MESSAGE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

fn list(spec: &Value, key: &str) -> Vec<Value> {
    spec.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Each old toleration still there, but for its `tolerationSeconds`.
fn only_added_tolerations(new: &[Value], old: &[Value]) -> bool {
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    old.iter().all(|o| {
        let o = without_seconds(o);
        new.iter().any(|n| without_seconds(n) == o)
    })
}

/// The spec with what an update may change taken from the old spec.
fn munged(new: &Value, old: &Value) -> Value {
    let mut spec = new.clone();
    let Some(m) = spec.as_object_mut() else {
        return spec;
    };
    for key in ["containers", "initContainers"] {
        let old_list = list(old, key);
        if let Some(Value::Array(cs)) = m.get_mut(key) {
            for (c, o) in cs.iter_mut().zip(&old_list) {
                if let (Some(c), Some(image)) = (c.as_object_mut(), o.get("image")) {
                    c.insert("image".into(), image.clone());
                }
            }
        }
    }
    for key in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        match old.get(key) {
            Some(v) => m.insert(key.into(), v.clone()),
            None => m.remove(key),
        };
    }
    let grace = |s: &Value| {
        s.get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
    };
    if grace(old).is_some_and(|g| g < 0) && grace(new) == Some(1) {
        if let Some(g) = old.get("terminationGracePeriodSeconds") {
            m.insert("terminationGracePeriodSeconds".into(), g.clone());
        }
    }
    spec
}

/// The top-level spec fields that differ, old and new, as lines after upstream's message.
fn changes(old: &Value, new: &Value) -> String {
    let empty = serde_json::Map::new();
    let (o, n) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = o.keys().chain(n.keys()).collect();
    keys.dedup();
    let mut out = String::new();
    let mut shown = Vec::new();
    for k in keys {
        if shown.contains(&k) || o.get(k) == n.get(k) {
            continue;
        }
        shown.push(k);
        let text = |v: Option<&Value>| v.map_or("null".to_string(), Value::to_string);
        out.push_str(&format!(
            "\n- spec.{k}: {}\n+ spec.{k}: {}",
            text(o.get(k)),
            text(n.get(k))
        ));
    }
    out
}

/// The spec rules of a pod update (`new` and `old` are the pods).
pub fn validate(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let null = Value::Null;
    let (ns, os) = (
        new.get("spec").unwrap_or(&null),
        old.get("spec").unwrap_or(&null),
    );
    for key in ["containers", "initContainers"] {
        let (n, o) = (list(ns, key), list(os, key));
        if n.len() != o.len() {
            errs.push(FieldError::forbidden(
                format!("spec.{key}"),
                "pod updates may not add or remove containers",
            ));
            return errs;
        }
        for (i, c) in n.iter().enumerate() {
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            if image.is_empty() {
                errs.push(FieldError::required(format!("spec.{key}[{i}].image"), ""));
            }
            if image.trim() != image {
                errs.push(FieldError::invalid(
                    format!("spec.{key}[{i}].image"),
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    let deadline = |s: &Value| s.get("activeDeadlineSeconds").and_then(Value::as_i64);
    match (deadline(ns), deadline(os)) {
        (Some(n), _) if !(0..=MAX_INT32).contains(&n) => {
            errs.push(FieldError::invalid(
                "spec.activeDeadlineSeconds",
                n,
                format!("must be between 0 and {MAX_INT32}, inclusive"),
            ));
            return errs;
        }
        (Some(n), Some(o)) if o < n => {
            errs.push(FieldError::invalid(
                "spec.activeDeadlineSeconds",
                n,
                "must be less than or equal to previous value",
            ));
            return errs;
        }
        (None, Some(_)) => errs.push(FieldError::invalid(
            "spec.activeDeadlineSeconds",
            Value::Null,
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    if !only_added_tolerations(&list(ns, "tolerations"), &list(os, "tolerations")) {
        errs.push(FieldError::forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    } else {
        errs.extend(tolerations(ns.get("tolerations"), "spec.tolerations"));
    }
    let gate_names = |s: &Value| -> Vec<String> {
        list(s, "schedulingGates")
            .iter()
            .map(|g| {
                g.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    };
    let old_gates = gate_names(os);
    for (i, g) in gate_names(ns).iter().enumerate() {
        if !old_gates.contains(g) {
            errs.push(FieldError::forbidden(
                format!("spec.schedulingGates[{i}].name"),
                format!("only deletion is allowed, but found new scheduling gate '{g}'"),
            ));
        }
    }
    if ns == os {
        return errs;
    }
    let spec = munged(ns, os);
    if spec != *os {
        errs.push(FieldError::forbidden(
            "spec",
            format!("{MUTABLE_MESSAGE}{}", changes(os, &spec)),
        ));
    }
    errs
}
