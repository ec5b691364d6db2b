//! apps/v1 status validation and ControllerRevisions, as upstream's apps validation: a
//! workload's status counts are never negative, never more than `status.replicas`, available
//! never more than ready, and `collisionCount` never goes down; a ControllerRevision has data
//! that never changes and a non-negative revision.

use serde_json::Value;

use super::field::FieldError;
use super::names::{immutable, validate_object_meta, NameRule};
use super::rules::non_negative_int;
use super::semantic;
use super::workloads::Workload;
use super::Strategy;

const OVER_REPLICAS: &str = "cannot be greater than status.replicas";
const OVER_READY: &str = "cannot be greater than readyReplicas";

/// A status count, `null` read as absent.
fn count<'a>(status: &'a Value, name: &str) -> Option<&'a Value> {
    status.get(name).filter(|v| !v.is_null())
}

/// Upstream's value of an int32 count: 0 when absent.
fn value(status: &Value, name: &str) -> i64 {
    count(status, name).and_then(Value::as_i64).unwrap_or(0)
}

fn non_negative(status: &Value, names: &[&str], errs: &mut Vec<FieldError>) {
    for name in names {
        errs.extend(non_negative_int(
            &format!("status.{name}"),
            count(status, name),
        ));
    }
}

/// `name` may not be more than `limit` (another count), with upstream's message.
fn at_most(status: &Value, name: &str, limit: &str, detail: &str, errs: &mut Vec<FieldError>) {
    let n = value(status, name);
    if n > value(status, limit) {
        errs.push(FieldError::invalid(format!("status.{name}"), n, detail));
    }
}

/// A workload's status, as upstream's ValidateDeploymentStatus, ValidateReplicaSetStatus and
/// validateDaemonSetStatus, and `collisionCount` not decremented (upstream's IsDecremented).
pub fn validate_status(kind: Workload, new: &Value, old: &Value) -> Vec<FieldError> {
    let null = Value::Null;
    let status = new.get("status").unwrap_or(&null);
    let mut errs = Vec::new();
    match kind {
        Workload::Deployment => {
            non_negative(
                status,
                &[
                    "observedGeneration",
                    "replicas",
                    "updatedReplicas",
                    "readyReplicas",
                    "availableReplicas",
                    "unavailableReplicas",
                    "terminatingReplicas",
                    "collisionCount",
                ],
                &mut errs,
            );
            for name in ["updatedReplicas", "readyReplicas", "availableReplicas"] {
                at_most(status, name, "replicas", OVER_REPLICAS, &mut errs);
            }
            at_most(
                status,
                "availableReplicas",
                "readyReplicas",
                OVER_READY,
                &mut errs,
            );
        }
        Workload::ReplicaSet => {
            non_negative(
                status,
                &[
                    "replicas",
                    "fullyLabeledReplicas",
                    "readyReplicas",
                    "availableReplicas",
                    "terminatingReplicas",
                    "observedGeneration",
                ],
                &mut errs,
            );
            for name in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
                at_most(status, name, "replicas", OVER_REPLICAS, &mut errs);
            }
            at_most(
                status,
                "availableReplicas",
                "readyReplicas",
                OVER_READY,
                &mut errs,
            );
        }
        Workload::DaemonSet => non_negative(
            status,
            &[
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
                "observedGeneration",
                "updatedNumberScheduled",
                "numberAvailable",
                "numberUnavailable",
                "collisionCount",
            ],
            &mut errs,
        ),
    }
    if kind != Workload::ReplicaSet {
        let collisions = |o: &Value| o.pointer("/status/collisionCount").and_then(Value::as_i64);
        match (collisions(new), collisions(old)) {
            (None, Some(_)) => errs.push(FieldError::invalid(
                "status.collisionCount",
                0,
                "cannot be decremented",
            )),
            (Some(n), Some(o)) if n < o => errs.push(FieldError::invalid(
                "status.collisionCount",
                n,
                "cannot be decremented",
            )),
            _ => {}
        }
    }
    errs
}

/// apps/v1 ControllerRevision: the history of a DaemonSet's (or StatefulSet's) templates.
pub struct ControllerRevisionStrategy;

