//! One container of a pod spec, as upstream's validateContainerCommon: name, image, termination
//! message policy, ports, environment (`env`, `envFrom`), volume mounts, pull policy, resources,
//! resize policy and security context. Probes and lifecycle hooks are `probe`'s.

use serde_json::Value;

use super::super::field::FieldError;
use super::super::names::{label_errors, name_errors, subdomain_errors, NameRule};
use super::super::rules::{
    config_key_errors, env_var_name_errors, port_name_errors, qualified_name_errors,
    resource_requirements,
};
use super::volumes::{local_descending_path, Volumes};
use super::{items, str_at};

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];
const RESOURCE_FIELD_PATHS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];
/// Field labels upstream's downward API converts (ConvertDownwardAPIFieldLabel).
const DOWNWARD_LABELS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.schedulerName",
    "status.phase",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// Name, image and everything validateContainerCommon checks, for a container at `path`.
pub fn common(
    c: &Value,
    path: &str,
    volumes: &Volumes,
    pod_restart: &str,
    host_users: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = str_at(c, "name");
    if name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    } else {
        for m in label_errors(name) {
            errs.push(FieldError::invalid(format!("{path}.name"), name, m));
        }
    }
    if str_at(c, "image").is_empty() {
        errs.push(FieldError::required(format!("{path}.image"), ""));
    }
    match str_at(c, "terminationMessagePolicy") {
        "" | "File" | "FallbackToLogsOnError" => {}
        other => errs.push(FieldError::not_supported(
            format!("{path}.terminationMessagePolicy"),
            other,
            &["File", "FallbackToLogsOnError"],
        )),
    }
    errs.extend(ports(c.get("ports"), &format!("{path}.ports")));
    errs.extend(env(c.get("env"), &format!("{path}.env")));
    errs.extend(env_from(c.get("envFrom"), &format!("{path}.envFrom")));
    errs.extend(volume_mounts(c, volumes, &format!("{path}.volumeMounts")));
    match str_at(c, "imagePullPolicy") {
        p if !p.is_empty() && !PULL_POLICIES.contains(&p) => errs.push(FieldError::not_supported(
            format!("{path}.imagePullPolicy"),
            p,
            PULL_POLICIES,
        )),
        _ => {}
    }
    errs.extend(resource_requirements(
        &format!("{path}.resources"),
        c.get("resources"),
    ));
    errs.extend(resize_policy(
        c.get("resizePolicy"),
        &format!("{path}.resizePolicy"),
        pod_restart,
    ));
    errs.extend(super::security::container(
        c.get("securityContext"),
        &format!("{path}.securityContext"),
        host_users,
    ));
    errs
}

fn ports(list: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (i, p) in items(list) {
        let idx = format!("{path}[{i}]");
        let name = str_at(p, "name");
        if !name.is_empty() {
            let msgs = port_name_errors(name);
            if !msgs.is_empty() {
                for m in msgs {
                    errs.push(FieldError::invalid(format!("{idx}.name"), name, m));
                }
            } else if names.contains(&name) {
                errs.push(FieldError::duplicate(format!("{idx}.name"), name));
            } else {
                names.push(name);
            }
        }
        let container_port = p.get("containerPort").and_then(Value::as_i64).unwrap_or(0);
        if container_port == 0 {
            errs.push(FieldError::required(format!("{idx}.containerPort"), ""));
        } else {
            errs.extend(super::port_number(
                &format!("{idx}.containerPort"),
                container_port,
            ));
        }
        let host_port = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
        if host_port != 0 {
            errs.extend(super::port_number(&format!("{idx}.hostPort"), host_port));
        }
        match str_at(p, "protocol") {
            proto if !proto.is_empty() && !PROTOCOLS.contains(&proto) => errs.push(
                FieldError::not_supported(format!("{idx}.protocol"), proto, PROTOCOLS),
            ),
            _ => {}
        }
    }
    errs
}

fn env(list: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, ev) in items(list) {
        let idx = format!("{path}[{i}]");
        let name = str_at(ev, "name");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{idx}.name"), ""));
        } else {
            for m in env_var_name_errors(name) {
                errs.push(FieldError::invalid(format!("{idx}.name"), name, m));
            }
        }
        errs.extend(value_from(ev, &format!("{idx}.valueFrom")));
    }
    errs
}

/// `valueFrom`: exactly one source, and no `value` beside it.
fn value_from(ev: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(from) = ev.get("valueFrom").filter(|v| !v.is_null()) else {
        return errs;
    };
    let mut sources = 0;
    if let Some(f) = from.get("fieldRef").filter(|v| !v.is_null()) {
        sources += 1;
        errs.extend(object_field_selector(
            f,
            ENV_FIELD_PATHS,
            &format!("{path}.fieldRef"),
        ));
    }
    if let Some(r) = from.get("resourceFieldRef").filter(|v| !v.is_null()) {
        sources += 1;
        errs.extend(resource_field_selector(
            r,
            &format!("{path}.resourceFieldRef"),
            false,
        ));
    }
    for key in ["configMapKeyRef", "secretKeyRef"] {
        if let Some(s) = from.get(key).filter(|v| !v.is_null()) {
            sources += 1;
            errs.extend(key_selector(s, &format!("{path}.{key}")));
        }
    }
    let detail = if sources == 0 {
        Some("must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`")
    } else if !str_at(ev, "value").is_empty() {
        Some("may not be specified when `value` is not empty")
    } else if sources > 1 {
        Some("may not have more than one field specified at a time")
    } else {
        None
    };
    errs.extend(detail.map(|d| FieldError::invalid(path, "", d)));
    errs
}

