//! core/v1 Service as upstream's registry: v1 defaults (type, sessionAffinity, port protocol and
//! targetPort, traffic policies, IP families of a single-stack IPv4 cluster), the strategy's
//! update preparation (allocated values carried over, type-dependent fields dropped) and
//! ValidateService / ValidateServiceUpdate with upstream's paths and wording. Allocation of
//! cluster IPs and node ports is `crate::services`' (it needs the store).

use serde_json::{json, Map, Value};

use super::field::FieldError;
use super::meta::strings;
use super::names::NameRule;
use super::names::{label_errors, subdomain_errors, validate_labels, validate_object_meta};
use super::rules::{ip, port, port_name_errors};
use super::Strategy;

pub struct ServiceStrategy;

const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn spec_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let root = obj.as_object_mut().expect("objects are JSON objects");
    let spec = root
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if !spec.is_object() {
        *spec = Value::Object(Map::new());
    }
    spec.as_object_mut().expect("spec is an object")
}

/// The service's type, `ClusterIP` when unset.
pub fn service_type(obj: &Value) -> &str {
    match text(obj, "/spec/type") {
        "" => "ClusterIP",
        t => t,
    }
}

/// Whether the service gets a cluster IP allocated (not ExternalName, not headless).
pub fn wants_cluster_ip(obj: &Value) -> bool {
    service_type(obj) != "ExternalName" && text(obj, "/spec/clusterIP") != "None"
}

/// Whether the service's ports get node ports (NodePort, and LoadBalancer unless
/// `allocateLoadBalancerNodePorts: false`).
pub fn wants_node_ports(obj: &Value) -> bool {
    match service_type(obj) {
        "NodePort" => true,
        "LoadBalancer" => obj
            .pointer("/spec/allocateLoadBalancerNodePorts")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        _ => false,
    }
}

fn headless(obj: &Value) -> bool {
    text(obj, "/spec/clusterIP") == "None"
}

fn has_selector(obj: &Value) -> bool {
    obj.pointer("/spec/selector")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
}

impl Strategy for ServiceStrategy {
    /// Upstream's SetDefaults_Service and the IP family defaults of its REST layer.
    fn default(&self, obj: &mut Value) {
        let ty = service_type(obj).to_string();
        let is_headless = headless(obj);
        let selector = has_selector(obj);
        let spec = spec_mut(obj);
        spec.entry("type").or_insert_with(|| json!("ClusterIP"));
        spec.entry("sessionAffinity")
            .or_insert_with(|| json!("None"));
        if spec.get("sessionAffinity") == Some(&json!("ClientIP")) {
            let timeout = spec
                .entry("sessionAffinityConfig")
                .or_insert_with(|| json!({}));
            if timeout.pointer("/clientIP/timeoutSeconds").is_none() {
                timeout["clientIP"] = json!({"timeoutSeconds": 10800});
            }
        }
        if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                p.entry("protocol").or_insert_with(|| json!("TCP"));
                let unset = match p.get("targetPort") {
                    None | Some(Value::Null) => true,
                    Some(Value::Number(n)) => n.as_i64() == Some(0),
                    Some(Value::String(s)) => s.is_empty(),
                    _ => false,
                };
                if unset {
                    let port = p.get("port").cloned().unwrap_or(json!(0));
                    p.insert("targetPort".into(), port);
                }
            }
        }
        if matches!(ty.as_str(), "NodePort" | "LoadBalancer") {
            spec.entry("externalTrafficPolicy")
                .or_insert_with(|| json!("Cluster"));
        }
        if ty == "LoadBalancer" {
            spec.entry("allocateLoadBalancerNodePorts")
                .or_insert_with(|| json!(true));
        }
        if ty == "ExternalName" {
            return;
        }
        spec.entry("internalTrafficPolicy")
            .or_insert_with(|| json!("Cluster"));
        // A cluster IP given only as clusterIP is the first of clusterIPs, and the reverse.
        let single = spec
            .get("clusterIP")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let list_first = spec
            .get("clusterIPs")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .map(str::to_string);
        match (single.is_empty(), list_first) {
            (false, None) => {
                spec.insert("clusterIPs".into(), json!([single]));
            }
            (true, Some(first)) => {
                spec.insert("clusterIP".into(), json!(first));
            }
            _ => {}
        }
        if is_headless && !selector {
            // Headless services without a selector take every family the cluster has.
            spec.entry("ipFamilyPolicy")
                .or_insert_with(|| json!("RequireDualStack"));
        } else {
            spec.entry("ipFamilyPolicy")
                .or_insert_with(|| json!("SingleStack"));
        }
        let families_empty = spec
            .get("ipFamilies")
            .and_then(Value::as_array)
            .is_none_or(|a| a.is_empty());
        if families_empty {
            spec.insert("ipFamilies".into(), json!(["IPv4"]));
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({"loadBalancer": {}}));
        }
    }

    /// Upstream's PrepareForUpdate and patchAllocatedValues: what the client left out and the
    /// server allocated stays; fields of a type the service no longer has go.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        carry_allocations(new, old);
        drop_type_dependent(new, old);
        self.default(new);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        validate(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate(new);
        let was_external = service_type(old) == "ExternalName";
        let is_external = service_type(new) == "ExternalName";
        if !was_external && !is_external {
            let before = strings(old.pointer("/spec/clusterIPs"));
            let after = strings(new.pointer("/spec/clusterIPs"));
            for (i, (a, b)) in before.iter().zip(after.iter()).enumerate() {
                if a != b {
                    errs.push(FieldError::invalid_go(
                        format!("spec.clusterIPs[{i}]"),
                        go_strings(&after),
                        "may not change once set",
                    ));
                }
            }
        }
        errs
    }

    fn prepare_for_status_update(&self, _new: &mut Value, _old: &Value, _now: super::Now) {}

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let ingress = new
            .pointer("/status/loadBalancer/ingress")
            .and_then(Value::as_array);
        for (i, entry) in ingress.into_iter().flatten().enumerate() {
            let addr = text(entry, "/ip");
            if !addr.is_empty() {
                errs.extend(ip(&format!("status.loadBalancer.ingress[{i}].ip"), addr));
            }
        }
        errs
    }
}

