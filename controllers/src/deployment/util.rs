//! Pure Deployment arithmetic, as upstream's deployment/util: the pod-template hash, revision
//! annotations, maxSurge/maxUnavailable fenceposts, proportional scaling, status and
//! conditions, and the completeness / progress / timeout tests `kubectl rollout status` reads.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

pub const HASH_LABEL: &str = "pod-template-hash";
pub const REVISION: &str = "deployment.kubernetes.io/revision";
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Condition reasons, as upstream.
pub const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
pub const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
pub const RS_UPDATED: &str = "ReplicaSetUpdated";
pub const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
pub const TIMED_OUT: &str = "ProgressDeadlineExceeded";
pub const PAUSED: &str = "DeploymentPaused";
pub const RESUMED: &str = "DeploymentResumed";
pub const MIN_AVAILABLE: &str = "MinimumReplicasAvailable";
pub const MIN_UNAVAILABLE: &str = "MinimumReplicasUnavailable";

/// Upstream's alphabet for generated name suffixes (no vowels, no look-alikes).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Upstream's rand.SafeEncodeString: every byte mapped into [`ALPHANUMS`].
pub fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| ALPHANUMS[b as usize % ALPHANUMS.len()] as char)
        .collect()
}

/// The `pod-template-hash` of a template (upstream's ComputeHash: FNV-1a over the template,
/// then the collision count, then SafeEncodeString of the decimal value). The template is
/// hashed in its canonical JSON form.
pub fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let mut bytes = serde_json::to_vec(template).unwrap_or_default();
    if let Some(c) = collision_count {
        bytes.extend_from_slice(&(c as u32).to_le_bytes());
        bytes.extend_from_slice(&[0, 0, 0, 0]);
    }
    safe_encode(&tinykube_proto::hash::fnv1a_32(&bytes).to_string())
}

/// Whether two templates are equal once the `pod-template-hash` label is ignored.
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    let strip = |t: &PodTemplateSpec| {
        let mut t = t.clone();
        if let Some(m) = t.metadata.as_mut() {
            if let Some(l) = m.labels.as_mut() {
                l.remove(HASH_LABEL);
                if l.is_empty() {
                    m.labels = None;
                }
            }
        }
        serde_json::to_value(t).unwrap_or_default()
    };
    strip(a) == strip(b)
}

pub fn replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1).max(0)
}

pub fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0)
}

pub fn rs_available(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
}

pub fn rs_ready(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0)
}

pub fn rs_actual(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().map(|s| s.replicas).unwrap_or(0)
}

pub fn revision(rs: &ReplicaSet) -> i64 {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

pub fn is_rolling(d: &Deployment) -> bool {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("RollingUpdate")
        == "RollingUpdate"
}

/// Upstream's GetScaledValueFromIntOrPercent.
pub fn scaled_value(v: &IntOrString, total: i32, round_up: bool) -> i32 {
    match v {
        IntOrString::Int(i) => *i,
        IntOrString::String(s) => {
            let Some(p) = s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) else {
                return s.parse().unwrap_or(0);
            };
            let product = p * i64::from(total);
            let v = if round_up {
                (product + 99).div_euclid(100)
            } else {
                product.div_euclid(100)
            };
            v as i32
        }
    }
}

/// maxSurge and maxUnavailable resolved against `spec.replicas` (upstream's ResolveFenceposts:
/// both zero would block a rollout, so unavailable becomes 1).
pub fn fenceposts(d: &Deployment) -> (i32, i32) {
    let desired = replicas(d);
    let ru = d
        .spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    let quarter = IntOrString::String("25%".into());
    let surge_v = ru
        .and_then(|r| r.max_surge.clone())
        .unwrap_or(quarter.clone());
    let unavail_v = ru
        .and_then(|r| r.max_unavailable.clone())
        .unwrap_or(quarter);
    let surge = scaled_value(&surge_v, desired, true);
    let mut unavailable = scaled_value(&unavail_v, desired, false);
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable)
}

