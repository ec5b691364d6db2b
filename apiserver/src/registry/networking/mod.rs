//! networking.k8s.io/v1: Ingress (`ingress`), IngressClass and NetworkPolicy (`policy`), stored,
//! defaulted and validated as upstream (there is no data plane: nothing routes or filters).

mod ingress;
mod policy;

use serde_json::{json, Value};

use super::field::FieldError;
use super::names::{immutable, subdomain_errors, validate_object_meta, NameRule};
use super::rules::path_segment_name;
use super::Strategy;

pub struct IngressStrategy;

impl Strategy for IngressStrategy {
    /// A new Ingress has an empty status: only its controller writes one.
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({"loadBalancer": {}}));
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(ingress::class_annotation(obj));
        errs.extend(ingress::validate_spec(obj.get("spec")));
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(new, NameRule::Subdomain);
        errs.extend(ingress::validate_spec(new.get("spec")));
        errs
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        ingress::validate_status(new.pointer("/status/loadBalancer/ingress"))
    }
}

pub struct IngressClassStrategy;

/// Upstream's limit on `spec.controller`.
const MAX_CONTROLLER_LEN: usize = 250;
const HTTP_PATH_FMT: &str = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";

/// Upstream's IsDomainPrefixedPath (`example.com/ingress-controller`).
fn domain_prefixed_path(field: &str, value: &str) -> Vec<FieldError> {
    if value.is_empty() {
        return vec![FieldError::required(field, "")];
    }
    let Some((host, path)) = value
        .split_once('/')
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        return vec![FieldError::invalid(
            field,
            value,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: Vec<FieldError> = subdomain_errors(host)
        .into_iter()
        .map(|m| FieldError::invalid(field, host, m))
        .collect();
    let ok = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b));
    if !ok {
        errs.push(FieldError::invalid(
            field,
            path,
            format!("Invalid path (regex used for validation is '{HTTP_PATH_FMT}')"),
        ));
    }
    errs
}

/// `spec.parameters` of an IngressClass.
fn class_parameters(p: Option<&Value>) -> Vec<FieldError> {
    let Some(p) = p.filter(|p| p.is_object()) else {
        return vec![];
    };
    const AT: &str = "spec.parameters";
    let mut errs = Vec::new();
    let text = |k: &str| p.get(k).and_then(Value::as_str);
    if let Some(group) = text("apiGroup").filter(|g| !g.is_empty()) {
        for m in subdomain_errors(group) {
            errs.push(FieldError::invalid(format!("{AT}.apiGroup"), group, m));
        }
    }
    for key in ["kind", "name"] {
        match text(key).filter(|s| !s.is_empty()) {
            None => errs.push(FieldError::required(format!("{AT}.{key}"), "")),
            Some(v) => errs.extend(path_segment_name(&format!("{AT}.{key}"), v)),
        }
    }
    let namespace = text("namespace");
    match text("scope") {
        None => errs.push(FieldError::required(format!("{AT}.scope"), "")),
        Some("Namespace") => match namespace {
            None => errs.push(FieldError::required(
                format!("{AT}.namespace"),
                "`parameters.scope` is set to 'Namespace'",
            )),
            Some(ns) => {
                for m in super::names::label_errors(ns) {
                    errs.push(FieldError::invalid(format!("{AT}.namespace"), ns, m));
                }
            }
        },
        Some("Cluster") => {
            if namespace.is_some() {
                errs.push(FieldError::forbidden(
                    format!("{AT}.namespace"),
                    "`parameters.scope` is set to 'Cluster'",
                ));
            }
        }
        Some(other) => errs.push(FieldError::not_supported(
            format!("{AT}.scope"),
            other,
            &["Cluster", "Namespace"],
        )),
    }
    errs
}

impl IngressClassStrategy {
    fn validate(obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let controller = obj
            .pointer("/spec/controller")
            .and_then(Value::as_str)
            .unwrap_or("");
        if controller.len() > MAX_CONTROLLER_LEN {
            errs.push(FieldError::too_long(
                "spec.controller",
                controller,
                MAX_CONTROLLER_LEN,
            ));
        }
        errs.extend(domain_prefixed_path("spec.controller", controller));
        errs.extend(class_parameters(obj.pointer("/spec/parameters")));
        errs
    }
}

impl Strategy for IngressClassStrategy {
    /// Parameters without a scope are cluster-scoped.
    fn default(&self, obj: &mut Value) {
        if let Some(p) = obj
            .pointer_mut("/spec/parameters")
            .and_then(Value::as_object_mut)
        {
            p.entry("scope").or_insert(json!("Cluster"));
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        Self::validate(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = Self::validate(new);
        errs.extend(immutable(
            "spec.controller",
            new.pointer("/spec/controller"),
            old.pointer("/spec/controller"),
        ));
        errs
    }
}

pub struct NetworkPolicyStrategy;

impl Strategy for NetworkPolicyStrategy {
    fn default(&self, obj: &mut Value) {
        policy::default(obj);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        errs.extend(policy::validate_spec(obj.get("spec")));
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }
}

#[cfg(test)]
mod tests;
