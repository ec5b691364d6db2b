//! Subresources with their own logic: pods/binding (and `bindings`) and the scale view of
//! Deployments and ReplicaSets (pods/eviction is in `eviction`).

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};
use tinykube_proto::labels::Selector;
use tinykube_proto::registry::{self, ResourceInfo};

use super::decode::{check_name, decode_as, object_format, OBJECT_TYPES};
use super::options::{self, Verb};
use super::persist::{attributes, manager_of, update_rules, Track};
use super::{json_response, success, with_warnings, Ctx};
use crate::error::{ApiError, ApiResult, Qualified};
use crate::object::{self, meta_mut};
use crate::policy::{self, Operation};
use crate::registry::field::FieldError;
use crate::request::{body_format, decode_object_body, go_json_kind, BodyFormat};
use crate::storage::Change;

fn pods() -> &'static ResourceInfo {
    registry::builtin("", "v1", "pods").expect("pods are served")
}

/// Assign a pod to a node, as the scheduler does through pods/binding.
pub async fn binding(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    options::check(&ctx, Verb::Create)?;
    let binding_info = registry::builtin("", "v1", "bindings").expect("bindings are served");
    let binding = decode_as(&ctx, body, binding_info, "Binding")?;
    let pod_name = ctx
        .target
        .name
        .clone()
        .unwrap_or_else(|| object::name(&binding).to_string());
    if pod_name.is_empty() {
        return Err(ApiError::BadRequest("binding has no pod name".into()));
    }
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if node.is_empty() {
        return Err(ApiError::invalid(
            binding_info,
            &pod_name,
            vec![FieldError::required("target.name", "")],
        ));
    }
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned();
    let info = pods();
    let conflict = |reason: String| ApiError::Conflict {
        resource: Qualified::of(info),
        name: pod_name.clone(),
        reason,
    };
    ctx.state
        .objects
        .update(
            info,
            ctx.target.namespace.as_deref(),
            &pod_name,
            |current| {
                if object::is_deleting(&current) {
                    return Err(conflict(format!(
                        "pod {pod_name} is being deleted, cannot be assigned to a host"
                    )));
                }
                if let Some(existing) = current
                    .pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                {
                    return Err(conflict(format!(
                        "pod {pod_name} is already assigned to node {existing:?}"
                    )));
                }
                let mut pod = current.clone();
                if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.insert("nodeName".into(), node.clone().into());
                }
                // A bound pod's nomination is spent (upstream's ClearingNominatedNodeNameAfterBinding,
                // on by default since 1.35).
                if let Some(status) = pod.get_mut("status").and_then(Value::as_object_mut) {
                    status.remove("nominatedNodeName");
                }
                if let Some(a) = &annotations {
                    let meta = meta_mut(&mut pod);
                    let target = meta.entry("annotations").or_insert_with(|| json!({}));
                    if let Some(t) = target.as_object_mut() {
                        for (k, v) in a {
                            t.insert(k.clone(), v.clone());
                        }
                    }
                }
                set_condition(
                    &mut pod,
                    json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                       "lastTransitionTime": object::timestamp(ctx.state.clock.utc())}),
                );
                Ok(Change::Write(pod))
            },
        )
        .await?;
    Ok(json_response(
        StatusCode::CREATED,
        &success(StatusCode::CREATED),
        ctx.pretty,
    ))
}

