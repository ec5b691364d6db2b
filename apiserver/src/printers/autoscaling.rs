//! The HorizontalPodAutoscaler row as upstream's printer makes it: REFERENCE `Kind/name`,
//! TARGETS with each metric's current value over its target (`cpu: 250%/50%`,
//! `memory: <unknown>/100Mi`, at most two then `+ N more...`), MINPODS, MAXPODS, REPLICAS, AGE.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tinykube_proto::quantity::Quantity;

use super::{age, name};

/// A quantity as upstream's `Quantity.String()` prints it; `<unknown>` when absent.
fn quantity(v: Option<&Value>) -> String {
    match v.and_then(Value::as_str) {
        Some(s) => Quantity::parse(s)
            .map(|q| q.to_string())
            .unwrap_or_else(|_| s.to_string()),
        None => "<unknown>".into(),
    }
}

fn set(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// One metric's `current/target` text; `status` is the matching entry of currentMetrics.
fn format_metric(spec: &Value, status: Option<&Value>) -> String {
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
    let source = |s: &Value, key: &str| set(s.get(key)).cloned();
    let (key, named) = match kind {
        "External" => ("external", false),
        "Pods" => ("pods", false),
        "Object" => ("object", false),
        "Resource" => ("resource", true),
        "ContainerResource" => ("containerResource", true),
        _ => return "<unknown type>".into(),
    };
    let src = source(spec, key).unwrap_or(Value::Null);
    let current = status.and_then(|s| source(s, key));
    let target = |f: &str| set(src.pointer(&format!("/target/{f}")));
    let now = |f: &str| {
        current
            .as_ref()
            .and_then(|c| set(c.pointer(&format!("/current/{f}"))))
    };
    let unknown = || "<unknown>".to_string();
    if named {
        let resource = src.get("name").and_then(Value::as_str).unwrap_or("");
        if let Some(avg) = target("averageValue") {
            let cur = current
                .as_ref()
                .map(|_| quantity(now("averageValue")))
                .unwrap_or_else(unknown);
            return format!("{resource}: {cur}/{}", quantity(Some(avg)));
        }
        let cur = now("averageUtilization")
            .and_then(Value::as_i64)
            .map(|u| format!("{u}%"))
            .unwrap_or_else(unknown);
        let goal = target("averageUtilization")
            .and_then(Value::as_i64)
            .map(|u| format!("{u}%"))
            .unwrap_or_else(|| "<auto>".into());
        return format!("{resource}: {cur}/{goal}");
    }
    match kind {
        "Pods" => {
            let cur = current
                .as_ref()
                .map(|_| quantity(now("averageValue")))
                .unwrap_or_else(unknown);
            format!("{cur}/{}", quantity(target("averageValue")))
        }
        _ => {
            if let Some(avg) = target("averageValue") {
                let cur = now("averageValue")
                    .map(|v| quantity(Some(v)))
                    .unwrap_or_else(unknown);
                format!("{cur}/{} (avg)", quantity(Some(avg)))
            } else {
                let cur = current
                    .as_ref()
                    .map(|_| quantity(now("value")))
                    .unwrap_or_else(unknown);
                format!("{cur}/{}", quantity(target("value")))
            }
        }
    }
}

/// Upstream's formatHPAMetrics.
pub fn format_metrics(specs: &[Value], statuses: &[Value]) -> String {
    const SHOWN: usize = 2;
    if specs.is_empty() {
        return "<none>".into();
    }
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| format_metric(spec, statuses.get(i)))
        .collect();
    if list.len() > SHOWN {
        format!(
            "{} + {} more...",
            list[..SHOWN].join(", "),
            list.len() - SHOWN
        )
    } else {
        list.join(", ")
    }
}

/// A row of either version: a v1 object is read in its v2 form first.
pub fn horizontal_pod_autoscaler(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let v2;
    let obj = if obj.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1") {
        v2 = crate::registry::autoscaling::v1::from_v1(obj.clone());
        &v2
    } else {
        obj
    };
    let list = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let text = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
    let reference = format!(
        "{}/{}",
        text("/spec/scaleTargetRef/kind"),
        text("/spec/scaleTargetRef/name")
    );
    let min_pods = obj
        .pointer("/spec/minReplicas")
        .and_then(Value::as_i64)
        .map(|m| m.to_string())
        .unwrap_or_else(|| "<unset>".into());
    let int = |p: &str| obj.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    vec![
        name(obj).into(),
        reference.into(),
        format_metrics(&list("/spec/metrics"), &list("/status/currentMetrics")).into(),
        min_pods.into(),
        json!(int("/spec/maxReplicas")),
        json!(int("/status/currentReplicas")),
        age(obj, now).into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(name: &str, target: Value) -> Value {
        json!({"type": "Resource", "resource": {"name": name, "target": target}})
    }

    #[test]
    fn targets_as_kubectl_shows_them() {
        let cpu50 = resource(
            "cpu",
            json!({"type": "Utilization", "averageUtilization": 50}),
        );
        let mem = resource(
            "memory",
            json!({"type": "AverageValue", "averageValue": "2Mi"}),
        );
        let cpu_now = json!({"type": "Resource", "resource": {"name": "cpu",
            "current": {"averageUtilization": 250, "averageValue": "250m"}}});
        let mem_now = json!({"type": "Resource", "resource": {"name": "memory",
            "current": {"averageValue": "1Mi"}}});
        let pods = json!({"type": "Pods", "pods": {"metric": {"name": "qps"},
            "target": {"type": "AverageValue", "averageValue": "1k"}}});
        let failed = json!({"type": ""});
        let cases: Vec<(Vec<Value>, Vec<Value>, &str)> = vec![
            (vec![], vec![], "<none>"),
            (vec![cpu50.clone()], vec![cpu_now.clone()], "cpu: 250%/50%"),
            (vec![cpu50.clone()], vec![], "cpu: <unknown>/50%"),
            (vec![cpu50.clone()], vec![failed], "cpu: <unknown>/50%"),
            (vec![mem.clone()], vec![mem_now.clone()], "memory: 1Mi/2Mi"),
            (
                vec![cpu50.clone(), mem.clone()],
                vec![cpu_now.clone(), mem_now.clone()],
                "cpu: 250%/50%, memory: 1Mi/2Mi",
            ),
            (
                vec![cpu50, mem, pods],
                vec![cpu_now, mem_now],
                "cpu: 250%/50%, memory: 1Mi/2Mi + 1 more...",
            ),
        ];
        for (specs, statuses, want) in cases {
            assert_eq!(format_metrics(&specs, &statuses), want);
        }
    }

    #[test]
    fn a_row_of_either_version() {
        let now = Utc::now();
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "php-apache", "creationTimestamp": now.to_rfc3339()},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "php-apache"},
                "minReplicas": 1, "maxReplicas": 10, "targetCPUUtilizationPercentage": 50},
            "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentCPUUtilizationPercentage": 0}});
        let row = horizontal_pod_autoscaler(&v1, now);
        assert_eq!(
            row,
            vec![
                json!("php-apache"),
                json!("Deployment/php-apache"),
                json!("cpu: 0%/50%"),
                json!("1"),
                json!(10),
                json!(1),
                json!("0s")
            ]
        );
    }
}
