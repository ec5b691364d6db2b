//! The autoscaling/v1 view of stored (autoscaling/v2) HorizontalPodAutoscalers, as upstream's
//! v1 conversion: the CPU utilization metric is `spec.targetCPUUtilizationPercentage` and
//! `status.currentCPUUtilizationPercentage`; everything v1 has no field for (other metrics,
//! their current values, conditions, behavior) rides in round-trip annotations, so that an
//! object read and written back through v1 loses nothing.

use serde_json::{json, Map, Value};

/// Other metrics than the CPU utilization one, as v1 MetricSpecs (upstream's v2beta1 shape).
pub const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// `status.currentMetrics`, as v1 MetricStatuses.
pub const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// `status.conditions`.
pub const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// `spec.behavior`, encoded (as upstream does) from its internal type: Go field names.
pub const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const ROUND_TRIP: [&str; 4] = [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR];

/// autoscaling/v1 formerly applied this target in the controller; conversion applies it now.
pub const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// Insert `key` when `value` is set (not absent, not `null`).
fn put(m: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(v) = value.filter(|v| !v.is_null()) {
        m.insert(key.into(), v.clone());
    }
}

fn is_cpu_resource(m: &Value) -> bool {
    m.get("type").and_then(Value::as_str) == Some("Resource")
        && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
}

fn is_cpu_utilization(m: &Value) -> bool {
    is_cpu_resource(m)
        && m.pointer("/resource/target/averageUtilization")
            .is_some_and(|v| !v.is_null())
}

fn list(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A stored v2 object as autoscaling/v1 shows it (type meta is set by the caller).
pub fn to_v1(obj: Value) -> Value {
    let Value::Object(mut out) = obj else {
        return obj;
    };
    let spec = out.remove("spec").unwrap_or(Value::Null);
    let status = out.remove("status").unwrap_or(Value::Null);
    let metrics = list(spec.get("metrics"));
    let current = list(status.get("currentMetrics"));
    let conditions = list(status.get("conditions"));

    let mut annotations: Vec<(String, Value)> = out
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !ROUND_TRIP.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let other: Vec<Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(metric_spec_to_v1)
        .collect();
    let mut add = |key: &str, v: Value| annotations.push((key.into(), v.to_string().into()));
    if !other.is_empty() {
        add(METRICS, Value::Array(other));
    }
    if !current.is_empty() {
        add(
            CURRENT_METRICS,
            current.iter().map(metric_status_to_v1).collect(),
        );
    }
    if let Some(b) = spec.get("behavior").filter(|b| !b.is_null()) {
        add(BEHAVIOR, behavior_to_internal(b));
    }
    if !conditions.is_empty() {
        add(CONDITIONS, Value::Array(conditions.to_vec()));
    }
    annotations.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        if annotations.is_empty() {
            meta.remove("annotations");
        } else {
            meta.insert(
                "annotations".into(),
                Value::Object(annotations.into_iter().collect()),
            );
        }
    }

    let mut v1_spec = Map::new();
    put(&mut v1_spec, "scaleTargetRef", spec.get("scaleTargetRef"));
    put(&mut v1_spec, "minReplicas", spec.get("minReplicas"));
    v1_spec.insert(
        "maxReplicas".into(),
        spec.get("maxReplicas").cloned().unwrap_or(json!(0)),
    );
    if let Some(m) = metrics.iter().find(|m| is_cpu_resource(m)) {
        put(
            &mut v1_spec,
            "targetCPUUtilizationPercentage",
            m.pointer("/resource/target/averageUtilization"),
        );
    }
    out.insert("spec".into(), Value::Object(v1_spec));

    let mut v1_status = Map::new();
    put(
        &mut v1_status,
        "observedGeneration",
        status.get("observedGeneration"),
    );
    put(&mut v1_status, "lastScaleTime", status.get("lastScaleTime"));
    for key in ["currentReplicas", "desiredReplicas"] {
        v1_status.insert(key.into(), status.get(key).cloned().unwrap_or(json!(0)));
    }
    for m in current.iter().filter(|m| is_cpu_resource(m)) {
        put(
            &mut v1_status,
            "currentCPUUtilizationPercentage",
            m.pointer("/resource/current/averageUtilization"),
        );
    }
    out.insert("status".into(), Value::Object(v1_status));
    Value::Object(out)
}

