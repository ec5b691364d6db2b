//! The smaller parts of a CRD spec, as upstream validates them: a version's
//! `deprecationWarning`, the `status` and `scale` subresources, `additionalPrinterColumns`,
//! `selectableFields` and `conversion` (with its webhook client config).

use serde_json::{json, Value};

use super::spec::dns1035_errors;
use super::view::{flag, get, str_list, text};
use crate::registry::field::FieldError;
use crate::registry::names::subdomain_errors;

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &[&str] = &[
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];
const MAX_SELECTABLE_FIELDS: usize = 8;
/// The ConversionReview versions this server speaks.
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const URL_FORM: &str = "; desired format: https://host[/path]";

/// Upstream's validateSimpleJSONPath.
fn simple_json_path(path: &str, s: &str) -> Option<FieldError> {
    if s.is_empty() {
        Some(FieldError::invalid(path, s, "must not be empty"))
    } else if !s.starts_with('.') {
        Some(FieldError::invalid(
            path,
            s,
            "must be a simple json path starting with .",
        ))
    } else {
        None
    }
}

/// `deprecationWarning` only on deprecated versions, 1 to 256 printable characters.
pub(super) fn deprecation_warning(version: &Value, base: &str) -> Vec<FieldError> {
    let path = format!("{base}.deprecationWarning");
    let Some(warning) = get(version, "deprecationWarning") else {
        return Vec::new();
    };
    let text = warning.as_str().unwrap_or("");
    if !flag(version, "deprecated") {
        return vec![FieldError::invalid(
            path,
            text,
            "can only be set for deprecated versions",
        )];
    }
    let mut problems = Vec::new();
    if text.len() > 256 {
        problems.push("must be <= 256 characters long".to_string());
    }
    if text.is_empty() {
        problems.push("must not be an empty string".to_string());
    }
    // Go's unicode.IsPrint: no control characters and no spacing other than ' '.
    if let Some((i, _)) = text
        .char_indices()
        .find(|(_, c)| c.is_control() || (c.is_whitespace() && *c != ' '))
    {
        problems.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    problems
        .into_iter()
        .map(|m| FieldError::invalid(path.clone(), text, m))
        .collect()
}

/// The `scale` subresource's paths (`status` has no fields).
pub(super) fn subresources(sub: &Value, base: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(scale) = get(sub, "scale") else {
        return errs;
    };
    for (key, prefix, under) in [
        ("specReplicasPath", ".spec.", ".spec"),
        ("statusReplicasPath", ".status.", ".status"),
    ] {
        let path = format!("{base}.scale.{key}");
        let value = text(scale, key);
        if value.is_empty() {
            errs.push(FieldError::required(path, ""));
        } else if let Some(e) = simple_json_path(&path, value) {
            errs.push(e);
        } else if !value.starts_with(prefix) {
            errs.push(FieldError::invalid(
                path,
                value,
                format!("should be a json path under {under}"),
            ));
        }
    }
    let selector = text(scale, "labelSelectorPath");
    if !selector.is_empty() {
        let path = format!("{base}.scale.labelSelectorPath");
        if let Some(e) = simple_json_path(&path, selector) {
            errs.push(e);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errs.push(FieldError::invalid(
                path,
                selector,
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

/// `additionalPrinterColumns` (upstream's ValidateCustomResourceColumnDefinition each).
pub(super) fn columns(list: &Value, base: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, col) in list.as_array().into_iter().flatten().enumerate() {
        let at = |k: &str| format!("{base}[{i}].{k}");
        if text(col, "name").is_empty() {
            errs.push(FieldError::required(at("name"), ""));
        }
        let kind = text(col, "type");
        let one_of = format!("must be one of {COLUMN_TYPES}");
        if kind.is_empty() {
            errs.push(FieldError::required(at("type"), one_of));
        } else if !COLUMN_TYPES.split(',').any(|t| t == kind) {
            errs.push(FieldError::invalid(at("type"), kind, one_of));
        }
        let format = text(col, "format");
        if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
            errs.push(FieldError::invalid(
                at("format"),
                format,
                format!("must be one of {}", COLUMN_FORMATS.join(",")),
            ));
        }
        let json_path = text(col, "jsonPath");
        if json_path.is_empty() {
            errs.push(FieldError::required(at("JSONPath"), ""));
        } else {
            errs.extend(simple_json_path(&at("JSONPath"), json_path));
        }
    }
    errs
}

/// The segments of a selectable field's path (`.spec.a['b']`), or why it is not one.
fn field_path_segments(path: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("['") {
            let end = after
                .find("']")
                .ok_or_else(|| format!("unterminated ['…'] in {path:?}"))?;
            out.push(after[..end].to_string());
            rest = &after[end + 2..];
        } else if rest.starts_with('[') {
            return Err("array notation is not allowed".to_string());
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return Err(format!("empty field name in {path:?}"));
            }
            out.push(after[..end].to_string());
            rest = &after[end..];
        } else {
            return Err(format!(
                "expected [ or . at index {}",
                path.len() - rest.len()
            ));
        }
    }
    if out.is_empty() {
        return Err("must not be empty".to_string());
    }
    Ok(out)
}

/// The schema a field path leads to in `schema`.
fn resolve<'a>(schema: &'a Value, segments: &[String]) -> Option<&'a Value> {
    segments.iter().try_fold(schema, |s, seg| {
        s.get("properties")
            .and_then(|p| p.get(seg))
            .or_else(|| get(s, "additionalProperties").filter(|a| a.is_object()))
    })
}

