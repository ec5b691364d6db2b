//! Pure PodDisruptionBudget arithmetic, as upstream's disruption controller does it: how many
//! pods a budget expects and needs healthy, which evictions in `status.disruptedPods` still
//! count, how many pods are healthy, and the status (with its `DisruptionAllowed` condition)
//! that follows. No I/O; the clock is a parameter.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{
    PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    Condition, LabelSelector, OwnerReference, Time,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::util::{controller_ref, is_pod_ready};

/// How long an eviction the API server approved (an entry of `status.disruptedPods`) keeps
/// its pod out of the healthy count while the pod is not yet seen terminating (upstream's
/// DeletionTimeout).
pub const DELETION_TIMEOUT: SignedDuration = SignedDuration::from_secs(120);

/// The condition type and its reasons, as upstream's policy API names them.
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";
pub const SUFFICIENT_PODS: &str = "SufficientPods";
pub const INSUFFICIENT_PODS: &str = "InsufficientPods";
pub const SYNC_FAILED: &str = "SyncFailed";

/// Why the expected pod count could not be worked out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("found no controllers for pod {0:?}")]
    NoController(String),
    /// A controller reference a finder could not follow (unknown kind, no scale subresource).
    #[error("{0}")]
    Finder(String),
    #[error("invalid value for IntOrString: {0}")]
    IntOrPercent(String),
}

/// A controller of some pods and its scale (`spec.replicas`), keyed by its uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerScale {
    pub uid: String,
    pub scale: i32,
}

/// What a budget expects of its pods.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expected {
    /// `status.expectedPods`.
    pub count: i32,
    /// `status.desiredHealthy`.
    pub desired_healthy: i32,
    /// Names of matching pods no controller owns (counted out of percentages).
    pub unmanaged: Vec<String>,
}

/// Upstream's GetScaledValueFromIntOrPercent with rounding up: an integer as it is, `N%` of
/// `total`; anything else is an error.
pub fn scaled_value(v: &IntOrString, total: i32) -> Result<i32, BudgetError> {
    match v {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let Some(number) = s.strip_suffix('%') else {
                return Err(BudgetError::IntOrPercent(
                    "invalid type: string is not a percentage".into(),
                ));
            };
            let percent: i64 = number.parse().map_err(|_| {
                BudgetError::IntOrPercent(format!(
                    "invalid value {s:?}: strconv.Atoi: parsing {number:?}: invalid syntax"
                ))
            })?;
            let scaled = (percent * i64::from(total) + 99).div_euclid(100);
            Ok(scaled.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32)
        }
    }
}

/// Upstream's getExpectedScale: the sum of the scales of the controllers of `pods` (each
/// counted once), and the pods without a controller. `find` follows one controller reference
/// in a namespace; `Ok(None)` means no controller it knows answers to it.
pub fn expected_scale(
    pods: &[Arc<Pod>],
    mut find: impl FnMut(&OwnerReference, &str) -> Result<Option<ControllerScale>, BudgetError>,
) -> Result<(i32, Vec<String>), BudgetError> {
    let mut scales: BTreeMap<String, i32> = BTreeMap::new();
    let mut unmanaged = Vec::new();
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let Some(owner) = controller_ref(&pod.metadata) else {
            unmanaged.push(name);
            continue;
        };
        if scales.contains_key(&owner.uid) {
            continue;
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        match find(owner, ns)? {
            Some(found) => {
                scales.insert(found.uid, found.scale);
            }
            None => return Err(BudgetError::NoController(name)),
        }
    }
    let total = scales.values().fold(0i32, |a, s| a.saturating_add(*s));
    Ok((total, unmanaged))
}

