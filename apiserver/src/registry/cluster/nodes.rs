//! Nodes as upstream validates them (ValidateNode, ValidateNodeUpdate): taints (reported under
//! `metadata.taints`, as upstream does), pod CIDRs (valid, one per family, set once), capacity
//! and allocatable quantities, unique addresses, a provider ID set once; and the v1 round trip
//! of `podCIDR`/`podCIDRs` and allocatable defaulting to capacity.

use serde_json::{json, Value};

use super::super::field::FieldError;
use super::super::meta::strings;
use super::super::names::{validate_object_meta, NameRule};
use super::super::podspec::taint_effect;
use super::super::rules::{
    cidr, label_value_errors, one_per_family, qualified_name_errors, resource_list,
};

/// `podCIDR` is authoritative over `podCIDRs[0]`, and is always `podCIDRs[0]`; allocatable
/// defaults to capacity.
pub fn default(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let single = spec
            .get("podCIDR")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let first = strings(spec.get("podCIDRs")).first().map(|s| s.to_string());
        if !single.is_empty() && first.as_deref() != Some(single.as_str()) {
            spec.insert("podCIDRs".into(), json!([single]));
        } else if let Some(first) = first.filter(|_| single.is_empty()) {
            spec.insert("podCIDR".into(), first.into());
        }
    }
    default_status(obj);
}

/// Allocatable defaults to capacity (upstream's SetDefaults_NodeStatus).
pub fn default_status(obj: &mut Value) {
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        if status.get("allocatable").is_none_or(Value::is_null) {
            if let Some(capacity) = status.get("capacity").filter(|c| !c.is_null()).cloned() {
                status.insert("allocatable".into(), capacity);
            }
        }
    }
}

fn taints(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let list = obj.pointer("/spec/taints").and_then(Value::as_array);
    for (i, t) in list.into_iter().flatten().enumerate() {
        // Upstream reports node taints under `metadata`.
        let idx = format!("metadata.taints[{i}]");
        let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
        let (key, value, effect) = (text("key"), text("value"), text("effect"));
        for m in qualified_name_errors(key) {
            errs.push(FieldError::invalid(format!("{idx}.key"), key, m));
        }
        let msgs = label_value_errors(value);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                format!("{idx}.value"),
                value,
                msgs.join(";"),
            ));
        }
        errs.extend(taint_effect(effect, false, &format!("{idx}.effect")));
        if seen.contains(&(key, effect)) {
            errs.push(
                FieldError::duplicate(&idx, t.clone())
                    .with_detail("taints must be unique by key and effect pair"),
            );
            continue;
        }
        seen.push((key, effect));
    }
    errs
}

/// Capacity and allocatable: quantities, not negative, whole for countable resources.
fn resources(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in ["capacity", "allocatable"] {
        // Upstream names these `status.capacity.cpu` (a child, not a key).
        for e in resource_list(
            &format!("status.{key}"),
            obj.pointer(&format!("/status/{key}")),
        ) {
            let field = e
                .field
                .replacen('[', ".", 1)
                .trim_end_matches(']')
                .to_string();
            errs.push(FieldError { field, ..e });
        }
    }
    errs
}

/// A node about to be stored (ValidateNode).
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_object_meta(obj, NameRule::Subdomain);
    errs.extend(taints(obj));
    errs.extend(resources(obj));
    let cidrs = strings(obj.pointer("/spec/podCIDRs"));
    for (i, c) in cidrs.iter().enumerate() {
        errs.extend(cidr(&format!("spec.podCIDRs[{i}]"), c));
    }
    if cidrs.len() > 1 {
        let shown = obj
            .pointer("/spec/podCIDRs")
            .cloned()
            .unwrap_or(Value::Null);
        errs.extend(one_per_family("spec.podCIDRs", &shown, &cidrs));
        for (i, c) in cidrs.iter().enumerate() {
            if cidrs[..i].contains(c) {
                errs.push(FieldError::duplicate(format!("spec.podCIDRs[{i}]"), *c));
            }
        }
    }
    errs
}

