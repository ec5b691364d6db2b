//! The type of each value below an object, which decides how it is owned and merged: by field
//! name for the built-in kinds (`schema.rs`), by the OpenAPI v3 schema of its definition for a
//! custom resource, read as upstream's apiextensions-apiserver hands a CRD's schema to
//! structured-merge-diff.
//!
//! From a schema: `x-kubernetes-list-type` `set` and `map` (with `x-kubernetes-list-map-keys`)
//! are granular lists, any other list is atomic (upstream's default when a CRD says nothing);
//! an object is granular unless `x-kubernetes-map-type: atomic`, its `properties` are declared
//! fields and any other key (`additionalProperties`, `x-kubernetes-preserve-unknown-fields`) is
//! a map key typed by `additionalProperties` or, without a schema, deduced from the value
//! (objects granular, lists atomic). The root and `x-kubernetes-embedded-resource` objects keep
//! ObjectMeta's built-in rules for `metadata`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::schema::{key_default, list_type, object_type, ListType, ObjectType};
use super::set::{canonical, PathElement};

/// Where a kind's types come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Types<'a> {
    /// A built-in kind: upstream's markers of the served types, by field name.
    BuiltIn,
    /// A custom resource: the version's `openAPIV3Schema` (`Value::Null` when it has none).
    OpenApi(&'a Value),
}

/// What the field manager needs to know of a kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TypeInfo<'a> {
    pub types: Types<'a>,
    /// Whether the kind has a `status` subresource (the main resource then excludes `status`).
    pub has_status: bool,
}

impl<'a> TypeInfo<'a> {
    /// A built-in kind.
    pub const fn built_in(has_status: bool) -> TypeInfo<'static> {
        TypeInfo {
            types: Types::BuiltIn,
            has_status,
        }
    }

    /// A custom resource with this `openAPIV3Schema`.
    pub const fn custom(schema: &'a Value, has_status: bool) -> TypeInfo<'a> {
        TypeInfo {
            types: Types::OpenApi(schema),
            has_status,
        }
    }

    /// The type of a whole object.
    pub(super) fn root(&self) -> Ty<'a> {
        match self.types {
            Types::BuiltIn => Ty::Named {
                parent: "",
                field: "",
            },
            Types::OpenApi(schema) => Ty::Schema {
                node: schema,
                resource: true,
            },
        }
    }
}

/// The type of one value.
#[derive(Clone, Copy, Debug)]
pub(super) enum Ty<'a> {
    /// A built-in kind's value: the field `field` of an object that is the value of `parent`
    /// (list elements keep their list's names).
    Named { parent: &'a str, field: &'a str },
    /// A value a schema node describes; `resource` when it is an object with ObjectMeta.
    Schema { node: &'a Value, resource: bool },
    /// A value of no declared schema (smd's "deduced"): objects granular, lists atomic.
    Deduced,
    /// A leaf whatever its shape (list elements with no `items` schema).
    Untyped,
}

/// A child of an object: its type, and whether its key is a map key rather than a declared
/// field (a map key is owned as a node of its own even when it has fields below).
#[derive(Clone, Copy, Debug)]
pub(super) struct Field<'a> {
    pub ty: Ty<'a>,
    pub keyed: bool,
}

fn extension<'s>(node: &'s Value, name: &str) -> Option<&'s str> {
    node.get(name).and_then(Value::as_str)
}

/// Whether the node's `type` admits `want` (an untyped node admits anything).
fn admits(node: &Value, want: &str) -> bool {
    match node.get("type").and_then(Value::as_str) {
        None | Some("") => true,
        Some(t) => t == want,
    }
}

