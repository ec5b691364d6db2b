//! From a request body to an object of the endpoint's kind: the kind and apiVersion checks,
//! decoding through the kind's type with `fieldValidation`, and the name and namespace the URL
//! gives the object. Every handler that takes an object in its body uses it.

use serde_json::Value;
use tinykube_proto::quantity::Quantity;
use tinykube_proto::registry::ResourceInfo;

use super::Ctx;
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::object::{self, meta_mut};
use crate::request::{body_format, decode_object_body, BodyFormat};

/// How unknown fields are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    pub(super) fn parse(v: Option<&str>) -> ApiResult<Self> {
        match v {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(ApiError::BadRequest(format!(
                "fieldValidation parameter unsupported: {other:?}"
            ))),
        }
    }
}

/// Group and kind of the schema a body is checked against.
fn schema_of(info: &ResourceInfo) -> (&'static str, &'static str) {
    (info.group, info.kind)
}

/// Quantity fields that YAML often writes as numbers (`cpu: 1`): upstream accepts them, the
/// typed decoder wants strings; and upstream keeps every quantity in its canonical form
/// (`0.5` is served as `500m`, `1024Mi` as `1Gi`).
const QUANTITY_MAPS: &[&str] = &["limits", "requests", "capacity", "allocatable", "overhead"];
/// The same in LimitRanges and ResourceQuotas only (a CRD's `default` is any value).
const QUOTA_MAPS: &[&str] = &[
    "default",
    "defaultRequest",
    "max",
    "min",
    "maxLimitRequestRatio",
    "hard",
    "used",
];

/// A quantity in its canonical string form; a value that is not one is left for validation.
fn canonical_quantity(val: &mut Value) {
    if let Value::Number(n) = val {
        *val = Value::String(n.to_string());
    }
    if let Some(q) = val.as_str().and_then(|s| Quantity::parse(s).ok()) {
        *val = Value::String(q.to_string());
    }
}

fn stringify_quantities(v: &mut Value, extra: &[&str]) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                if QUANTITY_MAPS.contains(&k.as_str()) || extra.contains(&k.as_str()) {
                    if let Value::Object(q) = child {
                        q.values_mut().for_each(canonical_quantity);
                    }
                } else if k == "sizeLimit" {
                    if let Value::Number(n) = child {
                        *child = Value::String(n.to_string());
                    }
                }
                stringify_quantities(child, extra);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| stringify_quantities(x, extra)),
        _ => {}
    }
}

/// An HPA's metric targets and current values (`target.averageValue: 100`, as YAML writes
/// it) are quantities too.
fn stringify_metric_values(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                if let ("target" | "current", Value::Object(t)) = (k.as_str(), &mut *child) {
                    for field in ["value", "averageValue"] {
                        if let Some(q) = t.get_mut(field) {
                            canonical_quantity(q);
                        }
                    }
                }
                stringify_metric_values(child);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(stringify_metric_values),
        _ => {}
    }
}

/// Check a body's kind and apiVersion (defaulting them from the endpoint), decode it through
/// its type, and apply `fieldValidation` to unknown fields. Returns the object in stored form
/// and the warnings for the client.
pub(super) fn admit_body(
    info: &ResourceInfo,
    mut raw: Value,
    validation: FieldValidation,
) -> ApiResult<(Value, Vec<String>)> {
    let api_version = info.api_version();
    {
        let map = raw
            .as_object_mut()
            .ok_or_else(|| ApiError::BadRequest("body is not an object".into()))?;
        match map.get("apiVersion").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("apiVersion".into(), api_version.clone().into());
            }
            Some(v) if v == api_version => {}
            Some(v) => {
                return Err(ApiError::BadRequest(format!(
                    "the API version in the data ({v}) does not match the expected API version ({api_version})"
                )))
            }
        }
        match map.get("kind").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("kind".into(), info.kind.into());
            }
            Some(k) if k == info.kind => {}
            Some(k) => {
                return Err(ApiError::BadRequest(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    info.kind
                )))
            }
        }
    }
    let (group, kind) = schema_of(info);
    let cannot = |detail: String| {
        ApiError::BadRequest(format!(
            "{kind} in version {:?} cannot be handled as a {kind}: {detail}",
            info.version
        ))
    };
    let (normalized, unknown) = match &info.custom {
        // A custom resource's schema prunes what it does not declare.
        Some(custom) => {
            let mut pruned = raw;
            let unknown = match custom.schema() {
                Some(schema) => crate::registry::schema::prune(schema, &mut pruned),
                None => Vec::new(),
            };
            (pruned, unknown)
        }
        None => {
            let extra = match (group, kind) {
                ("", "LimitRange" | "ResourceQuota") => QUOTA_MAPS,
                _ => &[],
            };
            stringify_quantities(&mut raw, extra);
            if (group, kind) == ("autoscaling", "HorizontalPodAutoscaler") {
                stringify_metric_values(&mut raw);
            }
            let normalized =
                tinykube_proto::typed::normalize_version(group, info.version, kind, &raw)
                    .map_err(|e| cannot(e.to_string()))?;
            let unknown = tinykube_proto::typed::unknown_fields(&raw, &normalized);
            (normalized, unknown)
        }
    };
    let mut warnings = Vec::new();
    if !unknown.is_empty() {
        let described: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field {f:?}"))
            .collect();
        match validation {
            FieldValidation::Strict => {
                return Err(cannot(format!(
                    "strict decoding error: {}",
                    described.join(", ")
                )))
            }
            FieldValidation::Warn => warnings = described,
            FieldValidation::Ignore => {}
        }
    }
    Ok((convert::incoming(info, normalized), warnings))
}

