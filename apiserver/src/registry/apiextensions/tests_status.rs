//! The status controllers' decisions: accepted names and conflicts, Established, Terminating,
//! API approval, and conditions keeping their transition time.

use serde_json::{json, Value};

use super::tests::{created, crontab, crontab_with};
use super::*;

const T0: &str = "2024-01-01T00:00:00Z";
const T1: &str = "2024-01-01T00:05:00Z";

/// A stored CRD whose names were accepted and which is established.
fn accepted(mut crd: Value) -> Value {
    crd = created(crd);
    let status = naming_status(&crd, &[], T0).expect("names to accept");
    crd["status"] = status;
    let status = establish_status(&crd, T0).expect("to establish");
    crd["status"] = status;
    crd
}

#[test]
fn fresh_names_are_accepted_then_established() {
    let crd = created(crontab());
    let outcome = accepted_names(&crd, &[]);
    assert_eq!(
        outcome.accepted_names,
        json!({"plural": "crontabs", "singular": "crontab", "shortNames": ["ct"], "kind": "CronTab", "listKind": "CronTabList"})
    );
    assert_eq!(
        outcome.names_accepted,
        condition("NamesAccepted", "True", "NoConflicts", "no conflicts found")
    );
    assert_eq!(
        outcome.established,
        condition(
            "Established",
            "False",
            "Installing",
            "the initial names have been accepted"
        )
    );

    let crd = accepted(crontab());
    assert_eq!(
        crd["status"]["conditions"],
        json!([
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": T0, "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": T0, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
        ])
    );
    assert!(is_condition_true(&crd, "Established"));
    // Nothing more to do once names match and the CRD is established.
    assert_eq!(naming_status(&crd, std::slice::from_ref(&crd), T1), None);
    assert_eq!(establish_status(&crd, T1), None);
}

#[test]
fn taken_names_conflict_as_upstream() {
    let first = accepted(crontab());
    // Another CRD of the group asking for the same plural (under another CRD name) and kind.
    let second = created(crontab_with(|c| {
        c["metadata"]["name"] = json!("crontabs2.stable.example.com");
        c["spec"]["names"] = json!({"plural": "crontabs", "singular": "crontab2", "kind": "CronTab2", "shortNames": ["ct"]});
    }));
    let outcome = accepted_names(&second, std::slice::from_ref(&first));
    assert_eq!(
        outcome.names_accepted,
        condition(
            "NamesAccepted",
            "False",
            "ShortNamesConflict",
            "\"ct\" is already in use"
        )
    );
    assert_eq!(
        outcome.accepted_names,
        json!({"plural": "", "singular": "crontab2", "kind": "CronTab2", "listKind": "CronTab2List"})
    );
    assert_eq!(
        outcome.established,
        condition(
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted"
        )
    );
    let status = naming_status(&second, std::slice::from_ref(&first), T0).expect("a status");
    assert_eq!(status["conditions"][0]["reason"], "ShortNamesConflict");

    let kinds = created(crontab_with(|c| {
        c["metadata"]["name"] = json!("jobs.stable.example.com");
        c["spec"]["names"] = json!({"plural": "jobs", "kind": "CronTab"});
    }));
    let outcome = accepted_names(&kinds, std::slice::from_ref(&first));
    assert_eq!(
        outcome.names_accepted,
        // Kind and listKind both conflict; the last one checked names the reason.
        condition(
            "NamesAccepted",
            "False",
            "ListKindConflict",
            "\"CronTabList\" is already in use"
        )
    );
    // Another group is no conflict.
    let elsewhere = created(crontab_with(|c| {
        c["metadata"]["name"] = json!("crontabs.other.example.com");
        c["spec"]["group"] = json!("other.example.com");
    }));
    assert_eq!(
        accepted_names(&elsewhere, &[first]).names_accepted["reason"],
        "NoConflicts"
    );
}

#[test]
fn conditions_keep_their_transition_time_while_unchanged() {
    let mut status = json!({});
    set_condition(
        &mut status,
        condition("Terminating", "True", "InstanceDeletionPending", "p"),
        T0,
    );
    set_condition(&mut status, Termination::InProgress.condition(), T1);
    assert_eq!(
        status["conditions"],
        json!([{"type": "Terminating", "status": "True", "lastTransitionTime": T0,
            "reason": "InstanceDeletionInProgress", "message": "CustomResource deletion is in progress"}])
    );
    set_condition(&mut status, Termination::Completed.condition(), T1);
    assert_eq!(
        status["conditions"][0],
        json!({"type": "Terminating", "status": "False", "lastTransitionTime": T1,
            "reason": "InstanceDeletionCompleted", "message": "removed all instances"})
    );
    assert_eq!(
        Termination::Pending.condition()["message"],
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
    );
    assert_eq!(
        Termination::CheckFailed("timed out".into()).condition()["message"],
        "could not confirm zero CustomResources remaining: timed out"
    );
}

#[test]
fn protected_groups_get_an_approval_condition() {
    assert_eq!(api_approval_condition(&crontab()), None);
    let mut crd = crontab();
    crd["spec"]["group"] = json!("x.k8s.io");
    crd["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1111"});
    assert_eq!(
        api_approval_condition(&crd),
        Some(condition(
            "KubernetesAPIApprovalPolicyConformant",
            "True",
            "ApprovedAnnotation",
            "approved in https://github.com/kubernetes/enhancements/pull/1111"
        ))
    );
}

#[test]
fn deletion_waits_for_the_cleanup_finalizer() {
    let mut crd = accepted(crontab());
    assert!(!awaiting_cleanup(&crd));
    crd["metadata"]["deletionTimestamp"] = json!(T1);
    crd["metadata"]["finalizers"] = json!([CLEANUP_FINALIZER]);
    assert!(awaiting_cleanup(&crd));
}

#[test]
fn the_naming_sync_writes_only_changes() {
    let first = accepted(crontab());
    let mut second = created(crontab_with(|c| {
        c["metadata"]["name"] = json!("crontabs2.stable.example.com");
        c["spec"]["names"] =
            json!({"plural": "crontabs2", "kind": "CronTab2", "shortNames": ["ct"]});
    }));
    second["status"] = naming_status(&second, std::slice::from_ref(&first), T0).expect("a status");
    // The same conflict again: nothing to write.
    assert_eq!(
        naming_status(&second, std::slice::from_ref(&first), T1),
        None
    );
    assert_eq!(establish_status(&second, T1), None);
    // Once the other CRD is gone, the short name is taken and the CRD can be established.
    let status = naming_status(&second, &[], T1).expect("a status");
    assert_eq!(status["acceptedNames"]["shortNames"], json!(["ct"]));
    assert_eq!(
        status["conditions"][0],
        json!({"type": "NamesAccepted", "status": "True", "lastTransitionTime": T1, "reason": "NoConflicts", "message": "no conflicts found"})
    );
    second["status"] = status;
    assert!(establish_status(&second, T1).is_some());
}