/// A string list as Go's `%#v` prints it in a field error: `[]string{"10.96.0.5"}`.
pub fn go_strings<S: AsRef<str>>(list: &[S]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{:?}", s.as_ref())).collect();
    format!("[]string{{{}}}", items.join(", "))
}

/// Cluster IPs and node ports the client left out of an update, taken from the stored
/// service when both old and new types have them (upstream's patchAllocatedValues).
fn carry_allocations(new: &mut Value, old: &Value) {
    if wants_cluster_ip(old)
        && wants_cluster_ip(new)
        && text(new, "/spec/clusterIP").is_empty()
        && strings(new.pointer("/spec/clusterIPs")).is_empty()
    {
        let spec = spec_mut(new);
        for k in ["clusterIP", "clusterIPs"] {
            if let Some(v) = old.pointer(&format!("/spec/{k}")) {
                spec.insert(k.into(), v.clone());
            }
        }
    }
    if wants_node_ports(old) && wants_node_ports(new) {
        let node_ports = |svc: &Value| -> Vec<i64> {
            ports(svc)
                .iter()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
                .collect()
        };
        let used_new = node_ports(new);
        let by_name: Vec<(String, i64)> = ports(old)
            .iter()
            .map(|p| {
                (
                    text(p, "/name").to_string(),
                    p.get("nodePort").and_then(Value::as_i64).unwrap_or(0),
                )
            })
            .collect();
        let used: Vec<i64> = node_ports(old)
            .into_iter()
            .filter(|p| used_new.contains(p))
            .collect();
        if let Some(list) = spec_mut(new).get_mut("ports").and_then(Value::as_array_mut) {
            for p in list.iter_mut() {
                if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                    continue;
                }
                let name = text(p, "/name").to_string();
                if let Some((_, port)) = by_name.iter().find(|(n, _)| *n == name) {
                    if *port != 0 && !used.contains(port) {
                        p["nodePort"] = json!(port);
                    }
                }
            }
        }
    }
}

