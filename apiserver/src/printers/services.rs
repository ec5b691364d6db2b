//! Rows of the service kinds: Service (TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S), wide SELECTOR),
//! Endpoints (the first three ready `IP:port`s) and EndpointSlice (address type, ports,
//! addresses), as upstream's printers write them.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, i, name, s};

/// How many items the ENDPOINTS and PORTS cells show before "+ N more...".
const SHOWN: usize = 3;
/// Load-balancer ingress lists longer than this are cut in narrow output.
const LOAD_BALANCER_WIDTH: usize = 16;

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `a,b,c + 2 more...`, or `empty` when nothing is listed.
fn list_with_more(items: &[String], total: usize, empty: &str) -> String {
    let joined = items.join(",");
    if total > items.len() {
        format!("{joined} + {} more...", total - items.len())
    } else if joined.is_empty() {
        empty.to_string()
    } else {
        joined
    }
}

fn load_balancer_ingress(obj: &Value, wide: bool) -> String {
    let ingress = obj
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array);
    let names: Vec<&str> = ingress
        .into_iter()
        .flatten()
        .filter_map(|i| {
            let ip = s(i, "/ip");
            let host = s(i, "/hostname");
            (!ip.is_empty())
                .then_some(ip)
                .or((!host.is_empty()).then_some(host))
        })
        .collect();
    let mut out = names.join(",");
    if !wide && out.len() > LOAD_BALANCER_WIDTH {
        out.truncate(LOAD_BALANCER_WIDTH - 3);
        out.push_str("...");
    }
    out
}

/// The EXTERNAL-IP cell: external IPs, a load balancer's ingress or `<pending>`, the
/// ExternalName's name.
fn external_ip(obj: &Value, wide: bool) -> String {
    let external = strings(obj.pointer("/spec/externalIPs"));
    match s(obj, "/spec/type") {
        "ClusterIP" | "NodePort" => {
            if external.is_empty() {
                "<none>".into()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            let lb = load_balancer_ingress(obj, wide);
            if !external.is_empty() {
                let mut all = external;
                if !lb.is_empty() {
                    all.push(lb);
                }
                all.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".into()
            }
        }
        "ExternalName" => s(obj, "/spec/externalName").to_string(),
        _ => "<unknown>".into(),
    }
}

/// `80/TCP,443:30443/TCP`.
fn ports(obj: &Value) -> String {
    let ports: Vec<String> = obj
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let port = i(p, "/port");
            let protocol = s(p, "/protocol");
            match i(p, "/nodePort") {
                0 => format!("{port}/{protocol}"),
                node => format!("{port}:{node}/{protocol}"),
            }
        })
        .collect();
    if ports.is_empty() {
        "<none>".into()
    } else {
        ports.join(",")
    }
}

pub fn service(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let cluster_ip = strings(obj.pointer("/spec/clusterIPs"))
        .into_iter()
        .next()
        .or_else(|| {
            let ip = s(obj, "/spec/clusterIP");
            (!ip.is_empty()).then(|| ip.to_string())
        })
        .unwrap_or_else(|| "<none>".into());
    let selector = super::map_string(obj.pointer("/spec/selector"));
    vec![
        json!(name(obj)),
        json!(s(obj, "/spec/type")),
        json!(cluster_ip),
        json!(external_ip(obj, true)),
        json!(ports(obj)),
        json!(age(obj, now)),
        json!(if selector.is_empty() {
            "<none>".to_string()
        } else {
            selector
        }),
    ]
}

/// The ready `IP:port` pairs of every subset (an address for each of its subset's ports).
fn endpoints_cell(obj: &Value) -> String {
    let mut shown = Vec::new();
    let mut total = 0;
    for subset in obj
        .pointer("/subsets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let addresses: Vec<&str> = subset
            .get("addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| s(a, "/ip"))
            .collect();
        let ports: Vec<i64> = subset
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| i(p, "/port"))
            .collect();
        if ports.is_empty() {
            for ip in &addresses {
                total += 1;
                if shown.len() < SHOWN {
                    shown.push(ip.to_string());
                }
            }
            continue;
        }
        for port in ports {
            for ip in &addresses {
                total += 1;
                if shown.len() < SHOWN {
                    shown.push(join_host_port(ip, port));
                }
            }
        }
    }
    list_with_more(&shown, total, "<none>")
}

fn join_host_port(ip: &str, port: i64) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

pub fn endpoints(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        json!(name(obj)),
        json!(endpoints_cell(obj)),
        json!(age(obj, now)),
    ]
}