fn set_condition(pod: &mut Value, condition: Value) {
    let Some(map) = pod.as_object_mut() else {
        return;
    };
    let status = map.entry("status").or_insert_with(|| json!({}));
    let Some(status) = status.as_object_mut() else {
        return;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if let Some(list) = conditions.as_array_mut() {
        let kind = condition.get("type").cloned();
        match list.iter_mut().find(|c| c.get("type") == kind.as_ref()) {
            Some(c) => *c = condition,
            None => list.push(condition),
        }
    }
}

/// Where a kind keeps what its Scale shows: JSON pointers of the desired and current replica
/// counts, and of the selector (a LabelSelector object for the built-in workloads, the
/// serialized selector string of a custom resource's `labelSelectorPath`).
struct ScaleShape {
    spec_replicas: String,
    status_replicas: String,
    selector: Option<String>,
    selector_form: SelectorForm,
}

/// How a kind keeps its selector.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SelectorForm {
    /// A metav1 LabelSelector (apps/v1 workloads).
    LabelSelector,
    /// A map of labels to equal (a ReplicationController's `spec.selector`).
    Map,
    /// Already the serialized string (a custom resource's `labelSelectorPath`).
    String,
}

fn scale_shape(info: &ResourceInfo) -> ScaleShape {
    /// `.spec.replicas` → `/spec/replicas`.
    fn pointer(path: &str) -> String {
        path.replace('.', "/")
    }
    match info.custom.as_ref().and_then(|c| c.scale()) {
        Some(paths) => ScaleShape {
            spec_replicas: pointer(&paths.spec_replicas),
            status_replicas: pointer(&paths.status_replicas),
            selector: paths.label_selector.as_deref().map(pointer),
            selector_form: SelectorForm::String,
        },
        None => ScaleShape {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            selector: Some("/spec/selector".into()),
            selector_form: if info.group.is_empty() && info.kind == "ReplicationController" {
                SelectorForm::Map
            } else {
                SelectorForm::LabelSelector
            },
        },
    }
}

fn scale_view(info: &ResourceInfo, obj: &Value) -> Value {
    let shape = scale_shape(info);
    let selector_value = shape.selector.as_deref().and_then(|p| obj.pointer(p));
    let selector = match shape.selector_form {
        SelectorForm::String => selector_value
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        SelectorForm::LabelSelector => selector_value
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .and_then(|s| Selector::from_label_selector(&s).ok())
            .map(|s| s.to_string())
            .unwrap_or_default(),
        SelectorForm::Map => selector_value
            .and_then(|m| serde_json::from_value(json!({ "matchLabels": m })).ok())
            .and_then(|s| Selector::from_label_selector(&s).ok())
            .map(|s| s.to_string())
            .unwrap_or_default(),
    };
    let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut scale_meta = serde_json::Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(k) {
            scale_meta.insert(k.into(), v.clone());
        }
    }
    let default_replicas = if info.custom.is_some() { 0 } else { 1 };
    let mut status = serde_json::Map::new();
    status.insert(
        "replicas".into(),
        obj.pointer(&shape.status_replicas)
            .cloned()
            .unwrap_or(json!(0)),
    );
    if !(info.custom.is_some() && selector.is_empty()) {
        status.insert("selector".into(), selector.into());
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": obj.pointer(&shape.spec_replicas).cloned().unwrap_or(json!(default_replicas))},
        "status": status,
    })
}

/// Set the desired replica count where the kind keeps it, creating the objects on the way.
fn set_replicas(info: &ResourceInfo, obj: &mut Value, replicas: i64) {
    let shape = scale_shape(info);
    let mut node = obj;
    let parts: Vec<&str> = shape
        .spec_replicas
        .split('/')
        .filter(|p| !p.is_empty())
        .collect();
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    for p in parents {
        if !node.get(*p).is_some_and(Value::is_object) {
            if let Some(m) = node.as_object_mut() {
                m.insert((*p).to_string(), json!({}));
            }
        }
        match node.get_mut(*p) {
            Some(next) => node = next,
            None => return,
        }
    }
    if let Some(m) = node.as_object_mut() {
        m.insert((*last).to_string(), replicas.into());
    }
}

pub fn get_scale(ctx: Ctx) -> ApiResult<Response> {
    let info = &ctx.target.info;
    let name = ctx.target.name.clone().unwrap_or_default();
    let obj = ctx
        .state
        .objects
        .get(info, ctx.target.namespace.as_deref(), &name)?;
    Ok(json_response(
        StatusCode::OK,
        &scale_view(info, &obj),
        ctx.pretty,
    ))
}

