//! The pod spec shared by Pods and the templates of Deployments, ReplicaSets and DaemonSets:
//! upstream's defaults (`defaults`), the QoS class, and ValidatePodSpec with upstream's paths
//! and wording: containers (`container`, `probe`), volumes, security contexts and placement
//! (`scheduling`), checked here in upstream's order. Fields the defaults always fill before
//! validation (restart and DNS policies, the grace period, pull and termination-message
//! policies, port protocols) are checked when set and never reported missing.

mod container;
mod defaults;
mod probe;
mod scheduling;
mod security;
#[cfg(test)]
mod tests;
mod volumes;

use serde_json::Value;

use super::field::FieldError;
use super::names::{label_errors, subdomain_errors, validate_labels};
use super::rules::resource_requirements;

pub use defaults::{default_pod_spec, default_tolerations, qos_class};
pub use scheduling::{node_selector_term, taint_effect, tolerations};
pub use volumes::{no_backsteps, source_rules};

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
const MAX_INT32: i64 = 2_147_483_647;

/// The entries of a JSON list, numbered.
fn items(v: Option<&Value>) -> impl Iterator<Item = (usize, &Value)> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// A string field of `v`, or "".
fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A port number at `field`: 1 to 65535.
fn port_number(field: &str, n: i64) -> Option<FieldError> {
    (!(1..=65535).contains(&n))
        .then(|| FieldError::invalid(field, n, "must be between 1 and 65535, inclusive"))
}

/// Host ports a set of containers may not share (protocol, host IP, port).
fn host_port_conflicts(containers: &[(usize, &Value)], path: &str) -> Vec<FieldError> {
    let mut seen: Vec<String> = Vec::new();
    let mut errs = Vec::new();
    for (ci, c) in containers {
        for (pi, p) in items(c.get("ports")) {
            let port = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if port == 0 {
                continue;
            }
            let key = format!("{}/{}/{port}", str_at(p, "protocol"), str_at(p, "hostIP"));
            if seen.contains(&key) {
                errs.push(FieldError::duplicate(
                    format!("{path}[{ci}].ports[{pi}].hostPort"),
                    key,
                ));
            } else {
                seen.push(key);
            }
        }
    }
    errs
}

/// A name at `field` that must be a DNS subdomain when set.
fn subdomain(spec: &Value, key: &str, path: &str) -> Vec<FieldError> {
    let v = str_at(spec, key);
    if v.is_empty() {
        return Vec::new();
    }
    subdomain_errors(v)
        .into_iter()
        .map(|m| FieldError::invalid(format!("{path}.{key}"), v, m))
        .collect()
}

/// A name at `field` that must be a DNS label when set.
fn dns_label(spec: &Value, key: &str, path: &str) -> Vec<FieldError> {
    let v = str_at(spec, key);
    if v.is_empty() {
        return Vec::new();
    }
    label_errors(v)
        .into_iter()
        .map(|m| FieldError::invalid(format!("{path}.{key}"), v, m))
        .collect()
}

