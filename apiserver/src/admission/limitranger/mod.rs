//! The LimitRanger admission plugin, as upstream's `plugin/pkg/admission/limitranger`: a new
//! pod's containers get the requests and limits they leave out from the `default` and
//! `defaultRequest` of the namespace's Container limits (noted in the
//! `kubernetes.io/limit-ranger` annotation), then every LimitRange's min, max and
//! maxLimitRequestRatio are enforced per Container, per Pod (the containers' sum) and per
//! PersistentVolumeClaim (its storage request).

use serde_json::{json, Map, Value};
use tinykube_proto::quantity::Quantity;
use tinykube_proto::quota::{parse_list, pod_limits, pod_requests, ResourceList};

const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The defaults of a LimitRange's Container items (a later item wins).
fn container_defaults(limit_range: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let (mut requests, mut limits) = (Map::new(), Map::new());
    for item in items(limit_range) {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        for (field, into) in [("defaultRequest", &mut requests), ("default", &mut limits)] {
            for (k, v) in item
                .get(field)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                into.insert(k.clone(), v.clone());
            }
        }
    }
    (requests, limits)
}

fn items(limit_range: &Value) -> impl Iterator<Item = &Value> {
    limit_range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Fill what a container leaves out of `field` from `defaults`; the names set, sorted.
fn fill(container: &mut Value, field: &str, defaults: &Map<String, Value>) -> Vec<String> {
    let Some(c) = container.as_object_mut() else {
        return Vec::new();
    };
    let resources = c.entry("resources").or_insert_with(|| json!({}));
    let Some(resources) = resources.as_object_mut() else {
        return Vec::new();
    };
    let list = resources.entry(field).or_insert_with(|| json!({}));
    if list.is_null() {
        *list = json!({});
    }
    let Some(list) = list.as_object_mut() else {
        return Vec::new();
    };
    let mut set: Vec<String> = Vec::new();
    for (k, v) in defaults {
        if !list.contains_key(k) {
            list.insert(k.clone(), v.clone());
            set.push(k.clone());
        }
    }
    set.sort();
    set
}

/// Upstream's PodMutateLimitFunc for one LimitRange: true when the pod changed.
pub fn default_pod(limit_range: &Value, pod: &mut Value) -> bool {
    let (requests, limits) = container_defaults(limit_range);
    let mut notes = Vec::new();
    for (field, what) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let list = pod
            .pointer_mut(&format!("/spec/{field}"))
            .and_then(Value::as_array_mut);
        for c in list.into_iter().flatten() {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let set_limits = fill(c, "limits", &limits);
            let set_requests = fill(c, "requests", &requests);
            if !set_requests.is_empty() {
                notes.push(format!(
                    "{} request for {what} {name}",
                    set_requests.join(", ")
                ));
            }
            if !set_limits.is_empty() {
                notes.push(format!("{} limit for {what} {name}", set_limits.join(", ")));
            }
        }
    }
    if notes.is_empty() {
        return false;
    }
    let meta = crate::object::meta_mut(pod);
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    if let Some(a) = annotations.as_object_mut() {
        let value = format!("LimitRanger plugin set: {}", notes.join("; "));
        a.insert(ANNOTATION.into(), value.into());
    }
    true
}

fn minimum(
    t: &str,
    r: &str,
    at: &Quantity,
    req: &ResourceList,
    lim: &ResourceList,
) -> Option<String> {
    let Some(request) = req.get(r) else {
        return Some(format!(
            "minimum {r} usage per {t} is {at}.  No request is specified"
        ));
    };
    if request.milli_value() < at.milli_value() {
        return Some(format!(
            "minimum {r} usage per {t} is {at}, but request is {request}"
        ));
    }
    match lim.get(r) {
        Some(limit) if limit.milli_value() < at.milli_value() => Some(format!(
            "minimum {r} usage per {t} is {at}, but limit is {limit}"
        )),
        _ => None,
    }
}

