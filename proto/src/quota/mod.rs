//! Resource quota accounting, shared by the API server's ResourceQuota admission and the
//! controller manager's resource quota controller, as upstream's `pkg/quota/v1`: resource lists
//! and their arithmetic (`lists`), what each kind of object charges and which quota scopes it
//! falls in (`usage`), and the admission decision for one new object against the quotas of its
//! namespace (`check`).

mod lists;
mod usage;

pub use lists::{add, exceeded, mask, parse_list, pretty, subtract, to_json, ResourceList};
pub use usage::{
    pod_limits, pod_requests, quota_scopes, unix_seconds, Evaluator, ScopeRequirement,
};

use serde_json::Value;

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

/// Upstream's CheckRequest for the creation of `obj` (evaluated by `evaluator`) in a namespace
/// with `quotas`: every matching quota must know its usage, the object must satisfy each one's
/// constraints, and its usage must fit within each one's `status.hard`. Returns what to charge
/// to which quota (nothing when no quota tracks the object).
pub fn check(
    evaluator: &Evaluator,
    obj: &Value,
    quotas: &[Value],
    now_unix: i64,
) -> Result<Vec<Charge>, Refusal> {
    let mut matching = Vec::new();
    for q in quotas {
        let name = q
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
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
        matching.push((name, hard, used));
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
    let usage: ResourceList = usage.into_iter().filter(|(_, q)| !q.is_zero()).collect();
    if usage.is_empty() {
        return Ok(Vec::new());
    }
    let mut charges = Vec::new();
    for (quota, hard, used) in matching {
        let requested = mask(&usage, hard.keys());
        let new_used = add(&used, &requested);
        let over = exceeded(&mask(&new_used, requested.keys()), &hard);
        if !over.is_empty() {
            return Err(Refusal::Exceeded {
                quota,
                requested: pretty(&mask(&requested, over.iter())),
                used: pretty(&mask(&used, over.iter())),
                limited: pretty(&mask(&hard, over.iter())),
            });
        }
        if !requested.is_empty() {
            charges.push(Charge {
                quota,
                delta: requested,
            });
        }
    }
    Ok(charges)
}

#[cfg(test)]
mod tests;
