//! The pod failure policy and success policy of a Job spec, as upstream's
//! validatePodFailurePolicy and validateSuccessPolicy: actions, exit code and pod condition
//! requirements, success rules over index sets.

use serde_json::Value;

use super::super::field::FieldError;
use super::super::rules::{non_negative_int, qualified_name_errors};
use super::at;
use super::job::{invalid_no_value, parse_indexes};

const MAX_FAILURE_RULES: usize = 20;
const MAX_EXIT_CODES: usize = 255;
const MAX_CONDITION_PATTERNS: usize = 20;
const MAX_SUCCEEDED_INDEXES: usize = 64 * 1024;
const MAX_SUCCESS_RULES: usize = 20;

const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];

pub(super) fn pod_failure_policy(spec: &Value, policy: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules = policy.get("rules").and_then(Value::as_array);
    let rules = rules.map(Vec::as_slice).unwrap_or_default();
    if rules.len() > MAX_FAILURE_RULES {
        errs.push(FieldError::too_many(
            format!("{path}.rules"),
            rules.len(),
            MAX_FAILURE_RULES,
        ));
    }
    let names: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .filter_map(|l| spec.pointer(&format!("/template/spec/{l}")))
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    for (i, rule) in rules.iter().enumerate() {
        let rp = format!("{path}.rules[{i}]");
        match rule.get("action").and_then(Value::as_str).unwrap_or("") {
            "" => errs.push(FieldError::required(
                format!("{rp}.action"),
                format!("valid values: [{}]", quoted(&ACTIONS, " ")),
            )),
            "FailIndex" if at(spec, "/backoffLimitPerIndex").is_none() => {
                errs.push(FieldError::invalid(
                    format!("{rp}.action"),
                    "FailIndex",
                    "requires the backoffLimitPerIndex to be set",
                ));
            }
            a if !ACTIONS.contains(&a) => errs.push(FieldError::not_supported(
                format!("{rp}.action"),
                a,
                &ACTIONS,
            )),
            _ => {}
        }
        let exit = at(rule, "/onExitCodes");
        let conditions = rule
            .get("onPodConditions")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty());
        if let Some(e) = exit {
            errs.extend(on_exit_codes(e, &format!("{rp}.onExitCodes"), &names));
        }
        if let Some(c) = conditions {
            errs.extend(on_pod_conditions(c, &format!("{rp}.onPodConditions")));
        }
        match (exit.is_some(), conditions.is_some()) {
            (true, true) => errs.push(invalid_no_value(
                rp,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            )),
            (false, false) => errs.push(invalid_no_value(
                rp,
                "specifying one of OnExitCodes and OnPodConditions is required",
            )),
            _ => {}
        }
    }
    errs
}

/// Go's `%q` of a string slice's items, joined by `sep`.
fn quoted(items: &[&str], sep: &str) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(sep)
}

fn on_pod_conditions(patterns: &[Value], path: &str) -> Vec<FieldError> {
    const STATUSES: [&str; 3] = ["False", "True", "Unknown"];
    let mut errs = Vec::new();
    if patterns.len() > MAX_CONDITION_PATTERNS {
        errs.push(FieldError::too_many(
            path,
            patterns.len(),
            MAX_CONDITION_PATTERNS,
        ));
    }
    for (j, pattern) in patterns.iter().enumerate() {
        let ty = pattern.get("type").and_then(Value::as_str).unwrap_or("");
        for m in qualified_name_errors(ty) {
            errs.push(FieldError::invalid(format!("{path}[{j}].type"), ty, m));
        }
        match pattern.get("status").and_then(Value::as_str).unwrap_or("") {
            "" => errs.push(FieldError::required(
                format!("{path}[{j}].status"),
                format!("valid values: [{}]", quoted(&STATUSES, " ")),
            )),
            s if !STATUSES.contains(&s) => errs.push(FieldError::not_supported(
                format!("{path}[{j}].status"),
                s,
                &STATUSES,
            )),
            _ => {}
        }
    }
    errs
}

