//! create, update (PUT) and patch: decode, check against the kind's schema, default, validate,
//! and store, with the metadata only the server manages.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;
use tinykube_proto::patch;
use tinykube_proto::registry::ResourceInfo;

use super::{json_response, with_warnings, Ctx};
use crate::admission;
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::fieldmanager::{self, Manager};
use crate::object::{self, meta_mut};
use crate::registry::{self, field::FieldError};
use crate::request::{body_format, decode_body, BodyFormat};
use crate::storage::{Change, Outcome};

/// How unknown fields are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    pub fn parse(v: Option<&str>) -> ApiResult<Self> {
        match v {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(ApiError::BadRequest(format!(
                "fieldValidation parameter unsupported: {other:?}"
            ))),
        }
    }
}

/// Group and kind of the schema a body is checked against.
fn schema_of(info: &ResourceInfo) -> (&'static str, &'static str) {
    (info.group, info.kind)
}

/// Quantity fields that YAML often writes as numbers (`cpu: 1`): upstream accepts them, the
/// typed decoder wants strings.
const QUANTITY_MAPS: &[&str] = &["limits", "requests", "capacity", "allocatable", "overhead"];

fn stringify_quantities(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                if QUANTITY_MAPS.contains(&k.as_str()) {
                    if let Value::Object(q) = child {
                        for val in q.values_mut() {
                            if let Value::Number(n) = val {
                                *val = Value::String(n.to_string());
                            }
                        }
                    }
                } else if k == "sizeLimit" {
                    if let Value::Number(n) = child {
                        *child = Value::String(n.to_string());
                    }
                }
                stringify_quantities(child);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(stringify_quantities),
        _ => {}
    }
}

/// Check a body's kind and apiVersion (defaulting them from the endpoint), decode it through
/// its type, and apply `fieldValidation` to unknown fields. Returns the object in stored form
/// and the warnings for the client.
pub fn admit_body(
    info: &ResourceInfo,
    mut raw: Value,
    validation: FieldValidation,
) -> ApiResult<(Value, Vec<String>)> {
    let api_version = info.api_version();
    {
        let map = raw
            .as_object_mut()
            .ok_or_else(|| ApiError::BadRequest("body is not an object".into()))?;
        match map.get("apiVersion").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("apiVersion".into(), api_version.clone().into());
            }
            Some(v) if v == api_version => {}
            Some(v) => {
                return Err(ApiError::BadRequest(format!(
                    "the API version in the data ({v}) does not match the expected API version ({api_version})"
                )))
            }
        }
        match map.get("kind").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("kind".into(), info.kind.into());
            }
            Some(k) if k == info.kind => {}
            Some(k) => {
                return Err(ApiError::BadRequest(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    info.kind
                )))
            }
        }
    }
    stringify_quantities(&mut raw);
    let (group, kind) = schema_of(info);
    let cannot = |detail: String| {
        ApiError::BadRequest(format!(
            "{kind} in version {:?} cannot be handled as a {kind}: {detail}",
            info.version
        ))
    };
    let normalized =
        tinykube_proto::typed::normalize(group, kind, &raw).map_err(|e| cannot(e.to_string()))?;
    let unknown = tinykube_proto::typed::unknown_fields(&raw, &normalized);
    let mut warnings = Vec::new();
    if !unknown.is_empty() {
        let described: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field {f:?}"))
            .collect();
        match validation {
            FieldValidation::Strict => {
                return Err(cannot(format!(
                    "strict decoding error: {}",
                    described.join(", ")
                )))
            }
            FieldValidation::Warn => warnings = described,
            FieldValidation::Ignore => {}
        }
    }
    Ok((convert::incoming(info, normalized), warnings))
}

