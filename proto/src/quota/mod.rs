//! Resource quota accounting, shared by the API server's ResourceQuota admission and the
//! controller manager's resource quota controller, as upstream's `pkg/quota/v1`: resource lists
//! and their arithmetic (`lists`), what each kind of object charges and which quota scopes it
//! falls in (`usage`), and the admission decision for one created or updated object against the
//! quotas of its namespace (`check`, in two steps: `demand` and `fits`).

mod lists;
mod usage;

pub use lists::{add, exceeded, mask, parse_list, pretty, subtract, to_json, ResourceList};
pub use usage::{
    pod_limits, pod_requests, quota_scopes, unix_seconds, Evaluator, ScopeRequirement,
};

use serde_json::Value;

use crate::quantity::Quantity;

/// Why an object may not be created under its namespace's quotas: upstream's messages, to be
/// wrapped as `pods "x" is forbidden: …`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A quota tracks cpu or memory and a container does not name it.
    #[error("failed quota: {quota}: {why}")]
    Constraints { quota: String, why: String },
    /// A matching quota's status does not count a resource it limits yet.
    #[error("status unknown for quota: {quota}, resources: {resources}")]
    StatusUnknown { quota: String, resources: String },
    /// The object's usage is negative (a negative request).
    #[error("quota usage is negative for resource(s): {0}")]
    Negative(String),
    /// The usage would exceed a hard limit.
    #[error("exceeded quota: {quota}, requested: {requested}, used: {used}, limited: {limited}")]
    Exceeded {
        quota: String,
        requested: String,
        used: String,
        limited: String,
    },
}

/// One quota the new object is charged to: its name and the usage to add to `status.used`.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    pub quota: String,
    pub delta: ResourceList,
}

/// Upstream's CheckRequest for a write of `obj` (evaluated by `evaluator`) in a namespace with
/// `quotas`: its creation (`old` is `None`) or its update from `old`. Every matching quota must
/// know its usage, the object must satisfy each one's constraints, and what the write adds
/// must fit within each one's `status.hard`. Returns what to charge to which quota (nothing
/// when no quota tracks the object, or when an update adds nothing).
pub fn check(
    evaluator: &Evaluator,
    obj: &Value,
    old: Option<&Value>,
    quotas: &[Value],
    now_unix: i64,
) -> Result<Vec<Charge>, Refusal> {
    let charges = demand(evaluator, obj, old, quotas, now_unix)?;
    for charge in &charges {
        if let Some(q) = quotas.iter().find(|q| name_of(q) == charge.quota) {
            fits(charge, q)?;
        }
    }
    Ok(charges)
}

/// What a write of `obj` (a create, or an update from `old`) asks of each quota that tracks
/// it, before any limit is looked at: the matching quotas' constraints and known usage are
/// checked, the usage must not be negative, and an update asks only what it adds to the old
/// object's usage (upstream's non-negative subtraction: what it frees is the quota
/// controller's to give back). Resources that do not change are left out.
pub fn demand(
    evaluator: &Evaluator,
    obj: &Value,
    old: Option<&Value>,
    quotas: &[Value],
    now_unix: i64,
) -> Result<Vec<Charge>, Refusal> {
    let mut matching = Vec::new();
    for q in quotas {
        let name = name_of(q).to_string();
        let hard = parse_list(q.pointer("/status/hard"));
        let used = parse_list(q.pointer("/status/used"));
        let tracked = evaluator.matching(hard.keys().map(String::as_str));
        if tracked.is_empty() || !evaluator.matches_scopes(&quota_scopes(q), obj, now_unix) {
            continue;
        }
        if let Err(why) = evaluator.constraints(&tracked, obj) {
            return Err(Refusal::Constraints { quota: name, why });
        }
        let unknown: Vec<&String> = tracked.iter().filter(|r| !used.contains_key(*r)).collect();
        if !unknown.is_empty() {
            let mut names: Vec<&str> = tracked.iter().map(String::as_str).collect();
            names.sort_unstable();
            return Err(Refusal::StatusUnknown {
                quota: name,
                resources: names.join(","),
            });
        }
        matching.push((name, hard));
    }
    if matching.is_empty() {
        return Ok(Vec::new());
    }
    let usage = evaluator.usage(obj, now_unix);
    let negative: Vec<&str> = usage
        .iter()
        .filter(|(_, q)| q.milli_value() < 0)
        .map(|(k, _)| k.as_str())
        .collect();
    if !negative.is_empty() {
        return Err(Refusal::Negative(negative.join(",")));
    }
    let usage = match old {
        Some(old) => subtract_non_negative(&usage, &evaluator.usage(old, now_unix)),
        None => usage,
    };
    let usage: ResourceList = usage.into_iter().filter(|(_, q)| !q.is_zero()).collect();
    Ok(matching
        .into_iter()
        .map(|(quota, hard)| Charge {
            quota,
            delta: mask(&usage, hard.keys()),
        })
        .filter(|c| !c.delta.is_empty())
        .collect())
}

/// Whether `charge` fits within `quota`'s `status.hard` on top of its `status.used`, only the
/// resources the quota limits counted; the refusal names what would exceed its limit.
pub fn fits(charge: &Charge, quota: &Value) -> Result<(), Refusal> {
    let hard = parse_list(quota.pointer("/status/hard"));
    let used = parse_list(quota.pointer("/status/used"));
    let requested = mask(&charge.delta, hard.keys());
    let new_used = add(&used, &requested);
    let over = exceeded(&mask(&new_used, requested.keys()), &hard);
    if over.is_empty() {
        return Ok(());
    }
    Err(Refusal::Exceeded {
        quota: name_of(quota).to_string(),
        requested: pretty(&mask(&requested, over.iter())),
        used: pretty(&mask(&used, over.iter())),
        limited: pretty(&mask(&hard, over.iter())),
    })
}

/// Whether what `charged` holds covers `demand`: each quota asked is charged at least as much
/// of every resource it is asked for.
pub fn covers(charged: &[Charge], demand: &[Charge]) -> bool {
    demand.iter().all(|want| {
        charged.iter().any(|have| {
            have.quota == want.quota
                && want
                    .delta
                    .iter()
                    .all(|(k, q)| have.delta.get(k).is_some_and(|h| h >= q))
        })
    })
}

/// `a` less `b`, no resource below zero (upstream's SubtractWithNonNegativeResult).
fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    subtract(a, b)
        .into_iter()
        .map(|(k, q)| {
            let q = if q.milli_value() < 0 {
                Quantity::from_milli(0)
            } else {
                q
            };
            (k, q)
        })
        .collect()
}

fn name_of(quota: &Value) -> &str {
    quota
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
