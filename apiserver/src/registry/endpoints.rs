//! core/v1 Endpoints and discovery.k8s.io/v1 EndpointSlice: upstream's ValidateEndpoints
//! (addresses that are IPs outside the special ranges, ports) and the discovery group's
//! ValidateEndpointSlice (address type, endpoints and their addresses, ports, node names).

use serde_json::Value;

use super::field::FieldError;
use super::meta::strings;
use super::names::{immutable, label_errors, subdomain_errors, validate_object_meta, NameRule};
use super::rules::{ip, parse_ip, port};
use super::Strategy;

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn items(v: Option<&Value>) -> Vec<&Value> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

/// Ports of an Endpoints subset or an EndpointSlice: names (required when several for
/// Endpoints), uniqueness, protocol, number.
fn validate_ports(path: &str, ports: &[&Value], name_required: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let name = text(p, "name");
        if name.is_empty() {
            if name_required && ports.len() > 1 {
                errs.push(FieldError::required(format!("{at}.name"), ""));
            }
        } else {
            for m in label_errors(name) {
                errs.push(FieldError::invalid(format!("{at}.name"), name, m));
            }
            if seen.contains(&name) {
                errs.push(FieldError::duplicate(format!("{at}.name"), name));
            }
            seen.push(name);
        }
        if name_required || p.get("port").is_some_and(|v| !v.is_null()) {
            errs.extend(port(&format!("{at}.port"), p.get("port")));
        }
        let protocol = text(p, "protocol");
        if !PROTOCOLS.contains(&protocol) {
            errs.push(FieldError::not_supported(
                format!("{at}.protocol"),
                protocol,
                PROTOCOLS,
            ));
        }
    }
    errs
}

/// An endpoint IP that may not be special (upstream's ValidateNonSpecialIP).
fn non_special_ip(field: &str, addr: &str) -> Option<FieldError> {
    if let Some(e) = ip(field, addr) {
        return Some(e);
    }
    let parsed = parse_ip(addr)?;
    let problem = if parsed.is_unspecified() {
        "may not be unspecified (0.0.0.0)"
    } else if parsed.is_loopback() {
        "may not be in the loopback range (127.0.0.0/8, ::1/128)"
    } else if matches!(parsed, std::net::IpAddr::V4(v4) if v4.is_link_local()) {
        "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
    } else if parsed.is_multicast() {
        "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
    } else {
        return None;
    };
    Some(FieldError::invalid(field, addr, problem))
}

/// Upstream's deprecation of core/v1 Endpoints (v1.33), answered on every request for them.
pub fn deprecation(info: &tinykube_proto::registry::ResourceInfo) -> Option<String> {
    (info.group.is_empty() && info.plural == "endpoints" && info.custom.is_none()).then(|| {
        "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice".to_string()
    })
}

pub struct EndpointsStrategy;

impl EndpointsStrategy {
    fn validate(obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        for (i, subset) in items(obj.get("subsets")).iter().enumerate() {
            let at = format!("subsets[{i}]");
            let ready = items(subset.get("addresses"));
            let not_ready = items(subset.get("notReadyAddresses"));
            if ready.is_empty() && not_ready.is_empty() {
                errs.push(FieldError::required(
                    at.clone(),
                    "must specify `addresses` or `notReadyAddresses`",
                ));
            }
            for (list, name) in [(ready, "addresses"), (not_ready, "notReadyAddresses")] {
                for (j, a) in list.iter().enumerate() {
                    let path = format!("{at}.{name}[{j}]");
                    errs.extend(non_special_ip(&format!("{path}.ip"), text(a, "ip")));
                    let host = text(a, "hostname");
                    for m in label_errors(host).into_iter().filter(|_| !host.is_empty()) {
                        errs.push(FieldError::invalid(format!("{path}.hostname"), host, m));
                    }
                    let node = text(a, "nodeName");
                    for m in subdomain_errors(node)
                        .into_iter()
                        .filter(|_| !node.is_empty())
                    {
                        errs.push(FieldError::invalid(format!("{path}.nodeName"), node, m));
                    }
                }
            }
            errs.extend(validate_ports(
                &format!("{at}.ports"),
                &items(subset.get("ports")),
                true,
            ));
        }
        errs
    }
}

impl Strategy for EndpointsStrategy {
    fn default(&self, obj: &mut Value) {
        let Some(subsets) = obj.get_mut("subsets").and_then(Value::as_array_mut) else {
            return;
        };
        for subset in subsets {
            let Some(ports) = subset.get_mut("ports").and_then(Value::as_array_mut) else {
                continue;
            };
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                p.entry("protocol").or_insert_with(|| "TCP".into());
            }
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        Self::validate(obj)
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        Self::validate(new)
    }
}

pub struct EndpointSliceStrategy;

const MAX_ENDPOINTS: usize = 1000;
const MAX_PORTS: usize = 100;
const MAX_ADDRESSES: usize = 100;

