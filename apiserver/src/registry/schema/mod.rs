//! Custom-resource values against a CRD version's OpenAPI v3 structural schema, as upstream's
//! apiextensions-apiserver treats them: pruning of unknown fields, defaulting, and validation
//! with upstream's field paths and messages.
//!
//! A schema is the JSON of `spec.versions[*].schema.openAPIV3Schema` (`JSONSchemaProps`), taken
//! as already valid and structural (the CRD's own validation checks that); objects are the
//! custom objects as JSON.
//!
//! ## Order
//! Upstream decodes a request body into an unstructured object, then
//! 1. **prunes** it (`prune`): unknown fields go, unless `x-kubernetes-preserve-unknown-fields`;
//!    `metadata` is cut down to ObjectMeta's fields; nulls of non-nullable fields without a
//!    default go; the dropped paths are what `fieldValidation=Strict|Warn` reports;
//! 2. **defaults** it (`apply_defaults`), also when an object is read from storage;
//! 3. **validates** it (`validate` on create, `validate_update` on update) in the registry
//!    strategy, after the ObjectMeta rules every kind shares (which the caller runs: this
//!    module never checks the root `metadata` beyond what the schema itself says about
//!    `metadata.name`/`generateName`), and before CEL rules.
//!
//! The server calls them in that order: `prune`, `apply_defaults`, then `validate` or
//! `validate_update`.
//!
//! ## Layout
//! `validate` (kube-openapi's schema validator), `format` (the string formats it checks),
//! `embedded` (TypeMeta/ObjectMeta of `x-kubernetes-embedded-resource` objects, and ObjectMeta's
//! field list), `listtype` (uniqueness of `x-kubernetes-list-type` set and map lists),
//! `pattern` (RE2 patterns on the `regex` crate), `ratchet` (updates: unchanged values keep
//! their errors unreported), `default`, `prune`, and `gofmt` (values printed as Go prints them
//! in messages).

mod default;
mod embedded;
pub(crate) use embedded::dns1035_label_errors;
mod format;
mod gofmt;
mod listtype;
mod pattern;
mod prune;
mod ratchet;
mod validate;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use super::field::FieldError;

/// Validate a whole custom object against its version's openAPIV3Schema: upstream's field
/// paths and messages. In upstream's order: the schema (kube-openapi), then the TypeMeta and
/// ObjectMeta of embedded resources, then the uniqueness of set and map lists.
pub fn validate(schema: &Value, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate::schema_errors(schema, obj, None, "", &mut errs);
    embedded::validate(schema, obj, "", &mut errs);
    listtype::validate(schema, obj, "", &mut errs);
    errs
}

/// Validate an update of a custom object (main resource or `status`) as upstream does with
/// validation ratcheting (CRDValidationRatcheting, on by default since 1.30, GA in 1.33): as
/// `validate`, except that schema errors in values equal to the ones they replace are not
/// reported (values correspond through object keys and the keys of `x-kubernetes-list-type:
/// map` items; other lists only as a whole), and list-type uniqueness errors only count when
/// `old` had none. Embedded resources' TypeMeta and ObjectMeta are checked in full.
pub fn validate_update(schema: &Value, new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate::schema_errors(schema, new, Some(old), "", &mut errs);
    embedded::validate(schema, new, "", &mut errs);
    let mut old_lists = Vec::new();
    listtype::validate(schema, old, "", &mut old_lists);
    if old_lists.is_empty() {
        listtype::validate(schema, new, "", &mut errs);
    }
    errs
}

/// Fill `default`s in place as upstream's structural defaulting does: a missing field, or a
/// null in a non-nullable one, takes its schema's default; a default inside an object applies
/// only where that object exists (or was itself just defaulted).
pub fn apply_defaults(schema: &Value, obj: &mut Value) {
    default::apply(schema, obj);
}

/// Drop every field the schema does not specify (unless x-kubernetes-preserve-unknown-fields),
/// and nulls of non-nullable fields without default, as upstream's pruning; returns the paths of
/// the unknown fields dropped, formatted as upstream's strict decoding reports them
/// (`spec.foo`, `spec.items[0].bar`, `metadata.foo`), in upstream's order: the root's
/// `metadata` first, then the schema's (sorted), then the `metadata` of embedded resources.
pub fn prune(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut paths = embedded::prune_object_meta(obj, "");
    paths.extend(prune::prune(schema, obj));
    prune::drop_non_nullable_nulls(schema, obj);
    paths.extend(embedded::prune_embedded_meta(schema, obj));
    paths
}

/// `additionalProperties` of a schema: a schema, or a bare boolean.
pub(super) enum Additional<'a> {
    Schema(&'a Value),
    Bool(bool),
}

/// The schema of property `name`.
pub(super) fn property<'a>(s: &'a Value, name: &str) -> Option<&'a Value> {
    properties(s)?.get(name)
}

/// `properties`, in the schema's order.
pub(super) fn properties(s: &Value) -> Option<&Map<String, Value>> {
    s.get("properties")?.as_object()
}

pub(super) fn additional(s: &Value) -> Option<Additional<'_>> {
    match s.get("additionalProperties")? {
        Value::Bool(b) => Some(Additional::Bool(*b)),
        v @ Value::Object(_) => Some(Additional::Schema(v)),
        _ => None,
    }
}

/// The schema of map values other than `properties`, when there is one.
pub(super) fn additional_schema(s: &Value) -> Option<&Value> {
    match additional(s)? {
        Additional::Schema(v) => Some(v),
        Additional::Bool(_) => None,
    }
}

/// `items` when it is one schema (structural schemas allow no tuple form).
pub(super) fn items(s: &Value) -> Option<&Value> {
    s.get("items").filter(|v| v.is_object())
}

pub(super) fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool).unwrap_or(false)
}

pub(super) fn preserves_unknown(s: &Value) -> bool {
    flag(s, "x-kubernetes-preserve-unknown-fields")
}

pub(super) fn is_embedded(s: &Value) -> bool {
    flag(s, "x-kubernetes-embedded-resource")
}

pub(super) fn is_nullable(s: &Value) -> bool {
    flag(s, "nullable")
}

/// The schema's `default`; a JSON null there is no default, as upstream reads it.
pub(super) fn default_of(s: &Value) -> Option<&Value> {
    s.get("default").filter(|v| !v.is_null())
}

/// `parent.key` for field paths, `key` at the root.
pub(super) fn child(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}
