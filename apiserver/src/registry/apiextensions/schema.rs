//! A CRD's OpenAPI v3 schema as upstream's validateCustomResourceDefinitionValidation checks it
//! before it is made structural: the root rules when `status` is served, keywords v1 does not
//! support (`id`, `$ref`, `definitions`, `patternProperties`, `dependencies`,
//! `additionalItems`, `items` lists, `uniqueItems: true`, `type: null`), `additionalProperties`
//! beside `properties`, defaults in resource metadata, and the consistency of
//! `x-kubernetes-list-type`, `-list-map-keys` and `-map-type`. Structural rules are
//! `structural`'s; CEL rules are compiled elsewhere (see `x_validations`).

use serde_json::Value;

use super::listtype::{list_and_map_types, map_list_keys_map_set, non_atomic_set};
use super::structural;
use super::view::{flag, get, items, schema_has, text};
use crate::registry::field::FieldError;

const OPENAPI_TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];
const META_FIELDS: &[&str] = &["metadata", "kind", "apiVersion"];

/// The JSONSchemaProps fields in upstream's struct order, with the Go names of those allowed at
/// the root when the status subresource is served.
const ROOT_FIELDS: &[(&str, Option<&str>)] = &[
    ("id", None),
    ("$schema", None),
    ("$ref", None),
    ("description", Some("Description")),
    ("type", Some("Type")),
    ("format", Some("Format")),
    ("title", Some("Title")),
    ("default", None),
    ("maximum", Some("Maximum")),
    ("exclusiveMaximum", Some("ExclusiveMaximum")),
    ("minimum", Some("Minimum")),
    ("exclusiveMinimum", Some("ExclusiveMinimum")),
    ("maxLength", Some("MaxLength")),
    ("minLength", Some("MinLength")),
    ("pattern", Some("Pattern")),
    ("maxItems", Some("MaxItems")),
    ("minItems", Some("MinItems")),
    ("uniqueItems", Some("UniqueItems")),
    ("multipleOf", Some("MultipleOf")),
    ("enum", None),
    ("maxProperties", None),
    ("minProperties", None),
    ("required", Some("Required")),
    ("items", Some("Items")),
    ("allOf", None),
    ("oneOf", None),
    ("anyOf", None),
    ("not", None),
    ("properties", Some("Properties")),
    ("additionalProperties", None),
    ("patternProperties", None),
    ("dependencies", None),
    ("additionalItems", None),
    ("definitions", None),
    ("externalDocs", Some("ExternalDocs")),
    ("example", Some("Example")),
    ("nullable", None),
    (
        "x-kubernetes-preserve-unknown-fields",
        Some("XPreserveUnknownFields"),
    ),
    ("x-kubernetes-embedded-resource", None),
    ("x-kubernetes-int-or-string", None),
    ("x-kubernetes-list-map-keys", None),
    ("x-kubernetes-list-type", None),
    ("x-kubernetes-map-type", None),
    ("x-kubernetes-validations", Some("XValidations")),
];

/// What the schema rules demand. A create demands all; an update relaxes a rule the stored
/// CRD already breaks, so that it can still be updated.
#[derive(Debug, Clone, Copy)]
pub(super) struct SchemaOptions {
    /// `type` is one of the OpenAPI types.
    pub valid_property_type: bool,
    /// The items of a `set` list are atomic.
    pub atomic_set_type: bool,
    /// Keys of `map` lists are required or defaulted and not nullable; set and map items are
    /// not nullable.
    pub map_list_keys_map_set: bool,
}

impl SchemaOptions {
    pub fn strict() -> Self {
        SchemaOptions {
            valid_property_type: true,
            atomic_set_type: true,
            map_list_keys_map_set: true,
        }
    }

    /// The options of an update whose stored CRD has `old` schemas.
    pub fn relaxed_by(old: &[&Value]) -> Self {
        let any = |pred: &dyn Fn(&Value) -> bool| old.iter().any(|s| schema_has(s, pred));
        SchemaOptions {
            valid_property_type: !any(&|s| {
                let t = text(s, "type");
                !t.is_empty() && !OPENAPI_TYPES.contains(&t)
            }),
            atomic_set_type: !any(&non_atomic_set),
            map_list_keys_map_set: !any(&|s| !map_list_keys_map_set(s, "").is_empty()),
        }
    }
}

