//! Upstream's ValidateCustomResourceDefinition and …Update over the internal view: metadata
//! name `PLURAL.GROUP`, group, scope, versions (DNS-1035 names, unique, exactly one storage
//! version), names, required schemas, the status' accepted and stored names, the
//! `api-approved.kubernetes.io` annotation of protected groups, and what an update may not
//! change. Schemas are `schema`'s, subresources, columns, selectable fields and conversion
//! `parts`'.

use serde_json::{json, Value};

use super::parts;
use super::schema::{self, SchemaOptions};
use super::view::{flag, get, schema_has, str_list, strings, text, Hoisted, View};
use crate::registry::field::FieldError;
use crate::registry::meta;
use crate::registry::names::{subdomain_errors, NameRule};
use crate::registry::rules::{max_len_error, regex_error};

pub(super) const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";
const SCOPES: &[&str] = &["Cluster", "Namespaced"];

/// Upstream's IsDNS1035Label problems (empty when `s` is one).
pub(super) fn dns1035_errors(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push(max_len_error(63));
    }
    let ok = s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok {
        out.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            "[a-z]([-a-z0-9]*[a-z0-9])?",
            &["my-name", "abc-123"],
        ));
    }
    out
}

/// What validation may demand of a spec. A create demands everything; an update relaxes a
/// rule the stored object already breaks (upstream's ratcheting).
#[derive(Debug, Clone, Copy)]
pub(super) struct Options {
    pub schema: SchemaOptions,
    pub require_openapi_schema: bool,
    pub recognized_review_version: bool,
    /// Established CRDs keep their scope and kind.
    pub immutable_names: bool,
}

impl Options {
    pub fn create() -> Self {
        Options {
            schema: SchemaOptions::strict(),
            require_openapi_schema: true,
            recognized_review_version: true,
            immutable_names: false,
        }
    }

    /// The options of an update of `old`.
    pub fn update(old: &Value) -> Self {
        let view = View::new(old);
        let conversion = view.spec.get("conversion");
        let review_versions = conversion
            .and_then(|c| c.pointer("/webhook/conversionReviewVersions"))
            .map(|v| str_list(Some(v)))
            .unwrap_or_default();
        Options {
            schema: SchemaOptions::relaxed_by(&view.schemas()),
            // Stored CRDs that lack a schema somewhere may be updated without adding one.
            require_openapi_schema: (0..view.versions.len()).all(|i| view.schema_for(i).is_some()),
            recognized_review_version: conversion.is_none()
                || review_versions.is_empty()
                || review_versions
                    .iter()
                    .any(|v| parts::accepted_review_version(v)),
            immutable_names: super::naming::is_condition_true(old, "Established"),
        }
    }
}

/// A new CRD (upstream's ValidateCustomResourceDefinition).
pub(super) fn validate_create(obj: &Value) -> Vec<FieldError> {
    let view = View::new(obj);
    let mut errs = metadata(obj, &view);
    errs.extend(validate_spec(&view, &Options::create()));
    errs.extend(validate_status(obj));
    errs.extend(stored_versions(obj, &view));
    errs.extend(api_approval(obj, None));
    errs.extend(preserve_unknown_fields(&view, None));
    errs
}

/// An update of the main resource (upstream's ValidateCustomResourceDefinitionUpdate; the
/// ObjectMeta update rules run before it in `registry::WithMeta`).
pub(super) fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let (view, old_view) = (View::new(new), View::new(old));
    let opts = Options::update(old);
    let mut errs = validate_spec(&view, &opts);
    let (spec, old_spec) = (view.spec, old_view.spec);
    let mut immutable = |path: &str, new: Option<&Value>, old: Option<&Value>| {
        let shown = |v: Option<&Value>| v.cloned().unwrap_or(json!(""));
        if shown(new) != shown(old) {
            errs.push(FieldError::invalid(path, shown(new), "field is immutable"));
        }
    };
    if opts.immutable_names {
        immutable("spec.scope", spec.get("scope"), old_spec.get("scope"));
        immutable(
            "spec.names.kind",
            spec.pointer("/names/kind"),
            old_spec.pointer("/names/kind"),
        );
    }
    immutable("spec.group", spec.get("group"), old_spec.get("group"));
    immutable(
        "spec.names.plural",
        spec.pointer("/names/plural"),
        old_spec.pointer("/names/plural"),
    );
    errs.extend(validate_status(new));
    errs.extend(stored_versions(new, &view));
    errs.extend(api_approval(new, Some(old)));
    errs.extend(preserve_unknown_fields(&view, Some(&old_view)));
    errs
}

