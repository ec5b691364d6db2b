//! A NetworkPolicy's defaults (`policyTypes`, port protocols) and spec validation as
//! upstream's ValidateNetworkPolicySpec: selectors, ports and port ranges, peers, IP blocks.

use std::net::IpAddr;

use serde_json::{json, Value};

use super::super::field::FieldError;
use super::super::rules::{cidr, label_selector, parse_ip, port_name_errors};

const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

fn list(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// `policyTypes` default to Ingress, plus Egress when egress rules are given; ports to TCP.
pub fn default(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if list(spec.get("policyTypes")).is_empty() {
        let mut types = vec![json!("Ingress")];
        if !list(spec.get("egress")).is_empty() {
            types.push(json!("Egress"));
        }
        spec.insert("policyTypes".into(), Value::Array(types));
    }
    for direction in ["ingress", "egress"] {
        let Some(Value::Array(rules)) = spec.get_mut(direction) else {
            continue;
        };
        for rule in rules {
            let Some(Value::Array(ports)) = rule.get_mut("ports") else {
                continue;
            };
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                p.entry("protocol").or_insert(json!("TCP"));
            }
        }
    }
}

fn port_errors(at: &str, p: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(proto) = p.get("protocol").and_then(Value::as_str) {
        if !["TCP", "UDP", "SCTP"].contains(&proto) {
            errs.push(FieldError::not_supported(
                format!("{at}.protocol"),
                proto,
                &["TCP", "UDP", "SCTP"],
            ));
        }
    }
    let end = p.get("endPort").and_then(Value::as_i64);
    match p.get("port").filter(|v| !v.is_null()) {
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                errs.push(FieldError::invalid(format!("{at}.port"), n, PORT_RANGE));
            }
            if let Some(end) = end {
                if end < n {
                    errs.push(FieldError::invalid(
                        format!("{at}.endPort"),
                        n,
                        "must be greater than or equal to `port`",
                    ));
                }
                if !(1..=65535).contains(&end) {
                    errs.push(FieldError::invalid(
                        format!("{at}.endPort"),
                        end,
                        PORT_RANGE,
                    ));
                }
            }
        }
        Some(named) => {
            let name = named.as_str().unwrap_or("");
            if let Some(end) = end {
                errs.push(FieldError::invalid(
                    format!("{at}.endPort"),
                    end,
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for m in port_name_errors(name) {
                errs.push(FieldError::invalid(format!("{at}.port"), name, m));
            }
        }
        None => {
            if let Some(end) = end {
                errs.push(FieldError::invalid(
                    format!("{at}.endPort"),
                    end,
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
    errs
}

/// A CIDR's network as (address bits, prefix length, is IPv4); IPv4 addresses fill the top
/// 32 bits, so one mask of the prefix length fits both families.
fn network(s: &str) -> Option<(u128, u32, bool)> {
    let (addr, bits) = s.split_once('/')?;
    let bits: u32 = bits.parse().ok()?;
    match parse_ip(addr)? {
        IpAddr::V4(a) => Some(((u32::from(a) as u128) << 96, bits, true)),
        IpAddr::V6(a) => Some((u128::from(a), bits, false)),
    }
}

fn ip_block(at: &str, block: &Value) -> Vec<FieldError> {
    let range = block.get("cidr").and_then(Value::as_str).unwrap_or("");
    if range.is_empty() {
        return vec![FieldError::required(format!("{at}.cidr"), "")];
    }
    let mut errs: Vec<FieldError> = cidr(&format!("{at}.cidr"), range).into_iter().collect();
    let Some((net, bits, v4)) = network(range).filter(|_| errs.is_empty()) else {
        return errs;
    };
    for (i, except) in list(block.get("except")).iter().enumerate() {
        let except = except.as_str().unwrap_or("");
        let field = format!("{at}.except[{i}]");
        if let Some(e) = cidr(&field, except) {
            errs.push(e);
            continue;
        }
        let Some((ex, ex_bits, ex_v4)) = network(except) else {
            continue;
        };
        let mask = |w: u32| if w == 0 { 0 } else { u128::MAX << (128 - w) };
        let contained = ex_v4 == v4 && (ex & mask(bits)) == (net & mask(bits));
        if !contained || bits >= ex_bits {
            errs.push(FieldError::invalid(
                field,
                except,
                "must be a strict subset of `cidr`",
            ));
        }
    }
    errs
}

fn peer_errors(at: &str, peer: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let present = |k: &str| peer.get(k).filter(|v| !v.is_null());
    let mut count = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if let Some(sel) = present(key) {
            count += 1;
            errs.extend(label_selector(&format!("{at}.{key}"), Some(sel)));
        }
    }
    if let Some(block) = present("ipBlock") {
        count += 1;
        errs.extend(ip_block(&format!("{at}.ipBlock"), block));
    }
    if count == 0 {
        errs.push(FieldError::required(at, "must specify a peer"));
    } else if count > 1 && present("ipBlock").is_some() {
        errs.push(FieldError::forbidden(
            at,
            "may not specify both ipBlock and another peer",
        ));
    }
    errs
}

/// `spec` of a NetworkPolicy.
pub fn validate_spec(spec: Option<&Value>) -> Vec<FieldError> {
    let mut errs = label_selector("spec.podSelector", spec.and_then(|s| s.get("podSelector")));
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in list(spec.and_then(|s| s.get(direction))).iter().enumerate() {
            let at = format!("spec.{direction}[{i}]");
            for (j, p) in list(rule.get("ports")).iter().enumerate() {
                errs.extend(port_errors(&format!("{at}.ports[{j}]"), p));
            }
            for (j, peer) in list(rule.get(peers)).iter().enumerate() {
                errs.extend(peer_errors(&format!("{at}.{peers}[{j}]"), peer));
            }
        }
    }
    let types = list(spec.and_then(|s| s.get("policyTypes")));
    if types.len() > 2 {
        let shown: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
        errs.push(FieldError::invalid(
            "spec.policyTypes",
            json!(shown),
            "may not specify more than two policyTypes",
        ));
        return errs;
    }
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or("");
        if t != "Ingress" && t != "Egress" {
            errs.push(FieldError::not_supported(
                format!("spec.policyTypes[{i}]"),
                t,
                &["Ingress", "Egress"],
            ));
        }
    }
    errs
}