/// Regular and init containers: common rules, unique names across both, probes and hooks
/// where they may be, host ports.
fn containers(spec: &Value, path: &str, vols: &volumes::Volumes) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let grace = spec
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    let restart = str_at(spec, "restartPolicy");
    let host_users = spec.get("hostUsers").and_then(Value::as_bool) != Some(false);
    let regular: Vec<(usize, &Value)> = items(spec.get("containers")).collect();
    let at = format!("{path}.containers");
    if regular.is_empty() {
        errs.push(FieldError::required(&at, ""));
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in &regular {
        let idx = format!("{at}[{i}]");
        errs.extend(container::common(c, &idx, vols, restart, host_users));
        let name = str_at(c, "name");
        if names.contains(&name) {
            errs.push(FieldError::duplicate(format!("{idx}.name"), name));
        } else {
            names.push(name);
        }
        if let Some(l) = c.get("lifecycle").filter(|v| !v.is_null()) {
            errs.extend(probe::lifecycle(l, grace, &format!("{idx}.lifecycle")));
        }
        errs.extend(probe::probes(c, grace, &idx));
        if c.get("restartPolicy").is_some_and(|v| !v.is_null()) {
            errs.push(FieldError::forbidden(
                format!("{idx}.restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    errs.extend(host_port_conflicts(&regular, &at));
    let at = format!("{path}.initContainers");
    for (i, c) in items(spec.get("initContainers")) {
        let idx = format!("{at}[{i}]");
        errs.extend(container::common(c, &idx, vols, restart, host_users));
        let sidecar = match c.get("restartPolicy").and_then(Value::as_str) {
            Some("Always") => true,
            Some(other) => {
                errs.push(FieldError::not_supported(
                    format!("{idx}.restartPolicy"),
                    other,
                    &["Always"],
                ));
                false
            }
            None => false,
        };
        let name = str_at(c, "name");
        if names.contains(&name) {
            errs.push(FieldError::duplicate(format!("{idx}.name"), name));
        } else if !name.is_empty() {
            names.push(name);
        }
        errs.extend(host_port_conflicts(&[(i, c)], &at));
        if sidecar {
            if let Some(l) = c.get("lifecycle").filter(|v| !v.is_null()) {
                errs.extend(probe::lifecycle(l, grace, &format!("{idx}.lifecycle")));
            }
            errs.extend(probe::probes(c, grace, &idx));
        } else {
            for key in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if c.get(key).is_some_and(|v| !v.is_null()) {
                    errs.push(FieldError::forbidden(
                        format!("{idx}.{key}"),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    errs
}

/// A host-network pod's container ports must be its host ports (a template's may leave
/// `hostPort` unset: the pod's defaults fill it).
fn host_network_ports(spec: &Value, path: &str, is_pod: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if spec.get("hostNetwork").and_then(Value::as_bool) != Some(true) {
        return errs;
    }
    for (i, c) in items(spec.get("containers")) {
        for (j, p) in items(c.get("ports")) {
            let hp = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            let cp = p.get("containerPort").and_then(Value::as_i64).unwrap_or(0);
            if (is_pod || hp != 0) && hp != cp {
                errs.push(FieldError::invalid(
                    format!("{path}.containers[{i}].ports[{j}].hostPort"),
                    hp,
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
    errs
}

/// An enumerated string, when set: NotSupported when unknown.
fn one_of(spec: &Value, key: &str, allowed: &[&str], path: &str) -> Option<FieldError> {
    match str_at(spec, key) {
        "" => None,
        v if !allowed.contains(&v) => Some(FieldError::not_supported(
            format!("{path}.{key}"),
            v,
            allowed,
        )),
        _ => None,
    }
}

/// Upstream's ValidatePodSpec for the spec at `path`, of a Pod (`is_pod`) or of a template.
pub fn validate_spec(spec: &Value, path: &str, is_pod: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let p = |k: &str| format!("{path}.{k}");
    let (vols, vol_errs) = volumes::validate(spec.get("volumes"), &p("volumes"), is_pod);
    errs.extend(vol_errs);
    errs.extend(containers(spec, path, &vols));
    errs.extend(host_network_ports(spec, path, is_pod));
    errs.extend(one_of(spec, "restartPolicy", RESTART_POLICIES, path));
    errs.extend(one_of(spec, "dnsPolicy", DNS_POLICIES, path));
    errs.extend(validate_labels(
        &p("nodeSelector"),
        spec.get("nodeSelector"),
    ));
    errs.extend(security::pod(spec, &p("securityContext")));
    errs.extend(scheduling::affinity(spec.get("affinity"), &p("affinity")));
    errs.extend(scheduling::dns_config(spec, &p("dnsConfig")));
    errs.extend(scheduling::gates(spec, path));
    errs.extend(scheduling::topology_spread(
        spec.get("topologySpreadConstraints"),
        &p("topologySpreadConstraints"),
    ));
    if spec.get("hostUsers").and_then(Value::as_bool) == Some(false) {
        for (key, shown) in [
            ("hostNetwork", "hostNetwork"),
            ("hostPID", "HostPID"),
            ("hostIPC", "HostIPC"),
        ] {
            if spec.get(key).and_then(Value::as_bool) == Some(true) {
                errs.push(FieldError::forbidden(
                    p(shown),
                    "when `pod.Spec.HostUsers` is false",
                ));
            }
        }
    }
    errs.extend(subdomain(spec, "serviceAccountName", path));
    errs.extend(subdomain(spec, "nodeName", path));
    if let Some(v) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64) {
        if !(1..=MAX_INT32).contains(&v) {
            errs.push(FieldError::invalid(
                p("activeDeadlineSeconds"),
                v,
                format!("must be between 1 and {MAX_INT32}, inclusive"),
            ));
        }
    }
    errs.extend(dns_label(spec, "hostname", path));
    errs.extend(dns_label(spec, "subdomain", path));
    errs.extend(tolerations(spec.get("tolerations"), &p("tolerations")));
    errs.extend(scheduling::host_aliases(
        spec.get("hostAliases"),
        &p("hostAliases"),
    ));
    errs.extend(subdomain(spec, "priorityClassName", path));
    if spec.get("runtimeClassName").is_some_and(|v| !v.is_null()) {
        let name = str_at(spec, "runtimeClassName");
        for m in subdomain_errors(name) {
            errs.push(FieldError::invalid(p("runtimeClassName"), name, m));
        }
    }
    if spec.get("preemptionPolicy").is_some_and(|v| !v.is_null()) {
        errs.extend(one_of(
            spec,
            "preemptionPolicy",
            &["PreemptLowerPriority", "Never"],
            path,
        ));
    }
    if let Some(overhead) = spec.get("overhead").filter(|v| !v.is_null()) {
        let as_limits = serde_json::json!({ "limits": overhead });
        errs.extend(resource_requirements(&p("overhead"), Some(&as_limits)));
    }
    if let Some(os) = spec.get("os").filter(|v| !v.is_null()) {
        match str_at(os, "name") {
            "" => errs.push(FieldError::required(p("os.name"), "cannot be empty")),
            "linux" | "windows" => {}
            other => errs.push(FieldError::not_supported(
                p("os"),
                other,
                &["linux", "windows"],
            )),
        }
    }
    errs
}

/// Validate a pod template's spec at `path` (`spec.template.spec`).
pub fn validate_pod_spec(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = validate_spec(spec, path, false);
    if items(spec.get("ephemeralContainers")).next().is_some() {
        errs.push(FieldError::forbidden(
            format!("{path}.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// A Pod's own rules beyond its spec's: images without surrounding whitespace.
pub fn validate_pod_only(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for list in ["containers", "initContainers"] {
        for (i, c) in items(spec.get(list)) {
            let image = str_at(c, "image");
            if image.trim() != image {
                errs.push(FieldError::invalid(
                    format!("{path}.{list}[{i}].image"),
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    errs
}
