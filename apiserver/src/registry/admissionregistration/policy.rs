//! Upstream's validation of a ValidatingAdmissionPolicy's spec (failure policy, paramKind,
//! matchConstraints, matchConditions, variables, validations, auditAnnotations, every expression
//! compiled) and of its status (type-checking warnings).

use serde_json::Value;

use super::rules::{compile, match_resources, str_at, SUPPORTED_REASONS};
use crate::registry::field::{ErrorType, FieldError};
use crate::registry::names::{label_errors, subdomain_errors};
use crate::registry::rules::qualified_name_errors;

const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MAX_AUDIT_ANNOTATIONS: usize = 20;
const MAX_VALUE_EXPRESSION: usize = 5 * 1024;
const MAX_MATCH_CONDITIONS: usize = 64;

fn items<'a>(spec: &'a Value, key: &str) -> &'a [Value] {
    spec.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

pub fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let mut errs = Vec::new();
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None => errs.push(FieldError::required("spec.failurePolicy", "")),
        Some(p) if !FAILURE_POLICIES.contains(&p) => errs.push(FieldError::not_supported(
            "spec.failurePolicy",
            p,
            FAILURE_POLICIES,
        )),
        Some(_) => {}
    }
    if let Some(pk) = spec.get("paramKind").filter(|p| !p.is_null()) {
        errs.extend(param_kind(pk));
    }
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => errs.push(FieldError::required("spec.matchConstraints", "")),
        Some(mc) => {
            errs.extend(match_resources("spec.matchConstraints", mc));
            if items(mc, "resourceRules").is_empty() {
                errs.push(FieldError::required(
                    "spec.matchConstraints.resourceRules",
                    "",
                ));
            }
        }
    }
    errs.extend(match_conditions(items(spec, "matchConditions")));
    for (i, v) in items(spec, "variables").iter().enumerate() {
        errs.extend(variable(&format!("spec.variables[{i}]"), v));
    }
    let validations = items(spec, "validations");
    let annotations = items(spec, "auditAnnotations");
    if validations.is_empty() && annotations.is_empty() {
        let why = "validations or auditAnnotations must contain at least one item";
        errs.push(FieldError::required("spec.validations", why));
        errs.push(FieldError::required("spec.auditAnnotations", why));
        return errs;
    }
    for (i, v) in validations.iter().enumerate() {
        errs.extend(validation(&format!("spec.validations[{i}]"), v));
    }
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        errs.push(FieldError::invalid_go(
            "spec.auditAnnotations",
            format!("{annotations:?}"),
            format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        ));
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut keys: Vec<&str> = Vec::new();
    for (i, a) in annotations.iter().enumerate() {
        let path = format!("spec.auditAnnotations[{i}]");
        errs.extend(audit_annotation(&path, name, a));
        let key = str_at(a, "key");
        if keys.contains(&key) {
            errs.push(FieldError::duplicate(format!("{path}.key"), key));
        }
        keys.push(key);
    }
    errs
}

/// Upstream's validateParamKind: `apiVersion` a group/version, `kind` a DNS-1035 label in any
/// case.
fn param_kind(pk: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let api_version = str_at(pk, "apiVersion");
    if api_version.is_empty() {
        errs.push(FieldError::required("spec.paramKind.apiVersion", ""));
    } else if api_version.matches('/').count() > 1 {
        errs.push(FieldError::invalid(
            "spec.paramKind.apiVersion",
            api_version,
            format!("unexpected GroupVersion string: {api_version}"),
        ));
    } else if api_version != "/" {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        if !group.is_empty() {
            let msgs = subdomain_errors(group);
            if !msgs.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.paramKind.apiVersion",
                    group,
                    msgs.join(","),
                ));
            }
        }
        if version.is_empty() {
            errs.push(FieldError::invalid(
                "spec.paramKind.apiVersion",
                api_version,
                "version must be specified",
            ));
        } else {
            let msgs = dns1035_errors(version);
            if !msgs.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.paramKind.apiVersion",
                    version,
                    msgs.join(","),
                ));
            }
        }
    }
    let kind = str_at(pk, "kind");
    if kind.is_empty() {
        errs.push(FieldError::required("spec.paramKind.kind", ""));
    } else {
        let msgs = dns1035_errors(&kind.to_lowercase());
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                "spec.paramKind.kind",
                kind,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    msgs.join(",")
                ),
            ));
        }
    }
    errs
}

/// Upstream's IsDNS1035Label: a DNS-1123 label that starts with a letter.
fn dns1035_errors(s: &str) -> Vec<String> {
    let starts_with_letter = s.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    if label_errors(s).is_empty() && starts_with_letter {
        return Vec::new();
    }
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    out.push(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with \
         an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or \
         'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            .to_string(),
    );
    out
}

