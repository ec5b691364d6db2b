//! The built-in kinds' types by field name: list and object types and key defaults, as
//! upstream's OpenAPI markers (`x-kubernetes-list-type`, `+structType=atomic`, …) say for the
//! served types.

use serde_json::Value;

/// How a list field is owned and merged (upstream's `x-kubernetes-list-type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ListType<'a> {
    /// Replaced whole; a leaf.
    Atomic,
    /// Scalars merged as a set; each value is a member.
    Set,
    /// Objects identified by these key fields; `atomic_elements` when each element is a leaf.
    Map {
        keys: Vec<&'a str>,
        atomic_elements: bool,
    },
}

/// The list type of the built-in field `field` of an object that is the value of `parent`.
pub(super) fn list_type(parent: &str, field: &str) -> ListType<'static> {
    fn by(keys: &[&'static str]) -> ListType<'static> {
        ListType::Map {
            keys: keys.to_vec(),
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
        "ports" if parent == "spec" => by(&["port", "protocol"]),
        "ports" if parent == "subsets" || parent.is_empty() => ListType::Atomic,
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
            keys: vec!["uid"],
            atomic_elements: true,
        },
        "finalizers" if parent == "metadata" => ListType::Set,
        "podCIDRs" if parent == "spec" => ListType::Set,
        _ => ListType::Atomic,
    }
}

/// The value a key field of a built-in list takes when an element omits it.
pub(super) fn key_default(list_field: &str, key: &str) -> Option<Value> {
    match (list_field, key) {
        ("ports", "protocol") => Some(Value::from("TCP")),
        _ => None,
    }
}

/// How an object value is owned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ObjectType {
    /// Schema fields: the object is only a parent of its fields.
    Struct,
    /// User keys (`labels`, `requests`, …): the object is a member and so is each key.
    Map,
    /// Owned and replaced whole (`+structType=atomic`, e.g. label selectors).
    Atomic,
}

/// The object type of the built-in field `field` of an object that is the value of `parent`.
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