pub fn endpoint_slice(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let port_list: Vec<&Value> = obj
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let ports: Vec<String> = port_list
        .iter()
        .take(SHOWN)
        .map(|p| match p.get("port").and_then(Value::as_i64) {
            Some(n) => n.to_string(),
            None => match p.get("name").and_then(Value::as_str) {
                Some(n) => n.to_string(),
                None => "*".to_string(),
            },
        })
        .collect();
    let addresses: Vec<String> = obj
        .get("endpoints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|e| strings(e.get("addresses")))
        .collect();
    let shown: Vec<String> = addresses.iter().take(SHOWN).cloned().collect();
    vec![
        json!(name(obj)),
        json!(s(obj, "/addressType")),
        json!(list_with_more(&ports, port_list.len(), "<unset>")),
        json!(list_with_more(&shown, addresses.len(), "<unset>")),
        json!(age(obj, now)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"},
               "spec": spec, "status": status})
    }

    #[test]
    fn service_rows_read_as_upstream() {
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:00:30Z")
            .unwrap()
            .with_timezone(&Utc);
        let cases = [
            (
                svc(
                    json!({"type": "ClusterIP", "clusterIPs": ["10.96.0.10"],
                           "ports": [{"port": 80, "protocol": "TCP"}], "selector": {"app": "web"}}),
                    json!({}),
                ),
                ["ClusterIP", "10.96.0.10", "<none>", "80/TCP", "app=web"],
            ),
            (
                svc(
                    json!({"type": "NodePort", "clusterIPs": ["10.96.0.11"],
                           "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080},
                                     {"port": 53, "protocol": "UDP", "nodePort": 30053}]}),
                    json!({}),
                ),
                [
                    "NodePort",
                    "10.96.0.11",
                    "<none>",
                    "80:30080/TCP,53:30053/UDP",
                    "<none>",
                ],
            ),
            (
                svc(
                    json!({"type": "LoadBalancer", "clusterIPs": ["10.96.0.12"],
                           "ports": [{"port": 80, "protocol": "TCP", "nodePort": 31000}]}),
                    json!({"loadBalancer": {}}),
                ),
                [
                    "LoadBalancer",
                    "10.96.0.12",
                    "<pending>",
                    "80:31000/TCP",
                    "<none>",
                ],
            ),
            (
                svc(
                    json!({"type": "ExternalName", "externalName": "example.com"}),
                    json!({}),
                ),
                ["ExternalName", "<none>", "example.com", "<none>", "<none>"],
            ),
            (
                svc(
                    json!({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"]}),
                    json!({}),
                ),
                ["ClusterIP", "None", "<none>", "<none>", "<none>"],
            ),
        ];
        for (obj, want) in cases {
            let row = service(&obj, now);
            let got: Vec<&str> = [1, 2, 3, 4, 6]
                .iter()
                .map(|&c| row[c].as_str().unwrap())
                .collect();
            assert_eq!(got, want, "{obj}");
            assert_eq!(row[5], "30s");
        }
    }

    #[test]
    fn endpoints_show_three_ready_addresses_then_a_count() {
        let ep = json!({"subsets": [{
            "addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "10.0.0.3"}, {"ip": "10.0.0.4"}],
            "notReadyAddresses": [{"ip": "10.0.0.5"}],
            "ports": [{"port": 80}]}]});
        assert_eq!(
            endpoints_cell(&ep),
            "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."
        );
        let not_ready = json!({"subsets": [{"notReadyAddresses": [{"ip": "10.0.0.5"}], "ports": [{"port": 80}]}]});
        assert_eq!(endpoints_cell(&not_ready), "<none>");
        assert_eq!(endpoints_cell(&json!({})), "<none>");
        let headless = json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]});
        assert_eq!(endpoints_cell(&headless), "10.0.0.1");
    }

    #[test]
    fn endpoint_slices_list_ports_and_addresses() {
        let now = Utc::now();
        let slice = json!({"metadata": {"name": "web-abcde"}, "addressType": "IPv4",
            "ports": [{"name": "", "port": 80, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]},
                          {"addresses": ["10.0.0.3"]}, {"addresses": ["10.0.0.4"]}]});
        let row = endpoint_slice(&slice, now);
        assert_eq!(row[1], "IPv4");
        assert_eq!(row[2], "80");
        assert_eq!(row[3], "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...");
        let empty = json!({"metadata": {"name": "x"}, "addressType": "IPv4", "endpoints": []});
        let row = endpoint_slice(&empty, now);
        assert_eq!(row[2], "<unset>");
        assert_eq!(row[3], "<unset>");
    }
}
