//! The controllers upstream's apiextensions-apiserver runs inside the API server, over the
//! CustomResourceDefinitions in the store: naming (which names a definition gets,
//! `NamesAccepted`), establishing (`Established`: its resources are served), and the cleanup
//! finalizer (a deleted definition is `Terminating` until every instance is gone). They also
//! keep the server's registry of kinds (`Kinds`) in step, always before a status says so: a
//! client that sees `Established` can use the resource at once.
//!
//! One loop: list every definition, reconcile all of them (definitions are few), then wait for
//! the next change in the store (or a second, while a deletion waits on instances' finalizers).

use std::time::Duration;

use serde_json::{json, Value};
use tinykube_proto::registry::{self, ResourceInfo};

use crate::error::{ApiError, ApiResult};
use crate::fieldmanager::{self, Manager};
use crate::handlers::delete::{delete_object, DeleteOptions};
use crate::object;
use crate::registry::apiextensions::{
    self as crd, establish_status, is_condition_true, naming_status, set_condition, Termination,
};
use crate::state::AppState;
use crate::storage::{self, Change};

use crd::CLEANUP_FINALIZER;

/// The manager the controllers' status writes are recorded under.
const MANAGER: &str = "kube-apiserver";

fn crd_info() -> &'static ResourceInfo {
    registry::builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .expect("customresourcedefinitions are served")
}

/// What a delete of a definition does first, as upstream's CRD storage: mark it deleted, add
/// the cleanup finalizer and say so in a `Terminating` condition (at `now`); the finalizer does
/// the rest.
pub fn mark_for_deletion(crd: &mut Value, now: &str) {
    let mut finalizers = object::finalizers(crd);
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        finalizers.push(CLEANUP_FINALIZER.to_string());
        object::set_finalizers(crd, &finalizers);
    }
    set_terminating_condition(crd, Termination::Pending, now);
}

/// The server's clock as the conditions hold it.
fn now(state: &AppState) -> String {
    object::timestamp(state.clock.utc())
}

fn set_terminating_condition(crd: &mut Value, stage: Termination, now: &str) {
    if let Some(m) = crd.as_object_mut() {
        let status = m.entry("status").or_insert_with(|| json!({}));
        set_condition(status, stage.condition(), now);
    }
}

/// Serve the definitions in the store, then run the controllers until the server stops.
pub async fn start(state: AppState) {
    if let Err(e) = sync(&state).await {
        tracing::warn!(error = %e, "reconciling CustomResourceDefinitions");
    }
    tokio::spawn(async move {
        let shutdown = state.shutdown.clone();
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = run(state) => {}
        }
    });
}

