//! create, update (PUT) and patch (JSON, merge and strategic merge patches; server-side apply
//! is `apply`): decode the body or patch the stored object, then store it through `persist`.

use axum::response::Response;
use serde_json::Value;
use tinykube_proto::patch;
use tinykube_proto::registry::ResourceInfo;

use super::decode::{
    admit_body, check_name, object_format, place_in_namespace, FieldValidation, OBJECT_TYPES,
};
use super::options::{self, Verb};
use super::persist::{change_stored, create_object, manager_of, respond, update_rules, Track};
use super::Ctx;
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::fieldmanager::Manager;
use crate::registry::field::FieldError;
use crate::request::{body_format, decode_object_body, BodyFormat};
use crate::storage::Change;

/// A create or update body (JSON, YAML or protobuf), admitted and placed in the request's
/// namespace.
fn decode_object(ctx: &Ctx, body: &[u8]) -> ApiResult<(Value, Vec<String>)> {
    let info = &ctx.target.info;
    let format = object_format(ctx, OBJECT_TYPES)?;
    let raw = decode_object_body(body, format, info.kind)?;
    let validation = FieldValidation::parse(ctx.query.field_validation.as_deref())?;
    let (mut obj, warnings) = admit_body(info, raw, validation)?;
    place_in_namespace(ctx, &mut obj)?;
    Ok((obj, warnings))
}

/// How a PUT or PATCH of the main resource or `sub` is recorded.
fn track_of<'a>(manager: &'a Manager, sub: Option<&'a str>) -> Track<'a> {
    match sub {
        None | Some("status") => Track::Update(manager, sub),
        _ => Track::Kept,
    }
}

pub async fn create(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    options::check(&ctx, Verb::Create)?;
    let (obj, warnings) = decode_object(&ctx, body)?;
    let manager = manager_of(&ctx);
    create_object(&ctx, obj, warnings, Track::Update(&manager, None)).await
}

pub async fn update(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    let info = &ctx.target.info;
    let name = ctx.target.name.clone().unwrap_or_default();
    options::check(&ctx, Verb::Update)?;
    let (obj, warnings) = decode_object(&ctx, body)?;
    check_name(&obj, &name)?;
    let sub = ctx.target.subresource.clone();
    let manager = manager_of(&ctx);
    let track = track_of(&manager, sub.as_deref());
    let mut warnings = warnings;
    let outcome = change_stored(
        &ctx,
        |current| {
            let now = ctx.state.clock.utc();
            update_rules(info, sub.as_deref(), &current, obj.clone(), track, now)
        },
        &mut warnings,
    )
    .await?;
    respond(&ctx, outcome, &warnings)
}

fn patch_failed(
    info: &ResourceInfo,
    name: &str,
    patch: &[u8],
    e: impl std::fmt::Display,
) -> ApiError {
    ApiError::invalid(
        info,
        name,
        vec![FieldError::invalid(
            "patch",
            String::from_utf8_lossy(patch).to_string(),
            e.to_string(),
        )],
    )
}

pub async fn patch(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    let info = &ctx.target.info;
    let name = ctx.target.name.clone().unwrap_or_default();
    let format = body_format(&ctx.headers)?;
    if matches!(format, BodyFormat::Json | BodyFormat::Yaml) {
        return Err(ApiError::UnsupportedMediaType(
            "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml".into(),
        ));
    }
    if info.custom.is_some() && matches!(format, BodyFormat::StrategicMergePatch) {
        // Custom resources have no patch strategies to merge by.
        return Err(ApiError::UnsupportedMediaType(
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml".into(),
        ));
    }
    options::check(&ctx, Verb::Patch { apply: false })?;
    let patch_doc: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::BadRequest(format!(
            "error decoding patch: {}",
            crate::request::json_error(&e)
        ))
    })?;
    let validation = FieldValidation::parse(ctx.query.field_validation.as_deref())?;
    let sub = ctx.target.subresource.clone();
    let manager = manager_of(&ctx);
    let track = track_of(&manager, sub.as_deref());
    let mut warnings = Vec::new();
    let mut run = |current: Value| -> ApiResult<Change> {
        let view = convert::outgoing(info, current.clone());
        let patched = match format {
            BodyFormat::JsonPatch => patch::json_patch(&view, &patch_doc)
                .map_err(|e| patch_failed(info, &name, body, e))?,
            BodyFormat::MergePatch => patch::merge_patch(&view, &patch_doc),
            _ => patch::strategic_merge_patch(&view, &patch_doc, info.group, info.kind)
                .map_err(|e| patch_failed(info, &name, body, e))?,
        };
        let (mut obj, w) = admit_body(info, patched, validation)?;
        // A patch may not move the object: its namespace and name stay the request's.
        place_in_namespace(&ctx, &mut obj)?;
        check_name(&obj, &name)?;
        warnings = w;
        update_rules(
            info,
            sub.as_deref(),
            &current,
            obj,
            track,
            ctx.state.clock.utc(),
        )
    };
    let mut admitted = Vec::new();
    let outcome = change_stored(&ctx, &mut run, &mut admitted).await?;
    warnings.extend(admitted);
    respond(&ctx, outcome, &warnings)
}
