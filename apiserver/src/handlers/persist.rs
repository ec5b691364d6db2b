//! The write path the verb handlers share: the request's field manager, the create and update
//! rules (server-owned metadata, the kind's strategy, admission, managedFields), the dry run or
//! compare-and-swap against the store, and the answer with the stored object.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;
use tinykube_proto::registry::ResourceInfo;

use super::{json_response, with_warnings, Ctx};
use crate::admission;
use crate::convert;
use crate::error::{ApiError, ApiResult};
use crate::fieldmanager::{self, Manager};
use crate::object::{self, meta_mut};
use crate::policy::{self, Attributes, Operation};
use crate::registry::{self, field::FieldError};
use crate::storage::{Change, Outcome};

/// How a write records its manager in `metadata.managedFields`.
#[derive(Clone, Copy)]
pub(super) enum Track<'a> {
    /// An update-type write by this manager, recorded under this subresource (`None`: the main
    /// resource).
    Update(&'a Manager, Option<&'a str>),
    /// Nothing to record: server-side apply set the entries already, and `namespaces/finalize`
    /// writes the stored object with only its `spec.finalizers` changed.
    Kept,
}

/// The request's manager, for an update-type write of the target (sub)resource.
pub(super) fn manager_of(ctx: &Ctx) -> Manager {
    Manager::of(
        &ctx.target.info,
        ctx.query.field_manager.as_deref(),
        &ctx.headers,
        ctx.state.clock.utc(),
    )
}

/// The admission plugin's view of a write of the target: the namespace of a namespaced object,
/// or a namespace's own name, as upstream's attributes carry it.
pub(super) fn attributes<'a>(
    ctx: &'a Ctx,
    subresource: &'a str,
    operation: Operation,
    object: Option<&'a Value>,
    old_object: Option<&'a Value>,
) -> Attributes<'a> {
    let info = &ctx.target.info;
    let named = object.or(old_object);
    let name = named.map(object::name).unwrap_or_default();
    let namespace = if info.group.is_empty() && info.plural == "namespaces" {
        name
    } else if info.namespaced {
        named
            .and_then(object::namespace)
            .or(ctx.target.namespace.as_deref())
            .unwrap_or_default()
    } else {
        ""
    };
    Attributes {
        info,
        subresource,
        operation,
        name,
        namespace,
        object,
        old_object,
        dry_run: ctx.query.is_dry_run().unwrap_or(false),
        user: &ctx.user,
    }
}

/// A 422 for the strategy's errors. Upstream names the kind of the type it validates, the stored
/// one: an events.k8s.io Event is a core `Event "x" is invalid`.
fn invalid(info: &ResourceInfo, name: &str, errors: Vec<FieldError>) -> ApiError {
    let mut e = ApiError::invalid(info, name, errors);
    if let ApiError::Invalid { group, .. } = &mut e {
        if info.group == "events.k8s.io" {
            group.clear();
        }
    }
    e
}

/// Metadata only the server sets on create (`now` is the creationTimestamp).
fn fill_system_metadata(info: &ResourceInfo, obj: &mut Value, now: chrono::DateTime<chrono::Utc>) {
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
    meta.insert("creationTimestamp".into(), object::timestamp(now).into());
}

