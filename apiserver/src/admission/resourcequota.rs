//! The ResourceQuota admission plugin, as upstream's
//! `apiserver/pkg/admission/plugin/resourcequota`: a create in a namespace with quotas is
//! checked against every quota that tracks it (`proto::quota::check`: constraints, known
//! usage, room under `status.hard`) and charged to each one's `status.used` by
//! compare-and-swap, re-checked on the fresh quota, so concurrent creates cannot exceed it. A
//! create that then fails to store gives its charge back; the quota controller's recount
//! corrects anything else.

use serde_json::{json, Value};
use tinykube_proto::quota::{self, Evaluator, ResourceList};
use tinykube_proto::registry::{self, ResourceInfo};

use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::state::AppState;
use crate::storage::Change;

/// What a create was charged, to give back if it is not stored.
#[derive(Debug, Default)]
pub struct Charged {
    namespace: String,
    charges: Vec<(String, ResourceList)>,
}

fn quotas_info() -> &'static ResourceInfo {
    registry::builtin("", "v1", "resourcequotas").expect("resourcequotas are served")
}

/// Check the creation of `obj` against its namespace's quotas and, unless `dry_run`, charge it.
pub async fn admit(
    state: &AppState,
    info: &ResourceInfo,
    obj: &Value,
    dry_run: bool,
) -> ApiResult<Charged> {
    let namespace = object::namespace(obj).unwrap_or("default").to_string();
    let mut charged = Charged {
        namespace: namespace.clone(),
        charges: Vec::new(),
    };
    // Namespaced objects only (custom ones included); never a Namespace.
    if !info.namespaced {
        return Ok(charged);
    }
    let rq = quotas_info();
    let quotas = state.objects.list(rq, Some(&namespace), None, None)?.items;
    if quotas.is_empty() {
        return Ok(charged);
    }
    let evaluator = Evaluator::of(info.group, info.plural);
    let now = state.clock.utc().timestamp();
    let refuse = |r: quota::Refusal| super::forbidden(info, object::name(obj), r.to_string());
    let charges = quota::check(&evaluator, obj, &quotas, now).map_err(refuse)?;
    if dry_run {
        return Ok(charged);
    }
    for charge in charges {
        let mut delta = ResourceList::new();
        let outcome = state
            .objects
            .update(rq, Some(&namespace), &charge.quota, |current| {
                let fresh = quota::check(&evaluator, obj, std::slice::from_ref(&current), now)
                    .map_err(refuse)?;
                let Some(c) = fresh.into_iter().next() else {
                    return Ok(Change::Unchanged);
                };
                let used = quota::add(
                    &quota::parse_list(current.pointer("/status/used")),
                    &c.delta,
                );
                delta = c.delta;
                Ok(Change::Write(with_used(current, &used)))
            })
            .await;
        match outcome {
            Ok(_) => charged.charges.push((charge.quota, delta)),
            // The quota went meanwhile: nothing to charge it.
            Err(ApiError::NotFound { .. }) => {}
            Err(e) => {
                release(state, charged).await;
                return Err(e);
            }
        }
    }
    Ok(charged)
}

fn with_used(mut q: Value, used: &ResourceList) -> Value {
    if let Some(m) = q.as_object_mut() {
        let status = m.entry("status").or_insert_with(|| json!({}));
        if let Some(s) = status.as_object_mut() {
            s.insert("used".into(), quota::to_json(used));
        }
    }
    q
}

/// Give back what a create that was not stored was charged.
pub async fn release(state: &AppState, charged: Charged) {
    let rq = quotas_info();
    for (name, delta) in charged.charges {
        let result = state
            .objects
            .update(rq, Some(&charged.namespace), &name, |current| {
                let used = quota::parse_list(current.pointer("/status/used"));
                let mut back = quota::subtract(&used, &delta);
                for q in back.values_mut() {
                    if q.milli_value() < 0 {
                        *q = tinykube_proto::quantity::Quantity::from_milli(0);
                    }
                }
                Ok(Change::Write(with_used(current, &back)))
            })
            .await;
        if let Err(e) = result {
            tracing::debug!(quota = %name, error = %e, "giving back a quota charge");
        }
    }
}