fn decode_object(ctx: &Ctx, body: &[u8]) -> ApiResult<(Value, Vec<String>)> {
    let info = ctx.target.info;
    let format = body_format(&ctx.headers)?;
    if !matches!(
        format,
        BodyFormat::Json | BodyFormat::Yaml | BodyFormat::Protobuf
    ) {
        return Err(ApiError::UnsupportedMediaType(
            "application/json, application/yaml, application/vnd.kubernetes.protobuf".into(),
        ));
    }
    let raw = decode_body(body, format, info.kind)?;
    let validation = FieldValidation::parse(ctx.query.field_validation.as_deref())?;
    let (mut obj, warnings) = admit_body(info, raw, validation)?;
    place_in_namespace(ctx, &mut obj)?;
    Ok((obj, warnings))
}

/// The object's namespace must be the request's (or unset, and then it is set).
pub(super) fn place_in_namespace(ctx: &Ctx, obj: &mut Value) -> ApiResult<()> {
    let meta = meta_mut(obj);
    if ctx.target.info.namespaced {
        let ns = ctx
            .target
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        match meta.get("namespace").and_then(Value::as_str) {
            Some(given) if !given.is_empty() && given != ns => {
                return Err(ApiError::BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request".into(),
                ))
            }
            _ => {
                meta.insert("namespace".into(), ns.into());
            }
        }
    } else {
        meta.remove("namespace");
    }
    Ok(())
}

/// Metadata only the server sets on create.
fn fill_system_metadata(info: &ResourceInfo, obj: &mut Value) {
    let meta = meta_mut(obj);
    for k in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "generation",
    ] {
        meta.remove(k);
    }
    meta.insert("uid".into(), uuid::Uuid::new_v4().to_string().into());
    if info.has_generation {
        meta.insert("generation".into(), 1.into());
    }
    meta.insert(
        "creationTimestamp".into(),
        object::timestamp(chrono::Utc::now()).into(),
    );
}

/// How a write records its manager in `metadata.managedFields`.
#[derive(Clone, Copy)]
pub enum Track<'a> {
    /// An update-type write by this manager, recorded under this subresource (`None`: the main
    /// resource).
    Update(&'a Manager, Option<&'a str>),
    /// Nothing to record: server-side apply set the entries already, and `namespaces/finalize`
    /// writes the stored object with only its `spec.finalizers` changed.
    Kept,
}

/// How a PUT or PATCH of the main resource or `sub` is recorded.
fn track_of<'a>(manager: &'a Manager, sub: Option<&'a str>) -> Track<'a> {
    match sub {
        None | Some("status") => Track::Update(manager, sub),
        _ => Track::Kept,
    }
}

/// The request's manager, for an update-type write of the target (sub)resource.
pub(super) fn manager_of(ctx: &Ctx) -> Manager {
    Manager::of(
        ctx.target.info,
        ctx.query.field_manager.as_deref(),
        &ctx.headers,
    )
}

pub async fn create(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    let (obj, warnings) = decode_object(&ctx, body)?;
    let manager = manager_of(&ctx);
    create_object(&ctx, obj, warnings, Track::Update(&manager, None)).await
}