pub fn max_surge(d: &Deployment) -> i32 {
    if is_rolling(d) {
        fenceposts(d).0
    } else {
        0
    }
}

/// Upstream's MaxUnavailable: 0 for Recreate or no replicas, never above `spec.replicas`.
pub fn max_unavailable(d: &Deployment) -> i32 {
    if !is_rolling(d) || replicas(d) == 0 {
        return 0;
    }
    fenceposts(d).1.min(replicas(d))
}

/// The replicas the new ReplicaSet may have now (upstream's NewRSNewReplicas).
pub fn new_rs_new_replicas(d: &Deployment, all: &[&ReplicaSet], new_rs_replicas: i32) -> i32 {
    if !is_rolling(d) {
        return replicas(d);
    }
    let current: i32 = all.iter().map(|rs| rs_replicas(rs)).sum();
    let max_total = replicas(d) + max_surge(d);
    if current >= max_total {
        return new_rs_replicas;
    }
    let up = (max_total - current).min(replicas(d) - new_rs_replicas);
    new_rs_replicas + up.max(0)
}

/// Upstream's GetProportion for one ReplicaSet during proportional scaling.
pub fn proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    let current = rs_replicas(rs);
    if current == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = if replicas(d) == 0 {
        -current
    } else {
        let deployment_replicas = replicas(d) + max_surge(d);
        let annotated = rs
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(MAX_REPLICAS))
            .and_then(|v| v.parse::<i32>().ok())
            .unwrap_or_else(|| d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0));
        if annotated == 0 {
            0
        } else {
            let size = f64::from(current) * f64::from(deployment_replicas) / f64::from(annotated);
            size.round() as i32 - current
        }
    };
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// Copy the Deployment's annotations onto a ReplicaSet (all but kubectl's and the revision
/// bookkeeping); whether anything changed.
pub fn copy_annotations(d: &Deployment, rs: &mut ReplicaSet) -> bool {
    let skip = |k: &str| {
        [
            LAST_APPLIED,
            REVISION,
            REVISION_HISTORY,
            DESIRED_REPLICAS,
            MAX_REPLICAS,
        ]
        .contains(&k)
    };
    let mut changed = false;
    let target = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    for (k, v) in d.metadata.annotations.iter().flatten() {
        if skip(k) || target.get(k) == Some(v) {
            continue;
        }
        target.insert(k.clone(), v.clone());
        changed = true;
    }
    changed
}

/// Set the desired/max replicas annotations; whether they changed.
pub fn set_replicas_annotations(rs: &mut ReplicaSet, desired: i32, max: i32) -> bool {
    let a = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (k, v) in [(DESIRED_REPLICAS, desired), (MAX_REPLICAS, max)] {
        let v = v.to_string();
        if a.get(k) != Some(&v) {
            a.insert(k.to_string(), v);
            changed = true;
        }
    }
    changed
}

pub fn condition<'a>(status: &'a DeploymentStatus, kind: &str) -> Option<&'a DeploymentCondition> {
    status.conditions.iter().flatten().find(|c| c.type_ == kind)
}

/// A condition updated and transitioned at `now`.
pub fn new_condition(
    kind: &str,
    status: &str,
    reason: &str,
    message: String,
    now: Timestamp,
) -> DeploymentCondition {
    let now = Time(now);
    DeploymentCondition {
        type_: kind.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now),
    }
}

/// Upstream's SetDeploymentCondition: the same status and reason change nothing; the same
/// status keeps its transition time.
pub fn set_condition(status: &mut DeploymentStatus, mut c: DeploymentCondition) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    if let Some(old) = conditions.iter().find(|o| o.type_ == c.type_) {
        if old.status == c.status && old.reason == c.reason {
            return;
        }
        if old.status == c.status {
            c.last_transition_time = old.last_transition_time.clone();
        }
    }
    conditions.retain(|o| o.type_ != c.type_);
    conditions.push(c);
}