fn maximum(
    t: &str,
    r: &str,
    at: &Quantity,
    req: &ResourceList,
    lim: &ResourceList,
) -> Option<String> {
    let Some(limit) = lim.get(r) else {
        return Some(format!(
            "maximum {r} usage per {t} is {at}.  No limit is specified"
        ));
    };
    if limit.milli_value() > at.milli_value() {
        return Some(format!(
            "maximum {r} usage per {t} is {at}, but limit is {limit}"
        ));
    }
    match req.get(r) {
        Some(request) if request.milli_value() > at.milli_value() => Some(format!(
            "maximum {r} usage per {t} is {at}, but request is {request}"
        )),
        _ => None,
    }
}

fn ratio(
    t: &str,
    r: &str,
    at: &Quantity,
    req: &ResourceList,
    lim: &ResourceList,
) -> Option<String> {
    let request = req.get(r).map(Quantity::milli_value).unwrap_or(0);
    if request == 0 {
        return Some(format!(
            "{r} max limit to request ratio per {t} is {at}, but no request is specified or request is 0"
        ));
    }
    let limit = lim.get(r).map(Quantity::milli_value).unwrap_or(0);
    if limit == 0 {
        return Some(format!(
            "{r} max limit to request ratio per {t} is {at}, but no limit is specified or limit is 0"
        ));
    }
    let observed = limit as f64 / request as f64;
    (observed * 1000.0 > at.milli_value() as f64).then(|| {
        format!(
            "{r} max limit to request ratio per {t} is {at}, but provided ratio is {observed:.6}"
        )
    })
}

/// Every constraint of `item` (of type `t`) against one set of requests and limits.
fn enforce(t: &str, item: &Value, req: &ResourceList, lim: &ResourceList, errs: &mut Vec<String>) {
    for (k, v) in parse_list(item.get("min")) {
        errs.extend(minimum(t, &k, &v, req, lim));
    }
    for (k, v) in parse_list(item.get("max")) {
        errs.extend(maximum(t, &k, &v, req, lim));
    }
    for (k, v) in parse_list(item.get("maxLimitRequestRatio")) {
        errs.extend(ratio(t, &k, &v, req, lim));
    }
}

/// Upstream's utilerrors.NewAggregate message: one error as it is, several in brackets.
fn aggregate(errs: Vec<String>) -> Option<String> {
    match errs.len() {
        0 => None,
        1 => errs.into_iter().next(),
        _ => Some(format!("[{}]", errs.join(", "))),
    }
}

/// Upstream's PodValidateLimitFunc for one LimitRange: why the pod does not fit, if it does not.
pub fn validate_pod(limit_range: &Value, pod: &Value) -> Option<String> {
    let mut errs = Vec::new();
    for item in items(limit_range) {
        match item.get("type").and_then(Value::as_str) {
            Some("Container") => {
                for field in ["containers", "initContainers"] {
                    let list = pod
                        .pointer(&format!("/spec/{field}"))
                        .and_then(Value::as_array);
                    for c in list.into_iter().flatten() {
                        let req = parse_list(c.pointer("/resources/requests"));
                        let lim = parse_list(c.pointer("/resources/limits"));
                        enforce("Container", item, &req, &lim, &mut errs);
                    }
                }
            }
            Some("Pod") => {
                let (req, lim) = (pod_requests(pod, false), pod_limits(pod, false));
                enforce("Pod", item, &req, &lim, &mut errs);
            }
            _ => {}
        }
    }
    aggregate(errs)
}

/// Upstream's PersistentVolumeClaimValidateLimitFunc: min and max of the storage request.
pub fn validate_claim(limit_range: &Value, claim: &Value) -> Option<String> {
    let mut errs = Vec::new();
    let req = parse_list(claim.pointer("/spec/resources/requests"));
    let t = "PersistentVolumeClaim";
    for item in items(limit_range) {
        if item.get("type").and_then(Value::as_str) != Some(t) {
            continue;
        }
        for (k, v) in parse_list(item.get("min")) {
            errs.extend(minimum(t, &k, &v, &req, &ResourceList::new()));
        }
        for (k, v) in parse_list(item.get("max")) {
            errs.extend(match req.get(&k) {
                None => Some(format!(
                    "maximum {k} usage per {t} is {v}.  No request is specified"
                )),
                Some(r) if r.milli_value() > v.milli_value() => Some(format!(
                    "maximum {k} usage per {t} is {v}, but request is {r}"
                )),
                Some(_) => None,
            });
        }
    }
    aggregate(errs)
}

#[cfg(test)]
mod tests;