/// An update through `status` (upstream's ValidateUpdateCustomResourceDefinitionStatus).
pub(super) fn validate_status_update(new: &Value) -> Vec<FieldError> {
    validate_status(new)
}

/// ObjectMeta with the CRD's name rule: a DNS subdomain that is `spec.names.plural+"."+spec.group`.
fn metadata(obj: &Value, view: &View) -> Vec<FieldError> {
    let mut errs = meta::validate(obj, NameRule::Subdomain);
    let required = format!(
        "{}.{}",
        text(view.spec.get("names").unwrap_or(&Value::Null), "plural"),
        text(view.spec, "group")
    );
    const MISMATCH: &str = "must be spec.names.plural+\".\"+spec.group";
    let meta_text = |k: &str| {
        obj.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    for key in ["generateName", "name"] {
        let value = meta_text(key);
        if value.is_empty() || value == required {
            continue;
        }
        let path = format!("metadata.{key}");
        // After the syntax errors of the same field, as upstream's name function lists them.
        let at = errs
            .iter()
            .rposition(|e| e.field == path)
            .map(|i| i + 1)
            .or_else(|| {
                (key == "name").then(|| {
                    errs.iter()
                        .rposition(|e| e.field == "metadata.generateName")
                        .map_or(0, |i| i + 1)
                })
            })
            .unwrap_or(0);
        errs.insert(at, FieldError::invalid(path, value, MISMATCH));
    }
    errs
}

/// The spec (upstream's validateCustomResourceDefinitionSpec).
fn validate_spec(view: &View, opts: &Options) -> Vec<FieldError> {
    let spec = view.spec;
    let mut errs = Vec::new();
    let group = text(spec, "group");
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else if let problems @ [_, ..] = subdomain_errors(group).as_slice() {
        errs.push(FieldError::invalid("spec.group", group, problems.join(",")));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    }
    match text(spec, "scope") {
        "" => errs.push(FieldError::required("spec.scope", "")),
        s if SCOPES.contains(&s) => {}
        s => errs.push(FieldError::not_supported("spec.scope", s, SCOPES)),
    }

    let preserve = view.preserve_unknown_fields();
    let top_schema = view
        .top(Hoisted::Schema)
        .and_then(|s| get(s, "openAPIV3Schema"));
    if top_schema.is_none() {
        for (i, v) in view.versions.iter().enumerate() {
            let missing = view
                .own(i, Hoisted::Schema)
                .and_then(|s| get(s, "openAPIV3Schema"))
                .is_none();
            let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
            if opts.require_openapi_schema && missing {
                errs.push(FieldError::required(path, "schemas are required"));
            } else if !opts.require_openapi_schema && !preserve && missing && flag(v, "served") {
                errs.push(FieldError::required(
                    path,
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    let has_defaults = view
        .schemas()
        .iter()
        .any(|s| schema_has(s, &|n| get(n, "default").is_some()));
    if has_defaults && preserve {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            true,
            "must be false in order to use defaults in the schema",
        ));
    }

    let mut storage = 0;
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    for (i, v) in view.versions.iter().enumerate() {
        let name = text(v, "name");
        if flag(v, "storage") {
            storage += 1;
        }
        if seen.contains(&name) {
            unique = false;
        } else {
            seen.push(name);
        }
        if let problems @ [_, ..] = dns1035_errors(name).as_slice() {
            errs.push(FieldError::invalid(
                format!("spec.versions[{i}].name"),
                name,
                problems.join(","),
            ));
        }
        errs.extend(validate_version(view, i, opts));
    }
    let versions = Value::Array(view.internal_versions());
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions.clone(),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions,
            "must have exactly one version marked as storage version",
        ));
    }
    // The internal spec.version is the first version's name, checked again on its own.
    if let Some(first) = view.versions.first().map(|v| text(v, "name")) {
        if let problems @ [_, ..] = dns1035_errors(first).as_slice() {
            if !first.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.version",
                    first,
                    problems.join(","),
                ));
            }
        }
    }

    let names = spec.get("names").cloned().unwrap_or(json!({}));
    for key in ["plural", "singular", "kind", "listKind"] {
        if text(&names, key).is_empty() {
            errs.push(FieldError::required(format!("spec.names.{key}"), ""));
        }
    }
    errs.extend(validate_names(&names, "spec.names"));

    if let Some(top) = view.top(Hoisted::Schema) {
        errs.extend(schema::validate_validation(
            top,
            view.any_status(),
            &opts.schema,
            Hoisted::Schema.top_path(),
        ));
    }
    if let Some(top) = view.top(Hoisted::Subresources) {
        errs.extend(parts::subresources(top, Hoisted::Subresources.top_path()));
    }
    if let Some(top) = view.top(Hoisted::Columns) {
        errs.extend(parts::columns(top, Hoisted::Columns.top_path()));
    }
    if let Some(top) = view.top(Hoisted::SelectableFields) {
        errs.extend(parts::selectable_fields(
            top,
            view.schema_for(0),
            Hoisted::SelectableFields.top_path(),
        ));
    }

    let conversion = spec.get("conversion").filter(|c| c.is_object());
    if let Some(c) = conversion {
        let strategy = text(c, "strategy");
        if strategy != "None" && preserve {
            errs.push(FieldError::invalid(
                "spec.conversion.strategy",
                strategy,
                "must be None if spec.preserveUnknownFields is true",
            ));
        }
        errs.extend(parts::conversion(c, opts.recognized_review_version));
    }
    errs
}

