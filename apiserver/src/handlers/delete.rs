//! delete and deletecollection: graceful deletion of bound pods, finalizers, and the
//! propagation policies that hand dependents to the garbage collector.

use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tinykube_proto::registry::ResourceInfo;

use super::persist::attributes;
use super::{json_response, read, with_warnings, Ctx};
use crate::convert;
use crate::error::{ApiError, ApiResult, Qualified};
use crate::filter::Filter;
use crate::object::{self, meta_mut};
use crate::policy::{self, Operation};
use crate::state::AppState;
use crate::storage::{Change, Outcome};

/// DeleteOptions from the body and the query (the query wins where both are given).
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub propagation_policy: Option<String>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

impl DeleteOptions {
    pub fn from_request(ctx: &Ctx, body: &[u8]) -> ApiResult<Self> {
        let mut opts = DeleteOptions::default();
        if !body.iter().all(u8::is_ascii_whitespace) {
            let v: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::BadRequest(format!("invalid DeleteOptions: {e}")))?;
            opts = Self::from_value(&v);
        }
        if let Some(g) = ctx
            .query
            .int("gracePeriodSeconds", &ctx.query.grace_period_seconds)?
        {
            opts.grace_period_seconds = Some(g);
        }
        if let Some(p) = ctx
            .query
            .propagation_policy
            .clone()
            .filter(|p| !p.is_empty())
        {
            opts.propagation_policy = Some(p);
        }
        if crate::request::truthy(&ctx.query.orphan_dependents) && opts.propagation_policy.is_none()
        {
            opts.propagation_policy = Some("Orphan".into());
        }
        if let Some(p) = &opts.propagation_policy {
            if !matches!(p.as_str(), "Orphan" | "Background" | "Foreground") {
                return Err(ApiError::BadRequest(format!(
                    "DeleteOptions.propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
                )));
            }
        }
        Ok(opts)
    }

    pub fn from_value(v: &Value) -> Self {
        let orphan = v.get("orphanDependents").and_then(Value::as_bool);
        DeleteOptions {
            grace_period_seconds: v.get("gracePeriodSeconds").and_then(Value::as_i64),
            propagation_policy: v
                .get("propagationPolicy")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| (orphan == Some(true)).then(|| "Orphan".to_string())),
            precondition_uid: v
                .pointer("/preconditions/uid")
                .and_then(Value::as_str)
                .map(str::to_string),
            precondition_rv: v
                .pointer("/preconditions/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }
}

/// The grace period a pod deletion gets: none for pods not on a node or already finished.
fn pod_grace(pod: &Value, requested: Option<i64>) -> i64 {
    let bound = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let finished = matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    if !bound || finished {
        return 0;
    }
    requested
        .or_else(|| {
            pod.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(30)
        .max(0)
}

fn set_finalizer(obj: &mut Value, add: Option<&str>, remove: &[&str]) {
    let mut f = object::finalizers(obj);
    f.retain(|x| !remove.contains(&x.as_str()));
    if let Some(a) = add {
        if !f.iter().any(|x| x == a) {
            f.push(a.to_string());
        }
    }
    object::set_finalizers(obj, &f);
}

/// Decide what one delete does to the current object, `now` (a grace period ends at `now`
/// plus its length).
fn plan_delete(
    info: &ResourceInfo,
    current: &Value,
    opts: &DeleteOptions,
    now: DateTime<Utc>,
) -> ApiResult<Change> {
    let name = object::name(current).to_string();
    let precondition_failed = |reason: String| ApiError::Conflict {
        resource: Qualified::of(info),
        name: name.clone(),
        reason,
    };
    if let Some(uid) = &opts.precondition_uid {
        let actual = object::uid(current).unwrap_or("");
        if uid != actual {
            return Err(precondition_failed(format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
            )));
        }
    }
    if let Some(rv) = &opts.precondition_rv {
        let actual = object::resource_version(current).unwrap_or("");
        if rv != actual {
            return Err(precondition_failed(format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
            )));
        }
    }
    let mut new = current.clone();
    match opts.propagation_policy.as_deref() {
        Some("Orphan") => set_finalizer(&mut new, Some("orphan"), &["foregroundDeletion"]),
        Some("Foreground") => set_finalizer(&mut new, Some("foregroundDeletion"), &["orphan"]),
        Some("Background") => set_finalizer(&mut new, None, &["orphan", "foregroundDeletion"]),
        _ => {}
    }
    let is_pod = info.group.is_empty() && info.kind == "Pod";
    let is_namespace = info.group.is_empty() && info.kind == "Namespace";
    let is_crd = info.group == "apiextensions.k8s.io" && info.kind == "CustomResourceDefinition";
    if is_crd && !object::is_deleting(current) {
        crate::crds::mark_for_deletion(&mut new, &object::timestamp(now));
    }
    let grace = if is_pod {
        pod_grace(current, opts.grace_period_seconds)
    } else {
        0
    };
    let has_finalizers = !object::finalizers(&new).is_empty()
        || (is_namespace
            && new
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty()));
    let deleting = object::is_deleting(current);
    if grace == 0 && !has_finalizers {
        return Ok(Change::Delete);
    }
    if deleting {
        // Only shorten a running grace period, never extend it.
        let current_grace = current
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if grace < current_grace {
            let meta = meta_mut(&mut new);
            meta.insert("deletionGracePeriodSeconds".into(), grace.into());
            meta.insert(
                "deletionTimestamp".into(),
                object::timestamp(now + chrono::Duration::seconds(grace)).into(),
            );
        }
    } else {
        let meta = meta_mut(&mut new);
        meta.insert("deletionGracePeriodSeconds".into(), grace.into());
        meta.insert(
            "deletionTimestamp".into(),
            object::timestamp(now + chrono::Duration::seconds(grace)).into(),
        );
        if info.has_generation {
            let g = current
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            meta.insert("generation".into(), (g + 1).into());
        }
        if is_namespace {
            if let Some(m) = new.as_object_mut() {
                let status = m.entry("status").or_insert_with(|| json!({}));
                if let Some(s) = status.as_object_mut() {
                    s.insert("phase".into(), "Terminating".into());
                }
            }
        }
    }
    if new == *current {
        Ok(Change::Unchanged)
    } else {
        Ok(Change::Write(new))
    }
}

