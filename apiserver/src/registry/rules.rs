//! The value rules every kind's validation is made of, each in one place with upstream's field
//! paths and wording (apimachinery's and core/v1's validation helpers): quantities and resource
//! lists, requests within limits, non-negative integers, ports, integer-or-percent, IPs and
//! label selectors. A kind's strategy calls these; it never words a rule itself.

use serde_json::Value;
use tinykube_proto::quantity::Quantity;

use super::field::FieldError;

const QUANTITY_MSG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const NON_NEGATIVE: &str = "must be greater than or equal to 0";
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
const IP_MSG: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

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

/// A resource list (`requests`, `limits`, `overhead`) at `field`: every quantity valid and not
/// negative (`spec.containers[0].resources.requests[cpu]`).
pub fn resource_list(field: &str, list: Option<&Value>) -> Vec<FieldError> {
    let Some(Value::Object(m)) = list else {
        return Vec::new();
    };
    m.iter()
        .filter_map(|(name, v)| non_negative_quantity(&format!("{field}[{name}]"), v))
        .collect()
}

/// A container's `resources` at `field` (`spec.containers[0].resources`): both lists valid, and
/// every request at most its limit ("must be less than or equal to cpu limit of 1").
pub fn resource_requirements(field: &str, resources: Option<&Value>) -> Vec<FieldError> {
    let Some(r) = resources else {
        return Vec::new();
    };
    let (requests, limits) = (r.get("requests"), r.get("limits"));
    let mut errs = resource_list(&format!("{field}.limits"), limits);
    errs.extend(resource_list(&format!("{field}.requests"), requests));
    if !errs.is_empty() {
        return errs;
    }
    let (Some(Value::Object(req)), Some(Value::Object(lim))) = (requests, limits) else {
        return errs;
    };
    for (name, r) in req {
        let Some(l) = lim.get(name) else { continue };
        let path = format!("{field}.requests[{name}]");
        if let (Some(r), Some(l)) = (quantity(r), quantity(l)) {
            if r > l {
                errs.push(FieldError::invalid(
                    path,
                    r.to_string(),
                    format!("must be less than or equal to {name} limit of {l}"),
                ));
            }
        }
    }
    errs
}

/// An optional integer at `field` that must not be negative (replicas, seconds, limits).
pub fn non_negative_int(field: &str, v: Option<&Value>) -> Option<FieldError> {
    let v = v.filter(|v| !v.is_null())?;
    match v.as_i64() {
        Some(n) if n >= 0 => None,
        Some(n) => Some(FieldError::invalid(field, n, NON_NEGATIVE)),
        None => Some(FieldError::invalid(field, v.clone(), "must be an integer")),
    }
}

/// A port number at `field`: 1 to 65535.
pub fn port(field: &str, v: Option<&Value>) -> Option<FieldError> {
    let n = v.and_then(Value::as_i64).unwrap_or(0);
    (!(1..=65535).contains(&n)).then(|| FieldError::invalid(field, n, PORT_RANGE))
}

/// An integer or a percentage (`maxSurge`, `maxUnavailable`) at `field`: a non-negative integer,
/// or `N%` with N an integer, at most 100 unless `over_100` (upstream's
/// ValidatePositiveIntOrPercent and IsNotMoreThan100Percent).
pub fn int_or_percent(field: &str, v: Option<&Value>, over_100: bool) -> Vec<FieldError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Vec::new();
    };
    match v {
        Value::Number(_) => non_negative_int(field, Some(v)).into_iter().collect(),
        Value::String(s) => {
            let Some(n) = s.strip_suffix('%').and_then(|n| n.parse::<i64>().ok()) else {
                return vec![FieldError::invalid(
                    field,
                    s.as_str(),
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )];
            };
            let mut errs = Vec::new();
            if n < 0 {
                errs.push(FieldError::invalid(field, s.as_str(), NON_NEGATIVE));
            }
            if n > 100 && !over_100 {
                errs.push(FieldError::invalid(
                    field,
                    s.as_str(),
                    "must not be greater than 100%",
                ));
            }
            errs
        }
        other => vec![FieldError::invalid(
            field,
            other.clone(),
            "must be an integer or percentage (e.g '5%')",
        )],
    }
}

