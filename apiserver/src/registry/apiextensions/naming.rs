//! The CRD status controllers' decisions as pure functions over JSON (no I/O): the names a CRD
//! may serve and its `NamesAccepted` condition (upstream's NamingConditionController), the
//! `Established` condition (the EstablishingController), the `Terminating` conditions of
//! deletion (the CRD REST storage and the CRDFinalizer), the
//! `KubernetesAPIApprovalPolicyConformant` condition (the APIApprovalController), and setting a
//! condition as upstream's SetCRDCondition does.

use serde_json::{json, Map, Value};

use super::spec::{approval_state, Approval};
use super::view::{str_list, text};

/// The finalizer the API server adds when a CRD is deleted, removed once its instances are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// What the naming controller decides for one CRD.
#[derive(Debug, Clone, PartialEq)]
pub struct NamesOutcome {
    /// `status.acceptedNames`: the requested names that are free or already this CRD's, the
    /// previously accepted ones otherwise.
    pub accepted_names: Value,
    /// The `NamesAccepted` condition (no `lastTransitionTime`; `set_condition` adds it).
    pub names_accepted: Value,
    /// The `Established` condition to store beside it: the current one, or
    /// False/`Installing` once the names are first accepted (False/`NotAccepted` before).
    pub established: Value,
}

/// A condition without its transition time.
pub fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message})
}

/// The condition of `kind` in `obj`'s status.
pub fn find_condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| text(c, "type") == kind)
}

/// Whether `obj` has condition `kind` with status True.
pub fn is_condition_true(obj: &Value, kind: &str) -> bool {
    find_condition(obj, kind).is_some_and(|c| text(c, "status") == "True")
}

/// Upstream's IsCRDConditionEquivalent: same type, status, reason and message.
fn equivalent(a: &Value, b: Option<&Value>) -> bool {
    b.is_some_and(|b| {
        ["type", "status", "reason", "message"]
            .iter()
            .all(|k| text(a, k) == text(b, k))
    })
}

/// Set `condition` in `status.conditions` (upstream's SetCRDCondition): a new type is appended
/// with `lastTransitionTime: now`; an existing one takes the new status, reason, message and
/// observedGeneration, and keeps its `lastTransitionTime` unless the status changed (or it
/// had none). `now` is an RFC 3339 time (`2024-01-01T00:00:00Z`).
pub fn set_condition(status: &mut Value, condition: Value, now: &str) {
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = status
        .as_object_mut()
        .expect("an object")
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut().expect("an array");
    let kind = text(&condition, "type").to_string();
    let Some(existing) = list.iter_mut().find(|c| text(c, "type") == kind) else {
        list.push(ordered(&condition, now));
        return;
    };
    let time = if text(existing, "status") != text(&condition, "status")
        || text(existing, "lastTransitionTime").is_empty()
    {
        now.to_string()
    } else {
        text(existing, "lastTransitionTime").to_string()
    };
    *existing = ordered(&condition, &time);
}

/// A condition with its fields in upstream's order and `lastTransitionTime` set.
fn ordered(c: &Value, time: &str) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(text(c, "type")));
    out.insert("status".into(), json!(text(c, "status")));
    out.insert("lastTransitionTime".into(), json!(time));
    for k in ["reason", "message"] {
        if !text(c, k).is_empty() {
            out.insert(k.into(), json!(text(c, k)));
        }
    }
    if let Some(g) = c
        .get("observedGeneration")
        .filter(|g| g.as_i64().is_some_and(|g| g != 0))
    {
        out.insert("observedGeneration".into(), g.clone());
    }
    Value::Object(out)
}

