//! Rows of the configuration and networking kinds: Secret, ServiceAccount (core/v1) and
//! Ingress, IngressClass, NetworkPolicy (networking.k8s.io/v1), as upstream's printers.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, name, or_none, s, selector_string};

fn len_of(obj: &Value, pointer: &str) -> usize {
    match obj.pointer(pointer) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

/// NAME TYPE DATA AGE.
pub fn secret(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj).into(),
        s(obj, "/type").into(),
        json!(len_of(obj, "/data")),
        age(obj, now).into(),
    ]
}

/// NAME SECRETS AGE.
pub fn service_account(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj).into(),
        json!(len_of(obj, "/secrets")),
        age(obj, now).into(),
    ]
}

/// Upstream's formatHosts: at most three hosts, `*` when no rule names one.
fn hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        let host = rule.get("host").and_then(Value::as_str).unwrap_or("");
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".into();
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", rules.len() - MAX)
    } else {
        joined
    }
}

/// The load balancer's IPs and hostnames, cut to 16 characters as the narrow table shows them.
fn addresses(obj: &Value) -> String {
    let list = obj
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array);
    let mut out: Vec<&str> = Vec::new();
    for entry in list.into_iter().flatten() {
        for key in ["ip", "hostname"] {
            if let Some(v) = entry.get(key).and_then(Value::as_str) {
                if !v.is_empty() {
                    out.push(v);
                }
            }
        }
    }
    let text = out.join(",");
    if text.len() > 16 {
        format!("{}...", &text[..13])
    } else {
        text
    }
}

/// NAME CLASS HOSTS ADDRESS PORTS AGE.
pub fn ingress(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let rules = obj
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let ports = if len_of(obj, "/spec/tls") > 0 {
        "80, 443"
    } else {
        "80"
    };
    vec![
        name(obj).into(),
        or_none(s(obj, "/spec/ingressClassName")).into(),
        hosts(rules).into(),
        addresses(obj).into(),
        ports.into(),
        age(obj, now).into(),
    ]
}

/// NAME CONTROLLER PARAMETERS AGE; parameters as `Kind.group/name`.
pub fn ingress_class(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let parameters = match obj.pointer("/spec/parameters") {
        Some(p) if p.is_object() => {
            let mut text = s(p, "/kind").to_string();
            if let Some(group) = p.get("apiGroup").and_then(Value::as_str) {
                text = format!("{text}.{group}");
            }
            format!("{text}/{}", s(p, "/name"))
        }
        _ => "<none>".into(),
    };
    vec![
        name(obj).into(),
        s(obj, "/spec/controller").into(),
        parameters.into(),
        age(obj, now).into(),
    ]
}

/// NAME POD-SELECTOR AGE.
pub fn network_policy(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj).into(),
        or_none(&selector_string(obj.pointer("/spec/podSelector"))).into(),
        age(obj, now).into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingress_hosts_and_ports_read_as_upstream() {
        let now = Utc::now();
        let cases = [
            (json!({"spec": {"rules": [{"http": {}}]}}), "*", "80"),
            (
                json!({"spec": {"rules": [{"host": "a"}, {"host": "b"}, {"host": "c"}, {"host": "d"}, {"host": "e"}], "tls": [{}]}}),
                "a,b,c + 2 more...",
                "80, 443",
            ),
        ];
        for (obj, want_hosts, want_ports) in cases {
            let row = ingress(&obj, now);
            assert_eq!(row[1], "<none>");
            assert_eq!(row[2], want_hosts);
            assert_eq!(row[4], want_ports);
        }
    }

    #[test]
    fn parameters_and_selectors() {
        let now = Utc::now();
        let class = json!({"spec": {"controller": "example.com/c",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}});
        assert_eq!(
            ingress_class(&class, now)[2],
            "IngressParameters.k8s.example.com/p"
        );
        assert_eq!(ingress_class(&json!({"spec": {}}), now)[2], "<none>");
        let np = json!({"spec": {"podSelector": {"matchLabels": {"role": "db"}}}});
        assert_eq!(network_policy(&np, now)[1], "role=db");
        assert_eq!(
            network_policy(&json!({"spec": {"podSelector": {}}}), now)[1],
            "<none>"
        );
    }
}