/// Delete one object; returns what the client is shown.
pub async fn delete_object(
    state: &AppState,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    opts: &DeleteOptions,
) -> ApiResult<Outcome> {
    let outcome = if crate::services::is_service(info) {
        // A Service's cluster IP and node ports are released once it is gone.
        crate::services::update(state, info, ns, name, |current| {
            plan_delete(info, &current, opts, state.clock.utc())
        })
        .await?
    } else {
        state
            .objects
            .update(info, ns, name, |current| {
                plan_delete(info, &current, opts, state.clock.utc())
            })
            .await?
    };
    // A pod whose grace period is cut to zero is first marked (MODIFIED), then removed, as
    // upstream shows it to watchers.
    let is_pod = info.group.is_empty() && info.kind == "Pod";
    if let (true, Outcome::Written(obj)) = (is_pod, &outcome) {
        let zero = obj
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            == Some(0);
        if zero && object::finalizers(obj).is_empty() {
            return state
                .objects
                .update(info, ns, name, |_| Ok(Change::Delete))
                .await;
        }
    }
    Ok(outcome)
}

pub async fn delete(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    let info = &ctx.target.info;
    let name = ctx.target.name.clone().unwrap_or_default();
    let opts = DeleteOptions::from_request(&ctx, body)?;
    let current = ctx
        .state
        .objects
        .get(info, ctx.target.namespace.as_deref(), &name)?;
    let warnings = admit_delete(&ctx, &current)?;
    if ctx.query.is_dry_run()? {
        let out = convert::outgoing(info, current);
        return Ok(with_warnings(
            json_response(StatusCode::OK, &out, ctx.pretty),
            &warnings,
        ));
    }
    let outcome = delete_object(
        &ctx.state,
        info,
        ctx.target.namespace.as_deref(),
        &name,
        &opts,
    )
    .await?;
    let code = match outcome {
        Outcome::Deleted(_) => StatusCode::OK,
        _ => StatusCode::OK,
    };
    let out = convert::outgoing(info, outcome.into_object());
    Ok(with_warnings(
        json_response(code, &out, ctx.pretty),
        &warnings,
    ))
}

/// The admission policies on a delete: the stored object is the old object, there is no new
/// one.
fn admit_delete(ctx: &Ctx, current: &Value) -> ApiResult<Vec<String>> {
    let attrs = attributes(ctx, "", Operation::Delete, None, Some(current));
    policy::admit(&ctx.state, &attrs)
}

