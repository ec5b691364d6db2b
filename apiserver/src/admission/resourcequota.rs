//! The ResourceQuota admission plugin, as upstream's
//! `apiserver/pkg/admission/plugin/resourcequota`: a create, or an update the evaluator handles
//! (a Service's type and ports, a claim's storage request), in a namespace with quotas is
//! checked against every quota that tracks it (`proto::quota::check`: constraints, known
//! usage, room under `status.hard` for what the write adds) and charged to each one's
//! `status.used` by compare-and-swap, re-checked on the fresh quota, so concurrent writes
//! cannot exceed it. A write that then fails to store gives its charge back; the quota
//! controller's recount corrects anything else (and gives back what an update frees).
//!
//! An update is charged before it is stored, but the object it changes is only known inside
//! the store's synchronous compare-and-swap loop: [`UpdateQuota::check`] runs there and, when
//! the write needs more than is charged, stops the loop so that [`UpdateQuota::charge_wanted`]
//! can charge it, and the loop runs again.

use serde_json::{json, Value};
use tinykube_proto::quota::{self, Charge, Evaluator, ResourceList};
use tinykube_proto::registry::{self, ResourceInfo};

use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::state::AppState;
use crate::storage::Change;

/// How many times an update may stop its write loop to be charged before it gives up with a
/// conflict (each time, a concurrent writer changed the object so that it needs more).
const CHARGE_ATTEMPTS: usize = 8;

/// What a write was charged, to give back if it is not stored.
#[derive(Debug, Default)]
pub struct Charged {
    namespace: String,
    charges: Vec<Charge>,
}

fn quotas_info() -> &'static ResourceInfo {
    registry::builtin("", "v1", "resourcequotas").expect("resourcequotas are served")
}

/// The namespace's quotas (none for a cluster-scoped resource).
fn quotas_of(state: &AppState, info: &ResourceInfo, namespace: &str) -> ApiResult<Vec<Value>> {
    if !info.namespaced {
        return Ok(Vec::new());
    }
    Ok(state
        .objects
        .list(quotas_info(), Some(namespace), None, None)?
        .items)
}

fn refusal<'a>(info: &'a ResourceInfo, obj: &'a Value) -> impl Fn(quota::Refusal) -> ApiError + 'a {
    move |r| super::forbidden(info, object::name(obj), r.to_string())
}

/// Check the creation of `obj` against its namespace's quotas and, unless `dry_run`, charge it.
pub async fn admit(
    state: &AppState,
    info: &ResourceInfo,
    obj: &Value,
    dry_run: bool,
) -> ApiResult<Charged> {
    charge(state, info, obj, None, dry_run).await
}