/// `"x" is already in use` unless `requested` is what this CRD has or nobody uses it.
fn fresh(requested: &str, accepted: &str, used: &[String]) -> Result<(), String> {
    if requested == accepted || !used.iter().any(|u| u == requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

/// The names, as v1 serializes them: plural and kind always, the rest when set.
fn names_object(n: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    for k in [
        "plural",
        "singular",
        "shortNames",
        "kind",
        "listKind",
        "categories",
    ] {
        let v = n.get(k).cloned().unwrap_or(Value::Null);
        let empty = v.is_null() || v == "" || v.as_array().is_some_and(Vec::is_empty);
        if k == "plural" || k == "kind" {
            out.insert(k.into(), if v.is_null() { json!("") } else { v });
        } else if !empty {
            out.insert(k.into(), v);
        }
    }
    Value::Object(out)
}

/// The accepted names and conditions of `crd` given the other CRDs (upstream's
/// calculateNamesAndConditions). Only CRDs of the same group matter; an entry of `others` with
/// `crd`'s own name is ignored, and `crd`'s own accepted names count as taken, as upstream's
/// lister includes the CRD itself.
pub fn accepted_names(crd: &Value, others: &[Value]) -> NamesOutcome {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let own_name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (mut resources, mut kinds) = (Vec::<String>::new(), Vec::<String>::new());
    let same_group = others
        .iter()
        .filter(|o| o.pointer("/metadata/name").and_then(Value::as_str) != Some(own_name))
        .chain(std::iter::once(crd))
        .filter(|o| o.pointer("/spec/group").and_then(Value::as_str) == Some(group));
    for other in same_group {
        let names = other
            .pointer("/status/acceptedNames")
            .unwrap_or(&Value::Null);
        resources.push(text(names, "plural").to_string());
        resources.push(text(names, "singular").to_string());
        resources.extend(
            str_list(names.get("shortNames"))
                .iter()
                .map(|s| s.to_string()),
        );
        kinds.push(text(names, "kind").to_string());
        kinds.push(text(names, "listKind").to_string());
    }

    let requested = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let accepted = crd
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or(json!({}));
    let mut names = accepted.as_object().cloned().unwrap_or_default();
    // Each name is taken if free; a conflict keeps the accepted one and, the last one
    // found winning, sets the condition's reason.
    let mut failure: Option<(&str, String)> = None;
    let claim =
        |names: &mut Map<String, Value>, key: &str, used: &[String], reason: &'static str| {
            match fresh(text(&requested, key), text(&accepted, key), used) {
                Ok(()) => {
                    names.insert(key.into(), json!(text(&requested, key)));
                    None
                }
                Err(why) => Some((reason, why)),
            }
        };
    for (key, reason) in [
        ("plural", "PluralConflict"),
        ("singular", "SingularConflict"),
    ] {
        if let Some(f) = claim(&mut names, key, &resources, reason) {
            failure = Some(f);
        }
    }
    let (want_short, have_short) = (
        str_list(requested.get("shortNames")),
        str_list(accepted.get("shortNames")),
    );
    if want_short != have_short {
        let (accepted_plural, accepted_singular) =
            (text(&accepted, "plural"), text(&accepted, "singular"));
        let conflicts: Vec<String> = want_short
            .iter()
            .filter(|s| !have_short.contains(s))
            .filter(|s| **s != accepted_plural && **s != accepted_singular)
            .filter_map(|s| fresh(s, "", &resources).err())
            .collect();
        match conflicts.as_slice() {
            [] => {
                names.insert("shortNames".into(), json!(want_short));
            }
            [one] => failure = Some(("ShortNamesConflict", one.clone())),
            many => failure = Some(("ShortNamesConflict", format!("[{}]", many.join(", ")))),
        }
    }
    for (key, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        if let Some(f) = claim(&mut names, key, &kinds, reason) {
            failure = Some(f);
        }
    }
    names.insert(
        "categories".into(),
        requested.get("categories").cloned().unwrap_or(Value::Null),
    );

    let names_accepted = match &failure {
        None => condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        Some((reason, message)) => condition("NamesAccepted", "False", reason, message),
    };
    let mut established = find_condition(crd, "Established")
        .cloned()
        .unwrap_or_else(|| {
            condition(
                "Established",
                "False",
                "NotAccepted",
                "not all names are accepted",
            )
        });
    if text(&established, "status") != "True" && failure.is_none() {
        established = condition(
            "Established",
            "False",
            "Installing",
            "the initial names have been accepted",
        );
    }
    NamesOutcome {
        accepted_names: names_object(&names),
        names_accepted,
        established,
    }
}

/// The naming controller's sync: the new `status` of `crd` when it must change (names not yet
/// accepted as requested, and the outcome differs from what is stored), or None.
pub fn naming_status(crd: &Value, others: &[Value], now: &str) -> Option<Value> {
    let normalized = |p: &str| crd.pointer(p).and_then(Value::as_object).map(names_object);
    let stored = normalized("/status/acceptedNames");
    if stored.is_some() && normalized("/spec/names") == stored {
        return None;
    }
    let outcome = accepted_names(crd, others);
    if stored.as_ref() == Some(&outcome.accepted_names)
        && equivalent(
            &outcome.names_accepted,
            find_condition(crd, "NamesAccepted"),
        )
    {
        return None;
    }
    let mut status = crd.get("status").cloned().unwrap_or(json!({}));
    if let Some(m) = status.as_object_mut() {
        m.insert("acceptedNames".into(), outcome.accepted_names);
    }
    set_condition(&mut status, outcome.names_accepted, now);
    set_condition(&mut status, outcome.established, now);
    Some(status)
}

/// The Established condition the establishing controller sets.
pub fn established_condition() -> Value {
    condition(
        "Established",
        "True",
        "InitialNamesAccepted",
        "the initial names have been accepted",
    )
}

/// The establishing controller's sync: the new `status` once the names are accepted and the
/// CRD is not yet established, or None.
pub fn establish_status(crd: &Value, now: &str) -> Option<Value> {
    if !is_condition_true(crd, "NamesAccepted") || is_condition_true(crd, "Established") {
        return None;
    }
    let mut status = crd.get("status").cloned().unwrap_or(json!({}));
    set_condition(&mut status, established_condition(), now);
    Some(status)
}

/// The stages of deleting a CRD, each with upstream's `Terminating` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Termination {
    /// The first DELETE: finalizer added, deletion timestamp set.
    Pending,
    /// The finalizer controller started deleting the instances.
    InProgress,
    /// Listing the instances failed (the error's text).
    ListFailed(String),
    /// Issuing the deletes failed.
    DeleteFailed(String),
    /// Instances remained after waiting.
    CheckFailed(String),
    /// Every instance is gone; the finalizer goes next.
    Completed,
    /// The CRD was never established, so there was nothing to delete.
    NeverEstablished,
}

