//! Upstream's validation of a ValidatingAdmissionPolicyBinding's spec: the policy's name, the
//! paramRef (name or selector, and what to do when no param is found), matchResources and the
//! validation actions (Deny, Warn, Audit; never Deny with Warn).

use serde_json::Value;

use super::rules::{go_slice, match_resources, str_at, strings};
use crate::registry::field::FieldError;
use crate::registry::names::subdomain_errors;
use crate::registry::rules::{label_selector, path_segment_name};

const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];
const NOT_FOUND_ACTIONS: &[&str] = &["Deny", "Allow"];

pub fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let mut errs = Vec::new();
    let policy = str_at(spec, "policyName");
    if policy.is_empty() {
        errs.push(FieldError::required("spec.policyName", ""));
    } else {
        for msg in subdomain_errors(policy) {
            errs.push(FieldError::invalid("spec.policyName", policy, msg));
        }
    }
    if let Some(pr) = spec.get("paramRef").filter(|p| !p.is_null()) {
        errs.extend(param_ref(pr));
    }
    if let Some(mr) = spec.get("matchResources").filter(|m| !m.is_null()) {
        errs.extend(match_resources("spec.matchResources", mr));
    }
    errs.extend(validation_actions(&strings(spec.get("validationActions"))));
    errs
}

fn param_ref(pr: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = str_at(pr, "name");
    let selector = pr.get("selector").filter(|s| !s.is_null());
    let exclusive = "name and selector are mutually exclusive";
    if !name.is_empty() {
        errs.extend(path_segment_name("spec.paramRef.name", name));
        if selector.is_some() {
            errs.push(FieldError::forbidden("spec.paramRef.name", exclusive));
        }
    }
    if let Some(sel) = selector {
        errs.extend(label_selector("spec.paramRef.selector", Some(sel)));
        if !name.is_empty() {
            errs.push(FieldError::forbidden("spec.paramRef.selector", exclusive));
        }
    }
    if name.is_empty() && selector.is_none() {
        errs.push(FieldError::required(
            "spec.paramRef",
            "one of name or selector must be specified",
        ));
    }
    match pr
        .get("parameterNotFoundAction")
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty())
    {
        None => errs.push(FieldError::required(
            "spec.paramRef.parameterNotFoundAction",
            "",
        )),
        Some(a) if !NOT_FOUND_ACTIONS.contains(&a) => errs.push(FieldError::not_supported(
            "spec.paramRef.parameterNotFoundAction",
            a,
            NOT_FOUND_ACTIONS,
        )),
        Some(_) => {}
    }
    errs
}

/// Upstream's validateValidationActions.
fn validation_actions(actions: &[&str]) -> Vec<FieldError> {
    let path = "spec.validationActions";
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, a) in actions.iter().enumerate() {
        if !ACTIONS.contains(a) {
            errs.push(FieldError::not_supported(
                format!("{path}[{i}]"),
                *a,
                ACTIONS,
            ));
        }
        if seen.contains(a) {
            errs.push(FieldError::duplicate(format!("{path}[{i}]"), *a));
        }
        seen.push(a);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        errs.push(FieldError::invalid_go(
            path,
            go_slice("admissionregistration.ValidationAction", actions),
            "must not contain both Deny and Warn (repeating the same validation failure \
             information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one validation action is required",
        ));
    }
    errs
}
