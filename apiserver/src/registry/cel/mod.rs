//! CEL for CRD `x-kubernetes-validations` rules, on an engine (`engine`) that
//! ValidatingAdmissionPolicy reuses: compile once (cached by text), bind variables, evaluate
//! under a cost bound. The crate behind it is `cel` (see `DEPENDENCY.md`).

mod compile;
pub mod cost;
pub mod engine;
mod fieldpath;
mod library;
mod validation;
pub mod values;

#[cfg(test)]
mod tests;

use serde_json::Value;

use super::field::FieldError;

/// Evaluate every `x-kubernetes-validations` rule of the schema (a CRD version's
/// openAPIV3Schema as JSON) against the object; `old` on update enables transition rules (rules
/// using `oldSelf` run only where the old value exists and is correlatable, as upstream: map
/// keys and list-map keys, not plain list indices; `optionalOldSelf`).
pub fn validate(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    validation::validate(schema, obj, old)
}

/// Compile every rule of a CRD's schema, for the CRD's own validation, with upstream's
/// messages and paths; `path` is the field path of the schema
/// (`spec.versions[0].schema.openAPIV3Schema`).
pub fn compile_errors(schema: &Value, path: &str) -> Vec<FieldError> {
    compile::compile_errors(schema, path)
}