fn on_exit_codes(req: &Value, path: &str, names: &[&str]) -> Vec<FieldError> {
    const OPERATORS: [&str; 2] = ["In", "NotIn"];
    let mut errs = Vec::new();
    let operator = req.get("operator").and_then(Value::as_str).unwrap_or("");
    match operator {
        "" => errs.push(FieldError::required(
            format!("{path}.operator"),
            format!("valid values: [{}]", quoted(&OPERATORS, " ")),
        )),
        o if !OPERATORS.contains(&o) => errs.push(FieldError::not_supported(
            format!("{path}.operator"),
            o,
            &OPERATORS,
        )),
        _ => {}
    }
    if let Some(name) = req.get("containerName").and_then(Value::as_str) {
        if !names.contains(&name) {
            errs.push(FieldError::invalid(
                format!("{path}.containerName"),
                name,
                "must be one of the container or initContainer names in the pod template",
            ));
        }
    }
    let values: Vec<i64> = req
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .collect();
    let vp = format!("{path}.values");
    if values.is_empty() {
        errs.push(FieldError::invalid_go(
            vp.as_str(),
            "[]int32(nil)",
            "at least one value is required",
        ));
    } else if values.len() > MAX_EXIT_CODES {
        errs.push(FieldError::too_many(
            vp.as_str(),
            values.len(),
            MAX_EXIT_CODES,
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (j, &v) in values.iter().enumerate() {
        if operator == "In" && v == 0 {
            errs.push(FieldError::invalid(
                format!("{vp}[{j}]"),
                0,
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(v) {
            errs.push(FieldError::duplicate(format!("{vp}[{j}]"), v));
        }
    }
    if values.windows(2).any(|w| w[0] > w[1]) {
        let shown: Vec<String> = values.iter().map(i64::to_string).collect();
        errs.push(FieldError::invalid_go(
            vp.as_str(),
            format!("[]int32{{{}}}", shown.join(", ")),
            "must be ordered",
        ));
    }
    errs
}

pub(super) fn success_policy(policy: &Value, completions: i64, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules = policy.get("rules").and_then(Value::as_array);
    let rules = rules.map(Vec::as_slice).unwrap_or_default();
    let rules_path = format!("{path}.rules");
    if rules.is_empty() {
        errs.push(FieldError::required(
            rules_path.as_str(),
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > MAX_SUCCESS_RULES {
        errs.push(FieldError::too_many(
            rules_path.as_str(),
            rules.len(),
            MAX_SUCCESS_RULES,
        ));
    }
    for (i, rule) in rules.iter().enumerate() {
        let rp = format!("{rules_path}[{i}]");
        let indexes = rule.get("succeededIndexes").and_then(Value::as_str);
        let count = at(rule, "/succeededCount");
        if indexes.is_none() && count.is_none() {
            errs.push(FieldError::required(
                rp.as_str(),
                "at least one of succeededCount or succeededIndexes must be specified",
            ));
        }
        let mut total = 0;
        if let Some(text) = indexes {
            let ip = format!("{rp}.succeededIndexes");
            if text.len() > MAX_SUCCEEDED_INDEXES {
                errs.push(FieldError::too_long(
                    ip.as_str(),
                    text,
                    MAX_SUCCEEDED_INDEXES,
                ));
            }
            match parse_indexes(text, completions) {
                Ok((_, n)) => total = n,
                Err(e) => errs.push(FieldError::invalid(
                    ip,
                    text,
                    format!("error parsing succeededIndexes: {e}"),
                )),
            }
        }
        if let Some(c) = count {
            let cp = format!("{rp}.succeededCount");
            errs.extend(non_negative_int(&cp, Some(c)));
            let n = c.as_i64().unwrap_or(0);
            if n > completions {
                errs.push(FieldError::invalid(
                    cp.as_str(),
                    n,
                    format!("must be less than or equal to {completions} (the number of specified completions)"),
                ));
            }
            if indexes.is_some() && n > total {
                errs.push(FieldError::invalid(
                    cp.as_str(),
                    n,
                    format!("must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"),
                ));
            }
        }
    }
    errs
}
