//! What a pod spec says about placement, as upstream validates it: tolerations, node and pod
//! affinity, topology spread constraints, scheduling and readiness gates, and the DNS settings
//! and host aliases a pod carries.

use serde_json::Value;

use super::super::field::FieldError;
use super::super::names::{label_errors, subdomain_errors};
use super::super::rules::{
    ip, label_selector, label_value_errors, max_len_error, qualified_name_errors, regex_error,
};
use super::{items, str_at};

const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

fn qualified(field: &str, value: &str) -> Vec<FieldError> {
    qualified_name_errors(value)
        .into_iter()
        .map(|m| FieldError::invalid(field, value, m))
        .collect()
}

/// A taint effect at `field` (`allow_empty`: a toleration's empty effect matches all).
pub fn taint_effect(effect: &str, allow_empty: bool, field: &str) -> Option<FieldError> {
    if effect.is_empty() && !allow_empty {
        return Some(FieldError::required(field, ""));
    }
    (!EFFECTS.contains(&effect)).then(|| FieldError::not_supported(field, effect, EFFECTS))
}

/// Tolerations at `path` (upstream's ValidateTolerations).
pub fn tolerations(list: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, t) in items(list) {
        let idx = format!("{path}[{i}]");
        let (key, op, value, effect) = (
            str_at(t, "key"),
            str_at(t, "operator"),
            str_at(t, "value"),
            str_at(t, "effect"),
        );
        if !key.is_empty() {
            errs.extend(qualified(&format!("{idx}.key"), key));
        }
        if key.is_empty() && op != "Exists" {
            errs.push(FieldError::invalid(
                format!("{idx}.operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if t.get("tolerationSeconds").is_some_and(|s| !s.is_null()) && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                format!("{idx}.effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match op {
            "Equal" | "" => {
                let msgs = label_value_errors(value);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(
                        format!("{idx}.operator"),
                        value,
                        msgs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        format!("{idx}.operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                format!("{idx}.operator"),
                other,
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() {
            errs.extend(taint_effect(effect, true, &format!("{idx}.effect")));
        }
    }
    errs
}

fn node_selector_requirement(r: &Value, allow_invalid_values: bool, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values: Vec<&Value> = items(r.get("values")).map(|(_, v)| v).collect();
    match str_at(r, "operator") {
        "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
            format!("{path}.values"),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
            format!("{path}.values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if values.len() != 1 => errs.push(FieldError::required(
            format!("{path}.values"),
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        op => errs.push(FieldError::invalid(
            format!("{path}.operator"),
            op,
            "not a valid selector operator",
        )),
    }
    errs.extend(qualified(&format!("{path}.key"), str_at(r, "key")));
    if !allow_invalid_values {
        for (j, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            for m in label_value_errors(v) {
                errs.push(FieldError::invalid(format!("{path}.values[{j}]"), v, m));
            }
        }
    }
    errs
}

/// One node selector term at `path` (pod node affinity, a PersistentVolume's node affinity).
pub fn node_selector_term(term: &Value, allow_invalid_values: bool, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (j, r) in items(term.get("matchExpressions")) {
        errs.extend(node_selector_requirement(
            r,
            allow_invalid_values,
            &format!("{path}.matchExpressions[{j}]"),
        ));
    }
    for (j, r) in items(term.get("matchFields")) {
        let at = format!("{path}.matchFields[{j}]");
        let values: Vec<&str> = items(r.get("values"))
            .filter_map(|(_, v)| v.as_str())
            .collect();
        match str_at(r, "operator") {
            "In" | "NotIn" if values.len() != 1 => errs.push(FieldError::required(
                format!("{at}.values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )),
            "In" | "NotIn" => {}
            op => errs.push(FieldError::invalid(
                format!("{at}.operator"),
                op,
                "not a valid selector operator",
            )),
        }
        let key = str_at(r, "key");
        if key != "metadata.name" {
            errs.push(FieldError::invalid(
                format!("{at}.key"),
                key,
                "not a valid field selector key",
            ));
        } else {
            for (k, v) in values.iter().enumerate() {
                for m in subdomain_errors(v) {
                    errs.push(FieldError::invalid(format!("{at}.values[{k}]"), *v, m));
                }
            }
        }
    }
    errs
}

fn weight(term: &Value, path: &str) -> Option<FieldError> {
    let w = term.get("weight").and_then(Value::as_i64).unwrap_or(0);
    (!(1..=100).contains(&w)).then(|| FieldError::invalid(path, w, "must be in the range 1-100"))
}

fn pod_affinity_term(term: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = label_selector(&format!("{path}.labelSelector"), term.get("labelSelector"));
    errs.extend(label_selector(
        &format!("{path}.namespaceSelector"),
        term.get("namespaceSelector"),
    ));
    for (_, ns) in items(term.get("namespaces")) {
        let ns = ns.as_str().unwrap_or("");
        for m in label_errors(ns) {
            errs.push(FieldError::invalid(format!("{path}.namespace"), ns, m));
        }
    }
    let key = str_at(term, "topologyKey");
    if key.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.topologyKey"),
            "can not be empty",
        ));
    }
    errs.extend(qualified(&format!("{path}.topologyKey"), key));
    errs
}

fn pod_affinity(a: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let required = "requiredDuringSchedulingIgnoredDuringExecution";
    for (i, term) in items(a.get(required)) {
        errs.extend(pod_affinity_term(term, &format!("{path}.{required}[{i}]")));
    }
    let preferred = "preferredDuringSchedulingIgnoredDuringExecution";
    for (i, w) in items(a.get(preferred)) {
        let at = format!("{path}.{preferred}[{i}]");
        errs.extend(weight(w, &format!("{at}.weight")));
        let term = w.get("podAffinityTerm").unwrap_or(&Value::Null);
        errs.extend(pod_affinity_term(term, &format!("{at}.podAffinityTerm")));
    }
    errs
}

/// `affinity` at `path`.
pub fn affinity(a: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(a) = a.filter(|v| !v.is_null()) else {
        return errs;
    };
    if let Some(na) = a.get("nodeAffinity").filter(|v| !v.is_null()) {
        let at = format!("{path}.nodeAffinity");
        let required = "requiredDuringSchedulingIgnoredDuringExecution";
        if let Some(sel) = na.get(required).filter(|v| !v.is_null()) {
            let terms = format!("{at}.{required}.nodeSelectorTerms");
            let list: Vec<&Value> = items(sel.get("nodeSelectorTerms"))
                .map(|(_, t)| t)
                .collect();
            if list.is_empty() {
                errs.push(FieldError::required(
                    terms,
                    "must have at least one node selector term",
                ));
            } else {
                for (i, t) in list.iter().enumerate() {
                    errs.extend(node_selector_term(t, false, &format!("{terms}[{i}]")));
                }
            }
        }
        let preferred = "preferredDuringSchedulingIgnoredDuringExecution";
        for (i, p) in items(na.get(preferred)) {
            let item = format!("{at}.{preferred}[{i}]");
            errs.extend(weight(p, &format!("{item}.weight")));
            let pref = p.get("preference").unwrap_or(&Value::Null);
            errs.extend(node_selector_term(
                pref,
                true,
                &format!("{item}.preference"),
            ));
        }
    }
    for key in ["podAffinity", "podAntiAffinity"] {
        if let Some(pa) = a.get(key).filter(|v| !v.is_null()) {
            errs.extend(pod_affinity(pa, &format!("{path}.{key}")));
        }
    }
    errs
}

/// `topologySpreadConstraints` at `path`.
pub fn topology_spread(list: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let all: Vec<&Value> = items(list).map(|(_, c)| c).collect();
    for (i, c) in all.iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let skew = c.get("maxSkew").and_then(Value::as_i64).unwrap_or(0);
        if skew <= 0 {
            errs.push(FieldError::invalid(
                format!("{idx}.maxSkew"),
                skew,
                "must be greater than zero",
            ));
        }
        let key = str_at(c, "topologyKey");
        if key.is_empty() {
            errs.push(FieldError::required(
                format!("{idx}.topologyKey"),
                "can not be empty",
            ));
        }
        let when = str_at(c, "whenUnsatisfiable");
        const ACTIONS: &[&str] = &["DoNotSchedule", "ScheduleAnyway"];
        if !ACTIONS.contains(&when) {
            errs.push(FieldError::not_supported(
                format!("{idx}.whenUnsatisfiable"),
                when,
                ACTIONS,
            ));
        }
        let repeated = all[i + 1..]
            .iter()
            .any(|o| str_at(o, "topologyKey") == key && str_at(o, "whenUnsatisfiable") == when);
        if repeated {
            errs.push(FieldError::duplicate(
                format!("{idx}.{{topologyKey, whenUnsatisfiable}}"),
                format!("{{{key}, {when}}}"),
            ));
        }
        if let Some(min) = c.get("minDomains").and_then(Value::as_i64) {
            let at = format!("{idx}.minDomains");
            if min <= 0 {
                errs.push(FieldError::invalid(&at, min, "must be greater than zero"));
            }
            if when != "DoNotSchedule" {
                errs.push(FieldError::invalid(
                    at,
                    min,
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"
                    ),
                ));
            }
        }
        for policy in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(p) = c.get(policy).and_then(Value::as_str) {
                if !["Honor", "Ignore"].contains(&p) {
                    errs.push(FieldError::not_supported(
                        format!("{idx}.{policy}"),
                        p,
                        &["Honor", "Ignore"],
                    ));
                }
            }
        }
        errs.extend(label_selector(
            &format!("{idx}.labelSelector"),
            c.get("labelSelector"),
        ));
    }
    errs
}

/// `schedulingGates` (qualified names, none twice) and `readinessGates` of a spec at `path`.
pub fn gates(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, g) in items(spec.get("readinessGates")) {
        errs.extend(qualified(
            &format!("{path}.readinessGates[{i}].conditionType"),
            str_at(g, "conditionType"),
        ));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, g) in items(spec.get("schedulingGates")) {
        let name = str_at(g, "name");
        let at = format!("{path}.schedulingGates[{i}]");
        errs.extend(qualified(&at, name));
        if seen.contains(&name) {
            errs.push(FieldError::duplicate(&at, name));
        }
        seen.push(name);
    }
    errs
}

/// A DNS search domain: a subdomain whose labels may start with `_` and hold `_`
/// (upstream's IsDNS1123SubdomainWithUnderscore, as RelaxedDNSSearchValidation uses).
fn search_errors(s: &str) -> Vec<String> {
    let label_ok = |l: &str| {
        let l = l.strip_prefix('_').unwrap_or(l);
        let edge = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        !l.is_empty()
            && l.chars().all(|c| edge(c) || c == '-' || c == '_')
            && l.starts_with(edge)
            && l.ends_with(edge)
    };
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !s.split('.').all(label_ok) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character",
            "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*",
            &["example.com"],
        ));
    }
    errs
}

/// `dnsConfig` (checked against `dnsPolicy`) at `path`.
pub fn dns_config(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let config = spec.get("dnsConfig").filter(|v| !v.is_null());
    let servers: Vec<&str> = config
        .map(|c| {
            items(c.get("nameservers"))
                .filter_map(|(_, s)| s.as_str())
                .collect()
        })
        .unwrap_or_default();
    if str_at(spec, "dnsPolicy") == "None" {
        if config.is_none() {
            return vec![FieldError::required(
                path,
                "must provide `dnsConfig` when `dnsPolicy` is None",
            )];
        }
        if servers.is_empty() {
            return vec![FieldError::required(
                format!("{path}.nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            )];
        }
    }
    let Some(config) = config else {
        return errs;
    };
    if servers.len() > 3 {
        errs.push(FieldError::invalid(
            format!("{path}.nameservers"),
            config.get("nameservers").cloned().unwrap_or(Value::Null),
            "must not have more than 3 nameservers",
        ));
    }
    for (i, s) in servers.iter().enumerate() {
        errs.extend(ip(&format!("{path}.nameservers[{i}]"), s));
    }
    let searches: Vec<&str> = items(config.get("searches"))
        .filter_map(|(_, s)| s.as_str())
        .collect();
    let shown = config.get("searches").cloned().unwrap_or(Value::Null);
    if searches.len() > 32 {
        errs.push(FieldError::invalid(
            format!("{path}.searches"),
            shown.clone(),
            "must not have more than 32 search paths",
        ));
    }
    if searches.join(" ").len() > 2048 {
        errs.push(FieldError::invalid(
            format!("{path}.searches"),
            shown,
            "must not have more than 2048 characters (including spaces) in the search list",
        ));
    }
    for (i, s) in searches.iter().enumerate() {
        if *s == "." {
            continue;
        }
        let s = s.strip_suffix('.').unwrap_or(s);
        for m in search_errors(s) {
            errs.push(FieldError::invalid(format!("{path}.searches[{i}]"), s, m));
        }
    }
    for (i, o) in items(config.get("options")) {
        if str_at(o, "name").is_empty() {
            errs.push(FieldError::required(
                format!("{path}.options[{i}]"),
                "must not be empty",
            ));
        }
    }
    errs
}

/// `hostAliases` at `path`: IPs and subdomain host names.
pub fn host_aliases(list: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, a) in items(list) {
        errs.extend(ip(&format!("{path}[{i}].ip"), str_at(a, "ip")));
        for (j, h) in items(a.get("hostnames")) {
            let h = h.as_str().unwrap_or("");
            for m in subdomain_errors(h) {
                errs.push(FieldError::invalid(
                    format!("{path}[{i}].hostnames[{j}]"),
                    h,
                    m,
                ));
            }
        }
    }
    errs
}
