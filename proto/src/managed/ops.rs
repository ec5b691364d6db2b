//! The typed-value operations: the field set of an object, comparing two versions, and the
//! merge and removal server-side apply does.

use serde_json::{Map, Value};

use super::schema::{ListType, ObjectType};
use super::set::{FieldSet, PathElement};
use super::types::{child, child_mut, element_ids, element_matches, Field, Ty, TypeInfo};

/// Which part of an object a write manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The main resource: everything but `status` (when the kind has a status subresource).
    Main,
    /// The `status` subresource.
    Status,
}

impl Scope {
    pub(super) fn of(subresource: Option<&str>) -> Scope {
        match subresource {
            Some("status") => Scope::Status,
            _ => Scope::Main,
        }
    }

    /// Whether the top-level field `key` belongs to this scope.
    pub(super) fn covers(self, key: &str, has_status: bool) -> bool {
        match self {
            Scope::Main => key != "apiVersion" && key != "kind" && !(has_status && key == "status"),
            Scope::Status => key == "status",
        }
    }
}

/// Metadata the server owns; never part of a field set.
const SERVER_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// Which nodes of an object a field set holds. The built-in name rules make no difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Nodes {
    /// What a manager owns of what it sets (upstream's `ToFieldSet`): leaves, list elements and
    /// map keys, not the declared fields that only lead to them.
    Owned,
    /// Every node down to the leaves: what a comparison finds added or removed, and so what an
    /// Update-type write owns (`f:spec: {".": {}, …}`).
    All,
}

/// The fields `obj` sets within `scope`, as upstream's field manager sees them: what an applied
/// configuration owns.
pub fn fields_of(obj: &Value, scope: Scope, info: TypeInfo) -> FieldSet {
    field_set(obj, scope, info, Nodes::Owned)
}

/// The field set of `obj` within `scope`, holding `nodes`.
pub(super) fn field_set(obj: &Value, scope: Scope, info: TypeInfo, nodes: Nodes) -> FieldSet {
    let mut set = FieldSet::default();
    let Value::Object(map) = obj else {
        return set;
    };
    let root = info.root();
    for (key, value) in map.iter().filter(|(k, _)| scope.covers(k, info.has_status)) {
        let field = root.field(key);
        let (member, below) = match value {
            Value::Object(meta) if key == "metadata" => (
                false,
                object_fields(meta, field.ty, nodes, |f| !SERVER_METADATA.contains(&f)),
            ),
            _ => node_fields(value, field, nodes),
        };
        set.insert(PathElement::Field(key.clone()), member, below);
    }
    set
}

/// The fields of the object `map` (of type `ty`) whose names pass `keep`.
fn object_fields(
    map: &Map<String, Value>,
    ty: Ty,
    nodes: Nodes,
    keep: impl Fn(&str) -> bool,
) -> FieldSet {
    let mut set = FieldSet::default();
    for (key, value) in map.iter().filter(|(k, _)| keep(k)) {
        let (member, below) = node_fields(value, ty.field(key), nodes);
        set.insert(PathElement::Field(key.clone()), member, below);
    }
    set
}

/// Whether `value` (the child `field` of an object) is itself a member, and the fields below it.
fn node_fields(value: &Value, field: Field, nodes: Nodes) -> (bool, FieldSet) {
    let ty = field.ty;
    let leaf = (true, FieldSet::default());
    // A node with fields below is a member by the built-in name rules when it is a map-like
    // object; by a schema when it is a map key, or when every node counts.
    let parent = |object_type| match ty.by_name() {
        true => object_type == ObjectType::Map,
        false => field.keyed || nodes == Nodes::All,
    };
    match value {
        Value::Object(map) if map.is_empty() => leaf,
        Value::Object(map) => match ty.object() {
            ObjectType::Atomic => leaf,
            kind => (parent(kind), object_fields(map, ty, nodes, |_| true)),
        },
        Value::Array(items) if items.is_empty() => {
            // A declared granular list with no elements sets nothing (upstream's ToFieldSet).
            let granular = ty.list() != ListType::Atomic;
            if !ty.by_name() && granular && !field.keyed && nodes == Nodes::Owned {
                (false, FieldSet::default())
            } else {
                leaf
            }
        }
        Value::Array(items) => {
            let Some((kind, ids)) = element_ids(ty, items) else {
                return leaf;
            };
            let atomic_elements = matches!(
                kind,
                ListType::Set
                    | ListType::Map {
                        atomic_elements: true,
                        ..
                    }
            );
            let element = ty.element();
            let mut set = FieldSet::default();
            for (pe, item) in ids.into_iter().zip(items) {
                let below = match item {
                    Value::Object(map) if !atomic_elements => {
                        object_fields(map, element, nodes, |_| true)
                    }
                    _ => FieldSet::default(),
                };
                set.insert(pe, true, below);
            }
            (parent(ObjectType::Struct), set)
        }
        _ => leaf,
    }
}