pub async fn delete_collection(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    let info = &ctx.target.info;
    let opts = DeleteOptions::from_request(&ctx, body)?;
    let filter = Filter::parse(
        info,
        ctx.query.label_selector.as_deref(),
        ctx.query.field_selector.as_deref(),
    )?;
    let listed = read::list_objects(&ctx, &filter)?;
    let dry_run = ctx.query.is_dry_run()?;
    let mut items = Vec::new();
    let mut warnings = Vec::new();
    for obj in listed.items {
        let name = object::name(&obj).to_string();
        let ns = object::namespace(&obj).map(str::to_string);
        warnings.extend(admit_delete(&ctx, &obj)?);
        if dry_run {
            items.push(convert::outgoing(info, obj));
            continue;
        }
        match delete_object(&ctx.state, info, ns.as_deref(), &name, &opts).await {
            Ok(outcome) => items.push(convert::outgoing(info, outcome.into_object())),
            Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let body = json!({
        "kind": info.list_kind,
        "apiVersion": info.api_version(),
        "metadata": {"resourceVersion": ctx.state.objects.store().revision().to_string()},
        "items": items,
    });
    Ok(with_warnings(
        json_response(StatusCode::OK, &body, ctx.pretty),
        &warnings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinykube_proto::registry::builtin;

    /// The server's clock in these tests (a manual clock's reading).
    fn at() -> DateTime<Utc> {
        "2030-01-02T03:00:00Z".parse().expect("a time")
    }

    type Planned<'a> = Option<(&'a str, i64)>;

    /// The deletionTimestamp and deletionGracePeriodSeconds a delete writes, or `None` when
    /// it removes the object at once.
    fn planned(change: ApiResult<Change>) -> Option<(String, i64)> {
        match change.expect("the delete is planned") {
            Change::Write(obj) => Some((
                obj["metadata"]["deletionTimestamp"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                obj["metadata"]["deletionGracePeriodSeconds"]
                    .as_i64()
                    .unwrap_or(-1),
            )),
            Change::Delete | Change::Unchanged => None,
        }
    }

    #[test]
    fn grace_periods_end_at_the_clock_plus_their_length() {
        let pods = builtin("", "v1", "pods").expect("pods are served");
        let maps = builtin("", "v1", "configmaps").expect("configmaps are served");
        let bound = json!({"metadata": {"name": "p"},
                           "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 45}});
        let deleting = json!({"metadata": {"name": "p", "deletionGracePeriodSeconds": 45,
                                           "deletionTimestamp": "2030-01-02T03:00:45Z"},
                              "spec": {"nodeName": "n1"}});
        let grace = |s| DeleteOptions {
            grace_period_seconds: Some(s),
            ..Default::default()
        };
        // What is deleted, how, and the deletionTimestamp and grace period written.
        type Case<'a> = (&'a str, &'a ResourceInfo, Value, DeleteOptions, Planned<'a>);
        let table: &[Case] = &[
            (
                "the pod's own grace period",
                pods,
                bound.clone(),
                DeleteOptions::default(),
                Some(("2030-01-02T03:00:45Z", 45)),
            ),
            (
                "the request's grace period",
                pods,
                bound.clone(),
                grace(5),
                Some(("2030-01-02T03:00:05Z", 5)),
            ),
            (
                "a zero grace period deletes at once",
                pods,
                bound,
                grace(0),
                None,
            ),
            (
                "a running grace period is shortened",
                pods,
                deleting.clone(),
                grace(10),
                Some(("2030-01-02T03:00:10Z", 10)),
            ),
            ("never extended", pods, deleting, grace(60), None),
            (
                "an unbound pod goes at once",
                pods,
                json!({"metadata": {"name": "p"}, "spec": {}}),
                DeleteOptions::default(),
                None,
            ),
            (
                "finalizers hold an object from now",
                maps,
                json!({"metadata": {"name": "c", "finalizers": ["example.com/hold"]}}),
                DeleteOptions::default(),
                Some(("2030-01-02T03:00:00Z", 0)),
            ),
        ];
        for (name, info, current, opts, want) in table {
            let got = planned(plan_delete(info, current, opts, at()));
            let want = want.map(|(t, g)| (t.to_string(), g));
            assert_eq!(got, want, "{name}");
        }
    }
}