/// Upstream's dropTypeDependentFields: what only the old type had goes, unless the client
/// changed it in this very update.
fn drop_type_dependent(new: &mut Value, old: &Value) {
    let same = |new: &Value, p: &str| new.pointer(p) == old.pointer(p);
    if !wants_cluster_ip(new) && wants_cluster_ip(old) && service_type(new) == "ExternalName" {
        let keep_ips = !same(new, "/spec/clusterIPs") && !same(new, "/spec/clusterIP");
        let keep_families = !same(new, "/spec/ipFamilies");
        let keep_policy = !same(new, "/spec/ipFamilyPolicy");
        let keep_itp = !same(new, "/spec/internalTrafficPolicy");
        let spec = spec_mut(new);
        if !keep_ips {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        if !keep_families {
            spec.remove("ipFamilies");
        }
        if !keep_policy {
            spec.remove("ipFamilyPolicy");
        }
        if !keep_itp {
            spec.remove("internalTrafficPolicy");
        }
    }
    if !wants_node_ports(new) && wants_node_ports(old) && same_node_ports(new, old) {
        if let Some(list) = spec_mut(new).get_mut("ports").and_then(Value::as_array_mut) {
            for p in list.iter_mut().filter_map(Value::as_object_mut) {
                p.remove("nodePort");
            }
        }
    }
    let external_policy = matches!(service_type(new), "NodePort" | "LoadBalancer");
    if !external_policy && same(new, "/spec/externalTrafficPolicy") {
        spec_mut(new).remove("externalTrafficPolicy");
    }
    if service_type(new) != "LoadBalancer" && same(new, "/spec/allocateLoadBalancerNodePorts") {
        spec_mut(new).remove("allocateLoadBalancerNodePorts");
    }
}

fn same_node_ports(new: &Value, old: &Value) -> bool {
    let np = |v: &Value| -> Vec<i64> {
        ports(v)
            .iter()
            .map(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0))
            .collect()
    };
    let n = np(new);
    n.iter().all(|p| *p == 0) || n == np(old)
}

fn ports(svc: &Value) -> Vec<Value> {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Upstream's ValidateService.
fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = validate_object_meta(obj, NameRule::Label)
        .into_iter()
        .filter(|e| e.field != "metadata.name" || e.value.is_none())
        .collect();
    let name = text(obj, "/metadata/name");
    let dns1035 = |n: &str| {
        !n.is_empty()
            && n.len() <= 63
            && n.starts_with(|c: char| c.is_ascii_lowercase())
            && label_errors(n).is_empty()
    };
    if !name.is_empty() && !dns1035(name) {
        let mut problem = vec![DNS1035_MSG.to_string()];
        if name.len() > 63 {
            problem = vec!["must be no more than 63 characters".into()];
        }
        for m in problem {
            errs.push(FieldError::invalid("metadata.name", name, m));
        }
    }
    let ty = service_type(obj);
    if !TYPES.contains(&ty) {
        errs.push(FieldError::not_supported("spec.type", ty, TYPES));
    }
    let port_list = ports(obj);
    if ty == "ExternalName" {
        let external = text(obj, "/spec/externalName");
        if external.is_empty() {
            errs.push(FieldError::required("spec.externalName", ""));
        } else {
            for m in subdomain_errors(external.trim_end_matches('.')) {
                errs.push(FieldError::invalid("spec.externalName", external, m));
            }
        }
        if !strings(obj.pointer("/spec/clusterIPs")).is_empty()
            || !text(obj, "/spec/clusterIP").is_empty()
        {
            errs.push(FieldError::forbidden(
                "spec.clusterIPs",
                "may not be set for ExternalName services",
            ));
        }
    } else if port_list.is_empty() && !headless(obj) {
        errs.push(FieldError::required("spec.ports", ""));
    }
    errs.extend(validate_ports(&port_list, ty));
    errs.extend(validate_cluster_ips(obj, ty));
    let affinity = text(obj, "/spec/sessionAffinity");
    if !["ClientIP", "None"].contains(&affinity) {
        errs.push(FieldError::not_supported(
            "spec.sessionAffinity",
            affinity,
            &["ClientIP", "None"],
        ));
    }
    if has_selector(obj) {
        errs.extend(validate_labels(
            "spec.selector",
            obj.pointer("/spec/selector"),
        ));
    }
    for (i, addr) in strings(obj.pointer("/spec/externalIPs")).iter().enumerate() {
        errs.extend(ip(&format!("spec.externalIPs[{i}]"), addr));
    }
    let etp = text(obj, "/spec/externalTrafficPolicy");
    if matches!(ty, "NodePort" | "LoadBalancer") {
        if !["Cluster", "Local"].contains(&etp) {
            errs.push(FieldError::not_supported(
                "spec.externalTrafficPolicy",
                etp,
                &["Cluster", "Local"],
            ));
        }
    } else if !etp.is_empty() {
        errs.push(FieldError::invalid(
            "spec.externalTrafficPolicy",
            etp,
            "may only be set when `type` is 'NodePort' or 'LoadBalancer'",
        ));
    }
    if ty != "ExternalName" {
        let itp = text(obj, "/spec/internalTrafficPolicy");
        if !["Cluster", "Local"].contains(&itp) {
            errs.push(FieldError::not_supported(
                "spec.internalTrafficPolicy",
                itp,
                &["Cluster", "Local"],
            ));
        }
        errs.extend(validate_families(obj));
    }
    errs
}

