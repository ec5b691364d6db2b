//! The value rules every kind's validation is made of, each in one place with upstream's field
//! paths and wording (apimachinery's and core/v1's validation helpers): quantities and resource
//! requirements (`resources`), string syntaxes (`text`: qualified names, ConfigMap keys,
//! environment variable and port names), addresses (`net`: IPs, CIDRs), non-negative integers,
//! ports, integer-or-percent and label selectors. A kind's strategy calls these; it never words
//! a rule itself.

mod net;
mod resources;
mod text;

use serde_json::Value;

use super::field::FieldError;

pub use net::{cidr, ip, one_per_family, parse_ip};
pub use resources::{
    container_resource_name, go_quantity, invalid_quantity, is_extended, non_negative_quantity,
    quantity, resource_list, resource_requirements, resource_value,
};
pub use text::{
    config_key_errors, env_var_name_errors, http_header_name_errors, label_value_errors,
    max_len_error, port_name_errors, qualified_name_errors, regex_error, subdomain_prefix_errors,
};

const NON_NEGATIVE: &str = "must be greater than or equal to 0";
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

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

const PERCENT_REGEX: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// An IntOrString as upstream prints it in a field error: through its `String()`, so a string
/// bare (`200%`, not `"200%"`) and a number as its digits; an absent one is the zero value, `0`.
pub fn int_or_string_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".to_string(),
    }
}

/// The number of a percentage matching upstream's `[0-9]+%` (0 when the digits overflow, as
/// upstream's ignored `strconv.Atoi` error gives), or None when it does not match.
pub fn percent_value(s: &str) -> Option<i64> {
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse().unwrap_or(0))
}

/// An integer or a percentage (`maxSurge`, `maxUnavailable`, a budget's `minAvailable`) at
/// `field`: a non-negative integer, or a string matching `[0-9]+%`, at most 100% unless
/// `over_100` (upstream's ValidatePositiveIntOrPercent and IsNotMoreThan100Percent, which pass
/// the IntOrString itself, printed bare through its `String()`).
pub fn int_or_percent(field: &str, v: Option<&Value>, over_100: bool) -> Vec<FieldError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Vec::new();
    };
    match v {
        Value::Number(_) => non_negative_int(field, Some(v)).into_iter().collect(),
        Value::String(s) => match percent_value(s) {
            None => vec![FieldError::invalid_go(field, s.as_str(), PERCENT_REGEX)],
            Some(n) if n > 100 && !over_100 => vec![FieldError::invalid_go(
                field,
                s.as_str(),
                "must not be greater than 100%",
            )],
            Some(_) => Vec::new(),
        },
        other => vec![FieldError::invalid(
            field,
            other.clone(),
            "must be an integer or percentage (e.g '5%')",
        )],
    }
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
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
                format!("{path}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
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
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        for msg in qualified_name_errors(key) {
            errs.push(FieldError::invalid(format!("{path}.key"), key, msg));
        }
        for (j, v) in values.iter().enumerate() {
            for msg in label_value_errors(v) {
                errs.push(FieldError::invalid(format!("{path}.values[{j}]"), *v, msg));
            }
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
    fn numbers_ports_and_percentages() {
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
        assert!(int_or_percent("f", Some(&json!("200%")), true).is_empty());
        // Upstream prints the IntOrString through its String(): the text bare.
        let cases: &[(Value, &[&str])] = &[
            (
                json!("200%"),
                &["spec.maxUnavailable: Invalid value: 200%: must not be greater than 100%"],
            ),
            (
                json!("-5%"),
                &["spec.maxUnavailable: Invalid value: -5%: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"],
            ),
            (
                json!("+5%"),
                &["spec.maxUnavailable: Invalid value: +5%: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"],
            ),
            (
                json!("x"),
                &["spec.maxUnavailable: Invalid value: x: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"],
            ),
            (
                json!(-5),
                &["spec.maxUnavailable: Invalid value: -5: must be greater than or equal to 0"],
            ),
        ];
        for (value, want) in cases {
            assert_eq!(
                messages(&int_or_percent("spec.maxUnavailable", Some(value), false)),
                *want,
                "{value}"
            );
        }
        assert_eq!(percent_value("99999999999999999999%"), Some(0));
        assert_eq!(int_or_string_text(Some(&json!("25%"))), "25%");
        assert_eq!(int_or_string_text(Some(&json!(5))), "5");
        assert_eq!(int_or_string_text(None), "0");
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