/// What a node update may not do (ValidateNodeUpdate, without the shared metadata rules).
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = resources(new);
    let addresses = new.pointer("/status/addresses").and_then(Value::as_array);
    for (i, a) in addresses.into_iter().flatten().enumerate() {
        if addresses.is_some_and(|all| all[..i].contains(a)) {
            errs.push(FieldError::duplicate(
                format!("status.addresses[{i}]"),
                a.clone(),
            ));
        }
    }
    let (new_cidrs, old_cidrs) = (
        strings(new.pointer("/spec/podCIDRs")),
        strings(old.pointer("/spec/podCIDRs")),
    );
    if !old_cidrs.is_empty() {
        const MSG: &str = "node updates may not change podCIDR except from \"\" to valid";
        if old_cidrs.len() != new_cidrs.len() {
            errs.push(FieldError::forbidden("spec.podCIDRs", MSG));
        } else {
            for (o, n) in old_cidrs.iter().zip(&new_cidrs) {
                if o != n {
                    errs.push(FieldError::forbidden("spec.podCIDRs", MSG));
                }
            }
        }
    }
    let provider = |o: &Value| {
        o.pointer("/spec/providerID")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if !provider(old).is_empty() && provider(old) != provider(new) {
        errs.push(FieldError::forbidden(
            "spec.providerID",
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    errs.extend(taints(new));
    if new.pointer("/spec/externalID") != old.pointer("/spec/externalID") {
        errs.push(FieldError::forbidden(
            "spec.externalID",
            "may not be updated",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(spec: Value) -> Value {
        json!({"metadata": {"name": "w0", "resourceVersion": "1"}, "spec": spec,
               "status": {"capacity": {"cpu": "4", "pods": "110"}}})
    }

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn nodes_as_upstream() {
        let cases = [
            (json!({"podCIDR": "10.244.1.0/24", "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}), vec![]),
            (json!({"podCIDRs": ["10.244.1.0/24", "fd00::/64"]}), vec![]),
            (json!({"podCIDR": "10.244.1.0"}), vec!["spec.podCIDRs[0]: Invalid value: \"10.244.1.0\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)".to_string()]),
            (json!({"podCIDRs": ["10.0.0.0/24", "10.0.0.0/24"]}), vec![
                "spec.podCIDRs: Invalid value: [\"10.0.0.0/24\",\"10.0.0.0/24\"]: may specify no more than one CIDR for each IP family".to_string(),
                "spec.podCIDRs[1]: Duplicate value: \"10.0.0.0/24\"".to_string(),
            ]),
            (json!({"taints": [{"key": "a", "effect": ""}, {"key": "b", "value": "-x", "effect": "Sometimes"}, {"key": "c", "effect": "NoSchedule"}, {"key": "c", "effect": "NoSchedule"}]}), vec![
                "metadata.taints[0].effect: Required value".to_string(),
                "metadata.taints[1].value: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string(),
                "metadata.taints[1].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"".to_string(),
                "metadata.taints[3]: Duplicate value: {\"key\":\"c\",\"effect\":\"NoSchedule\"}: taints must be unique by key and effect pair".to_string(),
            ]),
        ];
        for (spec, want) in cases {
            let mut n = node(spec.clone());
            default(&mut n);
            assert_eq!(shown(&validate(&n)), want, "{spec}");
        }
        let mut bad = node(json!({}));
        bad["status"]["capacity"]["pods"] = "-1".into();
        assert_eq!(
            shown(&validate(&bad)),
            ["status.capacity.pods: Invalid value: \"-1\": must be greater than or equal to 0"]
        );
    }

    #[test]
    fn pod_cidrs_and_provider_ids_are_set_once() {
        let empty = node(json!({}));
        let mut set = node(json!({"podCIDR": "10.244.1.0/24", "providerID": "kind://w0"}));
        default(&mut set);
        assert!(validate_update(&set, &empty).is_empty());
        let mut moved = node(json!({"podCIDR": "10.244.2.0/24", "providerID": "kind://w1"}));
        default(&mut moved);
        assert_eq!(
            shown(&validate_update(&moved, &set)),
            [
                "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid",
                "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid"
            ]
        );
        let mut twice = set.clone();
        twice["status"]["addresses"] = json!([{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "InternalIP", "address": "10.0.0.1"}]);
        assert_eq!(
            shown(&validate_update(&twice, &set)),
            ["status.addresses[1]: Duplicate value: {\"type\":\"InternalIP\",\"address\":\"10.0.0.1\"}"]
        );
        assert_eq!(
            set["status"]["allocatable"],
            json!({"cpu": "4", "pods": "110"})
        );
    }
}