/// Upstream's getExpectedPodCount: `maxUnavailable` and a percentage `minAvailable` work from
/// the controllers' scale; an integer `minAvailable` from the number of matching pods.
pub fn expected(
    spec: &PodDisruptionBudgetSpec,
    pods: &[Arc<Pod>],
    find: impl FnMut(&OwnerReference, &str) -> Result<Option<ControllerScale>, BudgetError>,
) -> Result<Expected, BudgetError> {
    if let Some(max_unavailable) = &spec.max_unavailable {
        let (count, unmanaged) = expected_scale(pods, find)?;
        let unavailable = scaled_value(max_unavailable, count)?;
        return Ok(Expected {
            count,
            desired_healthy: count.saturating_sub(unavailable).max(0),
            unmanaged,
        });
    }
    match &spec.min_available {
        Some(IntOrString::Int(min)) => Ok(Expected {
            count: pods.len() as i32,
            desired_healthy: *min,
            unmanaged: Vec::new(),
        }),
        Some(min @ IntOrString::String(_)) => {
            let (count, unmanaged) = expected_scale(pods, find)?;
            Ok(Expected {
                count,
                desired_healthy: scaled_value(min, count)?,
                unmanaged,
            })
        }
        None => Ok(Expected::default()),
    }
}

fn plus_timeout(t: &Time) -> Timestamp {
    t.0.checked_add(DELETION_TIMEOUT).unwrap_or(Timestamp::MAX)
}

/// The disrupted pods still pending after `now` (upstream's buildDisruptedPodMap): entries of
/// pods that are gone or already terminating are dropped, and so are entries older than
/// [`DELETION_TIMEOUT`], whose pods are returned as not deleted after all. Also when to look
/// again: the earliest time a kept entry expires.
pub fn disrupted_pods(
    pods: &[Arc<Pod>],
    recorded: Option<&BTreeMap<String, Time>>,
    now: Timestamp,
) -> (BTreeMap<String, Time>, Option<Timestamp>, Vec<Arc<Pod>>) {
    let mut kept = BTreeMap::new();
    let mut recheck: Option<Timestamp> = None;
    let mut not_deleted = Vec::new();
    let Some(recorded) = recorded else {
        return (kept, recheck, not_deleted);
    };
    for pod in pods {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = pod.metadata.name.clone().unwrap_or_default();
        let Some(at) = recorded.get(&name) else {
            continue;
        };
        let expires = plus_timeout(at);
        if expires < now {
            not_deleted.push(pod.clone());
        } else {
            recheck = Some(recheck.map_or(expires, |r| r.min(expires)));
            kept.insert(name, at.clone());
        }
    }
    (kept, recheck, not_deleted)
}

/// Upstream's countHealthyPods: Ready pods that are neither terminating nor about to be (a
/// recent entry in `disrupted`).
pub fn count_healthy(pods: &[Arc<Pod>], disrupted: &BTreeMap<String, Time>, now: Timestamp) -> i32 {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            let name = p.metadata.name.as_deref().unwrap_or_default();
            disrupted.get(name).is_none_or(|at| plus_timeout(at) <= now)
        })
        .filter(|p| is_pod_ready(p))
        .count() as i32
}

/// Healthy pods beyond the desired ones; none while the budget expects no pods, so that a
/// budget whose pods appear before its next sync is safe.
pub fn disruptions_allowed(current_healthy: i32, desired_healthy: i32, expected: i32) -> i32 {
    let allowed = current_healthy.saturating_sub(desired_healthy);
    if expected <= 0 || allowed <= 0 {
        0
    } else {
        allowed
    }
}

/// apimachinery's SetStatusCondition: add the condition, or update it in place (the transition
/// time moves only when the status changes). Whether anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == new.type_) else {
        conditions.push(new);
        return true;
    };
    let mut changed = false;
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time = new.last_transition_time;
        changed = true;
    }
    if existing.reason != new.reason {
        existing.reason = new.reason;
        changed = true;
    }
    if existing.message != new.message {
        existing.message = new.message;
        changed = true;
    }
    if existing.observed_generation != new.observed_generation {
        existing.observed_generation = new.observed_generation;
        changed = true;
    }
    changed
}

/// The condition upstream's UpdateDisruptionAllowedCondition sets for `status`.
fn allowed_condition(status: &PodDisruptionBudgetStatus, now: Timestamp) -> Condition {
    let allowed = status.disruptions_allowed.unwrap_or(0) > 0;
    Condition {
        type_: DISRUPTION_ALLOWED.into(),
        status: if allowed { "True" } else { "False" }.into(),
        reason: if allowed {
            SUFFICIENT_PODS
        } else {
            INSUFFICIENT_PODS
        }
        .into(),
        message: String::new(),
        observed_generation: status.observed_generation,
        last_transition_time: Time(now),
    }
}