impl EndpointSliceStrategy {
    fn validate(obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        let address_type = text(obj, "addressType");
        let types = ["FQDN", "IPv4", "IPv6"];
        if address_type.is_empty() {
            errs.push(FieldError::required("addressType", ""));
        } else if !types.contains(&address_type) {
            errs.push(FieldError::not_supported(
                "addressType",
                address_type,
                &types,
            ));
        }
        let endpoints = items(obj.get("endpoints"));
        if endpoints.len() > MAX_ENDPOINTS {
            errs.push(FieldError::too_many(
                "endpoints",
                endpoints.len(),
                MAX_ENDPOINTS,
            ));
        }
        for (i, e) in endpoints.iter().enumerate() {
            let at = format!("endpoints[{i}]");
            let addresses = strings(e.get("addresses"));
            if addresses.is_empty() {
                errs.push(FieldError::required(
                    format!("{at}.addresses"),
                    "must contain at least 1 address",
                ));
            } else if addresses.len() > MAX_ADDRESSES {
                errs.push(FieldError::too_many(
                    format!("{at}.addresses"),
                    addresses.len(),
                    MAX_ADDRESSES,
                ));
            }
            for (j, a) in addresses.iter().enumerate() {
                let path = format!("{at}.addresses[{j}]");
                let family = parse_ip(a).map(|ip| ip.is_ipv4());
                match (address_type, family) {
                    ("IPv4", Some(true)) | ("IPv6", Some(false)) => {}
                    ("IPv4", _) => errs.push(FieldError::invalid(
                        path,
                        *a,
                        "must be a valid IPv4 address",
                    )),
                    ("IPv6", _) => errs.push(FieldError::invalid(
                        path,
                        *a,
                        "must be a valid IPv6 address",
                    )),
                    ("FQDN", _) => {
                        for m in subdomain_errors(a) {
                            errs.push(FieldError::invalid(&path, *a, m));
                        }
                    }
                    _ => {}
                }
            }
            let node = e.get("nodeName").and_then(Value::as_str).unwrap_or("");
            if !node.is_empty() {
                for m in subdomain_errors(node) {
                    errs.push(FieldError::invalid(format!("{at}.nodeName"), node, m));
                }
            }
            let host = e.get("hostname").and_then(Value::as_str).unwrap_or("");
            if !host.is_empty() {
                for m in label_errors(host) {
                    errs.push(FieldError::invalid(format!("{at}.hostname"), host, m));
                }
            }
        }
        let ports = items(obj.get("ports"));
        if ports.len() > MAX_PORTS {
            errs.push(FieldError::too_many("ports", ports.len(), MAX_PORTS));
        }
        errs.extend(validate_ports("ports", &ports, false));
        errs
    }
}

impl Strategy for EndpointSliceStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(ports) = obj.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                p.entry("protocol").or_insert_with(|| "TCP".into());
                p.entry("name").or_insert_with(|| "".into());
            }
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        Self::validate(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = Self::validate(new);
        errs.extend(immutable(
            "addressType",
            new.get("addressType"),
            old.get("addressType"),
        ));
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(errs: Vec<FieldError>) -> Vec<String> {
        errs.into_iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn endpoints_are_checked_as_upstream() {
        let ok = json!({"metadata": {"name": "web", "namespace": "default"},
            "subsets": [{"addresses": [{"ip": "10.244.0.5"}], "ports": [{"port": 80, "protocol": "TCP"}]}]});
        assert!(EndpointsStrategy.validate_create(&ok).is_empty());
        let bad = json!({"metadata": {"name": "web", "namespace": "default"},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}, {"ip": "nope"}],
                         "ports": [{"port": 0, "protocol": "TCP"}]}]});
        let got = fields(EndpointsStrategy.validate_create(&bad));
        assert_eq!(
            got,
            vec![
                "subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "subsets[0].addresses[1].ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ]
        );
    }

    #[test]
    fn endpoint_slices_are_checked_as_upstream() {
        let slice = |addr: &str, ty: &str| {
            json!({"metadata": {"name": "web-x", "namespace": "default"}, "addressType": ty,
                   "endpoints": [{"addresses": [addr]}], "ports": [{"name": "", "port": 80, "protocol": "TCP"}]})
        };
        assert!(EndpointSliceStrategy
            .validate_create(&slice("10.0.0.1", "IPv4"))
            .is_empty());
        assert_eq!(
            fields(EndpointSliceStrategy.validate_create(&slice("fd00::1", "IPv4"))),
            vec!["endpoints[0].addresses[0]: Invalid value: \"fd00::1\": must be a valid IPv4 address"]
        );
        let errs = EndpointSliceStrategy
            .validate_update(&slice("fd00::1", "IPv6"), &slice("10.0.0.1", "IPv4"));
        assert_eq!(
            fields(errs),
            vec!["addressType: Invalid value: \"IPv6\": field is immutable"]
        );
    }
}
