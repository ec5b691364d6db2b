//! The pod spec shared by Pods and the templates of Deployments, ReplicaSets and DaemonSets:
//! upstream's defaults (core/v1 defaults.go) and validation, and the QoS class.

use serde_json::{json, Map, Value};
use tinykube_proto::quantity::is_quantity;

use super::field::FieldError;
use super::names::label_errors;

fn default_str(m: &mut Map<String, Value>, key: &str, value: &str) {
    if m.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
        m.insert(key.into(), value.into());
    }
}

/// `Always` for `:latest` or untagged images, `IfNotPresent` otherwise.
fn pull_policy(image: &str) -> &'static str {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    match last.split_once(':') {
        Some((_, "latest")) | None if !image.contains('@') => "Always",
        _ => "IfNotPresent",
    }
}

fn default_container(c: &mut Value) {
    let Some(m) = c.as_object_mut() else {
        return;
    };
    let image = m
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    default_str(m, "imagePullPolicy", pull_policy(&image));
    default_str(m, "terminationMessagePath", "/dev/termination-log");
    default_str(m, "terminationMessagePolicy", "File");
    m.entry("resources").or_insert_with(|| json!({}));
    if let Some(Value::Array(ports)) = m.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default_str(p, "protocol", "TCP");
        }
    }
    // Requests default to limits where only limits are given.
    let limits = m.get("resources").and_then(|r| r.get("limits")).cloned();
    if let (Some(Value::Object(limits)), Some(res)) = (
        limits,
        m.get_mut("resources").and_then(Value::as_object_mut),
    ) {
        let requests = res.entry("requests").or_insert_with(|| json!({}));
        if let Some(req) = requests.as_object_mut() {
            for (k, v) in limits {
                req.entry(k).or_insert(v);
            }
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = m.get_mut(probe).and_then(Value::as_object_mut) {
            for (k, v) in [
                ("timeoutSeconds", 1),
                ("periodSeconds", 10),
                ("successThreshold", 1),
                ("failureThreshold", 3),
            ] {
                p.entry(k).or_insert(json!(v));
            }
            if let Some(h) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
                default_str(h, "path", "/");
                default_str(h, "scheme", "HTTP");
            }
        }
    }
}

/// Defaults of a pod spec. `is_pod`: the spec of a Pod (not a template), which also gets
/// `enableServiceLinks` and the service account.
pub fn default_pod_spec(spec: &mut Value, is_pod: bool) {
    let Some(m) = spec.as_object_mut() else {
        return;
    };
    default_str(m, "restartPolicy", "Always");
    default_str(m, "dnsPolicy", "ClusterFirst");
    default_str(m, "schedulerName", "default-scheduler");
    m.entry("terminationGracePeriodSeconds")
        .or_insert(json!(30));
    m.entry("securityContext").or_insert_with(|| json!({}));
    if is_pod {
        m.entry("enableServiceLinks").or_insert(json!(true));
        // tinykube has no ServiceAccount objects or token volumes; the name is set as
        // upstream's admission sets it so `describe` reads the same.
        default_str(m, "serviceAccountName", "default");
        let sa = m.get("serviceAccountName").cloned().unwrap_or(Value::Null);
        m.entry("serviceAccount").or_insert(sa);
    }
    for list in ["containers", "initContainers"] {
        if let Some(Value::Array(cs)) = m.get_mut(list) {
            cs.iter_mut().for_each(default_container);
        }
    }
    if let Some(Value::Array(vols)) = m.get_mut("volumes") {
        for v in vols.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(h) = v.get_mut("hostPath").and_then(Value::as_object_mut) {
                h.entry("type").or_insert(json!(""));
            }
            for key in ["secret", "configMap"] {
                if let Some(s) = v.get_mut(key).and_then(Value::as_object_mut) {
                    s.entry("defaultMode").or_insert(json!(420));
                }
            }
        }
    }
}

/// DefaultTolerationSeconds admission: tolerate not-ready and unreachable for 300 s unless the
/// pod already tolerates them.
pub fn default_tolerations(spec: &mut Value) {
    let Some(m) = spec.as_object_mut() else {
        return;
    };
    let list = m.entry("tolerations").or_insert_with(|| json!([]));
    let Some(list) = list.as_array_mut() else {
        return;
    };
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let tolerated = list.iter().any(|t| {
            let k = t.get("key").and_then(Value::as_str).unwrap_or("");
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
            let op = t.get("operator").and_then(Value::as_str).unwrap_or("Equal");
            (k == key || (k.is_empty() && op == "Exists"))
                && (effect.is_empty() || effect == "NoExecute")
        });
        if !tolerated {
            list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
}

/// Guaranteed, Burstable or BestEffort, from the containers' requests and limits.
pub fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| spec.get(k).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        let req = c.pointer("/resources/requests").and_then(Value::as_object);
        let lim = c.pointer("/resources/limits").and_then(Value::as_object);
        for r in ["cpu", "memory"] {
            let (rq, lm) = (relevant(req, r), relevant(lim, r));
            if rq.is_some() || lm.is_some() {
                any = true;
            }
            if lm.is_none() || (rq.is_some() && rq != lm) {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// A resource's value in a requests or limits map, unless it is zero.
fn relevant<'a>(m: Option<&'a Map<String, Value>>, k: &str) -> Option<&'a Value> {
    m.and_then(|m| m.get(k)).filter(|v| !is_zero(v))
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s
            .trim_start_matches(['0', '.'])
            .chars()
            .all(|c| !c.is_ascii_digit()),
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => true,
    }
}

