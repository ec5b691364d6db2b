//! Server-side apply and `metadata.managedFields`: who owns which field of an object.
//!
//! This is tinykube's version of upstream's structured-merge-diff (`fieldpath`, `typed`,
//! `merge/update.go`) and `k8s.io/apimachinery/pkg/util/managedfields`, for the served kinds.
//! Objects stay `serde_json::Value`s; instead of an OpenAPI schema, the list types
//! (associative, set, atomic) and the atomic and map-like objects are upstream's markers for the
//! served types, looked up by field name and parent field name as in [`crate::patch`]'s strategic
//! merge.
//!
//! - [`FieldSet`] is upstream's `fieldpath.Set`, read from and written to the `FieldsV1` JSON
//!   (`set.rs`).
//! - `schema.rs` holds the list and object types of the served kinds and how list elements are
//!   identified.
//! - [`fields_of`], [`compare`], [`merge`] and [`remove`] are the typed-value operations
//!   (`ops.rs`).
//! - [`update`] and [`apply`] keep the `managedFields` entries as upstream's field manager does
//!   for Update-type writes and for server-side apply (with conflicts and `force`)
//!   (`entries.rs`).
//!
//! Which nodes are members of a set: every leaf (scalar, atomic list or object, empty object or
//! list), every associative-list and set-list element, and every non-empty map-like object
//! (`labels`, `annotations`, `requests`, …). Plain struct objects are only parents, so the
//! `FieldsV1` of an element or a map carries a `"."` entry and a struct does not.

mod entries;
mod ops;
mod schema;
mod set;
#[cfg(test)]
mod tests;

pub use entries::{apply, conflict_message, set_managed_fields, update, Conflict, Writer};
pub use ops::{compare, fields_of, merge, remove, Comparison, Scope};
pub use set::{FieldSet, ManagedError, PathElement};
