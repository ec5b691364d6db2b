//! Server-side apply and `metadata.managedFields`: who owns which field of an object.
//!
//! This is tinykube's version of upstream's structured-merge-diff (`fieldpath`, `typed`,
//! `merge/update.go`) and `k8s.io/apimachinery/pkg/util/managedfields`, for the served kinds.
//! Objects stay `serde_json::Value`s, walked with the type of each value ([`TypeInfo`]): for
//! the built-in kinds, upstream's markers of the served types looked up by field name and
//! parent field name as in [`crate::patch`]'s strategic merge; for a custom resource, the
//! `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and `x-kubernetes-map-type` of its
//! version's OpenAPI v3 schema, with upstream's defaults where the schema says nothing.
//!
//! - [`FieldSet`] is upstream's `fieldpath.Set`, read from and written to the `FieldsV1` JSON
//!   (`set.rs`).
//! - `types.rs` gives each value its type (list and object kinds, element keys and their
//!   defaults, child lookups) from either source; `schema.rs` holds the built-in name rules.
//! - [`fields_of`], [`compare`], [`merge`] and [`remove`] are the typed-value operations
//!   (`ops.rs`).
//! - [`update`] and [`apply`] keep the `managedFields` entries as upstream's field manager does
//!   for Update-type writes and for server-side apply (with conflicts and `force`)
//!   (`entries.rs`).
//!
//! Which nodes are members of a set: every leaf (scalar, atomic list or object, empty object or
//! list), every associative-list and set-list element, and every non-empty map-like object
//! (`labels`, `annotations`, `requests`, …). Plain struct objects are only parents, so the
//! `FieldsV1` of an element or a map carries a `"."` entry and a struct does not. By a schema,
//! as upstream: an applied configuration owns leaves, list elements and map keys (a declared
//! field that only leads to others is a parent), while an Update-type write owns every node it
//! added, so a custom object's creator owns `f:spec: {".": {}, …}`.

mod entries;
mod ops;
mod schema;
mod set;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_custom;
mod types;

pub use entries::{apply, conflict_message, set_managed_fields, update, Conflict, Writer};
pub use ops::{compare, fields_of, merge, remove, Comparison, Scope};
pub use set::{FieldSet, ManagedError, PathElement};
pub use types::{TypeInfo, Types};