/// Create a decoded object: server metadata, defaults, admission, validation, then store (or,
/// for a dry run, only answer). A `generateName` gets a fresh suffix until the name is free.
pub(super) async fn create_object(
    ctx: &Ctx,
    obj: Value,
    mut warnings: Vec<String>,
    track: Track<'_>,
) -> ApiResult<Response> {
    let info = &ctx.target.info;
    if info.custom.as_ref().is_some_and(|c| c.terminating()) {
        return Err(ApiError::MethodNotAllowed(
            "create not allowed while custom resource definition is terminating".into(),
        ));
    }
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
    for attempt in 0..8 {
        // As upstream, the name is generated first: a strategy may derive from it (a Job's
        // `job-name` label).
        let mut candidate = obj.clone();
        if object::name(&candidate).is_empty() || (attempt > 0 && !generate_name.is_empty()) {
            let name = format!("{generate_name}{}", object::random_suffix(5));
            meta_mut(&mut candidate).insert("name".into(), name.into());
        }
        fill_system_metadata(info, &mut candidate, ctx.state.clock.utc());
        strategy.default(&mut candidate);
        strategy.prepare_for_create(&mut candidate);
        admission::check_namespace(&ctx.state, info, &candidate)?;
        admission::on_create(&ctx.state, info, &mut candidate)?;
        let errors = strategy.validate_create(&candidate);
        if !errors.is_empty() {
            return Err(invalid(info, object::name(&candidate), errors));
        }
        crate::authz::escalation::check(&ctx.state, &ctx.user, info, &candidate, None)?;
        let attrs = attributes(ctx, "", Operation::Create, Some(&candidate), None);
        let admitted = policy::admit(&ctx.state, &attrs)?;
        let charged = admission::validate_create(&ctx.state, info, &candidate, dry_run).await?;
        if attempt == 0 {
            warnings.extend(strategy.warnings(&candidate));
            warnings.extend(admitted);
        }
        if let Track::Update(manager, sub) = track {
            fieldmanager::record_update(info, manager, sub, None, &mut candidate);
        }
        let reserved = if crate::services::is_service(info) {
            crate::services::allocate(&ctx.state, None, &mut candidate, dry_run).await?
        } else {
            Vec::new()
        };
        if dry_run {
            let out = convert::outgoing(info, candidate);
            return Ok(with_warnings(
                json_response(StatusCode::CREATED, &out, ctx.pretty),
                &warnings,
            ));
        }
        let created = ctx.state.objects.create(info, &candidate).await;
        if created.is_err() {
            admission::release(&ctx.state, charged).await;
            let uid = object::uid(&candidate).unwrap_or_default().to_string();
            crate::services::release_slots(&ctx.state, &reserved, &uid).await;
        }
        match created {
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

/// The update rules shared by PUT, PATCH, server-side apply and scale: preconditions,
/// server-owned metadata, the kind's strategy for the main resource or a subresource,
/// generation, managedFields, and the no-op check; the write happens `now` (the server's clock).
pub(super) fn update_rules(
    info: &ResourceInfo,
    subresource: Option<&str>,
    old: &Value,
    mut new: Value,
    track: Track<'_>,
    now: registry::Now,
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
        // As upstream's BeforeUpdate: the server's fields are restored, but a client's attempt
        // to set a deletion timestamp (or change a grace period) the object does not have is
        // left for validation to refuse ("field is immutable").
        for k in ["creationTimestamp", "generation", "namespace"] {
            match old_meta.get(k) {
                Some(v) => meta.insert(k.into(), v.clone()),
                None => meta.remove(k),
            };
        }
        let absent =
            |m: &serde_json::Map<String, Value>, k: &str| m.get(k).is_none_or(Value::is_null);
        for k in ["uid", "deletionGracePeriodSeconds"] {
            if absent(meta, k) {
                if let Some(v) = old_meta.get(k) {
                    meta.insert(k.into(), v.clone());
                }
            }
        }
        if let Some(v) = old_meta.get("deletionTimestamp") {
            meta.insert("deletionTimestamp".into(), v.clone());
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
            strategy.prepare_for_status_update(&mut new, old, now);
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
            // Upstream's ValidateNamespaceFinalizeUpdate: the finalizers are names too.
            strategy.validate_create(&new)
        }
        Some(other) => {
            return Err(ApiError::MethodNotAllowed(format!(
                "the server does not allow this method on the requested resource ({other})"
            )))
        }
    };
    if !errors.is_empty() {
        return Err(invalid(info, &name, errors));
    }
    if info.has_generation && generation_changes(info, &new, old) {
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

/// Whether an update bumps `metadata.generation`: a change of the spec (everything but
/// metadata and status); for a custom resource without a status subresource, of anything but
/// metadata, as upstream.
fn generation_changes(info: &ResourceInfo, new: &Value, old: &Value) -> bool {
    if info.custom.is_some() && !info.has_status() {
        let without_meta = |v: &Value| {
            let mut copy = v.clone();
            if let Some(m) = copy.as_object_mut() {
                m.remove("metadata");
            }
            copy
        };
        return without_meta(new) != without_meta(old);
    }
    object::spec_part(new) != object::spec_part(old)
}

/// Run `change` on the target object, then the admission policies on its result (their
/// warnings are added to `warnings`) and the quota check of what it adds: for a dry run once,
/// on what is stored now, writing nothing; otherwise in the store's compare-and-swap loop,
/// which stops to charge the namespace's quotas when the write needs more than was charged,
/// and runs again.
pub(super) async fn change_stored(
    ctx: &Ctx,
    mut change: impl FnMut(Value) -> ApiResult<Change>,
    warnings: &mut Vec<String>,
) -> ApiResult<Outcome> {
    let sub = ctx.target.subresource.as_deref().unwrap_or_default();
    let info = &ctx.target.info;
    let dry_run = ctx.query.is_dry_run()?;
    let mut quota = admission::UpdateQuota::new(&ctx.state, info, sub, dry_run);
    loop {
        let mut admitted = Vec::new();
        let outcome = change_stored_unadmitted(ctx, |current| {
            let changed = change(current.clone())?;
            let new = match &changed {
                Change::Write(new) => new,
                // A no-op update is still an update to admission, as upstream.
                Change::Unchanged => &current,
                // The last finalizer went: nothing is left to show a policy.
                Change::Delete => return Ok(changed),
            };
            if matches!(changed, Change::Write(_)) && sub.is_empty() {
                crate::authz::escalation::check(&ctx.state, &ctx.user, info, new, Some(&current))?;
            }
            let attrs = attributes(ctx, sub, Operation::Update, Some(new), Some(&current));
            admitted = policy::admit(&ctx.state, &attrs)?;
            if matches!(changed, Change::Write(_)) {
                quota.check(new, &current)?;
            }
            Ok(changed)
        })
        .await;
        match outcome {
            Ok(outcome) => {
                warnings.extend(admitted);
                if !matches!(outcome, Outcome::Written(_)) {
                    // Charged by an earlier attempt, but nothing was written in the end.
                    quota.release().await;
                }
                return Ok(outcome);
            }
            Err(e) => {
                if quota.charge_wanted().await? {
                    continue;
                }
                quota.release().await;
                return Err(e);
            }
        }
    }
}

async fn change_stored_unadmitted(
    ctx: &Ctx,
    mut change: impl FnMut(Value) -> ApiResult<Change>,
) -> ApiResult<Outcome> {
    let info = &ctx.target.info;
    let name = ctx.target.name.as_deref().unwrap_or_default();
    let ns = ctx.target.namespace.as_deref();
    if ctx.query.is_dry_run()? {
        let current = ctx.state.objects.get(info, ns, name)?;
        return Ok(match change(current.clone())? {
            Change::Write(v) => Outcome::Written(v),
            _ => Outcome::Unchanged(current),
        });
    }
    let outcome = if crate::services::is_service(info) {
        crate::services::update(&ctx.state, info, ns, name, change).await?
    } else {
        ctx.state.objects.update(info, ns, name, change).await?
    };
    if crate::crds::is_definition(info) {
        crate::crds::serve_stored(&ctx.state).await;
    }
    Ok(outcome)
}

/// The 200 answer of an update: the stored (or dry-run) object in its served form.
pub(super) fn respond(ctx: &Ctx, outcome: Outcome, warnings: &[String]) -> ApiResult<Response> {
    let out = convert::outgoing(&ctx.target.info, outcome.into_object());
    Ok(with_warnings(
        json_response(StatusCode::OK, &out, ctx.pretty),
        warnings,
    ))
}
