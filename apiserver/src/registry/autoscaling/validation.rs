//! Upstream's autoscaling validation of a HorizontalPodAutoscaler spec (in its v2 shape, which
//! is also what a v1 object is checked as): replica bounds, the scale target reference, each
//! metric source and its target, and the behavior's scaling rules and policies.

use serde_json::Value;
use tinykube_proto::quantity::Quantity;

use crate::registry::field::FieldError;
use crate::registry::names::label_errors;
use crate::registry::rules::path_segment_name;

/// The largest scaling policy period.
pub const MAX_PERIOD_SECONDS: i64 = 1800;
/// The largest stabilization window.
pub const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;

const METRIC_SOURCE_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
const SELECT_POLICIES: &[&str] = &["Disabled", "Max", "Min"];
const POLICY_TYPES: &[&str] = &["Percent", "Pods"];

fn int(v: Option<&Value>) -> Option<i64> {
    v.and_then(Value::as_i64)
}

fn text(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

/// A set field (`null` reads as absent, as a nil pointer).
fn present<'a>(obj: &'a Value, name: &str) -> Option<&'a Value> {
    obj.get(name).filter(|v| !v.is_null())
}

/// The spec's errors; `min_replicas_floor` is 1 (0 when the stored object already allowed
/// scaling to zero, as upstream lets an update keep it).
pub fn spec(spec: &Value, min_replicas_floor: i64) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let min = int(present(spec, "minReplicas"));
    let max = int(spec.get("maxReplicas")).unwrap_or(0);
    if let Some(min) = min.filter(|m| *m < min_replicas_floor) {
        errs.push(FieldError::invalid(
            "spec.minReplicas",
            min,
            format!("must be greater than or equal to {min_replicas_floor}"),
        ));
    }
    if max < 1 {
        errs.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|m| max < m) {
        errs.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    errs.extend(object_reference(
        spec.get("scaleTargetRef"),
        "spec.scaleTargetRef",
    ));
    errs.extend(metrics(spec.get("metrics"), min));
    if let Some(behavior) = present(spec, "behavior") {
        for side in ["scaleUp", "scaleDown"] {
            if let Some(rules) = present(behavior, side) {
                errs.extend(scaling_rules(rules, &format!("spec.behavior.{side}")));
            }
        }
    }
    errs
}

/// Upstream's ValidateCrossVersionObjectReference.
fn object_reference(reference: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for field in ["kind", "name"] {
        let value = text(reference.and_then(|r| r.get(field)));
        let at = format!("{path}.{field}");
        if value.is_empty() {
            errs.push(FieldError::required(at, ""));
        } else {
            errs.extend(path_segment_name(&at, value));
        }
    }
    errs
}

fn metrics(list: Option<&Value>, min_replicas: Option<i64>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let items = list
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut object_or_external = false;
    for (i, m) in items.iter().enumerate() {
        errs.extend(metric(m, &format!("spec.metrics[{i}]")));
        object_or_external |= matches!(text(m.get("type")), "Object" | "External");
    }
    if min_replicas == Some(0) && !object_or_external {
        errs.push(FieldError::forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    errs
}

/// One metric source: a known type, exactly its own source populated, and that source valid.
fn metric(m: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let kind = text(m.get("type"));
    if kind.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.type"),
            "must specify a metric source type",
        ));
    }
    if !METRIC_SOURCE_TYPES.contains(&kind) {
        errs.push(FieldError::not_supported(
            format!("{path}.type"),
            kind,
            METRIC_SOURCE_TYPES,
        ));
    }
    let sources = [
        "object",
        "external",
        "pods",
        "resource",
        "containerResource",
    ];
    let mut given = Vec::new();
    for source in sources {
        let Some(src) = present(m, source) else {
            continue;
        };
        given.push(source);
        if given.len() == 1 {
            let at = format!("{path}.{source}");
            errs.extend(match source {
                "object" => object_source(src, &at),
                "external" => external_source(src, &at),
                "pods" => pods_source(src, &at),
                "resource" => resource_source(src, &at, false),
                _ => resource_source(src, &at, true),
            });
        }
    }
    let expected = match kind {
        "Object" => Some("object"),
        "Pods" => Some("pods"),
        "Resource" => Some("resource"),
        "External" => Some("external"),
        "ContainerResource" => Some("containerResource"),
        _ => None,
    };
    match expected {
        Some(field) if !given.contains(&field) => errs.push(FieldError::required(
            format!("{path}.{field}"),
            "must populate information for the given metric source",
        )),
        Some(_) => {}
        None => errs.push(FieldError::not_supported(
            format!("{path}.type"),
            kind,
            METRIC_SOURCE_TYPES,
        )),
    }
    if given.len() != 1 {
        for other in given.iter().filter(|g| Some(**g) != expected) {
            errs.push(FieldError::forbidden(
                format!("{path}.{other}"),
                "must populate the given metric source only",
            ));
        }
    }
    errs
}

