//! Admission that needs other objects: the namespace must exist and not be terminating, a pod's
//! requests and limits are defaulted and bounded by the namespace's LimitRanges
//! (`limitranger`), its priority comes from its PriorityClass and its overhead and scheduling
//! constraints from its RuntimeClass, a new Node gets the not-ready taint
//! (TaintNodesByCondition), a Namespace its `kubernetes.io/metadata.name` label, a claim its
//! default StorageClass and claims and volumes their protection finalizers (`storage`), and a
//! namespaced create, or an update that raises a Service's or a claim's usage, is charged to the
//! namespace's ResourceQuotas (`resourcequota`).

mod limitranger;
mod resourcequota;
pub mod storage;

use serde_json::{json, Value};
use tinykube_proto::registry::{self, ResourceInfo};

use crate::error::{ApiError, ApiResult, Qualified};
use crate::object::{self, meta_mut};
use crate::state::AppState;

pub use resourcequota::{release, Charged, UpdateQuota};

fn forbidden(info: &ResourceInfo, name: &str, why: String) -> ApiError {
    ApiError::ForbiddenNamed {
        resource: Qualified::of(info),
        name: name.to_string(),
        message: format!("{} {name:?} is forbidden: {why}", info.qualified_plural()),
    }
}

/// The namespace of a namespaced create must exist and not be terminating.
pub fn check_namespace(state: &AppState, info: &ResourceInfo, obj: &Value) -> ApiResult<()> {
    if !info.namespaced {
        return Ok(());
    }
    let ns_info = registry::builtin("", "v1", "namespaces").expect("namespaces are served");
    let ns = object::namespace(obj).unwrap_or("default");
    let namespace = state
        .objects
        .try_get(ns_info, None, ns)?
        .ok_or_else(|| ApiError::not_found(ns_info, ns))?;
    let terminating = object::is_deleting(&namespace)
        || namespace.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating");
    // Events may still be written while a namespace terminates, as upstream allows.
    if terminating && info.kind != "Event" {
        return Err(forbidden(
            info,
            object::name(obj),
            format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            ),
        ));
    }
    Ok(())
}