/// Where a schema node sits, as upstream's specStandardValidatorV3 tracks it.
#[derive(Debug, Clone)]
struct Context {
    allow_defaults: bool,
    disallow_reason: String,
    inside_meta: bool,
}

impl Context {
    fn forbidding_defaults(&self, reason: &str) -> Self {
        Context {
            allow_defaults: false,
            disallow_reason: reason.to_string(),
            ..self.clone()
        }
    }

    /// Upstream's specStandardValidatorV3.validate: keywords of one node.
    fn check(&self, s: &Value, path: &str, opts: &SchemaOptions, errs: &mut Vec<FieldError>) {
        let kind = text(s, "type");
        if opts.valid_property_type && !kind.is_empty() && !OPENAPI_TYPES.contains(&kind) {
            errs.push(FieldError::not_supported(
                format!("{path}.type"),
                kind,
                OPENAPI_TYPES,
            ));
        }
        if get(s, "default").is_some() && !self.allow_defaults {
            let mut detail = "must not be set".to_string();
            if !self.disallow_reason.is_empty() {
                detail = format!("{detail} {}", self.disallow_reason);
            }
            errs.push(FieldError::forbidden(format!("{path}.default"), detail));
        }
        let not_empty = |k: &str| {
            get(s, k).is_some_and(|v| {
                v.as_str().is_none_or(|t| !t.is_empty())
                    && v.as_object().is_none_or(|m| !m.is_empty())
            })
        };
        for (key, name) in [
            ("id", "id"),
            ("additionalItems", "additionalItems"),
            ("patternProperties", "patternProperties"),
            ("definitions", "definitions"),
            ("dependencies", "dependencies"),
            ("$ref", "$ref"),
        ] {
            if not_empty(key) {
                errs.push(FieldError::forbidden(
                    format!("{path}.{key}"),
                    format!("{name} is not supported"),
                ));
            }
        }
        if kind == "null" {
            errs.push(FieldError::forbidden(
                format!("{path}.type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if s.get("items")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            errs.push(FieldError::forbidden(
                format!("{path}.items"),
                "items must be a schema object and not an array",
            ));
        }
        if self.inside_meta && flag(s, "x-kubernetes-embedded-resource") {
            errs.push(FieldError::forbidden(
                format!("{path}.x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
    }
}

/// A version's (or the top-level) `schema` at `base` (`spec.validation`,
/// `spec.versions[0].schema`), with `status` telling whether the status subresource is served.
pub(super) fn validate_validation(
    validation: &Value,
    status: bool,
    opts: &SchemaOptions,
    base: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(schema) = get(validation, "openAPIV3Schema") else {
        return errs;
    };
    let root = format!("{base}.openAPIV3Schema");
    if status {
        errs.extend(root_with_status(schema, &root));
    }
    if flag(schema, "nullable") {
        errs.push(FieldError::forbidden(
            format!("{root}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let ctx = Context {
        allow_defaults: true,
        disallow_reason: String::new(),
        inside_meta: false,
    };
    walk(schema, &root, &ctx, true, opts, &mut errs);
    match structural::unsupported(schema) {
        // Generic validation has said why already; upstream hides this then.
        Some(why) if errs.is_empty() => errs.push(FieldError::invalid(&root, "", why)),
        Some(_) => {}
        None => {
            let structural = structural::validate(schema, &root);
            // TODO(defaults): upstream then checks each `default` against its schema
            // (structuraldefaulting.ValidateDefaults: validates, prunes, no metadata); that
            // needs the value validator of registry/schema.
            let compiles = structural.is_empty() && errs.is_empty();
            errs.extend(structural);
            // Rules are compiled once the schema is structural, as upstream does.
            if compiles {
                errs.extend(crate::registry::cel::compile_errors(schema, &root));
            }
        }
    }
    errs
}

/// With the status subresource only an object type and some keywords may be at the root.
fn root_with_status(schema: &Value, root: &str) -> Option<FieldError> {
    let allowed: Vec<&str> = ROOT_FIELDS.iter().filter_map(|(_, go)| *go).collect();
    for (key, go) in ROOT_FIELDS {
        let Some(v) = get(schema, key) else {
            continue;
        };
        let zero = match v {
            Value::Bool(b) => !b,
            Value::String(t) => t.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(m) => m.is_empty() && *key != "items",
            _ => false,
        };
        if zero {
            continue;
        }
        if *key == "type" {
            if v != "object" {
                return Some(FieldError::invalid(
                    format!("{root}.type"),
                    v.clone(),
                    "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                ));
            }
            continue;
        }
        if go.is_none() {
            return Some(FieldError::invalid(
                root,
                schema.clone(),
                format!(
                    "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                    allowed.join(" ")
                ),
            ));
        }
    }
    None
}

/// Upstream's ValidateCustomResourceDefinitionOpenAPISchema: one node and everything under it.
fn walk(
    s: &Value,
    path: &str,
    ctx: &Context,
    is_root: bool,
    opts: &SchemaOptions,
    errs: &mut Vec<FieldError>,
) {
    if !s.is_object() {
        return;
    }
    ctx.check(s, path, opts, errs);
    if flag(s, "uniqueItems") {
        errs.push(FieldError::forbidden(
            format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let properties = get(s, "properties").and_then(Value::as_object);
    if let Some(extra) = get(s, "additionalProperties") {
        if properties.is_some_and(|p| !p.is_empty()) && (extra == false || extra.is_object()) {
            errs.push(FieldError::forbidden(
                format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ctx.inside_meta {
            ctx.forbidding_defaults("inside additionalProperties applying to object metadata")
        } else {
            ctx.clone()
        };
        walk(
            extra,
            &format!("{path}.additionalProperties"),
            &sub,
            false,
            opts,
            errs,
        );
    }
    let embedded = flag(s, "x-kubernetes-embedded-resource");
    for (k, child) in properties.into_iter().flatten() {
        let mut sub = ctx.clone();
        if (is_root || embedded) && META_FIELDS.contains(&k.as_str()) {
            sub.inside_meta = true;
            if is_root {
                sub = sub.forbidding_defaults(&format!("in top-level {k}"));
            }
        }
        walk(
            child,
            &format!("{path}.properties[{k}]"),
            &sub,
            false,
            opts,
            errs,
        );
    }
    if let Some(not) = get(s, "not") {
        walk(not, &format!("{path}.not"), ctx, false, opts, errs);
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        for (i, sub) in items(s, key).iter().enumerate() {
            walk(sub, &format!("{path}.{key}[{i}]"), ctx, false, opts, errs);
        }
    }
    for (k, sub) in get(s, "definitions")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        walk(
            sub,
            &format!("{path}.definitions[{k}]"),
            ctx,
            false,
            opts,
            errs,
        );
    }
    match get(s, "items") {
        Some(Value::Array(list)) => {
            for (i, sub) in list.iter().enumerate() {
                walk(sub, &format!("{path}.items[{i}]"), ctx, false, opts, errs);
            }
        }
        Some(item) => walk(item, &format!("{path}.items"), ctx, false, opts, errs),
        None => {}
    }
    for (k, sub) in get(s, "dependencies")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        walk(
            sub,
            &format!("{path}.dependencies[{k}]"),
            ctx,
            false,
            opts,
            errs,
        );
    }
    if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(FieldError::invalid(
            format!("{path}.x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    list_and_map_types(s, path, opts, errs);
    errs.extend(x_validations(s, path, is_root));
    if opts.map_list_keys_map_set {
        errs.extend(map_list_keys_map_set(s, path));
    }
}

/// `x-kubernetes-validations` of one node: the shape of each rule.
///
/// The rules themselves are compiled by `registry::cel` once the whole schema is structural
/// (`validate_validation`).
fn x_validations(s: &Value, path: &str, _is_root: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let newline = |t: &str| t.contains(['\n', '\r']);
    for (i, rule) in items(s, "x-kubernetes-validations").iter().enumerate() {
        let at = |k: &str| format!("{path}.x-kubernetes-validations[{i}].{k}");
        let (text_rule, message) = (text(rule, "rule"), text(rule, "message"));
        let (trimmed_rule, trimmed_msg) = (text_rule.trim(), message.trim());
        if trimmed_rule.is_empty() {
            errs.push(FieldError::required(at("rule"), "rule is not specified"));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            errs.push(FieldError::invalid(
                at("message"),
                message,
                "message must be non-empty if specified",
            ));
        } else if newline(trimmed_msg) {
            errs.push(FieldError::invalid(
                at("message"),
                message,
                "message must not contain line breaks",
            ));
        } else if newline(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(FieldError::required(
                at("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
    }
    errs
}