/// A downward API field (`fieldRef`) at `path`, among `allowed` paths (labels and annotations
/// may also be read one key at a time: `metadata.labels['app']`).
pub fn object_field_selector(fs: &Value, allowed: &[&str], path: &str) -> Vec<FieldError> {
    let (api_version, field_path) = (str_at(fs, "apiVersion"), str_at(fs, "fieldPath"));
    if api_version.is_empty() {
        return vec![FieldError::required(format!("{path}.apiVersion"), "")];
    }
    if field_path.is_empty() {
        return vec![FieldError::required(format!("{path}.fieldPath"), "")];
    }
    let subscripted = field_path
        .strip_suffix("']")
        .and_then(|s| s.split_once("['"))
        .filter(|(p, _)| !p.is_empty());
    let converted = if api_version != "v1" {
        Err(format!("unsupported pod version: {api_version}"))
    } else {
        match subscripted {
            Some((p, _)) if p == "metadata.annotations" || p == "metadata.labels" => Ok(()),
            Some(_) => Err(format!(
                "field label does not support subscript: {field_path}"
            )),
            None if DOWNWARD_LABELS.contains(&field_path) || field_path == "spec.host" => Ok(()),
            None => Err(format!("field label not supported: {field_path}")),
        }
    };
    if let Err(e) = converted {
        return vec![FieldError::invalid(
            format!("{path}.fieldPath"),
            field_path,
            format!("error converting fieldPath: {e}"),
        )];
    }
    let internal = if field_path == "spec.host" {
        "spec.nodeName"
    } else {
        field_path
    };
    match subscripted {
        Some((p, key)) => {
            let key = if p == "metadata.annotations" {
                key.to_lowercase()
            } else {
                key.to_string()
            };
            qualified_name_errors(&key)
                .into_iter()
                .map(|m| FieldError::invalid(path, key.as_str(), m))
                .collect()
        }
        None if !allowed.contains(&internal) => vec![FieldError::not_supported(
            format!("{path}.fieldPath"),
            internal,
            allowed,
        )],
        None => Vec::new(),
    }
}

/// A container resource (`resourceFieldRef`) at `path`; a volume's must name its container.
pub fn resource_field_selector(fs: &Value, path: &str, volume: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let resource = str_at(fs, "resource");
    if volume && str_at(fs, "containerName").is_empty() {
        errs.push(FieldError::required(format!("{path}.containerName"), ""));
    } else if resource.is_empty() {
        errs.push(FieldError::required(format!("{path}.resource"), ""));
    } else if !RESOURCE_FIELD_PATHS.contains(&resource)
        && !resource.starts_with("requests.hugepages-")
        && !resource.starts_with("limits.hugepages-")
    {
        errs.push(FieldError::not_supported(
            format!("{path}.resource"),
            resource,
            RESOURCE_FIELD_PATHS,
        ));
    }
    let divisor = fs
        .get("divisor")
        .and_then(super::super::rules::quantity)
        .filter(|q| !q.is_zero());
    if let Some(d) = divisor {
        const SIZES: &[&str] = &[
            "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
        ];
        const LIST: &str = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei";
        let d = d.to_string();
        let problem = match resource {
            "limits.cpu" | "requests.cpu" if !["1m", "1"].contains(&d.as_str()) => Some(
                "only divisor's values 1m and 1 are supported with the cpu resource".to_string(),
            ),
            "limits.memory" | "requests.memory" if !SIZES.contains(&d.as_str()) => Some(format!(
                "only divisor's values {LIST} are supported with the memory resource"
            )),
            "limits.ephemeral-storage" | "requests.ephemeral-storage"
                if !SIZES.contains(&d.as_str()) =>
            {
                Some(format!(
                    "only divisor's values {LIST} are supported with the local ephemeral storage resource"
                ))
            }
            r if (r.starts_with("requests.hugepages-") || r.starts_with("limits.hugepages-"))
                && !SIZES.contains(&d.as_str()) =>
            {
                Some(format!(
                    "only divisor's values {LIST} are supported with the hugepages resource"
                ))
            }
            _ => None,
        };
        errs.extend(problem.map(|p| FieldError::invalid(format!("{path}.divisor"), resource, p)));
    }
    errs
}

/// A ConfigMap or Secret key reference: a valid object name and a key.
fn key_selector(s: &Value, path: &str) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = Vec::new();
    let name = str_at(s, "name");
    for m in subdomain_errors(name) {
        errs.push(FieldError::invalid(format!("{path}.name"), name, m));
    }
    let key = str_at(s, "key");
    if key.is_empty() {
        errs.push(FieldError::required(format!("{path}.key"), ""));
    } else {
        for m in config_key_errors(key) {
            errs.push(FieldError::invalid(format!("{path}.key"), key, m));
        }
    }
    errs
}

