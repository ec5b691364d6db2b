//! Quantities and compute resources as upstream validates a container's `resources` (and a
//! pod's `overhead`): resource names (standard, `hugepages-*`, or domain-qualified extended
//! resources), non-negative quantities, whole numbers for countable resources, requests within
//! limits, and equal requests and limits for resources that cannot be overcommitted.

use serde_json::Value;
use tinykube_proto::quantity::Quantity;

use super::super::field::FieldError;
use super::text::qualified_name_errors;

const QUANTITY_MSG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const NON_NEGATIVE: &str = "must be greater than or equal to 0";

/// Resource names a quota or a container may name without a domain.
const STANDARD: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];
const CONTAINER: &[&str] = &["cpu", "memory", "ephemeral-storage"];
const INTEGER: &[&str] = &[
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

fn quantity_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A quantity (a string, or a number as JSON clients may send), if it is one.
pub fn quantity(v: &Value) -> Option<Quantity> {
    Quantity::parse(&quantity_text(v)).ok()
}

/// The error for a value at `field` that is not a quantity.
pub fn invalid_quantity(field: &str, v: &Value) -> FieldError {
    FieldError::invalid(field, quantity_text(v), QUANTITY_MSG)
}

/// A quantity at `field` that must not be negative.
pub fn non_negative_quantity(field: &str, v: &Value) -> Option<FieldError> {
    match quantity(v) {
        None => Some(invalid_quantity(field, v)),
        Some(q) if q < Quantity::from_milli(0) => {
            Some(FieldError::invalid(field, q.to_string(), NON_NEGATIVE))
        }
        Some(_) => None,
    }
}

/// Without a domain, or in `kubernetes.io`: upstream's native resources.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// A domain-qualified resource a device plugin or an operator advertises (`example.com/gpu`):
/// upstream's IsExtendedResourceName.
pub fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with("requests.")
        && qualified_name_errors(&format!("requests.{name}")).is_empty()
}

/// Requests below limits are allowed: native resources but huge pages.
fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_hugepages(name)
}