/// Upstream's ConditionsAreUpToDate: the condition says what `disruptionsAllowed` says, for
/// the current generation.
pub fn conditions_up_to_date(pdb: &PodDisruptionBudget) -> bool {
    let Some(status) = &pdb.status else {
        return false;
    };
    let Some(cond) = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == DISRUPTION_ALLOWED)
    else {
        return false;
    };
    if status.observed_generation.unwrap_or(0) != pdb.metadata.generation.unwrap_or(0) {
        return false;
    }
    if status.disruptions_allowed.unwrap_or(0) > 0 {
        cond.status == "True" && cond.reason == SUFFICIENT_PODS
    } else {
        cond.status == "False" && cond.reason == INSUFFICIENT_PODS
    }
}

fn nonzero(generation: i64) -> Option<i64> {
    (generation != 0).then_some(generation)
}

/// Upstream's updatePdbStatus: the status the budget should have, or `None` when it already
/// has it.
pub fn next_status(
    pdb: &PodDisruptionBudget,
    current_healthy: i32,
    expected: &Expected,
    disrupted: BTreeMap<String, Time>,
    now: Timestamp,
) -> Option<PodDisruptionBudgetStatus> {
    let allowed = disruptions_allowed(current_healthy, expected.desired_healthy, expected.count);
    let old = pdb.status.clone().unwrap_or_default();
    let generation = pdb.metadata.generation.unwrap_or(0);
    let same_disrupted = {
        let recorded = old.disrupted_pods.clone().unwrap_or_default();
        recorded.len() == disrupted.len()
            && recorded
                .iter()
                .all(|(k, v)| disrupted.get(k).is_some_and(|d| d.0 == v.0))
    };
    if old.current_healthy.unwrap_or(0) == current_healthy
        && old.desired_healthy.unwrap_or(0) == expected.desired_healthy
        && old.expected_pods.unwrap_or(0) == expected.count
        && old.disruptions_allowed.unwrap_or(0) == allowed
        && same_disrupted
        && old.observed_generation.unwrap_or(0) == generation
        && conditions_up_to_date(pdb)
    {
        return None;
    }
    let mut status = PodDisruptionBudgetStatus {
        current_healthy: Some(current_healthy),
        desired_healthy: Some(expected.desired_healthy),
        expected_pods: Some(expected.count),
        disruptions_allowed: Some(allowed),
        disrupted_pods: (!disrupted.is_empty()).then_some(disrupted),
        observed_generation: nonzero(generation),
        conditions: old.conditions,
    };
    let condition = allowed_condition(&status, now);
    set_condition(status.conditions.get_or_insert_with(Vec::new), condition);
    Some(status)
}

/// Upstream's failSafe: when the status cannot be worked out, at least forbid disruptions
/// and say why in the condition.
pub fn fail_safe_status(
    pdb: &PodDisruptionBudget,
    message: &str,
    now: Timestamp,
) -> PodDisruptionBudgetStatus {
    let mut status = pdb.status.clone().unwrap_or_default();
    status.disruptions_allowed = Some(0);
    let condition = Condition {
        type_: DISRUPTION_ALLOWED.into(),
        status: "False".into(),
        reason: SYNC_FAILED.into(),
        message: message.to_string(),
        observed_generation: status.observed_generation,
        last_transition_time: Time(now),
    };
    set_condition(status.conditions.get_or_insert_with(Vec::new), condition);
    status
}

/// A label selector as Go's `%v` prints it in upstream's UnmanagedPods event:
/// `&LabelSelector{MatchLabels:map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}`.
pub fn selector_display(selector: Option<&LabelSelector>) -> String {
    let Some(s) = selector else {
        return "nil".into();
    };
    let labels: String = s
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}: {v},"))
        .collect();
    let expressions: String = s
        .match_expressions
        .iter()
        .flatten()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                e.key,
                e.operator,
                e.values.clone().unwrap_or_default().join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

#[cfg(test)]
mod tests;