/// Check the write of `obj` (created, or updated from `old`) and, unless `dry_run`, charge
/// each quota what it adds, by compare-and-swap re-checked on the fresh quota.
async fn charge(
    state: &AppState,
    info: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
    dry_run: bool,
) -> ApiResult<Charged> {
    let namespace = object::namespace(obj).unwrap_or("default").to_string();
    let mut charged = Charged {
        namespace: namespace.clone(),
        charges: Vec::new(),
    };
    let quotas = quotas_of(state, info, &namespace)?;
    if quotas.is_empty() {
        return Ok(charged);
    }
    let evaluator = Evaluator::of(info.group, info.plural);
    let now = state.clock.utc().timestamp();
    let refuse = refusal(info, obj);
    let charges = quota::check(&evaluator, obj, old, &quotas, now).map_err(&refuse)?;
    if dry_run {
        return Ok(charged);
    }
    let rq = quotas_info();
    for charge in charges {
        let mut delta = ResourceList::new();
        let outcome = state
            .objects
            .update(rq, Some(&namespace), &charge.quota, |current| {
                let fresh = quota::check(&evaluator, obj, old, std::slice::from_ref(&current), now)
                    .map_err(&refuse)?;
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
            Ok(_) if !delta.is_empty() => charged.charges.push(Charge {
                quota: charge.quota,
                delta,
            }),
            // Nothing to charge the fresh quota, or it went meanwhile.
            Ok(_) | Err(ApiError::NotFound { .. }) => {}
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

/// Give back what a write that was not stored was charged.
pub async fn release(state: &AppState, charged: Charged) {
    let rq = quotas_info();
    for charge in charged.charges {
        let result = state
            .objects
            .update(rq, Some(&charged.namespace), &charge.quota, |current| {
                let used = quota::parse_list(current.pointer("/status/used"));
                let mut back = quota::subtract(&used, &charge.delta);
                for q in back.values_mut() {
                    if q.milli_value() < 0 {
                        *q = tinykube_proto::quantity::Quantity::from_milli(0);
                    }
                }
                Ok(Change::Write(with_used(current, &back)))
            })
            .await;
        if let Err(e) = result {
            tracing::debug!(quota = %charge.quota, error = %e, "giving back a quota charge");
        }
    }
}

/// The quota side of one update of a (sub)resource: what it was charged so far, and the write
/// that needs more.
pub struct UpdateQuota<'a> {
    state: &'a AppState,
    info: &'a ResourceInfo,
    evaluated: bool,
    dry_run: bool,
    charged: Charged,
    /// The new and the stored object of the write the loop stopped to charge.
    wanted: Option<(Value, Value)>,
    attempts: usize,
}

impl<'a> UpdateQuota<'a> {
    /// An update of `info`'s `subresource` (`""`: the object itself); only what the
    /// resource's evaluator handles is looked at (upstream's `Handles`).
    pub fn new(
        state: &'a AppState,
        info: &'a ResourceInfo,
        subresource: &str,
        dry_run: bool,
    ) -> Self {
        let evaluated =
            info.namespaced && Evaluator::of(info.group, info.plural).evaluates_update(subresource);
        UpdateQuota {
            state,
            info,
            evaluated,
            dry_run,
            charged: Charged::default(),
            wanted: None,
            attempts: 0,
        }
    }

    /// Inside the write loop, on the object the update would store and the stored one: `Ok`
    /// when what is charged covers it (a dry run: when it fits the quotas as they are), the
    /// refusal when the object breaks a quota's constraints or its usage is unknown, and an
    /// error that stops the loop when more must be charged first ([`Self::charge_wanted`]).
    pub fn check(&mut self, new: &Value, old: &Value) -> ApiResult<()> {
        if !self.evaluated {
            return Ok(());
        }
        let namespace = object::namespace(new).unwrap_or("default");
        let quotas = quotas_of(self.state, self.info, namespace)?;
        if quotas.is_empty() {
            return Ok(());
        }
        let evaluator = Evaluator::of(self.info.group, self.info.plural);
        let now = self.state.clock.utc().timestamp();
        let refuse = refusal(self.info, new);
        if self.dry_run {
            quota::check(&evaluator, new, Some(old), &quotas, now).map_err(refuse)?;
            return Ok(());
        }
        let demand = quota::demand(&evaluator, new, Some(old), &quotas, now).map_err(refuse)?;
        if quota::covers(&self.charged.charges, &demand) {
            return Ok(());
        }
        self.wanted = Some((new.clone(), old.clone()));
        Err(ApiError::Internal(
            "an update stopped to be charged to its quotas".into(),
        ))
    }

    /// After the write loop failed: whether it stopped for [`Self::check`] to be charged, now
    /// done (what an earlier attempt was charged given back first, so nothing counts twice),
    /// and the update should run again. The quota's refusal when it does not fit.
    pub async fn charge_wanted(&mut self) -> ApiResult<bool> {
        let Some((new, old)) = self.wanted.take() else {
            return Ok(false);
        };
        self.attempts += 1;
        release(self.state, std::mem::take(&mut self.charged)).await;
        if self.attempts > CHARGE_ATTEMPTS {
            let info = self.info;
            return Err(ApiError::conflict(info, object::name(&new)));
        }
        self.charged = charge(self.state, self.info, &new, Some(&old), false).await?;
        Ok(true)
    }

    /// The update was not stored: give back what it was charged.
    pub async fn release(self) {
        release(self.state, self.charged).await;
    }
}
