//! Server-side apply: `PATCH` with `application/apply-patch+yaml` (what `kubectl apply
//! --server-side`, kube-rs' `Patch::Apply` and client-go's `Apply` send). The applied
//! configuration is merged into the live object by `tinykube_proto::managed::apply`, which keeps
//! the applier's `Apply` entry in managedFields, removes what the applier applied before and no
//! longer does, and refuses (409, reason FieldManagerConflict per field) to change fields other
//! managers own unless `force=true`. An object that does not exist yet is created from the
//! configuration, as upstream. The result then goes through the same update (or create) rules
//! as any other write.

use axum::response::Response;
use serde_json::Value;
use tinykube_proto::managed::{self, Conflict};

use super::decode::{admit_body, name_as_on_url, place_in_namespace, FieldValidation};
use super::options::{self, Verb};
use super::persist::{change_stored, create_object, manager_of, respond, update_rules, Track};
use super::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::fieldmanager::{self, Manager};
use crate::request::{decode_body, truthy, BodyFormat};
use crate::storage::Change;

/// How often an apply looks again when the object appears or goes under it.
const ATTEMPTS: usize = 5;

/// Upstream's 409 for conflicting fields.
fn conflict_error(conflicts: &[Conflict]) -> ApiError {
    ApiError::ApplyConflict {
        message: managed::conflict_message(conflicts),
        causes: conflicts
            .iter()
            .map(|c| {
                (
                    format!("conflict with {}", c.describe_manager()),
                    c.path.clone(),
                )
            })
            .collect(),
    }
}

/// The applied configuration: YAML or JSON, checked against the kind's schema like any body,
/// named as the URL names it and placed in the request's namespace.
fn decode_config(ctx: &Ctx, body: &[u8], name: &str) -> ApiResult<(Value, Vec<String>)> {
    let info = &ctx.target.info;
    let raw = decode_body(body, BodyFormat::Yaml, info.kind)?;
    let validation = FieldValidation::parse(ctx.query.field_validation.as_deref())?;
    let (mut config, warnings) = admit_body(info, raw, validation)?;
    name_as_on_url(&mut config, name)?;
    place_in_namespace(ctx, &mut config)?;
    Ok((config, warnings))
}

pub async fn apply(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    let info = &ctx.target.info;
    let name = ctx.target.name.clone().unwrap_or_default();
    options::check(&ctx, Verb::Patch { apply: true })?;
    let manager = manager_of(&ctx);
    let force = truthy(&ctx.query.force);
    let (config, warnings) = decode_config(&ctx, body, &name)?;
    let sub = ctx.target.subresource.clone();
    let writer = manager.writer(sub.as_deref());
    let types = fieldmanager::type_info(info);
    let mut run = |current: Value| -> ApiResult<Change> {
        let managed_fields = fieldmanager::entries(&current);
        let merged = managed::apply(
            Some(&current),
            &config,
            &managed_fields,
            &writer,
            force,
            types,
        )
        .map_err(|c| conflict_error(&c))?;
        let now = ctx.state.clock.utc();
        update_rules(info, sub.as_deref(), &current, merged, Track::Kept, now)
    };
    // A missing object is created; one created by someone else meanwhile is updated.
    for _ in 0..ATTEMPTS {
        let mut admitted = Vec::new();
        match change_stored(&ctx, &mut run, &mut admitted).await {
            Err(ApiError::NotFound { .. }) if sub.is_none() => {
                match create(&ctx, &config, &manager, force, warnings.clone()).await {
                    Err(ApiError::AlreadyExists { .. }) => continue,
                    done => return done,
                }
            }
            outcome => {
                let mut warnings = warnings.clone();
                warnings.extend(admitted);
                return respond(&ctx, outcome?, &warnings);
            }
        }
    }
    Err(ApiError::conflict(info, &name))
}

/// The first apply of an object creates it; the applier owns what it applied.
async fn create(
    ctx: &Ctx,
    config: &Value,
    manager: &Manager,
    force: bool,
    warnings: Vec<String>,
) -> ApiResult<Response> {
    let info = &ctx.target.info;
    let obj = managed::apply(
        None,
        config,
        &[],
        &manager.writer(None),
        force,
        fieldmanager::type_info(info),
    )
    .map_err(|c| conflict_error(&c))?;
    create_object(ctx, obj, warnings, Track::Kept).await
}