fn validate_ports(list: &[Value], ty: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    let mut keys: Vec<(i64, &str)> = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let path = format!("spec.ports[{i}]");
        let name = text(p, "/name");
        if list.len() > 1 && name.is_empty() {
            errs.push(FieldError::required(format!("{path}.name"), ""));
        } else if !name.is_empty() {
            for m in label_errors(name) {
                errs.push(FieldError::invalid(format!("{path}.name"), name, m));
            }
            if names.contains(&name) {
                errs.push(FieldError::duplicate(format!("{path}.name"), name));
            }
            names.push(name);
        }
        errs.extend(port(&format!("{path}.port"), p.get("port")));
        let protocol = text(p, "/protocol");
        if !PROTOCOLS.contains(&protocol) {
            errs.push(FieldError::not_supported(
                format!("{path}.protocol"),
                protocol,
                PROTOCOLS,
            ));
        }
        match p.get("targetPort") {
            Some(Value::String(s)) => {
                for m in port_name_errors(s) {
                    errs.push(FieldError::invalid(
                        format!("{path}.targetPort"),
                        s.as_str(),
                        m,
                    ));
                }
            }
            other => errs.extend(port(&format!("{path}.targetPort"), other)),
        }
        let node_port = p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
        if node_port != 0 {
            if ty == "ClusterIP" {
                errs.push(FieldError::forbidden(
                    format!("{path}.nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            } else {
                errs.extend(port(&format!("{path}.nodePort"), p.get("nodePort")));
            }
        }
        let key = (p.get("port").and_then(Value::as_i64).unwrap_or(0), protocol);
        if keys.contains(&key) {
            errs.push(FieldError::invalid_go(
                path.clone(),
                format!(
                    "core.ServicePort{{Name:\"\", Protocol:\"{}\", AppProtocol:(*string)(nil), Port:{}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                    key.1, key.0
                ),
                "",
            ));
            if let Some(e) = errs.last_mut() {
                e.kind = super::field::ErrorType::Duplicate;
            }
        }
        keys.push(key);
    }
    errs
}

fn validate_cluster_ips(obj: &Value, ty: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let list = strings(obj.pointer("/spec/clusterIPs"));
    let single = text(obj, "/spec/clusterIP");
    if !single.is_empty() && list.first().is_some_and(|f| *f != single) {
        errs.push(FieldError::invalid_go(
            "spec.clusterIPs",
            go_strings(&list),
            "first value must match `clusterIP`",
        ));
    }
    for (i, addr) in list.iter().enumerate() {
        let path = format!("spec.clusterIPs[{i}]");
        if *addr == "None" {
            if i > 0 || list.len() > 1 {
                errs.push(FieldError::invalid(
                    &path,
                    *addr,
                    "must be empty when the first value is 'None'",
                ));
            } else if matches!(ty, "NodePort" | "LoadBalancer") {
                errs.push(FieldError::invalid(
                    &path,
                    *addr,
                    format!("may not be set to 'None' for {ty} services"),
                ));
            }
            continue;
        }
        errs.extend(ip(&path, addr));
    }
    if list.len() > 2 {
        errs.push(FieldError::invalid_go(
            "spec.clusterIPs",
            go_strings(&list),
            "may only hold up to 2 values",
        ));
    }
    errs
}

/// IP family rules of a single-stack IPv4 cluster, as upstream's REST layer reports them.
fn validate_families(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let policy = text(obj, "/spec/ipFamilyPolicy");
    let supported = ["PreferDualStack", "RequireDualStack", "SingleStack"];
    if !supported.contains(&policy) {
        errs.push(FieldError::not_supported(
            "spec.ipFamilyPolicy",
            policy,
            &supported,
        ));
    } else if policy == "RequireDualStack" && (!headless(obj) || has_selector(obj)) {
        errs.push(FieldError::invalid(
            "spec.ipFamilyPolicy",
            policy,
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, family) in strings(obj.pointer("/spec/ipFamilies")).iter().enumerate() {
        let path = format!("spec.ipFamilies[{i}]");
        match *family {
            "IPv4" => {}
            "IPv6" => errs.push(FieldError::invalid(
                path,
                *family,
                "not configured on this cluster",
            )),
            other => errs.push(FieldError::not_supported(path, other, &["IPv4", "IPv6"])),
        }
    }
    errs
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