pub fn remove_condition(status: &mut DeploymentStatus, kind: &str) {
    if let Some(c) = status.conditions.as_mut() {
        c.retain(|o| o.type_ != kind);
    }
}

fn nonzero(v: i32) -> Option<i32> {
    (v != 0).then_some(v)
}

/// Upstream's calculateStatus (counts that are zero are omitted, as upstream's omitempty); a
/// changed Available condition is stamped `now`.
pub fn calculate_status(
    d: &Deployment,
    all: &[&ReplicaSet],
    new_rs: Option<&ReplicaSet>,
    now: Timestamp,
) -> DeploymentStatus {
    let available: i32 = all.iter().map(|rs| rs_available(rs)).sum();
    let unavailable = (replicas(d) - available).max(0);
    let old = d.status.clone().unwrap_or_default();
    let mut status = DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas: nonzero(all.iter().map(|rs| rs_actual(rs)).sum()),
        updated_replicas: nonzero(new_rs.map(rs_actual).unwrap_or(0)),
        ready_replicas: nonzero(all.iter().map(|rs| rs_ready(rs)).sum()),
        available_replicas: nonzero(available),
        unavailable_replicas: nonzero(unavailable),
        // Upstream's terminatingReplicas: unknown (absent) if any ReplicaSet does not say.
        terminating_replicas: all
            .iter()
            .map(|rs| rs.status.as_ref().and_then(|s| s.terminating_replicas))
            .sum(),
        collision_count: old.collision_count,
        conditions: old.conditions.clone(),
    };
    if available >= replicas(d) - max_unavailable(d) {
        set_condition(
            &mut status,
            new_condition(
                "Available",
                "True",
                MIN_AVAILABLE,
                "Deployment has minimum availability.".into(),
                now,
            ),
        );
    } else {
        set_condition(
            &mut status,
            new_condition(
                "Available",
                "False",
                MIN_UNAVAILABLE,
                "Deployment does not have minimum availability.".into(),
                now,
            ),
        );
    }
    status
}

fn count(v: Option<i32>) -> i32 {
    v.unwrap_or(0)
}

/// Upstream's DeploymentComplete.
pub fn is_complete(d: &Deployment, s: &DeploymentStatus) -> bool {
    let want = replicas(d);
    count(s.updated_replicas) == want
        && count(s.replicas) == want
        && count(s.available_replicas) == want
        && s.observed_generation >= d.metadata.generation
}

/// Upstream's DeploymentProgressing: the new status moved forward from the current one.
pub fn is_progressing(d: &Deployment, s: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let old_old = count(old.replicas) - count(old.updated_replicas);
    let new_old = count(s.replicas) - count(s.updated_replicas);
    new_old < old_old
        || count(s.updated_replicas) > count(old.updated_replicas)
        || count(s.available_replicas) > count(old.available_replicas)
        || count(s.ready_replicas) > count(old.ready_replicas)
}

/// `progressDeadlineSeconds`, unless it is unset or MaxInt32 (no deadline).
pub fn progress_deadline(d: &Deployment) -> Option<i32> {
    d.spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .filter(|s| *s != i32::MAX)
}

