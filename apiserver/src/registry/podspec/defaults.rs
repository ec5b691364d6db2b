//! Upstream's defaults of a pod spec (core/v1 defaults.go and the admission plugins tinykube
//! folds in), applied before validation, and the QoS class a pod is given at creation.

use serde_json::{json, Map, Value};

fn default_str(m: &mut Map<String, Value>, key: &str, value: &str) {
    if m.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
        m.insert(key.into(), value.into());
    }
}

/// `Always` for `:latest` or untagged images, `IfNotPresent` otherwise.
pub(super) fn pull_policy(image: &str) -> &'static str {
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
            // Zero is unset, as in upstream's SetDefaults_Probe.
            for (k, v) in [
                ("timeoutSeconds", 1),
                ("periodSeconds", 10),
                ("successThreshold", 1),
                ("failureThreshold", 3),
            ] {
                if p.get(k).and_then(Value::as_i64).unwrap_or(0) == 0 {
                    p.insert(k.into(), json!(v));
                }
            }
            default_http_get(p);
        }
    }
    if let Some(l) = m.get_mut("lifecycle").and_then(Value::as_object_mut) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = l.get_mut(hook).and_then(Value::as_object_mut) {
                default_http_get(h);
            }
        }
    }
    for (_, e) in items_mut(m.get_mut("env")) {
        if let Some(f) = e
            .pointer_mut("/valueFrom/fieldRef")
            .and_then(Value::as_object_mut)
        {
            default_str(f, "apiVersion", "v1");
        }
    }
}

/// A handler's `httpGet` gets path `/` and scheme HTTP.
fn default_http_get(handler: &mut Map<String, Value>) {
    if let Some(h) = handler.get_mut("httpGet").and_then(Value::as_object_mut) {
        default_str(h, "path", "/");
        default_str(h, "scheme", "HTTP");
    }
}

fn items_mut(v: Option<&mut Value>) -> impl Iterator<Item = (usize, &mut Value)> {
    v.and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .enumerate()
}

/// Downward API files read `v1` fields unless told otherwise.
fn default_downward_items(items: Option<&mut Value>) {
    for (_, f) in items_mut(items) {
        if let Some(r) = f.get_mut("fieldRef").and_then(Value::as_object_mut) {
            default_str(r, "apiVersion", "v1");
        }
    }
}

/// A host-network pod's ports are the host's: `hostPort` defaults to `containerPort`.
fn default_host_network_ports(m: &mut Map<String, Value>) {
    if m.get("hostNetwork").and_then(Value::as_bool) != Some(true) {
        return;
    }
    for list in ["containers", "initContainers"] {
        for (_, c) in items_mut(m.get_mut(list)) {
            for (_, p) in items_mut(c.get_mut("ports")) {
                let container_port = p.get("containerPort").cloned();
                if let (Some(p), Some(cp)) = (p.as_object_mut(), container_port) {
                    if p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0 {
                        p.insert("hostPort".into(), cp);
                    }
                }
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
        default_host_network_ports(m);
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
            for key in ["secret", "configMap", "downwardAPI", "projected"] {
                if let Some(s) = v.get_mut(key).and_then(Value::as_object_mut) {
                    s.entry("defaultMode").or_insert(json!(420));
                }
            }
            if let Some(d) = v.get_mut("downwardAPI") {
                default_downward_items(d.get_mut("items"));
            }
            for (_, source) in items_mut(v.get_mut("projected").and_then(|p| p.get_mut("sources")))
            {
                if let Some(d) = source.get_mut("downwardAPI") {
                    default_downward_items(d.get_mut("items"));
                }
                if let Some(t) = source
                    .get_mut("serviceAccountToken")
                    .and_then(Value::as_object_mut)
                {
                    t.entry("expirationSeconds").or_insert(json!(3600));
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
