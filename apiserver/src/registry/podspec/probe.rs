//! Probes and lifecycle hooks, as upstream validates them: exactly one handler (`exec`,
//! `httpGet`, `tcpSocket`, `grpc`; hooks also `sleep`), non-negative timings, a success
//! threshold of 1 for liveness and startup probes, no termination grace period on readiness
//! probes.

use serde_json::Value;

use super::super::field::FieldError;
use super::super::rules::{http_header_name_errors, non_negative_int, port_name_errors};
use super::{items, str_at};

const PROBE_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "grpc"];
const HOOK_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "sleep"];

/// Which probe: each has a rule of its own.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Liveness,
    Readiness,
    Startup,
}

/// A port by number (1–65535) or by IANA name.
fn port_num_or_name(v: Option<&Value>, path: &str) -> Vec<FieldError> {
    match v {
        Some(Value::String(name)) => port_name_errors(name)
            .into_iter()
            .map(|m| FieldError::invalid(path, name.as_str(), m))
            .collect(),
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            super::port_number(path, n).into_iter().collect()
        }
    }
}

fn handler(h: &Value, allowed: &[&str], grace: Option<i64>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut count = 0;
    for kind in ["exec", "httpGet", "tcpSocket", "grpc", "sleep"] {
        if !allowed.contains(&kind) {
            continue;
        }
        let Some(action) = h.get(kind).filter(|v| !v.is_null()) else {
            continue;
        };
        let at = format!("{path}.{kind}");
        if count > 0 {
            errs.push(FieldError::forbidden(
                at,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        count += 1;
        match kind {
            "exec" => {
                if action
                    .get("command")
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty)
                {
                    errs.push(FieldError::required(format!("{at}.command"), ""));
                }
            }
            "httpGet" => {
                if str_at(action, "path").is_empty() {
                    errs.push(FieldError::required(format!("{at}.path"), ""));
                }
                errs.extend(port_num_or_name(action.get("port"), &format!("{at}.port")));
                let scheme = str_at(action, "scheme");
                if !["HTTP", "HTTPS"].contains(&scheme) {
                    errs.push(FieldError::not_supported(
                        format!("{at}.scheme"),
                        scheme,
                        &["HTTP", "HTTPS"],
                    ));
                }
                for (_, header) in items(action.get("httpHeaders")) {
                    let name = str_at(header, "name");
                    for m in http_header_name_errors(name) {
                        errs.push(FieldError::invalid(format!("{at}.httpHeaders"), name, m));
                    }
                }
            }
            "tcpSocket" => errs.extend(port_num_or_name(action.get("port"), &format!("{at}.port"))),
            "grpc" => {
                let n = action.get("port").and_then(Value::as_i64).unwrap_or(0);
                errs.extend(super::port_number(&format!("{at}.port"), n));
            }
            _ => {
                let secs = action.get("seconds").and_then(Value::as_i64).unwrap_or(0);
                if let Some(g) = grace.filter(|&g| secs < 0 || secs > g) {
                    errs.push(FieldError::invalid(
                        at,
                        secs,
                        format!("must be non-negative and less than terminationGracePeriodSeconds ({g})"),
                    ));
                }
            }
        }
    }
    if count == 0 {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    errs
}

/// A probe of `kind` at `path`.
pub fn probe(p: &Value, kind: Kind, grace: Option<i64>, path: &str) -> Vec<FieldError> {
    let mut errs = handler(p, PROBE_HANDLERS, grace, path);
    for k in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        errs.extend(non_negative_int(&format!("{path}.{k}"), p.get(k)));
    }
    let grace_field = format!("{path}.terminationGracePeriodSeconds");
    let own_grace = p
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    if let Some(g) = own_grace.filter(|&g| g <= 0) {
        errs.push(FieldError::invalid(
            &grace_field,
            g,
            "must be greater than 0",
        ));
    }
    match kind {
        Kind::Liveness | Kind::Startup => {
            let success = p
                .get("successThreshold")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            if success != 1 {
                errs.push(FieldError::invalid(
                    format!("{path}.successThreshold"),
                    success,
                    "must be 1",
                ));
            }
        }
        Kind::Readiness => {
            if let Some(g) = own_grace {
                errs.push(FieldError::invalid(
                    grace_field,
                    g,
                    "must not be set for readinessProbes",
                ));
            }
        }
    }
    errs
}

/// The probes of a container at `path` (`...containers[0]`).
pub fn probes(c: &Value, grace: Option<i64>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, kind) in [
        ("livenessProbe", Kind::Liveness),
        ("readinessProbe", Kind::Readiness),
        ("startupProbe", Kind::Startup),
    ] {
        if let Some(p) = c.get(key).filter(|v| !v.is_null()) {
            errs.extend(probe(p, kind, grace, &format!("{path}.{key}")));
        }
    }
    errs
}

/// A container's `lifecycle` hooks at `path` (`...containers[0].lifecycle`).
pub fn lifecycle(l: &Value, grace: Option<i64>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for hook in ["postStart", "preStop"] {
        if let Some(h) = l.get(hook).filter(|v| !v.is_null()) {
            errs.extend(handler(h, HOOK_HANDLERS, grace, &format!("{path}.{hook}")));
        }
    }
    errs
}
