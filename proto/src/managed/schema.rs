//! The schema of the served kinds: list and object types, element keys and child lookups, as
//! upstream's OpenAPI markers (`x-kubernetes-list-type`, `+structType=atomic`, …) say.

use std::collections::BTreeSet;

use serde_json::Value;

use super::set::{canonical, PathElement};

/// How a list field is owned and merged (upstream's `x-kubernetes-list-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListType {
    /// Replaced whole; a leaf.
    Atomic,
    /// Scalars merged as a set; each value is a member.
    Set,
    /// Objects identified by these key fields; `atomic_elements` when each element is a leaf.
    Map {
        keys: &'static [&'static str],
        atomic_elements: bool,
    },
}

fn list_type(parent: &str, field: &str) -> ListType {
    const fn by(keys: &'static [&'static str]) -> ListType {
        ListType::Map {
            keys,
            atomic_elements: false,
        }
    }
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "resourceClaims"
        | "schedulingGates" => by(&["name"]),
        "ports" => by(&["containerPort", "protocol"]),
        "volumeMounts" => by(&["mountPath"]),
        "volumeDevices" => by(&["devicePath"]),
        "hostAliases" => by(&["ip"]),
        "conditions" => by(&["type"]),
        "addresses" if parent == "status" => by(&["type"]),
        "podIPs" | "hostIPs" => by(&["ip"]),
        "topologySpreadConstraints" => by(&["topologyKey", "whenUnsatisfiable"]),
        // OwnerReference is `+structType=atomic`.
        "ownerReferences" => ListType::Map {
            keys: &["uid"],
            atomic_elements: true,
        },
        "finalizers" if parent == "metadata" => ListType::Set,
        "podCIDRs" if parent == "spec" => ListType::Set,
        _ => ListType::Atomic,
    }
}

/// The value a key field takes when an element omits it.
fn key_default(list_field: &str, key: &str) -> Option<Value> {
    match (list_field, key) {
        ("ports", "protocol") => Some(Value::from("TCP")),
        _ => None,
    }
}

/// How an object field is owned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ObjectType {
    /// Schema fields: the object is only a parent of its fields.
    Struct,
    /// User keys (`labels`, `requests`, …): the object is a member and so is each key.
    Map,
    /// Owned and replaced whole (`+structType=atomic`, e.g. label selectors).
    Atomic,
}

pub(super) fn object_type(parent: &str, field: &str) -> ObjectType {
    match field {
        "selector" | "labelSelector" | "namespaceSelector" => ObjectType::Atomic,
        "requiredDuringSchedulingIgnoredDuringExecution" if parent == "nodeAffinity" => {
            ObjectType::Atomic
        }
        "labels" | "annotations" | "nodeSelector" | "matchLabels" | "limits" | "requests"
        | "capacity" | "allocatable" | "data" | "binaryData" | "overhead" => ObjectType::Map,
        _ => ObjectType::Struct,
    }
}

/// The path elements of a granular list's elements, or `None` when the list is atomic (by
/// schema, or because an element lacks a key, is of the wrong shape or is a duplicate).
pub(super) fn element_ids(
    parent: &str,
    field: &str,
    items: &[Value],
) -> Option<(ListType, Vec<PathElement>)> {
    let kind = list_type(parent, field);
    let ids: Vec<PathElement> = match kind {
        ListType::Atomic => return None,
        ListType::Set => items
            .iter()
            .map(|item| {
                (!item.is_object() && !item.is_array()).then(|| PathElement::Value(canonical(item)))
            })
            .collect::<Option<_>>()?,
        ListType::Map { keys, .. } => items
            .iter()
            .map(|item| element_key(field, keys, item))
            .collect::<Option<_>>()?,
    };
    let distinct: BTreeSet<&PathElement> = ids.iter().collect();
    (distinct.len() == ids.len()).then_some((kind, ids))
}

fn element_key(list_field: &str, keys: &[&str], item: &Value) -> Option<PathElement> {
    let fields = item.as_object()?;
    let mut pairs = Vec::with_capacity(keys.len());
    for &key in keys {
        let value = match fields.get(key) {
            Some(v) if !v.is_null() => v.clone(),
            _ => key_default(list_field, key)?,
        };
        pairs.push((key.to_string(), canonical(&value)));
    }
    pairs.sort();
    Some(PathElement::Key(pairs))
}

/// Whether `item` is the element `pairs` names in the list `list_field`.
fn key_matches(list_field: &str, pairs: &[(String, String)], item: &Value) -> bool {
    let Some(fields) = item.as_object() else {
        return false;
    };
    pairs.iter().all(|(key, json)| {
        let value = match fields.get(key) {
            Some(v) if !v.is_null() => Some(v.clone()),
            _ => key_default(list_field, key),
        };
        value.is_some_and(|v| canonical(&v) == *json)
    })
}

pub(super) fn element_matches(
    list_field: &str,
    pe: &PathElement,
    index: usize,
    item: &Value,
) -> bool {
    match pe {
        PathElement::Field(_) => false,
        PathElement::Key(pairs) => key_matches(list_field, pairs, item),
        PathElement::Value(json) => canonical(item) == *json,
        PathElement::Index(i) => *i == index,
    }
}

/// The value at `pe` below `value` (the value of the field `field`).
pub(super) fn child<'v>(value: &'v Value, field: &str, pe: &PathElement) -> Option<&'v Value> {
    match (value, pe) {
        (Value::Object(map), PathElement::Field(name)) => map.get(name),
        (Value::Array(items), _) => items
            .iter()
            .enumerate()
            .find(|(i, item)| element_matches(field, pe, *i, item))
            .map(|(_, item)| item),
        _ => None,
    }
}

pub(super) fn child_mut<'v>(
    value: &'v mut Value,
    field: &str,
    pe: &PathElement,
) -> Option<&'v mut Value> {
    match (value, pe) {
        (Value::Object(map), PathElement::Field(name)) => map.get_mut(name),
        (Value::Array(items), _) => items
            .iter_mut()
            .enumerate()
            .find(|(i, item)| element_matches(field, pe, *i, item))
            .map(|(_, item)| item),
        _ => None,
    }
}