/// A resource name at `field` that a container may request (upstream's
/// validateContainerResourceName).
pub fn container_resource_name(field: &str, name: &str) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = qualified_name_errors(name)
        .into_iter()
        .map(|m| FieldError::invalid(field, name, m))
        .collect();
    let bare = !name.contains('/');
    let quota_hugepages = is_hugepages(name) || name.starts_with("requests.hugepages-");
    if errs.is_empty() && bare && !STANDARD.contains(&name) && !quota_hugepages {
        errs.push(FieldError::invalid(
            field,
            name,
            "must be a standard resource type or fully qualified",
        ));
    }
    if bare {
        if !CONTAINER.contains(&name) && !is_hugepages(name) {
            errs.push(FieldError::invalid(
                field,
                name,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && !is_extended(name) {
        errs.push(FieldError::invalid(
            field,
            name,
            "doesn't follow extended resource name standard",
        ));
    }
    errs
}

/// A quantity as upstream's field errors print a `resource.Quantity` value (Go's `%#v`: it has
/// no value-receiver `String()`): its int64 amount (the digits and the power of ten or, for
/// binary suffixes, the whole number), no big decimal, the canonical text and the format.
pub fn go_quantity(q: &Quantity) -> String {
    let text = q.to_string();
    let digits_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    let number: i64 = digits.parse().unwrap_or(0);
    let binary = |p: u32| (number.saturating_mul(1 << (10 * p)), 0, "BinarySI");
    let (value, scale, format) = match suffix {
        "n" => (number, -9, "DecimalSI"),
        "u" => (number, -6, "DecimalSI"),
        "m" => (number, -3, "DecimalSI"),
        "k" => (number, 3, "DecimalSI"),
        "M" => (number, 6, "DecimalSI"),
        "G" => (number, 9, "DecimalSI"),
        "T" => (number, 12, "DecimalSI"),
        "P" => (number, 15, "DecimalSI"),
        "E" => (number, 18, "DecimalSI"),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        e if e.starts_with('e') => (number, e[1..].parse().unwrap_or(0), "DecimalExponent"),
        _ => (number, 0, "DecimalSI"),
    };
    format!(
        "resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:{text:?}, Format:{format:?}}}"
    )
}

/// A resource's quantity at `field`, as upstream's ValidateResourceQuantityValue: a quantity,
/// not negative, whole for countable resources.
pub fn resource_value(field: &str, name: &str, v: &Value) -> Vec<FieldError> {
    let Some(q) = quantity(v) else {
        return vec![invalid_quantity(field, v)];
    };
    let mut errs = Vec::new();
    if q < Quantity::from_milli(0) {
        errs.push(FieldError::invalid(field, q.to_string(), NON_NEGATIVE));
    }
    if (INTEGER.contains(&name) || is_extended(name)) && q.milli_value() % 1000 != 0 {
        errs.push(FieldError::invalid_go(
            field,
            go_quantity(&q),
            "must be an integer",
        ));
    }
    errs
}

/// A resource list (`status.capacity`) at `field`: every quantity valid and not negative
/// (`status.capacity[cpu]`).
pub fn resource_list(field: &str, list: Option<&Value>) -> Vec<FieldError> {
    let Some(Value::Object(m)) = list else {
        return Vec::new();
    };
    m.iter()
        .flat_map(|(name, v)| resource_value(&format!("{field}[{name}]"), name, v))
        .collect()
}

/// A container's `resources` at `field` (`spec.containers[0].resources`), as upstream's
/// ValidateContainerResourceRequirements: names and quantities of both lists, every request at
/// most its limit ("must be less than or equal to cpu limit of 1", reported at `requests`),
/// huge pages and extended resources requested exactly at their limit.
pub fn resource_requirements(field: &str, resources: Option<&Value>) -> Vec<FieldError> {
    let Some(r) = resources else {
        return Vec::new();
    };
    let empty = serde_json::Map::new();
    let limits = r.get("limits").and_then(Value::as_object).unwrap_or(&empty);
    let requests = r
        .get("requests")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let (lim_path, req_path) = (format!("{field}.limits"), format!("{field}.requests"));
    let mut errs = Vec::new();
    let (mut cpu_or_memory, mut hugepages) = (false, false);
    for (name, v) in limits {
        let path = format!("{lim_path}[{name}]");
        errs.extend(container_resource_name(&path, name));
        errs.extend(resource_value(&path, name, v));
        hugepages |= is_hugepages(name);
        cpu_or_memory |= name == "cpu" || name == "memory";
    }
    for (name, v) in requests {
        let path = format!("{req_path}[{name}]");
        errs.extend(container_resource_name(&path, name));
        errs.extend(resource_value(&path, name, v));
        hugepages |= is_hugepages(name);
        cpu_or_memory |= name == "cpu" || name == "memory";
        let Some(request) = quantity(v) else { continue };
        match limits.get(name).map(quantity) {
            Some(Some(limit)) => {
                if request != limit && !overcommit_allowed(name) {
                    errs.push(FieldError::invalid(
                        &req_path,
                        request.to_string(),
                        format!("must be equal to {name} limit of {limit}"),
                    ));
                } else if request > limit {
                    errs.push(FieldError::invalid(
                        &req_path,
                        request.to_string(),
                        format!("must be less than or equal to {name} limit of {limit}"),
                    ));
                }
            }
            Some(None) => {}
            None if !overcommit_allowed(name) => errs.push(FieldError::required(
                &lim_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
    if hugepages && !cpu_or_memory {
        errs.push(FieldError::forbidden(
            field,
            "HugePages require cpu or memory",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn resources_as_upstream() {
        let cases = [
            (json!({"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}), vec![]),
            (json!({"requests": {"example.com/gpu": "2"}, "limits": {"example.com/gpu": "2"}}), vec![]),
            (json!({"requests": {"hugepages-2Mi": "2Mi", "memory": "1Gi"}, "limits": {"hugepages-2Mi": "2Mi"}}), vec![]),
            (
                json!({"requests": {"cpu": "-1"}}),
                vec!["r.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"],
            ),
            (
                json!({"limits": {"memory": "-5Gi"}}),
                vec!["r.limits[memory]: Invalid value: \"-5Gi\": must be greater than or equal to 0"],
            ),
            (
                json!({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
                vec!["r.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1"],
            ),
            (
                json!({"requests": {"memory": "lots"}}),
                vec!["r.requests[memory]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"],
            ),
            (
                json!({"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}}),
                vec!["r.requests: Invalid value: \"1\": must be equal to example.com/gpu limit of 2"],
            ),
            (
                json!({"requests": {"example.com/gpu": "1"}}),
                vec!["r.limits: Required value: Limit must be set for non overcommitable resources"],
            ),
            (
                json!({"limits": {"example.com/gpu": "500m"}}),
                vec!["r.limits[example.com/gpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"500m\", Format:\"DecimalSI\"}: must be an integer"],
            ),
            (
                json!({"limits": {"hugepages-2Mi": "2Mi"}}),
                vec!["r: Forbidden: HugePages require cpu or memory"],
            ),
            (
                json!({"limits": {"pods": "1"}}),
                vec!["r.limits[pods]: Invalid value: \"pods\": must be a standard resource for containers"],
            ),
            (
                json!({"limits": {"gpu": "1"}}),
                vec![
                    "r.limits[gpu]: Invalid value: \"gpu\": must be a standard resource type or fully qualified",
                    "r.limits[gpu]: Invalid value: \"gpu\": must be a standard resource for containers",
                ],
            ),
        ];
        for (resources, want) in cases {
            assert_eq!(
                messages(&resource_requirements("r", Some(&resources))),
                want,
                "{resources}"
            );
        }
    }

    #[test]
    fn resource_lists() {
        assert!(
            resource_list("status.capacity", Some(&json!({"cpu": "4", "pods": "110"}))).is_empty()
        );
        assert_eq!(
            messages(&resource_list(
                "status.capacity",
                Some(&json!({"pods": "1.5"}))
            )),
            ["status.capacity[pods]: Invalid value: resource.Quantity{i:resource.int64Amount{value:1500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1500m\", Format:\"DecimalSI\"}: must be an integer"]
        );
    }
}
