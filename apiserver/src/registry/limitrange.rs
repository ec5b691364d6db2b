//! core/v1 LimitRange, as upstream: a Container item's defaults are filled in (`default` from
//! `max`, `defaultRequest` from `default`, then from `min`), and ValidateLimitRange checks the
//! types (standard or qualified, each once), the resource names of each type, that Pod items
//! carry no defaults, that PersistentVolumeClaim items bound storage, and the order
//! min ≤ defaultRequest ≤ default ≤ max with a ratio of at least 1 that max/min allows.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use tinykube_proto::quantity::Quantity;

use super::field::FieldError;
use super::names::{validate_object_meta, NameRule};
use super::quota::resource_name;
use super::rules::go_quantity;
use super::rules::{container_resource_name, invalid_quantity, qualified_name_errors, quantity};
use super::Strategy;

const TYPES: &[&str] = &["Pod", "Container", "PersistentVolumeClaim"];

/// Upstream's SetDefaults_LimitRangeItem for Container items.
fn default_item(item: &mut Map<String, Value>) {
    if item.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let list = |item: &Map<String, Value>, k: &str| {
        item.get(k)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (max, min) = (list(item, "max"), list(item, "min"));
    let mut default = list(item, "default");
    for (k, v) in &max {
        default.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut request = list(item, "defaultRequest");
    for (k, v) in default.iter().chain(min.iter()) {
        request.entry(k.clone()).or_insert_with(|| v.clone());
    }
    if !default.is_empty() {
        item.insert("default".into(), Value::Object(default));
    }
    if !request.is_empty() {
        item.insert("defaultRequest".into(), Value::Object(request));
    }
}

/// Upstream's validateLimitRangeTypeName.
fn type_name(field: &str, t: &str) -> Vec<FieldError> {
    let errs: Vec<FieldError> = qualified_name_errors(t)
        .into_iter()
        .map(|m| FieldError::invalid(field, t, m))
        .collect();
    if errs.is_empty() && !t.contains('/') && !TYPES.contains(&t) {
        return vec![FieldError::invalid(
            field,
            t,
            "must be a standard limit type or fully qualified",
        )];
    }
    errs
}

/// Upstream's IsOvercommitAllowed: native resources but huge pages.
fn overcommit_allowed(name: &str) -> bool {
    (!name.contains('/') || name.contains("kubernetes.io/")) && !name.starts_with("hugepages-")
}

type Quantities = BTreeMap<String, Quantity>;

/// One resource list of an item (`max`, `min`, …): its names checked for the item's type
/// (container resources for Pod and Container items), its quantities parsed.
fn read_list(
    item: &Value,
    at: &str,
    field: &str,
    pod_or_container: bool,
    errs: &mut Vec<FieldError>,
) -> Quantities {
    let mut out = Quantities::new();
    for (k, v) in item
        .get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let path = format!("{at}.{field}[{k}]");
        errs.extend(if pod_or_container {
            container_resource_name(&path, k)
        } else {
            resource_name(&path, k)
        });
        match quantity(v) {
            Some(q) => {
                out.insert(k.clone(), q);
            }
            None => errs.push(invalid_quantity(&path, v)),
        }
    }
    out
}

fn validate_item(i: usize, item: &Value, errs: &mut Vec<FieldError>) -> Option<String> {
    let at = format!("spec.limits[{i}]");
    let t = item.get("type").and_then(Value::as_str).unwrap_or_default();
    errs.extend(type_name(&format!("{at}.type"), t));
    let pod_or_container = matches!(t, "Pod" | "Container");
    let read = |field: &str, errs: &mut Vec<FieldError>| {
        read_list(item, &at, field, pod_or_container, errs)
    };
    let max = read("max", errs);
    let min = read("min", errs);
    let (mut default, mut request) = (Quantities::new(), Quantities::new());
    if t == "Pod" {
        for field in ["default", "defaultRequest"] {
            let given = item.get(field).and_then(Value::as_object);
            if given.is_some_and(|m| !m.is_empty()) {
                errs.push(FieldError::forbidden(
                    format!("{at}.{field}"),
                    "may not be specified when `type` is 'Pod'",
                ));
            }
        }
    } else {
        default = read("default", errs);
        request = read("defaultRequest", errs);
    }
    if t == "PersistentVolumeClaim" {
        let has = |f: &str| item.pointer(&format!("/{f}/storage")).is_some();
        if !has("min") && !has("max") {
            errs.push(FieldError::required(
                format!("{at}.limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
    }
    let ratio = read("maxLimitRequestRatio", errs);
    let mut keys: Vec<&String> = max
        .keys()
        .chain(min.keys())
        .chain(default.keys())
        .chain(request.keys())
        .chain(ratio.keys())
        .collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let path = |f: &str| format!("{at}.{f}[{k}]");
        let (mx, mn, d, r, ra) = (
            max.get(k),
            min.get(k),
            default.get(k),
            request.get(k),
            ratio.get(k),
        );
        let mut bad = |f: &str, v: &Quantity, msg: String| {
            errs.push(FieldError::invalid_go(path(f), go_quantity(v), msg))
        };
        if let (Some(mn), Some(mx)) = (mn, mx) {
            if mn > mx {
                bad(
                    "min",
                    mn,
                    format!("min value {mn} is greater than max value {mx}"),
                );
            }
        }
        if let (Some(r), Some(mn)) = (r, mn) {
            if mn > r {
                bad(
                    "defaultRequest",
                    r,
                    format!("min value {mn} is greater than default request value {r}"),
                );
            }
        }
        if let (Some(r), Some(mx)) = (r, mx) {
            if r > mx {
                bad(
                    "defaultRequest",
                    r,
                    format!("default request value {r} is greater than max value {mx}"),
                );
            }
        }
        if let (Some(r), Some(d)) = (r, d) {
            if r > d {
                bad(
                    "defaultRequest",
                    r,
                    format!("default request value {r} is greater than default limit value {d}"),
                );
            }
        }
        if let (Some(d), Some(mn)) = (d, mn) {
            if mn > d {
                bad(
                    "default",
                    mn,
                    format!("min value {mn} is greater than default value {d}"),
                );
            }
        }
        if let (Some(d), Some(mx)) = (d, mx) {
            if d > mx {
                bad(
                    "default",
                    mx,
                    format!("default value {d} is greater than max value {mx}"),
                );
            }
        }
        if let Some(ra) = ra {
            if ra.milli_value() < 1000 {
                bad(
                    "maxLimitRequestRatio",
                    ra,
                    format!("ratio {ra} is less than 1"),
                );
            }
            if let (Some(mn), Some(mx)) = (mn, mx) {
                let limit = mx.milli_value() as f64 / mn.milli_value() as f64;
                if ra.milli_value() as f64 / 1000.0 > limit {
                    bad(
                        "maxLimitRequestRatio",
                        ra,
                        format!("ratio {ra} is greater than max/min = {limit:.6}"),
                    );
                }
            }
        }
        if let (Some(d), Some(r)) = (d, r) {
            if !overcommit_allowed(k) && d != r {
                bad(
                    "defaultRequest",
                    r,
                    format!("default value {d} must equal to defaultRequest value {r} in {k}"),
                );
            }
        }
    }
    Some(t.to_string())
}

pub struct LimitRangeStrategy;

impl Strategy for LimitRangeStrategy {
    fn default(&self, obj: &mut Value) {
        let items = obj
            .pointer_mut("/spec/limits")
            .and_then(Value::as_array_mut);
        for item in items.into_iter().flatten() {
            if let Some(m) = item.as_object_mut() {
                default_item(m);
            }
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let mut seen: Vec<String> = Vec::new();
        let items = obj.pointer("/spec/limits").and_then(Value::as_array);
        for (i, item) in items.into_iter().flatten().enumerate() {
            if let Some(t) = validate_item(i, item, &mut errs) {
                if seen.contains(&t) {
                    errs.push(FieldError::duplicate(
                        format!("spec.limits[{i}].type"),
                        t.clone(),
                    ));
                }
                seen.push(t);
            }
        }
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        errs.retain(|e| !e.field.starts_with("metadata.name"));
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limit_range(limits: Value) -> Value {
        json!({"metadata": {"name": "lr", "namespace": "ns"}, "spec": {"limits": limits}})
    }

    #[test]
    fn docs_constraints_get_defaults() {
        let mut lr = limit_range(
            json!([{"max": {"cpu": "800m"}, "min": {"cpu": "200m"}, "type": "Container"}]),
        );
        LimitRangeStrategy.default(&mut lr);
        assert_eq!(
            lr["spec"]["limits"][0],
            json!({"max": {"cpu": "800m"}, "min": {"cpu": "200m"}, "type": "Container",
                   "default": {"cpu": "800m"}, "defaultRequest": {"cpu": "800m"}})
        );
        let mut pod_type = limit_range(json!([{"max": {"cpu": "2"}, "type": "Pod"}]));
        LimitRangeStrategy.default(&mut pod_type);
        assert_eq!(
            pod_type["spec"]["limits"][0],
            json!({"max": {"cpu": "2"}, "type": "Pod"})
        );
    }

    #[test]
    fn limit_ranges_as_upstream() {
        let cases = [
            (json!([{"default": {"memory": "512Mi"}, "defaultRequest": {"memory": "256Mi"}, "type": "Container"}]), vec![]),
            (
                json!([{"min": {"cpu": "1"}, "max": {"cpu": "500m"}, "type": "Container"}]),
                vec!["spec.limits[0].min[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1\", Format:\"DecimalSI\"}: min value 1 is greater than max value 500m"],
            ),
            (
                json!([{"default": {"cpu": "1"}, "type": "Pod"}]),
                vec!["spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"],
            ),
            (
                json!([{"max": {"cpu": "1"}, "type": "Container"}, {"max": {"cpu": "1"}, "type": "Container"}]),
                vec!["spec.limits[1].type: Duplicate value: \"Container\""],
            ),
            (
                json!([{"max": {"cpu": "1"}, "type": "Node"}]),
                vec!["spec.limits[0].type: Invalid value: \"Node\": must be a standard limit type or fully qualified"],
            ),
            (
                json!([{"max": {"cpu": "1"}, "type": "PersistentVolumeClaim"}]),
                vec!["spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided"],
            ),
            (
                json!([{"maxLimitRequestRatio": {"cpu": "500m"}, "type": "Container"}]),
                vec!["spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"500m\", Format:\"DecimalSI\"}: ratio 500m is less than 1"],
            ),
            (
                json!([{"min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "4"}, "type": "Pod"}]),
                vec!["spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:4, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"4\", Format:\"DecimalSI\"}: ratio 4 is greater than max/min = 2.000000"],
            ),
        ];
        for (limits, want) in cases {
            let errs: Vec<String> = LimitRangeStrategy
                .validate_create(&limit_range(limits.clone()))
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(errs, want, "{limits}");
        }
    }
}