/// The fields that differ between two versions of an object (upstream's `typed.Comparison`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Set in the new version only.
    pub added: FieldSet,
    /// Leaves set in both, with different values.
    pub modified: FieldSet,
    /// Set in the old version only.
    pub removed: FieldSet,
}

impl Comparison {
    /// Every changed field.
    pub fn changed(&self) -> FieldSet {
        self.added.union(&self.modified).union(&self.removed)
    }
}

/// The fields that differ between `old` and `new` within `scope`.
///
/// Added and removed hold every node that appears or goes (upstream's `typed.Compare`), not only
/// leaves: a new `spec` is added along with its fields.
pub fn compare(old: &Value, new: &Value, scope: Scope, info: TypeInfo) -> Comparison {
    compare_sets(old, new, scope, info).0
}

/// [`compare`], and every node of `new` ([`Nodes::All`]) it had to work out.
pub(super) fn compare_sets(
    old: &Value,
    new: &Value,
    scope: Scope,
    info: TypeInfo,
) -> (Comparison, FieldSet) {
    let before = field_set(old, scope, info, Nodes::All);
    let after = field_set(new, scope, info, Nodes::All);
    let both = before.intersection(&after);
    let comparison = Comparison {
        added: after.difference(&before),
        modified: modified_leaves(&both, &before, &after, old, new, info.root()),
        removed: before.difference(&after),
    };
    (comparison, after)
}