/// One version's own fields (upstream's validateCustomResourceDefinitionVersion).
fn validate_version(view: &View, i: usize, opts: &Options) -> Vec<FieldError> {
    let v = &view.versions[i];
    let base = format!("spec.versions[{i}]");
    let mut errs = parts::deprecation_warning(v, &base);
    if let Some(s) = view.own(i, Hoisted::Schema) {
        errs.extend(schema::validate_validation(
            s,
            view.status_enabled(i),
            &opts.schema,
            &format!("{base}.schema"),
        ));
    }
    if let Some(s) = view.own(i, Hoisted::Subresources) {
        errs.extend(parts::subresources(s, &format!("{base}.subresources")));
    }
    if let Some(c) = view.own(i, Hoisted::Columns) {
        errs.extend(parts::columns(
            c,
            &format!("{base}.additionalPrinterColumns"),
        ));
    }
    if let Some(f) = view.own(i, Hoisted::SelectableFields) {
        errs.extend(parts::selectable_fields(
            f,
            view.schema_for(i),
            &format!("{base}.selectableFields"),
        ));
    }
    errs
}

/// Names in the spec or the status (upstream's ValidateCustomResourceDefinitionNames).
pub(super) fn validate_names(names: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let joined = |s: &str| dns1035_errors(s).join(",");
    for key in ["plural", "singular"] {
        let value = text(names, key);
        if !value.is_empty() && !dns1035_errors(value).is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.{key}"),
                value,
                joined(value),
            ));
        }
    }
    for key in ["kind", "listKind"] {
        let value = text(names, key);
        let lower = value.to_lowercase();
        if !value.is_empty() && !dns1035_errors(&lower).is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.{key}"),
                value,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    joined(&lower)
                ),
            ));
        }
    }
    for (i, short) in strings(names, "shortNames").into_iter().enumerate() {
        if !dns1035_errors(short).is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.shortNames[{i}]"),
                short,
                joined(short),
            ));
        }
    }
    let kind = text(names, "kind");
    if !kind.is_empty() && kind == text(names, "listKind") {
        errs.push(FieldError::invalid(
            format!("{path}.listKind"),
            kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in strings(names, "categories").into_iter().enumerate() {
        if !dns1035_errors(category).is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.categories[{i}]"),
                category,
                joined(category),
            ));
        }
    }
    errs
}