fn object_source(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = object_reference(
        src.get("describedObject"),
        &format!("{path}.describedObject"),
    );
    errs.extend(metric_identifier(
        src.get("metric"),
        &format!("{path}.metric"),
    ));
    let target = src.get("target");
    errs.extend(metric_target(target, &format!("{path}.target")));
    if target_field(target, "value").is_none() && target_field(target, "averageValue").is_none() {
        errs.push(FieldError::required(
            format!("{path}.target.averageValue"),
            "must set either a target value or averageValue",
        ));
    }
    errs
}

fn external_source(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = metric_identifier(src.get("metric"), &format!("{path}.metric"));
    let target = src.get("target");
    errs.extend(metric_target(target, &format!("{path}.target")));
    let (value, average) = (
        target_field(target, "value"),
        target_field(target, "averageValue"),
    );
    if value.is_none() && average.is_none() {
        errs.push(FieldError::required(
            format!("{path}.target.averageValue"),
            "must set either a target value for metric or a per-pod target",
        ));
    }
    if value.is_some() && average.is_some() {
        errs.push(FieldError::forbidden(
            format!("{path}.target.value"),
            "may not set both a target value for metric and a per-pod target",
        ));
    }
    errs
}

fn pods_source(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = metric_identifier(src.get("metric"), &format!("{path}.metric"));
    let target = src.get("target");
    errs.extend(metric_target(target, &format!("{path}.target")));
    if target_field(target, "averageValue").is_none() {
        errs.push(FieldError::required(
            format!("{path}.target.averageValue"),
            "must specify a positive target averageValue",
        ));
    }
    errs
}

/// A Resource source, or a ContainerResource one (which also names its container).
fn resource_source(src: &Value, path: &str, container: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if text(src.get("name")).is_empty() {
        errs.push(FieldError::required(
            format!("{path}.name"),
            "must specify a resource name",
        ));
    }
    if container {
        let name = text(src.get("container"));
        if name.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.container"),
                "must specify a container",
            ));
        } else {
            for msg in label_errors(name) {
                errs.push(FieldError::invalid(format!("{path}.container"), name, msg));
            }
        }
    }
    let target = src.get("target");
    errs.extend(metric_target(target, &format!("{path}.target")));
    let (utilization, average) = (
        target_field(target, "averageUtilization"),
        target_field(target, "averageValue"),
    );
    if utilization.is_none() && average.is_none() {
        errs.push(FieldError::required(
            format!("{path}.target.averageUtilization"),
            "must set either a target raw value or a target utilization",
        ));
    }
    if utilization.is_some() && average.is_some() {
        errs.push(FieldError::forbidden(
            format!("{path}.target.averageValue"),
            "may not set both a target raw value and a target utilization",
        ));
    }
    errs
}

fn target_field<'a>(target: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    target.and_then(|t| present(t, name))
}