/// Create a decoded object: server metadata, defaults, admission, validation, then store (or,
/// for a dry run, only answer). A `generateName` gets a fresh suffix until the name is free.
pub(super) async fn create_object(
    ctx: &Ctx,
    mut obj: Value,
    mut warnings: Vec<String>,
    track: Track<'_>,
) -> ApiResult<Response> {
    let info = ctx.target.info;
    let dry_run = ctx.query.is_dry_run()?;
    let generate_name = object::meta_str(&obj, "generateName")
        .unwrap_or("")
        .to_string();
    if object::name(&obj).is_empty() && generate_name.is_empty() {
        return Err(ApiError::invalid(
            info,
            "",
            vec![FieldError::required(
                "metadata.name",
                "name or generateName is required",
            )],
        ));
    }
    let strategy = registry::strategy(info);
    fill_system_metadata(info, &mut obj);
    strategy.default(&mut obj);
    strategy.prepare_for_create(&mut obj);
    admission::check_namespace(&ctx.state, info, &obj)?;
    admission::on_create(&ctx.state, info, &mut obj)?;
    for attempt in 0..8 {
        let mut candidate = obj.clone();
        if object::name(&candidate).is_empty() || (attempt > 0 && !generate_name.is_empty()) {
            let name = format!("{generate_name}{}", object::random_suffix(5));
            meta_mut(&mut candidate).insert("name".into(), name.into());
        }
        let errors = strategy.validate_create(&candidate);
        if !errors.is_empty() {
            return Err(ApiError::invalid(info, object::name(&candidate), errors));
        }
        if attempt == 0 {
            warnings.extend(strategy.warnings(&candidate));
        }
        if let Track::Update(manager, sub) = track {
            fieldmanager::record_update(info, manager, sub, None, &mut candidate);
        }
        if dry_run {
            let out = convert::outgoing(info, candidate);
            return Ok(with_warnings(
                json_response(StatusCode::CREATED, &out, ctx.pretty),
                &warnings,
            ));
        }
        match ctx.state.objects.create(info, &candidate).await {
            Ok(stored) => {
                let out = convert::outgoing(info, stored);
                return Ok(with_warnings(
                    json_response(StatusCode::CREATED, &out, ctx.pretty),
                    &warnings,
                ));
            }
            Err(ApiError::AlreadyExists { .. })
                if !generate_name.is_empty() && object::name(&obj).is_empty() =>
            {
                continue
            }
            Err(e) => return Err(e),
        }
    }
    Err(ApiError::Unavailable(format!(
        "could not generate a unique name from {generate_name:?}"
    )))
}

/// The update rules shared by PUT and PATCH: preconditions, server-owned metadata, the kind's
/// strategy for the main resource or a subresource, generation, managedFields, and the no-op
/// check.
pub fn apply_update(
    info: &ResourceInfo,
    subresource: Option<&str>,
    old: &Value,
    mut new: Value,
    track: Track<'_>,
) -> ApiResult<Change> {
    let name = object::name(old).to_string();
    if let Some(rv) = object::resource_version(&new) {
        if Some(rv) != object::resource_version(old) {
            return Err(ApiError::conflict(info, &name));
        }
    }
    match (object::uid(&new), object::uid(old)) {
        (Some(a), Some(b)) if !a.is_empty() && a != b => {
            return Err(ApiError::Conflict {
                resource: crate::error::Qualified::of(info),
                name: name.clone(),
                reason: format!(
                    "Precondition failed: UID in precondition: {a}, UID in object meta: {b}"
                ),
            })
        }
        _ => {}
    }
    {
        let old_meta = old
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let meta = meta_mut(&mut new);
        meta.insert("name".into(), name.clone().into());
        for k in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "namespace",
        ] {
            match old_meta.get(k) {
                Some(v) => meta.insert(k.into(), v.clone()),
                None => meta.remove(k),
            };
        }
        meta.insert(
            "resourceVersion".into(),
            old_meta
                .get("resourceVersion")
                .cloned()
                .unwrap_or(Value::Null),
        );
    }
    let strategy = registry::strategy(info);
    let errors = match subresource {
        None => {
            if info.has_status() {
                registry::keep_status(&mut new, old);
            }
            strategy.default(&mut new);
            strategy.prepare_for_update(&mut new, old);
            strategy.validate_update(&new, old)
        }
        Some("status") => {
            registry::keep_spec_take_status(&mut new, old);
            strategy.prepare_for_status_update(&mut new, old);
            strategy.validate_status_update(&new, old)
        }
        Some("finalize") => {
            // Only spec.finalizers changes through namespaces/finalize.
            let finalizers = new.pointer("/spec/finalizers").cloned();
            let mut kept = old.clone();
            if let Some(spec) = kept.as_object_mut().and_then(|m| {
                m.entry("spec")
                    .or_insert_with(|| Value::Object(Default::default()))
                    .as_object_mut()
            }) {
                match finalizers {
                    Some(f) => spec.insert("finalizers".into(), f),
                    None => spec.remove("finalizers"),
                };
            }
            new = kept;
            Vec::new()
        }
        Some(other) => {
            return Err(ApiError::MethodNotAllowed(format!(
                "the server does not allow this method on the requested resource ({other})"
            )))
        }
    };
    if !errors.is_empty() {
        return Err(ApiError::invalid(info, &name, errors));
    }
    if info.has_generation && object::spec_part(&new) != object::spec_part(old) {
        let g = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        meta_mut(&mut new).insert("generation".into(), (g + 1).into());
    }
    if let Track::Update(manager, sub) = track {
        fieldmanager::record_update(info, manager, sub, Some(old), &mut new);
    }
    if new == *old {
        return Ok(Change::Unchanged);
    }
    let grace_zero = new
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        == 0;
    // A namespace is also held by its spec.finalizers (`kubernetes`, removed through
    // `finalize`), whatever else an update (such as a status write) changes.
    let spec_held = info.group.is_empty()
        && info.kind == "Namespace"
        && new
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
    if object::is_deleting(&new) && object::finalizers(&new).is_empty() && grace_zero && !spec_held
    {
        return Ok(Change::Delete);
    }
    Ok(Change::Write(new))
}