/// Go's decode error for a Scale's `spec.replicas` that is not an int32 (`json: cannot
/// unmarshal number 1.5 into Go struct field ScaleSpec.spec.replicas of type int32`).
fn replicas_of(scale: &Value) -> Result<i64, String> {
    let not_int32 = |what: String| {
        format!("json: cannot unmarshal {what} into Go struct field ScaleSpec.spec.replicas of type int32")
    };
    match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => n
            .as_i64()
            .filter(|r| i32::try_from(*r).is_ok())
            .ok_or_else(|| not_int32(format!("number {n}"))),
        Some(other) => Err(not_int32(go_json_kind(other).to_string())),
    }
}

/// A Scale body of PUT: an autoscaling/v1 Scale whose replicas decode, named as the URL.
fn decode_scale(ctx: &Ctx, body: &[u8], name: &str) -> ApiResult<Value> {
    let format = object_format(ctx, OBJECT_TYPES)?;
    let scale = decode_object_body(body, format, "Scale")?;
    let text = |k: &str| scale.get(k).and_then(Value::as_str).unwrap_or("");
    match text("apiVersion") {
        "" | "autoscaling/v1" => {}
        other => {
            return Err(ApiError::BadRequest(format!(
                "the API version in the data ({other}) does not match the expected API version (autoscaling/v1)"
            )))
        }
    }
    match text("kind") {
        "" | "Scale" => {}
        other => {
            return Err(ApiError::BadRequest(format!(
                "the kind in the data ({other}) does not match the expected kind (Scale)"
            )))
        }
    }
    let cannot = |detail: String| {
        ApiError::BadRequest(format!(
            "Scale in version \"v1\" cannot be handled as a Scale: {detail}"
        ))
    };
    replicas_of(&scale).map_err(cannot)?;
    tinykube_proto::typed::normalize("autoscaling", "Scale", &scale)
        .map_err(|e| cannot(e.to_string()))?;
    check_name(&scale, name)?;
    Ok(scale)
}

/// A patch of the Scale view applied, as upstream's patcher answers a patched object that does
/// not decode: 422 about field `patch`, with the patched object as the value.
fn patch_scale(view: &Value, doc: &Value, format: BodyFormat) -> ApiResult<Value> {
    let scale = match format {
        BodyFormat::JsonPatch => tinykube_proto::patch::json_patch(view, doc)
            .map_err(|e| ApiError::BadRequest(e.to_string()))?,
        BodyFormat::MergePatch | BodyFormat::StrategicMergePatch => {
            tinykube_proto::patch::merge_patch(view, doc)
        }
        _ => {
            return Err(ApiError::UnsupportedMediaType(
                "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json".into(),
            ))
        }
    };
    if let Err(detail) = replicas_of(&scale) {
        return Err(ApiError::Invalid {
            kind: String::new(),
            group: String::new(),
            name: String::new(),
            errors: vec![FieldError::invalid("patch", scale.to_string(), detail)],
        });
    }
    Ok(scale)
}