/// An object written through autoscaling/v1 in its stored v2 form. The round-trip annotations
/// are consumed (an unreadable one is dropped); without any metric the CPU target defaults to
/// 80%.
pub fn from_v1(obj: Value) -> Value {
    let Value::Object(mut out) = obj else {
        return obj;
    };
    let spec = out.remove("spec").unwrap_or(Value::Null);
    let status = out.remove("status").unwrap_or(Value::Null);
    let mut taken: Map<String, Value> = Map::new();
    if let Some(annotations) = out
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        for key in ROUND_TRIP {
            if let Some(v) = annotations.remove(key) {
                if let Some(parsed) = v.as_str().and_then(|s| serde_json::from_str(s).ok()) {
                    taken.insert(key.into(), parsed);
                }
            }
        }
        if annotations.is_empty() {
            if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("annotations");
            }
        }
    }

    let mut metrics: Vec<Value> = Vec::new();
    if let Some(cpu) = spec
        .get("targetCPUUtilizationPercentage")
        .filter(|v| !v.is_null())
    {
        metrics.push(cpu_metric(cpu.clone()));
    }
    metrics.extend(list(taken.get(METRICS)).iter().map(metric_spec_from_v1));
    if metrics.is_empty() {
        metrics.push(cpu_metric(json!(DEFAULT_CPU_UTILIZATION)));
    }
    let mut v2_spec = Map::new();
    put(&mut v2_spec, "scaleTargetRef", spec.get("scaleTargetRef"));
    put(&mut v2_spec, "minReplicas", spec.get("minReplicas"));
    v2_spec.insert(
        "maxReplicas".into(),
        spec.get("maxReplicas").cloned().unwrap_or(json!(0)),
    );
    v2_spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(b) = taken.get(BEHAVIOR) {
        v2_spec.insert("behavior".into(), behavior_from_internal(b));
    }
    out.insert("spec".into(), Value::Object(v2_spec));

    let mut v2_status = Map::new();
    put(
        &mut v2_status,
        "observedGeneration",
        status.get("observedGeneration"),
    );
    put(&mut v2_status, "lastScaleTime", status.get("lastScaleTime"));
    put(
        &mut v2_status,
        "currentReplicas",
        status.get("currentReplicas"),
    );
    v2_status.insert(
        "desiredReplicas".into(),
        status.get("desiredReplicas").cloned().unwrap_or(json!(0)),
    );
    let current: Vec<Value> = match taken.get(CURRENT_METRICS) {
        // The annotation carries more than the v1 field (the raw value too).
        Some(list) => list
            .as_array()
            .into_iter()
            .flatten()
            .map(metric_status_from_v1)
            .collect(),
        None => status
            .get("currentCPUUtilizationPercentage")
            .filter(|v| !v.is_null())
            .map(|u| {
                vec![json!({"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": u}}})]
            })
            .unwrap_or_default(),
    };
    if !current.is_empty() {
        v2_status.insert("currentMetrics".into(), Value::Array(current));
    }
    if let Some(c) = taken.get(CONDITIONS).filter(|c| c.is_array()) {
        v2_status.insert("conditions".into(), c.clone());
    }
    out.insert("status".into(), Value::Object(v2_status));
    out.insert("apiVersion".into(), "autoscaling/v2".into());
    Value::Object(out)
}

fn cpu_metric(utilization: Value) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

/// `{metric: {name, selector}}` of v2 from v1's `metricName` and a selector field.
fn identifier(v1: &Value, selector_key: &str) -> Value {
    let mut id = Map::new();
    id.insert(
        "name".into(),
        v1.get("metricName").cloned().unwrap_or(json!("")),
    );
    put(&mut id, "selector", v1.get(selector_key));
    Value::Object(id)
}

/// v1's `metricName` and a selector field from v2's `metric`.
fn identifier_to_v1(out: &mut Map<String, Value>, metric: Option<&Value>, selector_key: &str) {
    out.insert(
        "metricName".into(),
        metric
            .and_then(|m| m.get("name"))
            .cloned()
            .unwrap_or(json!("")),
    );
    put(out, selector_key, metric.and_then(|m| m.get("selector")));
}

/// A v2 target from v1's fields: utilization if given, else the kind the present value says.
fn target(utilization: Option<&Value>, value: Option<&Value>, average: Option<&Value>) -> Value {
    let set = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
    let (utilization, value, average) = (set(utilization), set(value), set(average));
    let kind = if utilization.is_some() {
        "Utilization"
    } else if average.is_some() || value.is_none() {
        "AverageValue"
    } else {
        "Value"
    };
    let mut t = Map::new();
    t.insert("type".into(), kind.into());
    put(&mut t, "value", value.as_ref());
    put(&mut t, "averageValue", average.as_ref());
    put(&mut t, "averageUtilization", utilization.as_ref());
    Value::Object(t)
}