/// Upstream's DeploymentTimedOut.
pub fn is_timed_out(d: &Deployment, s: &DeploymentStatus, now: Timestamp) -> bool {
    let Some(deadline) = progress_deadline(d) else {
        return false;
    };
    let Some(c) = condition(s, "Progressing") else {
        return false;
    };
    match c.reason.as_deref() {
        Some(NEW_RS_AVAILABLE) => false,
        Some(TIMED_OUT) => true,
        _ => c.last_update_time.as_ref().is_some_and(|t| {
            t.0.checked_add(k8s_openapi::jiff::SignedDuration::from_secs(i64::from(
                deadline,
            )))
            .is_ok_and(|end| end < now)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{
        DeploymentSpec, DeploymentStrategy, ReplicaSetSpec, RollingUpdateDeployment,
    };

    fn deployment(replicas: i32, surge: IntOrString, unavailable: IntOrString) -> Deployment {
        Deployment {
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                strategy: Some(DeploymentStrategy {
                    type_: Some("RollingUpdate".into()),
                    rolling_update: Some(RollingUpdateDeployment {
                        max_surge: Some(surge),
                        max_unavailable: Some(unavailable),
                    }),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pct(s: &str) -> IntOrString {
        IntOrString::String(s.into())
    }

    #[test]
    fn safe_encode_as_upstream() {
        // '0'..'9' are bytes 48..57: 48 % 27 = 21 -> '4'.
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
        let hash = compute_hash(&PodTemplateSpec::default(), None);
        assert!(hash.len() >= 8 && hash.len() <= 10, "{hash}");
        assert_ne!(hash, compute_hash(&PodTemplateSpec::default(), Some(1)));
    }

    #[test]
    fn fenceposts_round_surge_up_and_unavailable_down() {
        let table = [
            (10, pct("25%"), pct("25%"), (3, 2)),
            (3, pct("25%"), pct("25%"), (1, 0)),
            (4, IntOrString::Int(0), IntOrString::Int(0), (0, 1)),
            (10, IntOrString::Int(2), pct("50%"), (2, 5)),
            (1, pct("0%"), pct("0%"), (0, 1)),
        ];
        for (n, s, u, want) in table {
            assert_eq!(fenceposts(&deployment(n, s, u)), want, "{n}");
        }
    }

    #[test]
    fn new_replica_set_grows_within_max_surge() {
        let d = deployment(10, pct("25%"), pct("25%"));
        let rs = |n: i32| ReplicaSet {
            spec: Some(ReplicaSetSpec {
                replicas: Some(n),
                ..Default::default()
            }),
            ..Default::default()
        };
        let (old, new) = (rs(10), rs(0));
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new], 0), 3);
        let (old, new) = (rs(8), rs(3));
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new], 3), 5);
        let (old, new) = (rs(10), rs(3));
        assert_eq!(
            new_rs_new_replicas(&d, &[&old, &new], 3),
            3,
            "at the surge limit"
        );
    }

    #[test]
    fn proportions_follow_the_max_replicas_annotation() {
        // 10 -> 15 with 25% surge: an RS holding 5 of an annotated max of 13 gets 5*(15+4)/13.
        let d = deployment(15, pct("25%"), pct("25%"));
        let mut rs = ReplicaSet {
            spec: Some(ReplicaSetSpec {
                replicas: Some(5),
                ..Default::default()
            }),
            ..Default::default()
        };
        rs.metadata.annotations = Some([(MAX_REPLICAS.to_string(), "13".to_string())].into());
        assert_eq!(proportion(&rs, &d, 6, 0), 2);
        assert_eq!(
            proportion(&rs, &d, 6, 5),
            1,
            "capped by what is left to add"
        );
    }

    #[test]
    fn conditions_keep_transition_time_for_the_same_status() {
        let mut s = DeploymentStatus::default();
        let (t0, t1) = (Timestamp::UNIX_EPOCH, Timestamp::from_second(60).unwrap());
        let first = new_condition("Progressing", "True", NEW_RS_CREATED, "a".into(), t0);
        set_condition(&mut s, first);
        set_condition(
            &mut s,
            new_condition("Progressing", "True", RS_UPDATED, "b".into(), t1),
        );
        let c = condition(&s, "Progressing").unwrap();
        assert_eq!(c.reason.as_deref(), Some(RS_UPDATED));
        assert_eq!(c.last_transition_time, Some(Time(t0)));
        assert_eq!(c.last_update_time, Some(Time(t1)));
    }

    #[test]
    fn percent_values_round_as_upstream() {
        let table = [
            (pct("25%"), 3, true, 1),
            (pct("25%"), 3, false, 0),
            (pct("50%"), 5, true, 3),
            (IntOrString::Int(7), 3, true, 7),
        ];
        for (v, total, up, want) in table {
            assert_eq!(scaled_value(&v, total, up), want, "{v:?} of {total}");
        }
    }
}
