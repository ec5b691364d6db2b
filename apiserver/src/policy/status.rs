//! The status upstream's type-checking controller keeps on each ValidatingAdmissionPolicy:
//! `observedGeneration` and `typeChecking`. The CEL crate has no type checker, so
//! `typeChecking.expressionWarnings` is always empty; the loop only records that the current
//! generation was seen. One loop: list the policies, write what differs, wait for the next
//! change in the store.

use std::time::Duration;

use serde_json::{json, Value};

use super::policies_info;
use crate::error::ApiResult;
use crate::fieldmanager::{self, Manager};
use crate::object;
use crate::state::AppState;
use crate::storage::{self, Change};

/// The status a policy at `generation` should have.
fn wanted(policy: &Value) -> Value {
    let generation = policy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut status = policy.get("status").cloned().unwrap_or_else(|| json!({}));
    if let Some(s) = status.as_object_mut() {
        s.insert("observedGeneration".into(), generation.into());
        s.insert("typeChecking".into(), json!({}));
    }
    status
}

/// Start the loop; it ends when the server stops.
pub fn start(state: AppState) {
    tokio::spawn(async move {
        let shutdown = state.shutdown.clone();
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = run(state) => {}
        }
    });
}

async fn run(state: AppState) {
    let prefix = storage::kind_prefix(policies_info());
    loop {
        let revision = match sync(&state).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "type-checking ValidatingAdmissionPolicies");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let Ok(mut watch) = state.objects.store().watch(&prefix, revision) else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        tokio::select! {
            _ = watch.next() => {}
            _ = tokio::time::sleep(Duration::from_secs(30)) => {}
        }
    }
}

async fn sync(state: &AppState) -> ApiResult<u64> {
    let info = policies_info();
    let page = state.objects.list(info, None, None, None)?;
    for policy in &page.items {
        if policy.get("status") == Some(&wanted(policy)) {
            continue;
        }
        let manager = Manager {
            name: "kube-apiserver".into(),
            api_version: info.api_version(),
            time: object::timestamp(state.clock.utc()),
        };
        let result = state
            .objects
            .update(info, None, object::name(policy), |current| {
                let mut new = current.clone();
                new["status"] = wanted(&current);
                if new == current {
                    return Ok(Change::Unchanged);
                }
                fieldmanager::record_update(
                    info,
                    &manager,
                    Some("status"),
                    Some(&current),
                    &mut new,
                );
                Ok(Change::Write(new))
            })
            .await;
        if let Err(e) = result {
            tracing::debug!(error = %e, "writing a policy's status");
        }
    }
    Ok(page.revision)
}