/// `selectableFields`: at most 8, each a unique path to a string, boolean or integer field
/// outside metadata.
pub(super) fn selectable_fields(
    list: &Value,
    schema: Option<&Value>,
    base: &str,
) -> Vec<FieldError> {
    let fields = list.as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut errs = Vec::new();
    if fields.len() > MAX_SELECTABLE_FIELDS {
        errs.push(FieldError::too_many(
            base,
            fields.len(),
            MAX_SELECTABLE_FIELDS,
        ));
    }
    let mut seen: Vec<Vec<String>> = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let path = format!("{base}[{i}].jsonPath");
        let json_path = text(f, "jsonPath");
        if json_path.is_empty() {
            errs.push(FieldError::required(path, ""));
            continue;
        }
        let found = field_path_segments(json_path).and_then(|segs| {
            let target = schema
                .and_then(|s| resolve(s, &segs))
                .ok_or_else(|| "does not refer to a valid field".to_string())?;
            Ok((segs, target))
        });
        let (segs, target) = match found {
            Ok(x) => x,
            Err(why) => {
                errs.push(FieldError::invalid(
                    path,
                    json_path,
                    format!("is an invalid path: {why}"),
                ));
                continue;
            }
        };
        if segs[0] == "metadata" {
            errs.push(FieldError::invalid(
                &path,
                json_path,
                "must not point to fields in metadata",
            ));
        }
        if !matches!(text(target, "type"), "string" | "boolean" | "integer") {
            errs.push(FieldError::invalid(
                &path,
                json_path,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed",
            ));
        }
        if seen.contains(&segs) {
            errs.push(FieldError::duplicate(path, json_path));
        } else {
            seen.push(segs);
        }
    }
    errs
}

/// A ConversionReview version the API server understands.
pub(super) fn accepted_review_version(v: &str) -> bool {
    REVIEW_VERSIONS.contains(&v)
}