impl Strategy for ControllerRevisionStrategy {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_object_meta(obj, NameRule::Subdomain);
        if obj.get("data").is_none_or(Value::is_null) {
            errs.push(FieldError::required("data", "data is mandatory"));
        }
        errs.extend(non_negative_int("revision", obj.get("revision")));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        if !semantic::equal(new.get("data"), old.get("data")) {
            errs.extend(immutable(
                "data",
                Some(new.get("data").unwrap_or(&Value::Null)),
                Some(old.get("data").unwrap_or(&Value::Null)),
            ));
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(kind: Workload, status: Value, old: Value) -> Vec<String> {
        validate_status(
            kind,
            &json!({ "status": status }),
            &json!({ "status": old }),
        )
        .iter()
        .map(ToString::to_string)
        .collect()
    }

    #[test]
    fn workload_statuses_as_upstream() {
        use Workload::{DaemonSet as DS, Deployment as D, ReplicaSet as RS};
        let cases: Vec<(Workload, Value, Value, Vec<&str>)> = vec![
            (D, json!({}), json!({}), vec![]),
            (D, json!({"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2,
                       "unavailableReplicas": 1, "observedGeneration": 4, "collisionCount": 1}), json!({}), vec![]),
            // As upstream: the other counts (0) are then more than replicas.
            (D, json!({"replicas": -1}), json!({}), vec![
                "status.replicas: Invalid value: -1: must be greater than or equal to 0",
                "status.updatedReplicas: Invalid value: 0: cannot be greater than status.replicas",
                "status.readyReplicas: Invalid value: 0: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 0: cannot be greater than status.replicas",
            ]),
            (D, json!({"observedGeneration": -1}), json!({}), vec!["status.observedGeneration: Invalid value: -1: must be greater than or equal to 0"]),
            (D, json!({"replicas": 1, "readyReplicas": 2, "availableReplicas": 2}), json!({}), vec![
                "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas",
            ]),
            (D, json!({"replicas": 3, "readyReplicas": 1, "availableReplicas": 2}), json!({}),
                vec!["status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas"]),
            (D, json!({"replicas": 1, "updatedReplicas": 2}), json!({}),
                vec!["status.updatedReplicas: Invalid value: 2: cannot be greater than status.replicas"]),
            (D, json!({"collisionCount": 1}), json!({"collisionCount": 2}),
                vec!["status.collisionCount: Invalid value: 1: cannot be decremented"]),
            (D, json!({}), json!({"collisionCount": 2}),
                vec!["status.collisionCount: Invalid value: 0: cannot be decremented"]),
            (D, json!({"terminatingReplicas": -1}), json!({}),
                vec!["status.terminatingReplicas: Invalid value: -1: must be greater than or equal to 0"]),
            (RS, json!({"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 1, "availableReplicas": 1}), json!({}), vec![]),
            (RS, json!({"replicas": 1, "fullyLabeledReplicas": 2}), json!({}),
                vec!["status.fullyLabeledReplicas: Invalid value: 2: cannot be greater than status.replicas"]),
            (RS, json!({"replicas": 2, "readyReplicas": -1}), json!({}), vec![
                "status.readyReplicas: Invalid value: -1: must be greater than or equal to 0",
                "status.availableReplicas: Invalid value: 0: cannot be greater than readyReplicas",
            ]),
            (RS, json!({}), json!({"collisionCount": 2}), vec![]),
            (DS, json!({"currentNumberScheduled": 1, "desiredNumberScheduled": 1, "numberMisscheduled": 0, "numberReady": 1}), json!({}), vec![]),
            (DS, json!({"numberReady": -1, "numberUnavailable": -2}), json!({}), vec![
                "status.numberReady: Invalid value: -1: must be greater than or equal to 0",
                "status.numberUnavailable: Invalid value: -2: must be greater than or equal to 0",
            ]),
            (DS, json!({"collisionCount": 0}), json!({"collisionCount": 1}),
                vec!["status.collisionCount: Invalid value: 0: cannot be decremented"]),
        ];
        for (kind, status, old, want) in cases {
            assert_eq!(
                messages(kind, status.clone(), old),
                want,
                "{kind:?} {status}"
            );
        }
    }

    #[test]
    fn controller_revisions_as_upstream() {
        let s = ControllerRevisionStrategy;
        let rev = json!({"metadata": {"name": "web-5d8f9"}, "data": {"spec": {}}, "revision": 1});
        assert!(s.validate_create(&rev).is_empty());
        let mut bad = rev.clone();
        bad["revision"] = json!(-1);
        bad.as_object_mut().unwrap().remove("data");
        let errs: Vec<String> = s
            .validate_create(&bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            [
                "data: Required value: data is mandatory",
                "revision: Invalid value: -1: must be greater than or equal to 0"
            ]
        );
        let mut bumped = rev.clone();
        bumped["revision"] = json!(2);
        assert!(s.validate_update(&bumped, &rev).is_empty());
        let mut changed = rev.clone();
        changed["data"] = json!({"spec": {"template": {}}, "x": 1});
        assert_eq!(
            s.validate_update(&changed, &rev)[0].to_string(),
            "data: Invalid value: {\"spec\":{\"template\":{}},\"x\":1}: field is immutable"
        );
    }
}