/// An IP address (v4 or v6) at `field`, as upstream's IsValidIP.
pub fn ip(field: &str, s: &str) -> Option<FieldError> {
    s.parse::<std::net::IpAddr>()
        .is_err()
        .then(|| FieldError::invalid(field, s, IP_MSG))
}

/// A metav1 LabelSelector at `field`: label keys and values, and each expression's operator
/// with the values it needs (In/NotIn some, Exists/DoesNotExist none).
pub fn label_selector(field: &str, selector: Option<&Value>) -> Vec<FieldError> {
    let Some(sel) = selector.filter(|s| !s.is_null()) else {
        return Vec::new();
    };
    let mut errs =
        super::names::validate_labels(&format!("{field}.matchLabels"), sel.get("matchLabels"));
    for (i, e) in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("{field}.matchExpressions[{i}]");
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        if let Err(msg) = tinykube_proto::labels::validate_key(key) {
            errs.push(FieldError::invalid(format!("{path}.key"), key, msg));
        }
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" | "NotIn" if values == 0 => errs.push(FieldError::required(
                format!("{path}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if values > 0 => errs.push(FieldError::forbidden(
                format!("{path}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            op => errs.push(FieldError::invalid(
                format!("{path}.operator"),
                op,
                "not a valid selector operator",
            )),
        }
    }
    errs
}

/// A name that only has to be usable as one path segment (upstream's IsValidPathSegmentName,
/// what the generic registry checks of every name): not `.` or `..`, no `/` or `%`.
pub fn path_segment_name(field: &str, name: &str) -> Vec<FieldError> {
    if name == "." || name == ".." {
        return vec![FieldError::invalid(
            field,
            name,
            format!("may not be '{name}'"),
        )];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(**bad))
        .map(|bad| FieldError::invalid(field, name, format!("may not contain '{bad}'")))
        .collect()
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
                vec!["r.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1"],
            ),
            (
                json!({"requests": {"memory": "lots"}}),
                vec!["r.requests[memory]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"],
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
    fn numbers_ports_percentages_and_ips() {
        assert!(non_negative_int("f", Some(&json!(0))).is_none());
        assert!(non_negative_int("f", None).is_none());
        assert_eq!(
            non_negative_int("spec.replicas", Some(&json!(-1)))
                .unwrap()
                .to_string(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert!(port("p", Some(&json!(80))).is_none());
        assert!(port("p", Some(&json!(0))).is_some());
        assert!(port("p", Some(&json!(65536))).is_some());
        assert!(int_or_percent("f", Some(&json!("25%")), false).is_empty());
        assert!(int_or_percent("f", Some(&json!(3)), false).is_empty());
        assert_eq!(
            messages(&int_or_percent(
                "spec.maxUnavailable",
                Some(&json!("200%")),
                false
            )),
            ["spec.maxUnavailable: Invalid value: \"200%\": must not be greater than 100%"]
        );
        assert_eq!(int_or_percent("f", Some(&json!("x%")), true).len(), 1);
        assert!(ip("status.podIP", "10.244.1.2").is_none());
        assert!(ip("status.podIP", "fd00::1").is_none());
        assert_eq!(
            ip("status.podIP", "999.1.1.1").unwrap().to_string(),
            "status.podIP: Invalid value: \"999.1.1.1\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        );
    }

    #[test]
    fn selectors_as_upstream() {
        let ok = json!({"matchLabels": {"app": "web"},
                        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]});
        assert!(label_selector("spec.selector", Some(&ok)).is_empty());
        let bad = json!({"matchLabels": {"a b": "x"},
                         "matchExpressions": [{"key": "tier", "operator": "In"},
                                              {"key": "t", "operator": "Exists", "values": ["x"]},
                                              {"key": "t", "operator": "Near"}]});
        let fields: Vec<String> = label_selector("spec.selector", Some(&bad))
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.selector.matchLabels",
                "spec.selector.matchExpressions[0].values",
                "spec.selector.matchExpressions[1].values",
                "spec.selector.matchExpressions[2].operator",
            ]
        );
    }
}