/// `spec.conversion` in the internal shape: `strategy`, `webhookClientConfig` (v1's
/// `webhook.clientConfig`) and `conversionReviewVersions` (v1's
/// `webhook.conversionReviewVersions`).
pub(super) fn conversion(c: &Value, require_recognized: bool) -> Vec<FieldError> {
    const BASE: &str = "spec.conversion";
    let mut errs = Vec::new();
    let strategy = text(c, "strategy");
    match strategy {
        "" => errs.push(FieldError::required(format!("{BASE}.strategy"), "")),
        "None" | "Webhook" => {}
        s => errs.push(FieldError::not_supported(
            format!("{BASE}.strategy"),
            s,
            &["None", "Webhook"],
        )),
    }
    let webhook = get(c, "webhook");
    let client = webhook.and_then(|w| get(w, "clientConfig"));
    let review = str_list(webhook.and_then(|w| w.get("conversionReviewVersions")));
    let client_path = format!("{BASE}.webhookClientConfig");
    if strategy != "Webhook" {
        if client.is_some() {
            errs.push(FieldError::forbidden(
                client_path,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review.is_empty() {
            errs.push(FieldError::forbidden(
                format!("{BASE}.conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        return errs;
    }
    match client {
        None => errs.push(FieldError::required(
            client_path,
            "required when strategy is set to Webhook",
        )),
        Some(cc) => match (get(cc, "url"), get(cc, "service")) {
            (Some(url), None) => errs.extend(webhook_url(
                &format!("{client_path}.url"),
                url.as_str().unwrap_or(""),
            )),
            (None, Some(svc)) => {
                errs.extend(webhook_service(&format!("{client_path}.service"), svc))
            }
            _ => errs.push(FieldError::required(
                client_path,
                "exactly one of url or service is required",
            )),
        },
    }
    errs.extend(review_versions(
        webhook.and_then(|w| w.get("conversionReviewVersions")),
        &review,
        require_recognized,
    ));
    errs
}

/// `conversionReviewVersions`: not empty, unique DNS-1035 labels, one the server speaks.
fn review_versions(
    raw: Option<&Value>,
    versions: &[&str],
    require_recognized: bool,
) -> Vec<FieldError> {
    const PATH: &str = "spec.conversion.conversionReviewVersions";
    if versions.is_empty() {
        return vec![FieldError::required(PATH, "")];
    }
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        if seen.contains(v) {
            errs.push(FieldError::invalid(
                format!("{PATH}[{i}]"),
                *v,
                "duplicate version",
            ));
            continue;
        }
        seen.push(v);
        for m in dns1035_errors(v) {
            errs.push(FieldError::invalid(format!("{PATH}[{i}]"), *v, m));
        }
    }
    if require_recognized && !versions.iter().any(|v| accepted_review_version(v)) {
        errs.push(FieldError::invalid(
            PATH,
            raw.cloned().unwrap_or(json!([])),
            format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

/// Upstream's ValidateWebhookURL with https required.
fn webhook_url(path: &str, url: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (scheme, rest) = match url.split_once(':') {
        Some((s, r)) if !s.contains(['/', '?', '#']) => (s, r),
        _ => ("", url),
    };
    if url.starts_with(':') {
        return vec![FieldError::required(
            path,
            format!("url must be a valid URL: parse {url:?}: missing protocol scheme{URL_FORM}"),
        )];
    }
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = rest
        .strip_prefix("//")
        .map(|a| a.split('/').next().unwrap_or(""))
        .unwrap_or("");
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if !scheme.eq_ignore_ascii_case("https") {
        errs.push(FieldError::invalid(
            path,
            scheme.to_lowercase(),
            format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            host,
            format!("host must be specified{URL_FORM}"),
        ));
    }
    if let Some(u) = user {
        errs.push(FieldError::invalid(
            path,
            u,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// Upstream's ValidateWebhookService. The apiextensions caller passes the service's name and
/// namespace in each other's places, so a missing namespace is reported at `.name` and a
/// missing name at `.namespace` (kubernetes/kubernetes#141353); this keeps that behaviour.
fn webhook_service(path: &str, svc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if text(svc, "namespace").is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    }
    if text(svc, "name").is_empty() {
        errs.push(FieldError::required(format!("{path}.namespace"), ""));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            format!("{path}.port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = get(svc, "path").and_then(Value::as_str) else {
        return errs;
    };
    let at = format!("{path}.path");
    if url_path.is_empty() || url_path == "/" {
        return errs;
    }
    if url_path == "//" {
        errs.push(FieldError::invalid(
            at,
            url_path,
            "segment[0] may not be empty",
        ));
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(&at, url_path, "must start with a '/'"));
    }
    // Upstream drops the first byte whether or not it is the '/'.
    let trimmed = url_path
        .char_indices()
        .nth(1)
        .map_or("", |(i, _)| &url_path[i..]);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &at,
                url_path,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for m in subdomain_errors(step) {
            errs.push(FieldError::invalid(
                &at,
                url_path,
                format!("segment[{i}]: {m}"),
            ));
        }
    }
    errs
}