impl<'a> Ty<'a> {
    fn schema(node: &'a Value) -> Ty<'a> {
        Ty::Schema {
            node,
            resource: node.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)),
        }
    }

    /// Whether the type comes from the built-in name rules.
    pub(super) fn by_name(self) -> bool {
        matches!(self, Ty::Named { .. })
    }

    /// How an object value of this type is owned.
    pub(super) fn object(self) -> ObjectType {
        match self {
            Ty::Named { parent, field } => object_type(parent, field),
            Ty::Schema { node, .. } => {
                if extension(node, "x-kubernetes-map-type") == Some("atomic")
                    || !admits(node, "object")
                {
                    ObjectType::Atomic
                } else {
                    ObjectType::Struct
                }
            }
            Ty::Deduced => ObjectType::Struct,
            Ty::Untyped => ObjectType::Atomic,
        }
    }

    /// The child `key` of an object of this type.
    pub(super) fn field(self, key: &'a str) -> Field<'a> {
        let declared = |ty| Field { ty, keyed: false };
        let keyed = |ty| Field { ty, keyed: true };
        match self {
            Ty::Named { field, .. } => declared(Ty::Named {
                parent: field,
                field: key,
            }),
            Ty::Schema { resource: true, .. } if key == "metadata" => declared(Ty::Named {
                parent: "",
                field: "metadata",
            }),
            Ty::Schema { node, .. } => {
                if let Some(sub) = node.get("properties").and_then(|p| p.get(key)) {
                    return declared(Ty::schema(sub));
                }
                match node.get("additionalProperties") {
                    Some(sub @ Value::Object(_)) => keyed(Ty::schema(sub)),
                    _ => keyed(Ty::Deduced),
                }
            }
            Ty::Deduced => keyed(Ty::Deduced),
            Ty::Untyped => keyed(Ty::Untyped),
        }
    }

    /// How a list value of this type is owned and merged.
    pub(super) fn list(self) -> ListType<'a> {
        match self {
            Ty::Named { parent, field } => list_type(parent, field),
            Ty::Schema { node, .. } if admits(node, "array") => {
                match extension(node, "x-kubernetes-list-type") {
                    Some("set") => ListType::Set,
                    Some("map") => {
                        let keys: Vec<&str> = node
                            .get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .collect();
                        if keys.is_empty() {
                            return ListType::Set;
                        }
                        ListType::Map {
                            keys,
                            atomic_elements: self.element().object() == ObjectType::Atomic,
                        }
                    }
                    _ => ListType::Atomic,
                }
            }
            _ => ListType::Atomic,
        }
    }

    /// The type of the elements of a list of this type.
    pub(super) fn element(self) -> Ty<'a> {
        match self {
            Ty::Named { .. } => self,
            Ty::Schema { node, .. } => match node.get("items") {
                Some(items @ Value::Object(_)) => Ty::schema(items),
                _ => Ty::Untyped,
            },
            Ty::Deduced | Ty::Untyped => Ty::Untyped,
        }
    }

    /// The type of the value at `pe` below a value of this type.
    pub(super) fn descend(self, pe: &'a PathElement) -> Ty<'a> {
        match pe {
            PathElement::Field(name) => self.field(name).ty,
            _ => self.element(),
        }
    }

    /// The value the key field `key` of this list's elements takes when an element omits it.
    fn key_default(self, key: &str) -> Option<Value> {
        match self {
            Ty::Named { field, .. } => key_default(field, key),
            Ty::Schema { node, .. } => node
                .pointer("/items/properties")
                .and_then(|p| p.get(key))
                .and_then(|k| k.get("default"))
                .cloned(),
            Ty::Deduced | Ty::Untyped => None,
        }
    }
}

/// The path elements of a granular list's elements (the list being of type `ty`), or `None`
/// when the list is atomic (by type, or because an element lacks a key, is of the wrong shape
/// or is a duplicate).
pub(super) fn element_ids<'a>(
    ty: Ty<'a>,
    items: &[Value],
) -> Option<(ListType<'a>, Vec<PathElement>)> {
    let kind = ty.list();
    let ids: Vec<PathElement> = match &kind {
        ListType::Atomic => return None,
        ListType::Set => items
            .iter()
            .map(|item| {
                (!item.is_object() && !item.is_array()).then(|| PathElement::Value(canonical(item)))
            })
            .collect::<Option<_>>()?,
        ListType::Map { keys, .. } => items
            .iter()
            .map(|item| element_key(ty, keys, item))
            .collect::<Option<_>>()?,
    };
    let distinct: BTreeSet<&PathElement> = ids.iter().collect();
    (distinct.len() == ids.len()).then_some((kind, ids))
}

/// The value of the key field `key` of an element of the list `ty`, defaulted.
fn key_value(ty: Ty, key: &str, item: &Value) -> Option<Value> {
    match item.get(key) {
        Some(v) if !v.is_null() => Some(v.clone()),
        _ => ty.key_default(key),
    }
}

fn element_key(ty: Ty, keys: &[&str], item: &Value) -> Option<PathElement> {
    item.as_object()?;
    let mut pairs = Vec::with_capacity(keys.len());
    for &key in keys {
        let value = key_value(ty, key, item)?;
        pairs.push((key.to_string(), canonical(&value)));
    }
    pairs.sort();
    Some(PathElement::Key(pairs))
}

/// Whether `item`, at `index` of a list of type `ty`, is the element `pe` names.
pub(super) fn element_matches(ty: Ty, pe: &PathElement, index: usize, item: &Value) -> bool {
    match pe {
        PathElement::Field(_) => false,
        PathElement::Key(pairs) => {
            item.is_object()
                && pairs.iter().all(|(key, json)| {
                    key_value(ty, key, item).is_some_and(|v| canonical(&v) == *json)
                })
        }
        PathElement::Value(json) => canonical(item) == *json,
        PathElement::Index(i) => *i == index,
    }
}

/// The value at `pe` below `value` (of type `ty`).
pub(super) fn child<'v>(value: &'v Value, ty: Ty, pe: &PathElement) -> Option<&'v Value> {
    match (value, pe) {
        (Value::Object(map), PathElement::Field(name)) => map.get(name),
        (Value::Array(items), _) => items
            .iter()
            .enumerate()
            .find(|(i, item)| element_matches(ty, pe, *i, item))
            .map(|(_, item)| item),
        _ => None,
    }
}

pub(super) fn child_mut<'v>(
    value: &'v mut Value,
    ty: Ty,
    pe: &PathElement,
) -> Option<&'v mut Value> {
    match (value, pe) {
        (Value::Object(map), PathElement::Field(name)) => map.get_mut(name),
        (Value::Array(items), _) => items
            .iter_mut()
            .enumerate()
            .find(|(i, item)| element_matches(ty, pe, *i, item))
            .map(|(_, item)| item),
        _ => None,
    }
}