/// PUT or PATCH of the scale subresource: only `spec.replicas` reaches the object. Upstream's
/// ValidateScale refuses negative replicas as `Scale.autoscaling "NAME" is invalid`.
pub async fn update_scale(ctx: Ctx, body: &[u8], is_patch: bool) -> ApiResult<Response> {
    let info = &ctx.target.info;
    let name = ctx.target.name.clone().unwrap_or_default();
    let ns = ctx.target.namespace.clone();
    let verb = if is_patch {
        Verb::Patch { apply: false }
    } else {
        Verb::Update
    };
    options::check(&ctx, verb)?;
    let format = body_format(&ctx.headers)?;
    let manager = manager_of(&ctx);
    let doc: Value = if is_patch {
        serde_json::from_slice(body).map_err(|e| {
            ApiError::BadRequest(format!(
                "error decoding patch: {}",
                crate::request::json_error(&e)
            ))
        })?
    } else {
        decode_scale(&ctx, body, &name)?
    };
    let mut admitted = Vec::new();
    let outcome = ctx
        .state
        .objects
        .update(info, ns.as_deref(), &name, |current| {
            let scale = if is_patch {
                let patched = patch_scale(&scale_view(info, &current), &doc, format)?;
                check_name(&patched, &name)?;
                patched
            } else {
                doc.clone()
            };
            if let Some(rv) = scale
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .filter(|rv| !rv.is_empty())
            {
                if Some(rv) != object::resource_version(&current) {
                    return Err(ApiError::conflict(info, &name));
                }
            }
            let replicas = replicas_of(&scale).unwrap_or(0);
            if replicas < 0 {
                return Err(ApiError::Invalid {
                    kind: "Scale".into(),
                    group: "autoscaling".into(),
                    name: name.clone(),
                    errors: vec![FieldError::invalid(
                        "spec.replicas",
                        replicas,
                        "must be greater than or equal to 0",
                    )],
                });
            }
            let mut next = current.clone();
            set_replicas(info, &mut next, replicas);
            let changed = update_rules(
                info,
                None,
                &current,
                next,
                Track::Update(&manager, Some("scale")),
                ctx.state.clock.utc(),
            )?;
            let new = match &changed {
                Change::Write(new) => new,
                _ => &current,
            };
            let (new_scale, old_scale) = (scale_view(info, new), scale_view(info, &current));
            let attrs = attributes(
                &ctx,
                "scale",
                Operation::Update,
                Some(&new_scale),
                Some(&old_scale),
            );
            admitted = policy::admit(&ctx.state, &attrs)?;
            Ok(changed)
        })
        .await?;
    Ok(with_warnings(
        json_response(
            StatusCode::OK,
            &scale_view(info, &outcome.into_object()),
            ctx.pretty,
        ),
        &admitted,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_decode_as_an_int32_or_say_why_as_go() {
        let field = "into Go struct field ScaleSpec.spec.replicas of type int32";
        let cases = [
            (json!({"spec": {"replicas": 3}}), Ok(3)),
            (json!({"spec": {}}), Ok(0)),
            (json!({"spec": {"replicas": -1}}), Ok(-1)),
            (
                json!({"spec": {"replicas": 1.5}}),
                Err(format!("json: cannot unmarshal number 1.5 {field}")),
            ),
            (
                json!({"spec": {"replicas": 3000000000_i64}}),
                Err(format!("json: cannot unmarshal number 3000000000 {field}")),
            ),
            (
                json!({"spec": {"replicas": "3"}}),
                Err(format!("json: cannot unmarshal string {field}")),
            ),
        ];
        for (scale, want) in cases {
            assert_eq!(replicas_of(&scale), want, "{scale}");
        }
    }

    #[test]
    fn a_patched_scale_that_does_not_decode_is_a_patch_error() {
        let view = json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                          "metadata": {"name": "web"}, "spec": {"replicas": 1}});
        let doc = json!({"spec": {"replicas": 1.5}});
        let err = patch_scale(&view, &doc, BodyFormat::MergePatch).unwrap_err();
        assert_eq!(err.code(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            err.to_string(),
            " \"\" is invalid: patch: Invalid value: \"{\\\"kind\\\":\\\"Scale\\\",\\\"apiVersion\\\":\\\"autoscaling/v1\\\",\\\"metadata\\\":{\\\"name\\\":\\\"web\\\"},\\\"spec\\\":{\\\"replicas\\\":1.5}}\": json: cannot unmarshal number 1.5 into Go struct field ScaleSpec.spec.replicas of type int32"
        );
        let ok = patch_scale(
            &view,
            &json!({"spec": {"replicas": 4}}),
            BodyFormat::MergePatch,
        );
        assert_eq!(ok.unwrap()["spec"]["replicas"], 4);
    }
}