async fn run(state: AppState) {
    let prefix = storage::kind_prefix(crd_info());
    loop {
        let (revision, waiting) = match sync(&state).await {
            Ok(done) => done,
            Err(e) => {
                tracing::warn!(error = %e, "reconciling CustomResourceDefinitions");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let mut watch = match state.objects.store().watch(&prefix, revision) {
            Ok(w) => w,
            Err(e) => {
                tracing::debug!(error = %e, "watching CustomResourceDefinitions");
                continue;
            }
        };
        let pause = if waiting {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(30)
        };
        tokio::select! {
            _ = watch.next() => {}
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

/// Whether `info` is the CustomResourceDefinition resource.
pub fn is_definition(info: &ResourceInfo) -> bool {
    info.group == "apiextensions.k8s.io" && info.kind == "CustomResourceDefinition"
}

/// Whether a definition's resources are served: once its names are accepted (upstream serves
/// from then on, and is established right after).
fn served(crd: &Value) -> bool {
    is_condition_true(crd, "Established") || is_condition_true(crd, "NamesAccepted")
}

/// Serve what the stored definitions say, after a write of one: a changed schema, version,
/// printer column or short name of an established definition is served from the next request.
/// Names a definition newly asks for wait for the controllers, as upstream's.
pub async fn serve_stored(state: &AppState) {
    let _turn = state.kinds.writer.lock().await;
    match state.objects.list(crd_info(), None, None, None) {
        Ok(page) => state
            .kinds
            .set_crds(page.items.into_iter().filter(served).collect()),
        Err(e) => tracing::warn!(error = %e, "listing CustomResourceDefinitions"),
    }
}

/// One pass over every definition; returns the revision listed at and whether a deletion is
/// waiting for instances to go.
async fn sync(state: &AppState) -> ApiResult<(u64, bool)> {
    let info = crd_info();
    // One writer of the served kinds at a time: what is served never goes back to a stored
    // status older than the one this pass is about to write.
    let _turn = state.kinds.writer.lock().await;
    let page = state.objects.list(info, None, None, None)?;
    let mut crds = page.items;
    // Names and establishment first, in memory, and served before any status says so.
    let snapshot = crds.clone();
    let now = now(state);
    for (i, crd) in crds.iter_mut().enumerate() {
        if object::is_deleting(crd) {
            continue;
        }
        let others: Vec<Value> = snapshot
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, c)| c.clone())
            .collect();
        if let Some(status) = naming_status(crd, &others, &now) {
            crd["status"] = status;
        }
        if let Some(status) = establish_status(crd, &now) {
            crd["status"] = status;
        }
    }
    state
        .kinds
        .set_crds(crds.iter().filter(|c| served(c)).cloned().collect());
    for (before, after) in snapshot.iter().zip(&crds) {
        if before.get("status") != after.get("status") {
            write_status(state, object::name(after), after.get("status")).await?;
        }
    }
    let mut waiting = false;
    for crd in crds.iter().filter(|c| object::is_deleting(c)) {
        if object::finalizers(crd)
            .iter()
            .any(|f| f == CLEANUP_FINALIZER)
        {
            waiting |= !finalize(state, crd).await?;
        }
    }
    Ok((page.revision, waiting))
}

/// Store a definition's new status (unless it was deleted meanwhile).
async fn write_status(state: &AppState, name: &str, status: Option<&Value>) -> ApiResult<()> {
    let info = crd_info();
    let status = status.cloned().unwrap_or_else(|| json!({}));
    let manager = Manager {
        name: MANAGER.into(),
        api_version: info.api_version(),
        time: now(state),
    };
    let result = state
        .objects
        .update(info, None, name, |current| {
            let mut new = current.clone();
            if let Some(m) = new.as_object_mut() {
                m.insert("status".into(), status.clone());
            }
            if new == current {
                return Ok(Change::Unchanged);
            }
            fieldmanager::record_update(info, &manager, Some("status"), Some(&current), &mut new);
            Ok(Change::Write(new))
        })
        .await;
    match result {
        Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Delete every instance of a deleted definition; once none is left, drop the finalizer (and
/// with it the definition). Returns whether the definition is gone.
async fn finalize(state: &AppState, crd: &Value) -> ApiResult<bool> {
    let name = object::name(crd).to_string();
    // Every served version reads the same stored objects: one resource is enough.
    let Some(info) = registry::custom::resources(crd).into_iter().next() else {
        return remove_finalizer(state, &name).await.map(|()| true);
    };
    let page = state.objects.list(&info, None, None, None)?;
    if !page.items.is_empty() {
        set_terminating(state, &name, Termination::InProgress).await?;
    }
    let opts = DeleteOptions::default();
    let mut left = 0usize;
    for obj in &page.items {
        let (ns, obj_name) = (object::namespace(obj), object::name(obj));
        if object::is_deleting(obj) {
            left += 1;
            continue;
        }
        match delete_object(state, &info, ns, obj_name, &opts).await {
            Ok(storage::Outcome::Deleted(_)) | Err(ApiError::NotFound { .. }) => {}
            Ok(_) => left += 1,
            Err(e) => return Err(e),
        }
    }
    if left > 0 {
        return Ok(false);
    }
    set_terminating(state, &name, Termination::Completed).await?;
    remove_finalizer(state, &name).await?;
    Ok(true)
}

async fn set_terminating(state: &AppState, name: &str, stage: Termination) -> ApiResult<()> {
    let Some(mut crd) = state.objects.try_get(crd_info(), None, name)? else {
        return Ok(());
    };
    set_terminating_condition(&mut crd, stage, &now(state));
    write_status(state, name, crd.get("status")).await
}

async fn remove_finalizer(state: &AppState, name: &str) -> ApiResult<()> {
    let result = state
        .objects
        .update(crd_info(), None, name, |current| {
            let mut new = current.clone();
            let mut finalizers = object::finalizers(&new);
            finalizers.retain(|f| f != CLEANUP_FINALIZER);
            object::set_finalizers(&mut new, &finalizers);
            if finalizers.is_empty() && object::is_deleting(&new) {
                Ok(Change::Delete)
            } else if new == current {
                Ok(Change::Unchanged)
            } else {
                Ok(Change::Write(new))
            }
        })
        .await;
    match result {
        Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}
