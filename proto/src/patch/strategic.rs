//! Kubernetes strategic merge patch: lists with a merge key merge element by element, lists of
//! primitives with the merge strategy merge as sets, other lists are replaced; directives
//! `$patch`, `$setElementOrder/…`, `$deleteFromPrimitiveList/…` and `$retainKeys`.
//!
//! The merge keys are upstream's struct tags for the fields of the served kinds. They are looked
//! up by field name and its parent field: within the served types every field name has one
//! strategy (`conditions` always merge by `type`, `ports` are container ports, …), and
//! `finalizers` merge only under `metadata` (a Namespace's `spec.finalizers` is replaced).

use serde_json::{Map, Value};

use super::PatchError;

/// How a list field merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListStrategy {
    /// Elements are objects identified by this key.
    MergeKey(&'static str),
    /// Elements are primitives merged as a set.
    MergePrimitives,
    /// The patch's list replaces the original.
    Replace,
}

fn list_strategy(parent: &str, field: &str) -> ListStrategy {
    use ListStrategy::*;
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "resourceClaims"
        | "schedulingGates" => MergeKey("name"),
        // A Service's ports merge by port; Endpoints' and EndpointSlices' are atomic.
        "ports" if parent == "spec" => MergeKey("port"),
        "ports" if parent == "subsets" || parent.is_empty() => Replace,
        "ports" => MergeKey("containerPort"),
        "volumeMounts" => MergeKey("mountPath"),
        "volumeDevices" => MergeKey("devicePath"),
        "hostAliases" => MergeKey("ip"),
        "conditions" => MergeKey("type"),
        "addresses" if parent == "status" => MergeKey("type"),
        "ownerReferences" => MergeKey("uid"),
        "topologySpreadConstraints" => MergeKey("topologyKey"),
        "finalizers" if parent == "metadata" => MergePrimitives,
        _ => Replace,
    }
}

fn is_directive(key: &str) -> bool {
    key.starts_with('$')
}

/// Remove directives from a value that has no original to merge into.
fn strip(value: &Value, field: &str) -> Result<Option<Value>, PatchError> {
    match value {
        Value::Object(_) => patch_value(&Value::Null, value, field),
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                if item.get("$patch").is_some() {
                    continue;
                }
                if let Some(v) = strip(item, field)? {
                    out.push(v);
                }
            }
            Ok(Some(Value::Array(out)))
        }
        other => Ok(Some(other.clone())),
    }
}

/// Merge `patch` into `original` (an object patch); `None` means "delete this value".
fn patch_value(original: &Value, patch: &Value, field: &str) -> Result<Option<Value>, PatchError> {
    let Value::Object(p) = patch else {
        return Ok(Some(patch.clone()));
    };
    match p.get("$patch").and_then(Value::as_str) {
        Some("delete") => return Ok(None),
        Some("replace") => {
            let mut out = Map::new();
            for (k, v) in p.iter().filter(|(k, _)| !is_directive(k)) {
                if let Some(v) = strip(v, k)? {
                    out.insert(k.clone(), v);
                }
            }
            return Ok(Some(Value::Object(out)));
        }
        Some("merge") | None => {}
        Some(other) => return Err(PatchError::Directive(format!("$patch: {other}"))),
    }
    let mut out = match original {
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    };
    let mut orders: Vec<(String, Vec<Value>)> = Vec::new();
    for (k, v) in p {
        if let Some(list_field) = k.strip_prefix("$setElementOrder/") {
            if let Value::Array(order) = v {
                orders.push((list_field.to_string(), order.clone()));
            }
            continue;
        }
        if let Some(list_field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(current)), Value::Array(remove)) =
                (out.get_mut(list_field), v)
            {
                current.retain(|x| !remove.contains(x));
            }
            continue;
        }
        if k == "$patch" || k == "$retainKeys" {
            continue;
        }
        if k.starts_with('$') {
            return Err(PatchError::Directive(k.clone()));
        }
        if v.is_null() {
            out.remove(k);
            continue;
        }
        let merged = match (out.get(k), v) {
            (Some(orig @ Value::Object(_)), Value::Object(_)) => patch_value(orig, v, k)?,
            (Some(Value::Array(orig)), Value::Array(items)) => {
                Some(merge_list(field, k, orig, items)?)
            }
            (None, Value::Array(items)) => Some(merge_list(field, k, &[], items)?),
            _ => strip(v, k)?,
        };
        match merged {
            Some(m) => {
                out.insert(k.clone(), m);
            }
            None => {
                out.remove(k);
            }
        }
    }
    for (list_field, order) in orders {
        if let Some(Value::Array(list)) = out.get_mut(&list_field) {
            reorder(field, &list_field, list, &order);
        }
    }
    if let Some(Value::Array(retain)) = p.get("$retainKeys") {
        let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
        out.retain(|k, _| keep.contains(&k.as_str()));
    }
    Ok(Some(Value::Object(out)))
}

fn key_of<'a>(item: &'a Value, key: &str) -> Option<&'a Value> {
    item.as_object().and_then(|m| m.get(key))
}