/// The metadata fields a client may own.
fn user_metadata(m: Option<&Value>) -> Vec<(&String, &Value)> {
    match m {
        Some(Value::Object(meta)) => meta
            .iter()
            .filter(|(k, _)| !SERVER_METADATA.contains(&k.as_str()))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether `old` and `new` agree on everything `scope` covers (the server's metadata aside):
/// then a write changed no field it could own.
pub(super) fn same_in_scope(old: &Value, new: &Value, scope: Scope, info: TypeInfo) -> bool {
    let (Value::Object(a), Value::Object(b)) = (old, new) else {
        return old == new;
    };
    a.keys()
        .chain(b.keys())
        .filter(|k| scope.covers(k, info.has_status))
        .all(|k| {
            if k == "metadata" {
                let (x, y) = (user_metadata(a.get(k)), user_metadata(b.get(k)));
                let theirs = b.get(k);
                x.len() == y.len()
                    && x.iter()
                        .all(|(key, v)| theirs.and_then(|m| m.get(key.as_str())) == Some(*v))
            } else {
                a.get(k) == b.get(k)
            }
        })
}

/// The leaves of `both` (members of `before` and `after`) whose values differ.
fn modified_leaves(
    both: &FieldSet,
    before: &FieldSet,
    after: &FieldSet,
    old: &Value,
    new: &Value,
    ty: Ty,
) -> FieldSet {
    let mut out = FieldSet::default();
    for pe in &both.members {
        let is_leaf = !before.children.contains_key(pe) && !after.children.contains_key(pe);
        if is_leaf && child(old, ty, pe) != child(new, ty, pe) {
            out.members.insert(pe.clone());
        }
    }
    for (pe, common) in &both.children {
        let (Some(b), Some(a)) = (before.children.get(pe), after.children.get(pe)) else {
            continue;
        };
        let (Some(o), Some(n)) = (child(old, ty, pe), child(new, ty, pe)) else {
            continue;
        };
        let below = modified_leaves(common, b, a, o, n, ty.descend(pe));
        out.insert(pe.clone(), false, below);
    }
    out
}

// ---- Merging and removing ---------------------------------------------------------------------

/// `config` merged into `live` as server-side apply merges.
///
/// Objects merge key by key and an explicit `null` removes the field; scalars, atomic lists and
/// atomic objects are replaced. Associative lists merge element by element by key, keeping the
/// live order: a config element merges into the live element with its key in place, config
/// elements new to the list are appended in config order, live elements missing from config are
/// kept. Set lists are unions in the same order (live values, then new ones).
pub fn merge(live: &Value, config: &Value, info: TypeInfo) -> Value {
    merge_value(Some(live), config, info.root())
}

fn merge_value(live: Option<&Value>, config: &Value, ty: Ty) -> Value {
    match config {
        Value::Object(_) if ty.object() == ObjectType::Atomic => config.clone(),
        Value::Object(fields) => {
            let mut out = match live {
                Some(Value::Object(map)) => map.clone(),
                _ => Map::new(),
            };
            for (key, value) in fields {
                if value.is_null() {
                    out.shift_remove(key);
                } else {
                    let merged = merge_value(out.get(key), value, ty.field(key).ty);
                    out.insert(key.clone(), merged);
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let live_items = match live {
                Some(Value::Array(l)) => l.as_slice(),
                _ => &[],
            };
            merge_list(live_items, items, ty)
        }
        _ => config.clone(),
    }
}

fn merge_list(live: &[Value], config: &[Value], ty: Ty) -> Value {
    let (Some((kind, config_ids)), Some((_, live_ids))) =
        (element_ids(ty, config), element_ids(ty, live))
    else {
        return Value::Array(config.to_vec());
    };
    let mut out = live.to_vec();
    for (id, item) in config_ids.iter().zip(config) {
        let merged = match kind {
            ListType::Map {
                atomic_elements: false,
                ..
            } => {
                let current = live_ids.iter().position(|l| l == id).map(|i| &live[i]);
                merge_value(current, item, ty.element())
            }
            _ => item.clone(),
        };
        match live_ids.iter().position(|l| l == id) {
            Some(i) => out[i] = merged,
            None => out.push(merged),
        }
    }
    Value::Array(out)
}

/// `obj` without the fields of `fields`: a leaf member is deleted, an element member removes the
/// whole element, a set member removes that value. Parents stay in place, possibly empty.
pub fn remove(obj: &Value, fields: &FieldSet, info: TypeInfo) -> Value {
    let mut out = obj.clone();
    remove_in(&mut out, info.root(), fields, &[]);
    out
}

/// Remove `set` from `value` (of type `ty`); `key_fields` are an element's key fields, which
/// stay so that the element remains identifiable.
fn remove_in(value: &mut Value, ty: Ty, set: &FieldSet, key_fields: &[(String, String)]) {
    for (pe, below) in &set.children {
        if set.members.contains(pe) {
            continue;
        }
        let keys = match pe {
            PathElement::Key(pairs) => pairs.as_slice(),
            _ => &[],
        };
        if let Some(target) = child_mut(value, ty, pe) {
            remove_in(target, ty.descend(pe), below, keys);
        }
    }
    match value {
        Value::Object(map) => {
            for pe in &set.members {
                if let PathElement::Field(name) = pe {
                    if !key_fields.iter().any(|(k, _)| k == name) {
                        map.shift_remove(name);
                    }
                }
            }
        }
        Value::Array(items) => {
            let mut index = 0;
            items.retain(|item| {
                let doomed = set
                    .members
                    .iter()
                    .any(|pe| element_matches(ty, pe, index, item));
                index += 1;
                !doomed
            });
        }
        _ => {}
    }
}