impl Termination {
    /// The `Terminating` condition of this stage.
    pub fn condition(&self) -> Value {
        let (status, reason, message) = match self {
            Termination::Pending => (
                "True",
                "InstanceDeletionPending",
                "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
                    .to_string(),
            ),
            Termination::InProgress => (
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress".to_string(),
            ),
            Termination::ListFailed(e) => (
                "True",
                "InstanceDeletionFailed",
                format!("could not list instances: {e}"),
            ),
            Termination::DeleteFailed(e) => (
                "True",
                "InstanceDeletionFailed",
                format!("could not issue all deletes: {e}"),
            ),
            Termination::CheckFailed(e) => (
                "True",
                "InstanceDeletionCheck",
                format!("could not confirm zero CustomResources remaining: {e}"),
            ),
            Termination::Completed => ("False", "InstanceDeletionCompleted", "removed all instances".to_string()),
            Termination::NeverEstablished => (
                "False",
                "NeverEstablished",
                "resource was never established".to_string(),
            ),
        };
        condition("Terminating", status, reason, &message)
    }
}

/// The `KubernetesAPIApprovalPolicyConformant` condition of a CRD in a protected group
/// (`*.k8s.io`, `*.kubernetes.io`), None for other groups.
pub fn api_approval_condition(crd: &Value) -> Option<Value> {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|d| group == *d || group.ends_with(&format!(".{d}")));
    if !protected {
        return None;
    }
    let (status, reason, message) = match approval_state(crd) {
        Approval::Invalid(m) => ("False", "InvalidAnnotation", m),
        Approval::Missing(m) => ("False", "MissingAnnotation", m),
        Approval::Approved(m) => ("True", "ApprovedAnnotation", m),
        Approval::Bypassed(m) => ("False", "UnapprovedAnnotation", m),
    };
    Some(condition(
        "KubernetesAPIApprovalPolicyConformant",
        status,
        reason,
        &message,
    ))
}