/// Mutations that depend on other objects, applied before validation.
pub fn on_create(state: &AppState, info: &ResourceInfo, obj: &mut Value) -> ApiResult<()> {
    match (info.group, info.kind) {
        ("", "Pod") => {
            default_limits(state, info, obj)?;
            crate::identity::admit_pod(state, info, obj)?;
            resolve_priority(state, info, obj)?;
            resolve_runtime_class(state, info, obj)
        }
        ("", "Node") => {
            taint_not_ready(obj);
            Ok(())
        }
        ("", "PersistentVolumeClaim") => {
            storage::protect(obj, storage::PVC_PROTECTION);
            storage::default_claim_class(state, obj)
        }
        ("", "PersistentVolume") => {
            storage::protect(obj, storage::PV_PROTECTION);
            Ok(())
        }
        ("", "Namespace") => {
            let name = object::name(obj).to_string();
            let meta = meta_mut(obj);
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert("kubernetes.io/metadata.name".into(), name.into());
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn limit_ranges(state: &AppState, obj: &Value) -> ApiResult<Vec<Value>> {
    let lr_info = registry::builtin("", "v1", "limitranges").expect("limitranges are served");
    let ns = object::namespace(obj).unwrap_or("default");
    Ok(state.objects.list(lr_info, Some(ns), None, None)?.items)
}

/// LimitRanger's mutation: the namespace's Container defaults fill what a new pod's
/// containers leave out. The pod's QoS class follows its new resources.
fn default_limits(state: &AppState, info: &ResourceInfo, pod: &mut Value) -> ApiResult<()> {
    let mut changed = false;
    for lr in limit_ranges(state, pod)? {
        changed |= limitranger::default_pod(&lr, pod);
    }
    if changed {
        crate::registry::strategy(info).prepare_for_create(pod);
    }
    Ok(())
}

/// The validating admission of a create, after the object's own validation and the
/// admission policies, in upstream's plugin order: LimitRanger's bounds on pods and claims,
/// then ResourceQuota, which charges the object to the namespace's quotas unless `dry_run`
/// (give the charge back with [`release`] if the object is not stored).
pub async fn validate_create(
    state: &AppState,
    info: &ResourceInfo,
    obj: &Value,
    dry_run: bool,
) -> ApiResult<Charged> {
    let check: Option<fn(&Value, &Value) -> Option<String>> = match (info.group, info.plural) {
        ("", "pods") => Some(limitranger::validate_pod),
        ("", "persistentvolumeclaims") => Some(limitranger::validate_claim),
        _ => None,
    };
    if let Some(check) = check {
        for lr in limit_ranges(state, obj)? {
            if let Some(why) = check(&lr, obj) {
                return Err(forbidden(info, object::name(obj), why));
            }
        }
    }
    resourcequota::admit(state, info, obj, dry_run).await
}

/// Priority admission: `spec.priority` (and `preemptionPolicy`) from the named PriorityClass,
/// or from the global default class, or 0.
fn resolve_priority(state: &AppState, info: &ResourceInfo, pod: &mut Value) -> ApiResult<()> {
    let pc_info = registry::builtin("scheduling.k8s.io", "v1", "priorityclasses").expect("served");
    let class_name = pod
        .pointer("/spec/priorityClassName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let class = match &class_name {
        Some(name) => match state.objects.try_get(pc_info, None, name)? {
            Some(c) => Some(c),
            None => {
                return Err(forbidden(
                    info,
                    object::name(pod),
                    format!("no PriorityClass with name {name} was found"),
                ))
            }
        },
        None => state
            .objects
            .list(pc_info, None, None, None)?
            .items
            .into_iter()
            .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
            // Should a race leave two defaults, the lower value wins, as upstream.
            .min_by_key(|c| c.get("value").and_then(Value::as_i64).unwrap_or(0)),
    };
    let value = class
        .as_ref()
        .and_then(|c| c.get("value").and_then(Value::as_i64))
        .unwrap_or(0);
    if let Some(given) = pod.pointer("/spec/priority").and_then(Value::as_i64) {
        if given != value {
            return Err(forbidden(
                info,
                object::name(pod),
                format!("the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"),
            ));
        }
    }
    // As upstream, PreemptLowerPriority when no class applies (or the class names none).
    let policy = class
        .as_ref()
        .and_then(|c| c.get("preemptionPolicy").and_then(Value::as_str))
        .unwrap_or("PreemptLowerPriority")
        .to_string();
    if let Some(given) = pod
        .pointer("/spec/preemptionPolicy")
        .and_then(Value::as_str)
    {
        if given != policy {
            return Err(forbidden(
                info,
                object::name(pod),
                format!("the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"),
            ));
        }
    }
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("priority".into(), value.into());
        // The global default class is named in the pod, as upstream.
        if let Some(name) = class.as_ref().and_then(|c| c.pointer("/metadata/name")) {
            spec.insert("priorityClassName".into(), name.clone());
        }
        spec.insert("preemptionPolicy".into(), policy.into());
    }
    Ok(())
}

/// RuntimeClass admission: a pod naming a RuntimeClass gets the class's `overhead.podFixed` as
/// its `spec.overhead` (which the scheduler and the kubelet count with its requests) and the
/// class's node selector and tolerations; an unknown class, or an overhead the class does not
/// define, is refused with upstream's messages.
fn resolve_runtime_class(state: &AppState, info: &ResourceInfo, pod: &mut Value) -> ApiResult<()> {
    let rc_info = registry::builtin("node.k8s.io", "v1", "runtimeclasses").expect("served");
    let refuse = |pod: &Value, why: String| forbidden(info, object::name(pod), why);
    let class = match pod
        .pointer("/spec/runtimeClassName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        Some(name) => Some(state.objects.try_get(rc_info, None, name)?.ok_or_else(|| {
            refuse(
                pod,
                format!("pod rejected: RuntimeClass {name:?} not found"),
            )
        })?),
        None => None,
    };
    let defined = class
        .as_ref()
        .and_then(|c| c.pointer("/overhead/podFixed"))
        .filter(|o| !o.is_null())
        .cloned();
    let given = pod.pointer("/spec/overhead").filter(|o| !o.is_null());
    match (&defined, given) {
        (Some(d), Some(g)) if !same_quantities(d, g) => {
            return Err(refuse(
                pod,
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead".into(),
            ))
        }
        (None, Some(_)) => return Err(refuse(
            pod,
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
                .into(),
        )),
        _ => {}
    }
    let Some(class) = class else {
        return Ok(());
    };
    let selector = class
        .pointer("/scheduling/nodeSelector")
        .and_then(Value::as_object);
    let mut node_selector = pod
        .pointer("/spec/nodeSelector")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (key, want) in selector.into_iter().flatten() {
        if let Some(have) = node_selector.get(key).filter(|have| *have != want) {
            let (want, have) = (want.as_str().unwrap_or(""), have.as_str().unwrap_or(""));
            return Err(refuse(
                pod,
                format!("conflict: runtimeClass.scheduling.nodeSelector[{key}] = {want}; pod.spec.nodeSelector[{key}] = {have}"),
            ));
        }
        node_selector.insert(key.clone(), want.clone());
    }
    let mut tolerations = pod
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for t in class
        .pointer("/scheduling/tolerations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !tolerations.contains(t) {
            tolerations.push(t.clone());
        }
    }
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(d) = defined {
            spec.insert("overhead".into(), d);
        }
        if !node_selector.is_empty() {
            spec.insert("nodeSelector".into(), Value::Object(node_selector));
        }
        if !tolerations.is_empty() {
            spec.insert("tolerations".into(), Value::Array(tolerations));
        }
    }
    Ok(())
}

/// Two resource lists with the same resources and equal quantities (`1000m` is `1`).
fn same_quantities(a: &Value, b: &Value) -> bool {
    use tinykube_proto::quantity::Quantity;
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    let parse = |v: &Value| v.as_str().and_then(|s| Quantity::parse(s).ok());
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            b.get(k)
                .is_some_and(|w| parse(v).is_some() && parse(v) == parse(w))
        })
}

/// TaintNodesByCondition: a new node is not ready until its kubelet says so.
fn taint_not_ready(node: &mut Value) {
    let Some(map) = node.as_object_mut() else {
        return;
    };
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    if let Some(list) = taints.as_array_mut() {
        let present = list
            .iter()
            .any(|t| t.get("key").and_then(Value::as_str) == Some("node.kubernetes.io/not-ready"));
        if !present {
            list.push(json!({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}));
        }
    }
}
