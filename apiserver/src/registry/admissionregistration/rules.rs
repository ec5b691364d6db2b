//! The parts of a policy and a binding upstream validates alike: MatchResources (match policy,
//! selectors, resource rules with their operations, groups, versions, resources and scope), CEL
//! expressions (compiled, with upstream's `compilation failed: …`), and values printed as Go
//! prints them in messages.

use serde_json::Value;

use crate::registry::cel::engine::engine;
use crate::registry::field::FieldError;
use crate::registry::rules::{label_selector, path_segment_name};

/// The reasons a validation may give, as upstream's supportedValidationPolicyReason.
pub const SUPPORTED_REASONS: &[&str] = &[
    "Forbidden",
    "Invalid",
    "RequestEntityTooLarge",
    "Unauthorized",
];

const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];

/// The strings of a JSON list (non-strings are skipped: the typed check refused them already).
pub fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

pub fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A Go slice of strings as `%v`-with-type prints it in a field error: `[]string{"a", "b"}`.
pub fn go_slice(type_name: &str, items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]{type_name}{{{}}}", quoted.join(", "))
}

/// A CEL expression at `path`: upstream's compile errors as an Invalid value.
pub fn compile(path: &str, expression: &str) -> Option<FieldError> {
    engine().compile(expression).err().map(|issues| {
        FieldError::invalid(path, expression, format!("compilation failed: {issues}"))
    })
}

/// Upstream's validateMatchResources.
pub fn match_resources(path: &str, mr: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match mr.get("matchPolicy").and_then(Value::as_str) {
        None => errs.push(FieldError::required(format!("{path}.matchPolicy"), "")),
        Some(p) if !MATCH_POLICIES.contains(&p) => errs.push(FieldError::not_supported(
            format!("{path}.matchPolicy"),
            p,
            MATCH_POLICIES,
        )),
        Some(_) => {}
    }
    for key in ["namespaceSelector", "objectSelector"] {
        match mr.get(key).filter(|s| !s.is_null()) {
            None => errs.push(FieldError::required(format!("{path}.{key}"), "")),
            Some(sel) => errs.extend(label_selector(&format!("{path}.{key}"), Some(sel))),
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in mr
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            errs.extend(named_rule(&format!("{path}.{key}[{i}]"), rule));
        }
    }
    errs
}

/// Upstream's validateNamedRuleWithOperations: resource names, then the rule.
fn named_rule(path: &str, rule: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, name) in strings(rule.get("resourceNames")).into_iter().enumerate() {
        let field = format!("{path}.resourceNames[{i}]");
        errs.extend(path_segment_name(&field, name));
        if seen.contains(&name) {
            errs.push(FieldError::duplicate(field, name));
        } else {
            seen.push(name);
        }
    }
    let ops = strings(rule.get("operations"));
    if ops.is_empty() {
        errs.push(FieldError::required(format!("{path}.operations"), ""));
    }
    if ops.len() > 1 && ops.contains(&"*") {
        errs.push(FieldError::invalid_go(
            format!("{path}.operations"),
            go_slice("admissionregistration.OperationType", &ops),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errs.push(FieldError::not_supported(
                format!("{path}.operations[{i}]"),
                *op,
                OPERATIONS,
            ));
        }
    }
    errs.extend(api_rule(path, rule));
    errs
}

/// Upstream's validateRule with subresources allowed.
fn api_rule(path: &str, rule: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let items = strings(rule.get(key));
        if items.is_empty() {
            errs.push(FieldError::required(format!("{path}.{key}"), ""));
        }
        if items.len() > 1 && items.contains(&"*") {
            errs.push(FieldError::invalid_go(
                format!("{path}.{key}"),
                go_slice("string", &items),
                format!("if '*' is present, must not specify other {what}"),
            ));
        }
    }
    for (i, v) in strings(rule.get("apiVersions")).into_iter().enumerate() {
        if v.is_empty() {
            errs.push(FieldError::required(format!("{path}.apiVersions[{i}]"), ""));
        }
    }
    errs.extend(resources(
        &format!("{path}.resources"),
        &strings(rule.get("resources")),
    ));
    if let Some(scope) = rule.get("scope").and_then(Value::as_str) {
        if !SCOPES.contains(&scope) {
            errs.push(FieldError::not_supported(
                format!("{path}.scope"),
                scope,
                SCOPES,
            ));
        }
    }
    errs
}

/// Upstream's validateResources: `x`, `x/y`, `x/*`, `*/y`, `*`, `*/*` and their exclusions.
fn resources(path: &str, resources: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if resources.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    let mut wildcard_sub: Vec<&str> = Vec::new();
    let mut wildcard_res: Vec<&str> = Vec::new();
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, res_sub) in resources.iter().enumerate() {
        if res_sub.is_empty() {
            errs.push(FieldError::required(format!("{path}[{i}]"), ""));
            continue;
        }
        double |= *res_sub == "*/*";
        single |= *res_sub == "*";
        let Some((res, sub)) = res_sub.split_once('/') else {
            plain = *res_sub != "*";
            continue;
        };
        if wildcard_sub.contains(&res) {
            errs.push(FieldError::invalid(
                format!("{path}[{i}]"),
                *res_sub,
                format!("if '{res}/*' is present, must not specify {res_sub}"),
            ));
        }
        if wildcard_res.contains(&sub) {
            errs.push(FieldError::invalid(
                format!("{path}[{i}]"),
                *res_sub,
                format!("if '*/{sub}' is present, must not specify {res_sub}"),
            ));
        }
        if sub == "*" {
            wildcard_sub.push(res);
        }
        if res == "*" {
            wildcard_res.push(sub);
        }
    }
    if resources.len() > 1 && double {
        errs.push(FieldError::invalid_go(
            path,
            go_slice("string", resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        errs.push(FieldError::invalid_go(
            path,
            go_slice("string", resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    errs
}
