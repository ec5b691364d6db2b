//! An Ingress's spec as upstream's ValidateIngressSpec checks it: rules or a default backend,
//! hosts (DNS names, `*.` wildcards, no IPs), paths with their required `pathType`, backends
//! (a service with a name and one port, or a resource), TLS hosts and secret names, the class
//! name; and its load balancer status.

use serde_json::Value;

use super::super::field::FieldError;
use super::super::names::subdomain_errors;
use super::super::rules::{ip, parse_ip};
use super::super::rules::{path_segment_name, port, port_name_errors};
use super::super::schema::dns1035_label_errors;

const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
const PATH_TYPES: &[&str] = &["Exact", "ImplementationSpecific", "Prefix"];
const INVALID_SEQUENCES: &[&str] = &["//", "/./", "/../", "%2f", "%2F"];
const INVALID_SUFFIXES: &[&str] = &["/..", "/."];
const WILDCARD_MSG: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn text<'a>(v: Option<&'a Value>, key: &str) -> &'a str {
    v.and_then(|v| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn list(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The class annotation and `spec.ingressClassName` together are refused on create.
pub fn class_annotation(obj: &Value) -> Vec<FieldError> {
    let annotation = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(CLASS_ANNOTATION))
        .and_then(Value::as_str);
    let class = obj
        .pointer("/spec/ingressClassName")
        .and_then(Value::as_str);
    match (annotation, class) {
        (Some(a), Some(_)) => vec![FieldError::invalid(
            format!("annotations.{CLASS_ANNOTATION}"),
            a,
            "can not be set when the class field is also set",
        )],
        _ => vec![],
    }
}

/// A host of a rule or of a TLS entry: a DNS subdomain, or `*.` and one.
fn host_errors(field: &str, host: &str) -> Vec<FieldError> {
    match host.strip_prefix("*.") {
        Some(rest) if subdomain_errors(rest).is_empty() => vec![],
        Some(_) => vec![FieldError::invalid(field, host, WILDCARD_MSG)],
        None => subdomain_errors(host)
            .into_iter()
            .map(|m| FieldError::invalid(field, host, m))
            .collect(),
    }
}

/// A backend: exactly one of a service (a DNS-1035 name and a port name or number) or a
/// typed local object reference.
fn backend(field: &str, b: Option<&Value>) -> Vec<FieldError> {
    let resource = b.and_then(|b| b.get("resource")).filter(|v| v.is_object());
    let service = b.and_then(|b| b.get("service")).filter(|v| v.is_object());
    let mut errs = Vec::new();
    match (resource, service) {
        (Some(_), Some(_)) => errs.push(FieldError::invalid(
            field,
            "",
            "cannot set both resource and service backends",
        )),
        (Some(r), None) => {
            let at = format!("{field}.resource");
            let group = text(Some(r), "apiGroup");
            if !group.is_empty() {
                for m in subdomain_errors(group) {
                    errs.push(FieldError::invalid(format!("{at}.apiGroup"), group, m));
                }
            }
            for key in ["kind", "name"] {
                let v = text(Some(r), key);
                if v.is_empty() {
                    errs.push(FieldError::required(format!("{at}.{key}"), ""));
                } else {
                    errs.extend(path_segment_name(&format!("{at}.{key}"), v));
                }
            }
        }
        (None, Some(s)) => {
            let name = text(Some(s), "name");
            if name.is_empty() {
                errs.push(FieldError::required(format!("{field}.service.name"), ""));
            }
            for m in dns1035_label_errors(name)
                .into_iter()
                .filter(|_| !name.is_empty())
            {
                errs.push(FieldError::invalid(
                    format!("{field}.service.name"),
                    name,
                    m,
                ));
            }
            let p = s.get("port");
            let port_name = text(p, "name");
            let number = p.and_then(|p| p.get("number"));
            let has_number = number.and_then(Value::as_i64).unwrap_or(0) != 0;
            match (!port_name.is_empty(), has_number) {
                (true, true) => errs.push(FieldError::invalid(
                    field,
                    "",
                    "cannot set both port name & port number",
                )),
                (true, false) => {
                    for m in port_name_errors(port_name) {
                        errs.push(FieldError::invalid(
                            format!("{field}.service.port.name"),
                            port_name,
                            m,
                        ));
                    }
                }
                (false, true) => {
                    errs.extend(port(&format!("{field}.service.port.number"), number));
                }
                (false, false) => errs.push(FieldError::required(
                    field,
                    "port name or number is required",
                )),
            }
        }
        (None, None) => errs.push(FieldError::invalid(
            field,
            "",
            "resource or service backend is required",
        )),
    }
    errs
}

/// One HTTP path: its type decides which paths are allowed.
fn http_path(field: &str, p: &Value) -> Vec<FieldError> {
    // k8s-openapi's type holds `pathType` as a plain string, so a missing one reads as "".
    let Some(kind) = p
        .get("pathType")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
    else {
        return vec![FieldError::required(
            format!("{field}.pathType"),
            "pathType must be specified",
        )];
    };
    let path = text(Some(p), "path");
    let at = format!("{field}.path");
    let mut errs = Vec::new();
    match kind {
        "Exact" | "Prefix" => {
            if !path.starts_with('/') {
                errs.push(FieldError::invalid(&at, path, "must be an absolute path"));
            }
            for seq in INVALID_SEQUENCES.iter().filter(|s| path.contains(**s)) {
                errs.push(FieldError::invalid(
                    &at,
                    path,
                    format!("must not contain '{seq}'"),
                ));
            }
            for suffix in INVALID_SUFFIXES.iter().filter(|s| path.ends_with(**s)) {
                errs.push(FieldError::invalid(
                    &at,
                    path,
                    format!("cannot end with '{suffix}'"),
                ));
            }
        }
        "ImplementationSpecific" => {
            if !path.is_empty() && !path.starts_with('/') {
                errs.push(FieldError::invalid(&at, path, "must be an absolute path"));
            }
        }
        other => errs.push(FieldError::not_supported(
            format!("{field}.pathType"),
            other,
            PATH_TYPES,
        )),
    }
    errs.extend(backend(&format!("{field}.backend"), p.get("backend")));
    errs
}

/// `spec` of an Ingress.
pub fn validate_spec(spec: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules = list(spec.and_then(|s| s.get("rules")));
    let default_backend = spec
        .and_then(|s| s.get("defaultBackend"))
        .filter(|b| !b.is_null());
    match default_backend {
        Some(b) => errs.extend(backend("spec.defaultBackend", Some(b))),
        None if rules.is_empty() => errs.push(FieldError::invalid_go(
            "spec",
            "[]networking.IngressRule(nil)",
            "either `defaultBackend` or `rules` must be specified",
        )),
        None => {}
    }
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("spec.rules[{i}]");
        let host = text(Some(rule), "host");
        if !host.is_empty() {
            if parse_ip(host).is_some() {
                errs.push(FieldError::invalid(
                    format!("{at}.host"),
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
            errs.extend(host_errors(&format!("{at}.host"), host));
        }
        if let Some(http) = rule.get("http").filter(|h| h.is_object()) {
            let paths = list(http.get("paths"));
            if paths.is_empty() {
                errs.push(FieldError::required(format!("{at}.http.paths"), ""));
            }
            for (j, p) in paths.iter().enumerate() {
                errs.extend(http_path(&format!("{at}.http.paths[{j}]"), p));
            }
        }
    }
    for (i, tls) in list(spec.and_then(|s| s.get("tls"))).iter().enumerate() {
        for (j, host) in list(tls.get("hosts")).iter().enumerate() {
            let host = host.as_str().unwrap_or("");
            errs.extend(host_errors(&format!("spec.tls[{i}].hosts[{j}]"), host));
        }
        let secret = text(Some(tls), "secretName");
        if !secret.is_empty() {
            for m in subdomain_errors(secret) {
                errs.push(FieldError::invalid(
                    format!("spec.tls[{i}].secretName"),
                    secret,
                    m,
                ));
            }
        }
    }
    let class = text(spec, "ingressClassName");
    if spec
        .and_then(|s| s.get("ingressClassName"))
        .is_some_and(Value::is_string)
    {
        for m in subdomain_errors(class) {
            errs.push(FieldError::invalid("spec.ingressClassName", class, m));
        }
    }
    errs
}

/// `status.loadBalancer.ingress`: IPs are IPs, hostnames are not.
pub fn validate_status(entries: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, e) in list(entries).iter().enumerate() {
        let at = format!("status.loadBalancer.ingress[{i}]");
        let addr = text(Some(e), "ip");
        if !addr.is_empty() {
            errs.extend(ip(&format!("{at}.ip"), addr));
        }
        let host = text(Some(e), "hostname");
        if !host.is_empty() {
            errs.extend(
                subdomain_errors(host)
                    .into_iter()
                    .map(|m| FieldError::invalid(format!("{at}.hostname"), host, m)),
            );
            if parse_ip(host).is_some() {
                errs.push(FieldError::invalid(
                    format!("{at}.hostname"),
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
        }
    }
    errs
}