/// The object's namespace must be the request's (or unset, and then it is set).
pub(super) fn place_in_namespace(ctx: &Ctx, obj: &mut Value) -> ApiResult<()> {
    let meta = meta_mut(obj);
    if ctx.target.info.namespaced {
        let ns = ctx
            .target
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        match meta.get("namespace").and_then(Value::as_str) {
            Some(given) if !given.is_empty() && given != ns => {
                return Err(ApiError::BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request".into(),
                ))
            }
            _ => {
                meta.insert("namespace".into(), ns.into());
            }
        }
    } else {
        meta.remove("namespace");
    }
    Ok(())
}

/// The object's name must be the URL's, as upstream's checkName requires of an update's body and
/// of a patched object: none is "undeterminable", another one does not match.
pub(super) fn check_name(obj: &Value, name: &str) -> ApiResult<()> {
    match object::name(obj) {
        "" => Err(ApiError::BadRequest(format!(
            "the name of the object ({name} based on URL) was undeterminable: name must be provided"
        ))),
        n if n != name => Err(ApiError::BadRequest(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        ))),
        _ => Ok(()),
    }
}

/// An applied configuration's name must be the URL's (or unset, and then it is set).
pub(super) fn name_as_on_url(obj: &mut Value, name: &str) -> ApiResult<()> {
    match object::meta_str(obj, "name") {
        Some(n) if !n.is_empty() && n != name => Err(ApiError::BadRequest(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        ))),
        _ => {
            meta_mut(obj).insert("name".into(), name.into());
            Ok(())
        }
    }
}

/// All media types an object body may come in.
pub(super) const OBJECT_TYPES: &str =
    "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// The format of a request whose body is a whole object (JSON, YAML or protobuf; a patch type
/// is a 415 naming `supported`).
pub(super) fn object_format(ctx: &Ctx, supported: &str) -> ApiResult<BodyFormat> {
    let format = body_format(&ctx.headers)?;
    // Custom resources have no protobuf encoding, as upstream's.
    if ctx.target.info.custom.is_some() && matches!(format, BodyFormat::Protobuf) {
        return Err(ApiError::UnsupportedMediaType(
            "application/json, application/yaml".into(),
        ));
    }
    if matches!(
        format,
        BodyFormat::Json | BodyFormat::Yaml | BodyFormat::Protobuf
    ) {
        Ok(format)
    } else {
        Err(ApiError::UnsupportedMediaType(supported.into()))
    }
}

/// The request object of a subresource POST (a Binding, an Eviction): JSON, YAML or protobuf,
/// checked as `kind_info`'s kind with unknown fields ignored; `expected` names it in errors.
pub(super) fn decode_as(
    ctx: &Ctx,
    body: &[u8],
    kind_info: &ResourceInfo,
    expected: &str,
) -> ApiResult<Value> {
    let format = object_format(ctx, "application/json, application/yaml")?;
    let raw = decode_object_body(body, format, expected)?;
    Ok(admit_body(kind_info, raw, FieldValidation::Ignore)?.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hpa_metric_values_written_as_numbers_are_quantities() {
        let mut hpa = serde_json::json!({"spec": {"metrics": [
            {"type": "Pods", "pods": {"metric": {"name": "rps"},
                "target": {"type": "AverageValue", "averageValue": 100}}},
            {"type": "Resource", "resource": {"name": "memory",
                "target": {"type": "AverageValue", "averageValue": "1024Mi"}}},
            {"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}},
        ]}});
        stringify_metric_values(&mut hpa);
        let m = &hpa["spec"]["metrics"];
        assert_eq!(m[0]["pods"]["target"]["averageValue"], "100");
        assert_eq!(m[1]["resource"]["target"]["averageValue"], "1Gi");
        assert_eq!(m[2]["resource"]["target"]["averageUtilization"], 50);
    }

    #[test]
    fn names_are_checked_as_upstreams_check_name() {
        let cases = [
            (json!({"metadata": {"name": "web"}}), None),
            (
                json!({"metadata": {"name": "other"}}),
                Some("the name of the object (other) does not match the name on the URL (web)"),
            ),
            (
                json!({"metadata": {}}),
                Some("the name of the object (web based on URL) was undeterminable: name must be provided"),
            ),
            (
                json!({"kind": "Deployment"}),
                Some("the name of the object (web based on URL) was undeterminable: name must be provided"),
            ),
        ];
        for (obj, want) in cases {
            match (check_name(&obj, "web"), want) {
                (Ok(()), None) => {}
                (Err(ApiError::BadRequest(m)), Some(w)) => assert_eq!(m, w),
                (other, _) => panic!("{obj}: {other:?}"),
            }
        }
    }
}