fn env_from(list: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, ev) in items(list) {
        let idx = format!("{path}[{i}]");
        let prefix = str_at(ev, "prefix");
        if !prefix.is_empty() {
            for m in env_var_name_errors(prefix) {
                errs.push(FieldError::invalid(format!("{idx}.prefix"), prefix, m));
            }
        }
        let mut sources = 0;
        for key in ["configMapRef", "secretRef"] {
            let Some(r) = ev.get(key).filter(|v| !v.is_null()) else {
                continue;
            };
            sources += 1;
            let name = str_at(r, "name");
            let field = format!("{idx}.{key}.name");
            if name.is_empty() {
                errs.push(FieldError::required(field, ""));
            } else {
                for m in name_errors(name, NameRule::Subdomain, true) {
                    errs.push(FieldError::invalid(&field, name, m));
                }
            }
        }
        if sources == 0 {
            errs.push(FieldError::invalid(
                path,
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                path,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

fn volume_mounts(c: &Value, volumes: &Volumes, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut mount_points: Vec<&str> = Vec::new();
    let privileged = c
        .pointer("/securityContext/privileged")
        .and_then(Value::as_bool)
        == Some(true);
    for (i, m) in items(c.get("volumeMounts")) {
        let idx = format!("{path}[{i}]");
        let name = str_at(m, "name");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{idx}.name"), ""));
        }
        if !volumes.has(name) {
            errs.push(FieldError::not_found(format!("{idx}.name"), name));
        }
        let mount_path = str_at(m, "mountPath");
        if mount_path.is_empty() {
            errs.push(FieldError::required(format!("{idx}.mountPath"), ""));
        }
        if mount_points.contains(&mount_path) {
            errs.push(FieldError::invalid(
                format!("{idx}.mountPath"),
                mount_path,
                "must be unique",
            ));
        }
        mount_points.push(mount_path);
        let (sub, expr) = (str_at(m, "subPath"), str_at(m, "subPathExpr"));
        if volumes.is_image(name) {
            for (k, v) in [("subPath", sub), ("subPathExpr", expr)] {
                if !v.is_empty() {
                    errs.push(FieldError::invalid(
                        format!("{idx}.{k}"),
                        v,
                        "not allowed in image volume sources",
                    ));
                }
            }
        }
        if !sub.is_empty() {
            errs.extend(local_descending_path(sub, &format!("{path}.subPath")));
        }
        if !expr.is_empty() {
            if !sub.is_empty() {
                errs.push(FieldError::invalid(
                    format!("{idx}.subPathExpr"),
                    expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(local_descending_path(expr, &format!("{path}.subPathExpr")));
        }
        let propagation = m.get("mountPropagation").and_then(Value::as_str);
        if let Some(p) = propagation {
            let field = format!("{path}.mountPropagation");
            const MODES: &[&str] = &["Bidirectional", "HostToContainer", "None"];
            if !MODES.contains(&p) {
                errs.push(FieldError::not_supported(&field, p, MODES));
            }
            if p == "Bidirectional" && !privileged {
                errs.push(FieldError::forbidden(
                    &field,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
        if let Some(rro) = m.get("recursiveReadOnly").and_then(Value::as_str) {
            let field = format!("{path}.recursiveReadOnly");
            match rro {
                "Disabled" => {}
                "Enabled" | "IfPossible" => {
                    if m.get("readOnly").and_then(Value::as_bool) != Some(true) {
                        errs.push(FieldError::forbidden(
                            &field,
                            "may only be specified when readOnly is true",
                        ));
                    }
                    if propagation.is_some_and(|p| p != "None") {
                        errs.push(FieldError::forbidden(
                            &field,
                            "may only be specified when mountPropagation is None or not specified",
                        ));
                    }
                }
                other => errs.push(FieldError::not_supported(
                    &field,
                    other,
                    &["Disabled", "Enabled", "IfPossible"],
                )),
            }
        }
    }
    errs
}

fn resize_policy(list: Option<&Value>, path: &str, pod_restart: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, p) in items(list) {
        let resource = str_at(p, "resourceName");
        if seen.contains(&resource) {
            errs.push(FieldError::duplicate(format!("{path}[{i}]"), resource));
        }
        seen.push(resource);
        match resource {
            "cpu" | "memory" => {}
            "" => errs.push(FieldError::required(path, "")),
            other => errs.push(FieldError::not_supported(path, other, &["cpu", "memory"])),
        }
        let restart = str_at(p, "restartPolicy");
        match restart {
            "NotRequired" | "RestartContainer" => {}
            "" => errs.push(FieldError::required(path, "")),
            other => errs.push(FieldError::not_supported(
                path,
                other,
                &["NotRequired", "RestartContainer"],
            )),
        }
        if pod_restart == "Never" && restart != "NotRequired" {
            errs.push(FieldError::invalid(
                path,
                restart,
                "must be 'NotRequired' when `restartPolicy` is 'Never'",
            ));
        }
    }
    errs
}