fn metric_spec_to_v1(m: &Value) -> Value {
    let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
    let mut out = Map::new();
    out.insert("type".into(), kind.into());
    let t = |src: &Value, f: &str| src.pointer(&format!("/target/{f}")).cloned();
    match kind {
        "Resource" | "ContainerResource" => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let src = m.get(key).cloned().unwrap_or(Value::Null);
            let mut r = Map::new();
            put(&mut r, "name", src.get("name"));
            put(&mut r, "container", src.get("container"));
            put(
                &mut r,
                "targetAverageUtilization",
                t(&src, "averageUtilization").as_ref(),
            );
            put(
                &mut r,
                "targetAverageValue",
                t(&src, "averageValue").as_ref(),
            );
            out.insert(key.into(), Value::Object(r));
        }
        "Pods" => {
            let src = m.get("pods").cloned().unwrap_or(Value::Null);
            let mut p = Map::new();
            identifier_to_v1(&mut p, src.get("metric"), "selector");
            put(
                &mut p,
                "targetAverageValue",
                t(&src, "averageValue").as_ref(),
            );
            out.insert("pods".into(), Value::Object(p));
        }
        "Object" => {
            let src = m.get("object").cloned().unwrap_or(Value::Null);
            let mut o = Map::new();
            put(&mut o, "target", src.get("describedObject"));
            identifier_to_v1(&mut o, src.get("metric"), "selector");
            put(&mut o, "targetValue", t(&src, "value").as_ref());
            put(&mut o, "averageValue", t(&src, "averageValue").as_ref());
            out.insert("object".into(), Value::Object(o));
        }
        "External" => {
            let src = m.get("external").cloned().unwrap_or(Value::Null);
            let mut e = Map::new();
            identifier_to_v1(&mut e, src.get("metric"), "metricSelector");
            put(&mut e, "targetValue", t(&src, "value").as_ref());
            put(
                &mut e,
                "targetAverageValue",
                t(&src, "averageValue").as_ref(),
            );
            out.insert("external".into(), Value::Object(e));
        }
        _ => {}
    }
    Value::Object(out)
}

fn metric_spec_from_v1(m: &Value) -> Value {
    let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
    let mut out = Map::new();
    out.insert("type".into(), kind.into());
    match kind {
        "Resource" | "ContainerResource" => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let src = m.get(key).cloned().unwrap_or(Value::Null);
            let mut r = Map::new();
            put(&mut r, "name", src.get("name"));
            put(&mut r, "container", src.get("container"));
            r.insert(
                "target".into(),
                target(
                    src.get("targetAverageUtilization"),
                    None,
                    src.get("targetAverageValue"),
                ),
            );
            out.insert(key.into(), Value::Object(r));
        }
        "Pods" => {
            let src = m.get("pods").cloned().unwrap_or(Value::Null);
            out.insert(
                "pods".into(),
                json!({"metric": identifier(&src, "selector"),
                       "target": target(None, None, src.get("targetAverageValue"))}),
            );
        }
        "Object" => {
            let src = m.get("object").cloned().unwrap_or(Value::Null);
            let mut o = Map::new();
            put(&mut o, "describedObject", src.get("target"));
            o.insert("metric".into(), identifier(&src, "selector"));
            o.insert(
                "target".into(),
                target(None, src.get("targetValue"), src.get("averageValue")),
            );
            out.insert("object".into(), Value::Object(o));
        }
        "External" => {
            let src = m.get("external").cloned().unwrap_or(Value::Null);
            out.insert(
                "external".into(),
                json!({"metric": identifier(&src, "metricSelector"),
                       "target": target(None, src.get("targetValue"), src.get("targetAverageValue"))}),
            );
        }
        _ => {}
    }
    Value::Object(out)
}

fn metric_status_to_v1(m: &Value) -> Value {
    let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
    let mut out = Map::new();
    out.insert("type".into(), kind.into());
    let c = |src: &Value, f: &str| src.pointer(&format!("/current/{f}")).cloned();
    match kind {
        "Resource" | "ContainerResource" => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let src = m.get(key).cloned().unwrap_or(Value::Null);
            let mut r = Map::new();
            put(&mut r, "name", src.get("name"));
            put(&mut r, "container", src.get("container"));
            put(
                &mut r,
                "currentAverageUtilization",
                c(&src, "averageUtilization").as_ref(),
            );
            r.insert(
                "currentAverageValue".into(),
                c(&src, "averageValue").unwrap_or(json!("0")),
            );
            out.insert(key.into(), Value::Object(r));
        }
        "Pods" => {
            let src = m.get("pods").cloned().unwrap_or(Value::Null);
            let mut p = Map::new();
            identifier_to_v1(&mut p, src.get("metric"), "selector");
            p.insert(
                "currentAverageValue".into(),
                c(&src, "averageValue").unwrap_or(json!("0")),
            );
            out.insert("pods".into(), Value::Object(p));
        }
        "Object" => {
            let src = m.get("object").cloned().unwrap_or(Value::Null);
            let mut o = Map::new();
            put(&mut o, "target", src.get("describedObject"));
            identifier_to_v1(&mut o, src.get("metric"), "selector");
            o.insert(
                "currentValue".into(),
                c(&src, "value").unwrap_or(json!("0")),
            );
            put(&mut o, "averageValue", c(&src, "averageValue").as_ref());
            out.insert("object".into(), Value::Object(o));
        }
        "External" => {
            let src = m.get("external").cloned().unwrap_or(Value::Null);
            let mut e = Map::new();
            identifier_to_v1(&mut e, src.get("metric"), "metricSelector");
            e.insert(
                "currentValue".into(),
                c(&src, "value").unwrap_or(json!("0")),
            );
            put(
                &mut e,
                "currentAverageValue",
                c(&src, "averageValue").as_ref(),
            );
            out.insert("external".into(), Value::Object(e));
        }
        _ => {}
    }
    Value::Object(out)
}