/// A quantity that is not positive (zero or negative), printed as upstream's `String()`.
/// `milli_value` rounds up, so any positive amount reads as at least one milli.
fn not_positive(v: Option<&Value>) -> Option<String> {
    let q = Quantity::parse(v?.as_str()?).ok()?;
    (q.milli_value() <= 0).then(|| q.to_string())
}

fn metric_target(target: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let kind = text(target.and_then(|t| t.get("type")));
    if kind.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.type"),
            "must specify a metric target type",
        ));
    }
    if !matches!(kind, "Utilization" | "Value" | "AverageValue") {
        errs.push(FieldError::invalid(
            format!("{path}.type"),
            kind,
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for field in ["value", "averageValue"] {
        if let Some(shown) = not_positive(target_field(target, field)) {
            errs.push(FieldError::invalid_go(
                format!("{path}.{field}"),
                shown,
                "must be positive",
            ));
        }
    }
    if let Some(u) = int(target_field(target, "averageUtilization")).filter(|u| *u < 1) {
        errs.push(FieldError::invalid(
            format!("{path}.averageUtilization"),
            u,
            "must be greater than 0",
        ));
    }
    errs
}

fn metric_identifier(id: Option<&Value>, path: &str) -> Vec<FieldError> {
    let name = text(id.and_then(|i| i.get("name")));
    if name.is_empty() {
        vec![FieldError::required(
            format!("{path}.name"),
            "must specify a metric name",
        )]
    } else {
        path_segment_name(&format!("{path}.name"), name)
    }
}

fn scaling_rules(rules: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(w) = int(present(rules, "stabilizationWindowSeconds")) {
        if w < 0 {
            errs.push(FieldError::invalid(
                format!("{path}.stabilizationWindowSeconds"),
                w,
                "must be greater than or equal to zero",
            ));
        }
        if w > MAX_STABILIZATION_WINDOW_SECONDS {
            errs.push(FieldError::invalid(
                format!("{path}.stabilizationWindowSeconds"),
                w,
                format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ));
        }
    }
    if let Some(select) = present(rules, "selectPolicy") {
        let select = text(Some(select));
        if !SELECT_POLICIES.contains(&select) {
            errs.push(FieldError::not_supported(
                format!("{path}.selectPolicy"),
                select,
                SELECT_POLICIES,
            ));
        }
    }
    let policies = rules
        .get("policies")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if policies.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, p) in policies.iter().enumerate() {
        let at = format!("{path}.policies[{i}]");
        let kind = text(p.get("type"));
        if !POLICY_TYPES.contains(&kind) {
            errs.push(FieldError::not_supported(
                format!("{at}.type"),
                kind,
                POLICY_TYPES,
            ));
        }
        let value = int(p.get("value")).unwrap_or(0);
        if value <= 0 {
            errs.push(FieldError::invalid(
                format!("{at}.value"),
                value,
                "must be greater than zero",
            ));
        }
        let period = int(p.get("periodSeconds")).unwrap_or(0);
        if period <= 0 {
            errs.push(FieldError::invalid(
                format!("{at}.periodSeconds"),
                period,
                "must be greater than zero",
            ));
        }
        if period > MAX_PERIOD_SECONDS {
            errs.push(FieldError::invalid(
                format!("{at}.periodSeconds"),
                period,
                format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
    errs
}

/// Upstream's ValidateHorizontalPodAutoscalerStatusUpdate: replica counts are not negative.
pub fn status(obj: &Value) -> Vec<FieldError> {
    ["currentReplicas", "desiredReplicas"]
        .iter()
        .filter_map(|name| {
            let v = int(obj.pointer(&format!("/status/{name}")))?;
            (v < 0).then(|| {
                FieldError::invalid(
                    format!("status.{name}"),
                    v,
                    "must be greater than or equal to 0",
                )
            })
        })
        .collect()
}