/// The status: its accepted names follow the same syntax.
fn validate_status(obj: &Value) -> Vec<FieldError> {
    let names = obj
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or(json!({}));
    validate_names(&names, "status.acceptedNames")
}

/// `status.storedVersions`: not empty, holding the storage version, all of them in the spec.
fn stored_versions(obj: &Value, view: &View) -> Vec<FieldError> {
    const PATH: &str = "status.storedVersions";
    let stored = str_list(obj.pointer("/status/storedVersions"));
    if stored.is_empty() {
        return vec![FieldError::invalid(
            PATH,
            json!([]),
            "must have at least one stored version",
        )];
    }
    let mut errs = Vec::new();
    let names: Vec<&str> = view.versions.iter().map(|v| text(v, "name")).collect();
    for (v, internal) in view.versions.iter().zip(view.internal_versions()) {
        let name = text(v, "name");
        if flag(v, "storage") && !stored.contains(&name) {
            errs.push(FieldError::invalid(
                PATH,
                internal,
                format!("must have the storage version {name}"),
            ));
        }
    }
    for (i, s) in stored.iter().enumerate() {
        // A repeated entry is reported once, at its last index.
        let last = stored.iter().rposition(|x| x == s) == Some(i);
        if last && !names.contains(s) {
            errs.push(FieldError::invalid(
                format!("{PATH}[{i}]"),
                *s,
                "must appear in spec.versions",
            ));
        }
    }
    errs
}

/// Upstream's IsProtectedCommunityGroup.
fn protected_group(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|d| group == *d || group.ends_with(&format!(".{d}")))
}

/// The state of the approval annotation, as upstream's GetAPIApprovalState.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Approval {
    Invalid(String),
    Approved(String),
    Bypassed(String),
    Missing(String),
}

pub(super) fn approval_state(obj: &Value) -> Approval {
    let value = obj
        .pointer(&format!("/metadata/annotations/{APPROVAL_ANNOTATION}"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if value.is_empty() {
        return Approval::Missing(format!(
            "protected groups must have approval annotation {APPROVAL_ANNOTATION:?}, see https://github.com/kubernetes/enhancements/pull/1111"
        ));
    }
    if value.starts_with("unapproved") {
        return Approval::Bypassed(format!("not approved: {value:?}"));
    }
    // url.ParseRequestURI: an absolute URL with a scheme and a host.
    let url_like = value.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !rest.is_empty()
            && !rest.starts_with('/')
    });
    if url_like {
        Approval::Approved(format!("approved in {value}"))
    } else {
        Approval::Invalid(format!(
            "protected groups must have approval annotation {APPROVAL_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
        ))
    }
}

/// Protected groups (`*.k8s.io`, `*.kubernetes.io`) need the approval annotation, unless an
/// update leaves its state as it was.
fn api_approval(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let group = new
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !protected_group(group) {
        return Vec::new();
    }
    let state = approval_state(new);
    if old.is_some_and(|o| approval_state(o) == state) {
        return Vec::new();
    }
    let path = format!("metadata.annotations[{APPROVAL_ANNOTATION}]");
    let value = new
        .pointer(&format!("/metadata/annotations/{APPROVAL_ANNOTATION}"))
        .and_then(Value::as_str)
        .unwrap_or("");
    match state {
        Approval::Missing(reason) => vec![FieldError::required(path, reason)],
        Approval::Invalid(reason) => vec![FieldError::invalid(path, value, reason)],
        Approval::Approved(_) | Approval::Bypassed(_) => Vec::new(),
    }
}

/// v1 CRDs may not turn `spec.preserveUnknownFields` on (stored ones that have it keep it).
fn preserve_unknown_fields(view: &View, old: Option<&View>) -> Vec<FieldError> {
    if old.is_some_and(View::preserve_unknown_fields) || !view.preserve_unknown_fields() {
        return Vec::new();
    }
    vec![FieldError::invalid(
        "spec.preserveUnknownFields",
        true,
        "cannot set to true, set x-preserve-unknown-fields to true in spec.versions[*].schema instead",
    )]
}