fn metric_status_from_v1(m: &Value) -> Value {
    let kind = m.get("type").and_then(Value::as_str).unwrap_or("");
    let mut out = Map::new();
    out.insert("type".into(), kind.into());
    let current = |pairs: &[(&str, Option<&Value>)]| {
        let mut c = Map::new();
        for (k, v) in pairs {
            put(&mut c, k, *v);
        }
        Value::Object(c)
    };
    match kind {
        "Resource" | "ContainerResource" => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let src = m.get(key).cloned().unwrap_or(Value::Null);
            let mut r = Map::new();
            put(&mut r, "name", src.get("name"));
            put(&mut r, "container", src.get("container"));
            r.insert(
                "current".into(),
                current(&[
                    ("averageValue", src.get("currentAverageValue")),
                    ("averageUtilization", src.get("currentAverageUtilization")),
                ]),
            );
            out.insert(key.into(), Value::Object(r));
        }
        "Pods" => {
            let src = m.get("pods").cloned().unwrap_or(Value::Null);
            out.insert(
                "pods".into(),
                json!({"metric": identifier(&src, "selector"),
                       "current": current(&[("averageValue", src.get("currentAverageValue"))])}),
            );
        }
        "Object" => {
            let src = m.get("object").cloned().unwrap_or(Value::Null);
            let mut o = Map::new();
            o.insert("metric".into(), identifier(&src, "selector"));
            o.insert(
                "current".into(),
                current(&[
                    ("value", src.get("currentValue")),
                    ("averageValue", src.get("averageValue")),
                ]),
            );
            put(&mut o, "describedObject", src.get("target"));
            out.insert("object".into(), Value::Object(o));
        }
        "External" => {
            let src = m.get("external").cloned().unwrap_or(Value::Null);
            out.insert(
                "external".into(),
                json!({"metric": identifier(&src, "metricSelector"),
                       "current": current(&[("value", src.get("currentValue")),
                                            ("averageValue", src.get("currentAverageValue"))])}),
            );
        }
        _ => {}
    }
    Value::Object(out)
}

/// Field names of the internal behavior type (Go field names, unset pointers as `null`).
const BEHAVIOR_FIELDS: &[(&str, &str)] = &[
    ("scaleUp", "ScaleUp"),
    ("scaleDown", "ScaleDown"),
    ("stabilizationWindowSeconds", "StabilizationWindowSeconds"),
    ("selectPolicy", "SelectPolicy"),
    ("policies", "Policies"),
    ("type", "Type"),
    ("value", "Value"),
    ("periodSeconds", "PeriodSeconds"),
];

fn rename_behavior(v: &Value, to_internal: bool, depth: usize) -> Value {
    let fields: &[(&str, &str)] = match depth {
        0 => &BEHAVIOR_FIELDS[0..2],
        1 => &BEHAVIOR_FIELDS[2..5],
        _ => &BEHAVIOR_FIELDS[5..8],
    };
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (wire, internal) in fields {
                let (from, to) = if to_internal {
                    (*wire, *internal)
                } else {
                    (*internal, *wire)
                };
                let child = m.get(from).cloned().unwrap_or(Value::Null);
                let child = match child {
                    Value::Array(items) => Value::Array(
                        items
                            .iter()
                            .map(|i| rename_behavior(i, to_internal, depth + 1))
                            .collect(),
                    ),
                    Value::Object(_) => rename_behavior(&child, to_internal, depth + 1),
                    other => other,
                };
                if to_internal || !child.is_null() {
                    out.insert(to.into(), child);
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn behavior_to_internal(b: &Value) -> Value {
    rename_behavior(b, true, 0)
}

fn behavior_from_internal(b: &Value) -> Value {
    rename_behavior(b, false, 0)
}
