//! Subresources with their own logic: pods/binding (and `bindings`) and the scale view of
//! Deployments and ReplicaSets (pods/eviction is in `eviction`).

use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{json, Value};
use tinykube_proto::labels::Selector;
use tinykube_proto::registry::{self, ResourceInfo};

use super::decode::decode_as;
use super::persist::{manager_of, update_rules, Track};
use super::{json_response, success, Ctx};
use crate::error::{ApiError, ApiResult, Qualified};
use crate::object::{self, meta_mut};
use crate::request::{body_format, BodyFormat};
use crate::storage::Change;

fn pods() -> &'static ResourceInfo {
    registry::lookup("", "v1", "pods").expect("pods are served")
}

/// Assign a pod to a node, as the scheduler does through pods/binding.
pub async fn binding(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    let binding_info = registry::lookup("", "v1", "bindings").expect("bindings are served");
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
            vec![crate::registry::field::FieldError::required(
                "target.name",
                "",
            )],
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
                       "lastTransitionTime": object::timestamp(Utc::now())}),
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

fn scale_view(info: &ResourceInfo, obj: &Value) -> Value {
    let selector = obj
        .pointer("/spec/selector")
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .and_then(|s| Selector::from_label_selector(&s).ok())
        .map(|s| s.to_string())
        .unwrap_or_default();
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
    let _ = info;
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(1))},
        "status": {
            "replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
            "selector": selector,
        },
    })
}

pub fn get_scale(ctx: Ctx) -> ApiResult<Response> {
    let info = ctx.target.info;
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

/// PUT or PATCH of the scale subresource: only `spec.replicas` reaches the object.
pub async fn update_scale(ctx: Ctx, body: &[u8], is_patch: bool) -> ApiResult<Response> {
    let info = ctx.target.info;
    let name = ctx.target.name.clone().unwrap_or_default();
    let ns = ctx.target.namespace.clone();
    let format = body_format(&ctx.headers)?;
    let manager = manager_of(&ctx);
    let doc: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::BadRequest(format!(
            "error decoding body: {}",
            crate::request::json_error(&e)
        ))
    })?;
    let outcome = ctx
        .state
        .objects
        .update(info, ns.as_deref(), &name, |current| {
            let view = scale_view(info, &current);
            let scale = if is_patch {
                match format {
                    BodyFormat::JsonPatch => tinykube_proto::patch::json_patch(&view, &doc)
                        .map_err(|e| ApiError::BadRequest(e.to_string()))?,
                    BodyFormat::MergePatch | BodyFormat::StrategicMergePatch => {
                        tinykube_proto::patch::merge_patch(&view, &doc)
                    }
                    _ => {
                        return Err(ApiError::UnsupportedMediaType(
                            "application/merge-patch+json".into(),
                        ))
                    }
                }
            } else {
                doc.clone()
            };
            if let Some(rv) = scale
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
            {
                if Some(rv) != object::resource_version(&current) {
                    return Err(ApiError::conflict(info, &name));
                }
            }
            let replicas = scale
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if replicas < 0 {
                return Err(ApiError::invalid(
                    info,
                    &name,
                    vec![crate::registry::field::FieldError::invalid(
                        "spec.replicas",
                        replicas,
                        "must be greater than or equal to 0",
                    )],
                ));
            }
            let mut next = current.clone();
            if let Some(spec) = next.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("replicas".into(), replicas.into());
            }
            update_rules(
                info,
                None,
                &current,
                next,
                Track::Update(&manager, Some("scale")),
            )
        })
        .await?;
    Ok(json_response(
        StatusCode::OK,
        &scale_view(info, &outcome.into_object()),
        ctx.pretty,
    ))
}