fn merge_list(
    parent: &str,
    field: &str,
    original: &[Value],
    patch: &[Value],
) -> Result<Value, PatchError> {
    match list_strategy(parent, field) {
        ListStrategy::Replace => {
            strip(&Value::Array(patch.to_vec()), field).map(|v| v.unwrap_or(Value::Array(vec![])))
        }
        ListStrategy::MergePrimitives => {
            let mut out = original.to_vec();
            for item in patch {
                if !out.contains(item) {
                    out.push(item.clone());
                }
            }
            Ok(Value::Array(out))
        }
        ListStrategy::MergeKey(key) => {
            if patch
                .iter()
                .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
            {
                let rest: Vec<Value> = patch
                    .iter()
                    .filter(|i| i.get("$patch").is_none())
                    .cloned()
                    .collect();
                return strip(&Value::Array(rest), field)
                    .map(|v| v.unwrap_or(Value::Array(vec![])));
            }
            let mut out = original.to_vec();
            for item in patch {
                let Some(id) = key_of(item, key).cloned() else {
                    // An element without its merge key cannot be matched: upstream rejects it.
                    return Err(PatchError::Invalid(format!(
                        "map: {item} does not contain declared merge key: {key}"
                    )));
                };
                let pos = out.iter().position(|o| key_of(o, key) == Some(&id));
                match (pos, item.get("$patch").and_then(Value::as_str)) {
                    (Some(i), Some("delete")) => {
                        out.remove(i);
                    }
                    (None, Some("delete")) => {}
                    (Some(i), _) => {
                        if let Some(merged) = patch_value(&out[i], item, field)? {
                            out[i] = merged;
                        }
                    }
                    (None, _) => {
                        if let Some(v) = strip(item, field)? {
                            out.push(v);
                        }
                    }
                }
            }
            Ok(Value::Array(out))
        }
    }
}

/// Order a merged list as `$setElementOrder` says; elements it does not name keep their
/// relative order after the named ones.
fn reorder(parent: &str, field: &str, list: &mut Vec<Value>, order: &[Value]) {
    let position = |item: &Value| -> Option<usize> {
        match list_strategy(parent, field) {
            ListStrategy::MergeKey(key) => {
                let id = key_of(item, key)?;
                order.iter().position(|o| key_of(o, key) == Some(id))
            }
            _ => order.iter().position(|o| o == item),
        }
    };
    let mut indexed: Vec<(usize, usize, Value)> = list
        .drain(..)
        .enumerate()
        .map(|(i, v)| (position(&v).unwrap_or(usize::MAX), i, v))
        .collect();
    indexed.sort_by_key(|(p, i, _)| (*p, *i));
    list.extend(indexed.into_iter().map(|(_, _, v)| v));
}

/// Apply a strategic merge patch to `doc`, an object of `group`/`kind`.
pub fn strategic_merge_patch(
    doc: &Value,
    patch: &Value,
    _group: &str,
    _kind: &str,
) -> Result<Value, PatchError> {
    if !patch.is_object() {
        return Err(PatchError::Invalid(
            "a strategic merge patch must be a JSON object".into(),
        ));
    }
    Ok(patch_value(doc, patch, "")?.unwrap_or(Value::Object(Map::new())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smp(doc: Value, patch: Value) -> Value {
        strategic_merge_patch(&doc, &patch, "", "Pod").unwrap()
    }

    #[test]
    fn containers_merge_by_name() {
        let doc = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1", "terminationMessagePath": "/dev/termination-log"},
            {"name": "b", "image": "b:1"}]}});
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
            "containers": [{"name": "b", "image": "b:2"}]}});
        assert_eq!(
            smp(doc, patch),
            json!({"spec": {"containers": [
                {"name": "a", "image": "a:1", "terminationMessagePath": "/dev/termination-log"},
                {"name": "b", "image": "b:2"}]}})
        );
    }

    #[test]
    fn directives_delete_replace_and_retain() {
        let doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
                         "spec": {"containers": [{"name": "a"}, {"name": "b"}],
                                  "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                                  "tolerations": [{"key": "k"}]}});
        let patch = json!({"metadata": {"labels": {"a": null}, "finalizers": ["y"]},
                           "spec": {"containers": [{"name": "a", "$patch": "delete"}],
                                    "strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null},
                                    "tolerations": [{"key": "other"}]}});
        assert_eq!(
            smp(doc, patch),
            json!({"metadata": {"labels": {"b": "2"}, "finalizers": ["x", "y"]},
                   "spec": {"containers": [{"name": "b"}],
                            "strategy": {"type": "Recreate"},
                            "tolerations": [{"key": "other"}]}})
        );
        let replaced = smp(
            json!({"data": {"a": "1"}}),
            json!({"data": {"$patch": "replace", "b": "2"}}),
        );
        assert_eq!(replaced, json!({"data": {"b": "2"}}));
    }

    #[test]
    fn atomic_lists_are_replaced() {
        // Node taints are atomic upstream: `kubectl taint ... key-` sends the remaining list.
        let doc = json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]}});
        let patch = json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}});
        assert_eq!(
            smp(doc, patch),
            json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}})
        );
    }

    #[test]
    fn env_and_primitive_lists() {
        let doc = json!({"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                         "metadata": {"finalizers": ["x", "y"]}});
        let patch = json!({"env": [{"name": "B", "value": "3"}],
                           "metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}});
        assert_eq!(
            smp(doc, patch),
            json!({"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}],
                   "metadata": {"finalizers": ["y"]}})
        );
        assert!(strategic_merge_patch(&json!({}), &json!([1]), "", "Pod").is_err());
    }
}