pub(super) fn respond(ctx: &Ctx, outcome: Outcome, warnings: &[String]) -> ApiResult<Response> {
    let out = convert::outgoing(ctx.target.info, outcome.into_object());
    Ok(with_warnings(
        json_response(StatusCode::OK, &out, ctx.pretty),
        warnings,
    ))
}

pub async fn update(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    let info = ctx.target.info;
    let name = ctx.target.name.clone().unwrap_or_default();
    let (mut obj, warnings) = decode_object(&ctx, body)?;
    name_as_on_url(&mut obj, &name)?;
    let sub = ctx.target.subresource.clone();
    let manager = manager_of(&ctx);
    let track = track_of(&manager, sub.as_deref());
    let outcome = change_stored(&ctx, |current| {
        apply_update(info, sub.as_deref(), &current, obj.clone(), track)
    })
    .await?;
    respond(&ctx, outcome, &warnings)
}

/// A body's name must be the URL's (or unset, and then it is set).
pub(super) fn name_as_on_url(obj: &mut Value, name: &str) -> ApiResult<()> {
    match object::meta_str(obj, "name") {
        Some(n) if !n.is_empty() && n != name => Err(ApiError::BadRequest(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        ))),
        _ => {
            meta_mut(obj).insert("name".into(), name.into());
            Ok(())
        }
    }
}

/// Run `change` on the target object: for a dry run once, on what is stored now, writing
/// nothing; otherwise in the store's compare-and-swap loop.
pub(super) async fn change_stored(
    ctx: &Ctx,
    mut change: impl FnMut(Value) -> ApiResult<Change>,
) -> ApiResult<Outcome> {
    let info = ctx.target.info;
    let name = ctx.target.name.as_deref().unwrap_or_default();
    let ns = ctx.target.namespace.as_deref();
    if ctx.query.is_dry_run()? {
        let current = ctx.state.objects.get(info, ns, name)?;
        return Ok(match change(current.clone())? {
            Change::Write(v) => Outcome::Written(v),
            _ => Outcome::Unchanged(current),
        });
    }
    ctx.state.objects.update(info, ns, name, change).await
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
    let info = ctx.target.info;
    let name = ctx.target.name.clone().unwrap_or_default();
    let format = body_format(&ctx.headers)?;
    if format == BodyFormat::ApplyPatch {
        return super::apply::apply(ctx, body).await;
    }
    if matches!(format, BodyFormat::Json | BodyFormat::Yaml) {
        return Err(ApiError::UnsupportedMediaType(
            "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml".into(),
        ));
    }
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
        let (obj, w) = admit_body(info, patched, validation)?;
        warnings = w;
        apply_update(info, sub.as_deref(), &current, obj, track)
    };
    let outcome = change_stored(&ctx, &mut run).await?;
    respond(&ctx, outcome, &warnings)
}