fn validate_container(c: &Value, path: &str, names: &mut Vec<String>, errs: &mut Vec<FieldError>) {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    } else {
        for p in label_errors(name) {
            errs.push(FieldError::invalid(format!("{path}.name"), name, p));
        }
        if names.iter().any(|n| n == name) {
            errs.push(FieldError::duplicate(format!("{path}.name"), name));
        }
        names.push(name.to_string());
    }
    if c.get("image")
        .and_then(Value::as_str)
        .is_none_or(|i| i.trim().is_empty())
    {
        errs.push(FieldError::required(format!("{path}.image"), ""));
    }
    if let Some(p) = c.get("imagePullPolicy").and_then(Value::as_str) {
        if !["Always", "IfNotPresent", "Never"].contains(&p) {
            errs.push(FieldError::not_supported(
                format!("{path}.imagePullPolicy"),
                p,
                &["Always", "IfNotPresent", "Never"],
            ));
        }
    }
    for kind in ["requests", "limits"] {
        if let Some(Value::Object(m)) = c.pointer(&format!("/resources/{kind}")) {
            for (k, v) in m {
                let text = v.as_str().unwrap_or("");
                if !is_quantity(text) {
                    errs.push(FieldError::invalid(
                        format!("{path}.resources.{kind}[{k}]"),
                        text,
                        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                    ));
                }
            }
        }
    }
    for (n, port) in c
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let cp = port
            .get("containerPort")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if !(1..=65535).contains(&cp) {
            errs.push(FieldError::invalid(
                format!("{path}.ports[{n}].containerPort"),
                cp,
                "must be between 1 and 65535, inclusive",
            ));
        }
    }
}

/// Validate a pod spec at `path` (`spec` or `spec.template.spec`).
pub fn validate_pod_spec(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = Vec::new();
    match spec.get("containers").and_then(Value::as_array) {
        Some(cs) if !cs.is_empty() => {
            for (i, c) in cs.iter().enumerate() {
                validate_container(c, &format!("{path}.containers[{i}]"), &mut names, &mut errs);
            }
        }
        _ => errs.push(FieldError::required(format!("{path}.containers"), "")),
    }
    for (i, c) in spec
        .get("initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        validate_container(
            c,
            &format!("{path}.initContainers[{i}]"),
            &mut names,
            &mut errs,
        );
    }
    let one_of = |field: &str, allowed: &[&str], errs: &mut Vec<FieldError>| {
        if let Some(v) = spec.get(field).and_then(Value::as_str) {
            if !allowed.contains(&v) {
                errs.push(FieldError::not_supported(
                    format!("{path}.{field}"),
                    v,
                    allowed,
                ));
            }
        }
    };
    one_of(
        "restartPolicy",
        &["Always", "OnFailure", "Never"],
        &mut errs,
    );
    one_of(
        "dnsPolicy",
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        &mut errs,
    );
    let mut volumes = Vec::new();
    for (i, v) in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.volumes[{i}].name"),
                "",
            ));
        } else if volumes.contains(&name) {
            errs.push(FieldError::duplicate(
                format!("{path}.volumes[{i}].name"),
                name,
            ));
        }
        volumes.push(name);
    }
    for (i, t) in spec
        .get("tolerations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let op = t.get("operator").and_then(Value::as_str).unwrap_or("Equal");
        if !["Equal", "Exists"].contains(&op) {
            errs.push(FieldError::not_supported(
                format!("{path}.tolerations[{i}].operator"),
                op,
                &["Equal", "Exists"],
            ));
        }
        if let Some(e) = t
            .get("effect")
            .and_then(Value::as_str)
            .filter(|e| !e.is_empty())
        {
            if !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&e) {
                errs.push(FieldError::not_supported(
                    format!("{path}.tolerations[{i}].effect"),
                    e,
                    &["NoSchedule", "PreferNoSchedule", "NoExecute"],
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_defaults_match_upstream() {
        let mut spec = json!({"containers": [{"name": "nginx", "image": "nginx", "ports": [{"containerPort": 80}]}]});
        default_pod_spec(&mut spec, true);
        default_tolerations(&mut spec);
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["schedulerName"], "default-scheduler");
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(spec["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(spec["containers"][0]["terminationMessagePolicy"], "File");
        assert_eq!(
            spec["tolerations"][1]["key"],
            "node.kubernetes.io/unreachable"
        );
        assert_eq!(pull_policy("nginx:1.14.2"), "IfNotPresent");
        assert_eq!(pull_policy("registry:5000/nginx"), "Always");
    }

    #[test]
    fn qos_classes() {
        let best = json!({"containers": [{"name": "c"}]});
        assert_eq!(qos_class(&best), "BestEffort");
        let burst = json!({"containers": [{"resources": {"requests": {"cpu": "100m", "memory": "200Mi"}, "limits": {"memory": "200Mi"}}}]});
        assert_eq!(qos_class(&burst), "Burstable");
        let guaranteed = json!({"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]});
        assert_eq!(qos_class(&guaranteed), "Guaranteed");
    }

    #[test]
    fn invalid_specs_are_reported() {
        let errs = validate_pod_spec(&json!({}), "spec");
        assert_eq!(errs[0].to_string(), "spec.containers: Required value");
        let spec = json!({"restartPolicy": "Sometimes", "containers": [{"name": "A_b"}, {"name": "x", "image": "i", "resources": {"requests": {"cpu": "lots"}}}]});
        let fields: Vec<String> = validate_pod_spec(&spec, "spec")
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(
            fields,
            [
                "spec.containers[0].name",
                "spec.containers[0].image",
                "spec.containers[1].resources.requests[cpu]",
                "spec.restartPolicy"
            ]
        );
    }
}