/// Upstream's validateMatchConditions: at most 64, named with unique qualified names, each
/// expression compiled.
fn match_conditions(conditions: &[Value]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if conditions.len() > MAX_MATCH_CONDITIONS {
        errs.push(FieldError {
            kind: ErrorType::TooMany,
            field: "spec.matchConditions".into(),
            value: None,
            detail: format!("must have at most {MAX_MATCH_CONDITIONS} items"),
        });
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let path = format!("spec.matchConditions[{i}]");
        let expression = str_at(c, "expression");
        if expression.trim().is_empty() {
            errs.push(FieldError::required(format!("{path}.expression"), ""));
        } else {
            errs.extend(compile(&format!("{path}.expression"), expression.trim()));
        }
        let name = str_at(c, "name");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{path}.name"), ""));
        } else {
            for msg in qualified_name_errors(name) {
                errs.push(FieldError::invalid(format!("{path}.name"), name, msg));
            }
            if names.contains(&name) {
                errs.push(FieldError::duplicate(format!("{path}.name"), name));
            } else {
                names.push(name);
            }
        }
    }
    errs
}

/// Upstream's isCELIdentifier.
fn is_cel_identifier(name: &str) -> bool {
    use crate::registry::cel::values::RESERVED;
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    first_ok && chars.all(|c| c == '_' || c.is_ascii_alphanumeric()) && !RESERVED.contains(&name)
}

fn variable(path: &str, v: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = str_at(v, "name");
    if name.trim().is_empty() {
        errs.push(FieldError::required(
            format!("{path}.name"),
            "name is not specified",
        ));
    } else if !is_cel_identifier(name) {
        errs.push(FieldError::invalid(
            format!("{path}.name"),
            name,
            "name is not a valid CEL identifier",
        ));
    }
    let expression = str_at(v, "expression");
    if expression.trim().is_empty() {
        errs.push(FieldError::required(
            format!("{path}.expression"),
            "expression is not specified",
        ));
    } else {
        errs.extend(compile(&format!("{path}.expression"), expression));
    }
    errs
}

fn validation(path: &str, v: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let expression = str_at(v, "expression");
    if expression.trim().is_empty() {
        errs.push(FieldError::required(
            format!("{path}.expression"),
            "expression is not specified",
        ));
    } else {
        errs.extend(compile(&format!("{path}.expression"), expression));
    }
    let message_expression = str_at(v, "messageExpression");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        errs.push(FieldError::invalid(
            format!("{path}.messageExpression"),
            message_expression,
            "must be non-empty if specified",
        ));
    } else if !message_expression.trim().is_empty() {
        errs.extend(compile(
            &format!("{path}.messageExpression"),
            message_expression,
        ));
    }
    let message = str_at(v, "message");
    if !message.is_empty() && message.trim().is_empty() {
        errs.push(FieldError::invalid(
            format!("{path}.message"),
            message,
            "message must be non-empty if specified",
        ));
    } else if message.trim().contains(['\n', '\r']) {
        errs.push(FieldError::invalid(
            format!("{path}.message"),
            message,
            "message must not contain line breaks",
        ));
    }
    if let Some(reason) = v.get("reason").and_then(Value::as_str) {
        if !SUPPORTED_REASONS.contains(&reason) {
            errs.push(FieldError::not_supported(
                format!("{path}.reason"),
                reason,
                SUPPORTED_REASONS,
            ));
        }
    }
    errs
}

fn audit_annotation(path: &str, policy: &str, a: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let key = str_at(a, "key");
    if policy.is_empty() {
        errs.push(FieldError::invalid(
            format!("{path}.key"),
            key,
            "requires metadata.name be non-empty",
        ));
    } else {
        let qualified = format!("{policy}/{key}");
        for msg in qualified_name_errors(&qualified) {
            errs.push(FieldError::invalid(
                format!("{path}.key"),
                qualified.as_str(),
                msg,
            ));
        }
    }
    let value = str_at(a, "valueExpression");
    let trimmed = value.trim();
    if trimmed.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.valueExpression"),
            "valueExpression is not specified",
        ));
    } else if trimmed.len() > MAX_VALUE_EXPRESSION {
        errs.push(FieldError::required(
            format!("{path}.valueExpression"),
            format!("must not exceed {MAX_VALUE_EXPRESSION} bytes in length"),
        ));
    } else if let Some(mut e) = compile(&format!("{path}.valueExpression"), trimmed) {
        // Upstream names the expression as written, not trimmed.
        e = FieldError::invalid(e.field.clone(), value, e.detail.clone());
        errs.push(e);
    }
    errs
}

/// Upstream's validateValidatingAdmissionPolicyStatus: every type-checking warning has a
/// warning and a field reference.
pub fn validate_status(status: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let warnings = status
        .and_then(|s| s.pointer("/typeChecking/expressionWarnings"))
        .and_then(Value::as_array);
    for (i, w) in warnings.into_iter().flatten().enumerate() {
        let path = format!("status.typeChecking.expressionWarnings[{i}]");
        if str_at(w, "warning").is_empty() {
            errs.push(FieldError::required(format!("{path}.warning"), ""));
        }
        if str_at(w, "fieldRef").trim().is_empty() {
            errs.push(FieldError::required(format!("{path}.fieldRef"), ""));
        }
    }
    errs
}
