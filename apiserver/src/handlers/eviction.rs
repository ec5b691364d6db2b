//! pods/eviction as upstream's EvictionREST: a pod that is finished, pending or already
//! terminating is deleted at once; otherwise the one PodDisruptionBudget covering it must allow
//! the disruption, which is spent atomically (`disruptionsAllowed` decremented and the pod
//! recorded in `disruptedPods` by a compare-and-swap on the budget) before the pod gets the
//! `DisruptionTarget` condition and is deleted. Refusals are upstream's 429s.

use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tinykube_proto::labels::Selector;
use tinykube_proto::registry::{self, ResourceInfo};

use super::decode::decode_as;
use super::delete::{delete_object, DeleteOptions};
use super::{json_response, success, Ctx};
use crate::error::{ApiError, ApiResult, Qualified};
use crate::object;
use crate::state::AppState;
use crate::storage::Change;

/// Upstream's MaxDisruptedPodSize: evictions the disruption controller has not confirmed yet.
const MAX_DISRUPTED_POD_SIZE: usize = 2000;
/// Upstream's EvictionsRetry: attempts on conflicting writes.
const RETRIES: usize = 20;

const VIOLATION: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// The resource-like facts of policy/v1 Eviction, for decoding its body.
static EVICTION: ResourceInfo = ResourceInfo {
    group: "policy",
    version: "v1",
    kind: "Eviction",
    list_kind: "EvictionList",
    plural: "evictions",
    singular: "eviction",
    short_names: &[],
    categories: &[],
    namespaced: true,
    verbs: &["create"],
    subresources: &[],
    has_generation: false,
    custom: None,
};

fn pods() -> &'static ResourceInfo {
    registry::builtin("", "v1", "pods").expect("pods are served")
}

fn budgets() -> &'static ResourceInfo {
    registry::builtin("policy", "v1", "poddisruptionbudgets").expect("budgets are served")
}

fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Finished, pending or terminating pods are not guarded by budgets (upstream's canIgnorePDB).
fn can_ignore_budget(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed" | "Pending") || object::is_deleting(pod)
}

/// Pods whose deletion must not race with them becoming ready (upstream's
/// shouldEnforceResourceVersion): all but finished or terminating ones.
fn enforce_resource_version(pod: &Value) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && !object::is_deleting(pod)
}

fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn int(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// The 429 of a budget the disruption controller has not caught up with.
fn still_processing(pdb_name: &str) -> ApiError {
    ApiError::TooManyRequests {
        message: VIOLATION.into(),
        causes: vec![(
            "DisruptionBudget".into(),
            format!("The disruption budget {pdb_name} is still being processed by the server."),
        )],
        retry_after: 10,
    }
}

/// Whether the request asks for a dry run: `?dryRun=All`, or `deleteOptions.dryRun` in the
/// body (upstream's propagateDryRun; both given, they must agree).
fn dry_run(ctx: &Ctx, eviction: &Value) -> ApiResult<bool> {
    let in_query = ctx.query.is_dry_run()?;
    let in_body: Vec<&str> = eviction
        .pointer("/deleteOptions/dryRun")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if in_query && !in_body.is_empty() && in_body != ["All"] {
        return Err(ApiError::BadRequest(format!(
            "Non-matching dry-run options in request and content: [All] and [{}]",
            in_body.join(" ")
        )));
    }
    Ok(in_query || !in_body.is_empty())
}

/// Evict a pod unless a PodDisruptionBudget forbids it (429).
pub async fn eviction(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    super::options::check(&ctx, super::options::Verb::Create)?;
    let eviction = decode_as(&ctx, body, &EVICTION, "Eviction")?;
    let name = ctx.target.name.clone().unwrap_or_default();
    if object::name(&eviction) != name {
        return Err(ApiError::BadRequest(
            "name in URL does not match name in Eviction object".into(),
        ));
    }
    let ns = ctx.target.namespace.clone();
    if let Some(body_ns) = object::namespace(&eviction).filter(|n| !n.is_empty()) {
        if Some(body_ns) != ns.as_deref() {
            return Err(ApiError::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
                    .into(),
            ));
        }
    }
    let dry_run = dry_run(&ctx, &eviction)?;
    let opts = eviction
        .get("deleteOptions")
        .map(DeleteOptions::from_value)
        .unwrap_or_default();
    let client_rv = opts.precondition_rv.is_some();
    let state = &ctx.state;
    let ns = ns.as_deref();
    let done = || {
        Ok(json_response(
            StatusCode::CREATED,
            &success(StatusCode::CREATED),
            ctx.pretty,
        ))
    };

    // Pods a budget does not guard are deleted at once; a conflict (the pod changed meanwhile)
    // looks again, unless the client pinned a resourceVersion itself.
    let mut attempt = 0;
    let pod = loop {
        attempt += 1;
        let pod = state.objects.get(pods(), ns, &name)?;
        if !can_ignore_budget(&pod) {
            break pod;
        }
        let mut delete = opts.clone();
        if enforce_resource_version(&pod) && !client_rv {
            delete.precondition_rv = object::resource_version(&pod).map(str::to_string);
        }
        match mark_and_delete(state, ns, &name, delete, dry_run).await {
            Ok(()) => return done(),
            Err(ApiError::Conflict { .. }) if !client_rv && attempt < RETRIES => continue,
            Err(e) => return Err(e),
        }
    };

    let matching = covering_budgets(state, &pod)?;
    if matching.len() > 1 {
        return Err(ApiError::Failure {
            code: StatusCode::INTERNAL_SERVER_ERROR,
            message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.".into(),
        });
    }
    let mut pinned = false;
    let mut pdb_name = String::new();
    if let Some(pdb) = matching.first() {
        pdb_name = object::name(pdb).to_string();
        if !is_ready(&pod) {
            // An unready pod is not counted healthy: deleting it spends nothing, as long as
            // the budget is met (or its policy always allows it). The deletion is then pinned
            // to this version of the pod, so it cannot have become ready meanwhile.
            let always =
                pdb.pointer("/spec/unhealthyPodEvictionPolicy") == Some(&json!("AlwaysAllow"));
            let desired = int(pdb, "/status/desiredHealthy");
            pinned = always || (int(pdb, "/status/currentHealthy") >= desired && desired > 0);
        }
        if !pinned {
            take_disruption(state, ns, &pdb_name, object::name(&pod), dry_run).await?;
        }
    }

    let mut delete = opts.clone();
    if pinned {
        delete.precondition_rv = object::resource_version(&pod).map(str::to_string);
    }
    match mark_and_delete(state, ns, &name, delete, dry_run).await {
        Ok(()) => done(),
        Err(ApiError::Conflict { .. }) if pinned && !client_rv => Err(still_processing(&pdb_name)),
        Err(e) => Err(e),
    }
}

/// The budgets of the pod's namespace whose selector covers it; an empty or invalid selector
/// covers nothing here (upstream's getPodDisruptionBudgets).
fn covering_budgets(state: &AppState, pod: &Value) -> ApiResult<Vec<Value>> {
    let ns = object::namespace(pod).unwrap_or("default");
    let labels = object::labels(pod);
    Ok(state
        .objects
        .list(budgets(), Some(ns), None, None)?
        .items
        .into_iter()
        .filter(|pdb| {
            pdb.pointer("/spec/selector")
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .and_then(|s| Selector::from_label_selector(&s).ok())
                .is_some_and(|s| !s.is_everything() && s.matches(&labels))
        })
        .collect())
}

/// Upstream's checkAndDecrement as one compare-and-swap on the budget: refuse unless it is
/// current and allows a disruption, else spend one and record the pod in `disruptedPods`
/// (a dry run only checks). A concurrent writer makes the store re-run the check on the
/// fresh budget, so two evictions can never both spend the last allowed disruption.
async fn take_disruption(
    state: &AppState,
    ns: Option<&str>,
    pdb_name: &str,
    pod_name: &str,
    dry_run: bool,
) -> ApiResult<()> {
    state
        .objects
        .update(budgets(), ns, pdb_name, |current| {
            spend(current, pdb_name, pod_name, dry_run, state.clock.utc())
        })
        .await?;
    Ok(())
}

/// Decide one attempt of [`take_disruption`] on the budget as stored `now`.
fn spend(
    mut pdb: Value,
    pdb_name: &str,
    pod_name: &str,
    dry_run: bool,
    now: DateTime<Utc>,
) -> ApiResult<Change> {
    if int(&pdb, "/status/observedGeneration") < int(&pdb, "/metadata/generation") {
        return Err(still_processing(pdb_name));
    }
    let allowed = int(&pdb, "/status/disruptionsAllowed");
    let forbidden = |why: &str| ApiError::ForbiddenNamed {
        resource: Qualified::new("policy", "poddisruptionbudget"),
        name: pdb_name.to_string(),
        message: format!("poddisruptionbudget.policy {pdb_name:?} is forbidden: {why}"),
    };
    if allowed < 0 {
        return Err(forbidden("pdb disruptions allowed is negative"));
    }
    let pending = pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, |m| m.len());
    if pending > MAX_DISRUPTED_POD_SIZE {
        return Err(forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(ApiError::TooManyRequests {
            message: VIOLATION.into(),
            causes: vec![(
                "DisruptionBudget".into(),
                format!(
                    "The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
                    int(&pdb, "/status/desiredHealthy"),
                    int(&pdb, "/status/currentHealthy")
                ),
            )],
            retry_after: 0,
        });
    }
    if dry_run {
        return Ok(Change::Unchanged);
    }
    let now = object::timestamp(now);
    let Some(status) = pdb.get_mut("status").and_then(Value::as_object_mut) else {
        return Err(still_processing(pdb_name));
    };
    status.insert("disruptionsAllowed".into(), (allowed - 1).into());
    if allowed == 1 {
        // upstream's UpdateDisruptionAllowedCondition once none are left.
        let observed = status.get("observedGeneration").cloned();
        let conditions = status.entry("conditions").or_insert_with(|| json!([]));
        if let Some(list) = conditions.as_array_mut() {
            set_insufficient(list, observed, &now);
        }
    }
    let disrupted = status.entry("disruptedPods").or_insert_with(|| json!({}));
    if !disrupted.is_object() {
        *disrupted = json!({});
    }
    if let Some(d) = disrupted.as_object_mut() {
        d.insert(pod_name.to_string(), now.into());
    }
    Ok(Change::Write(pdb))
}

/// `DisruptionAllowed=False` (InsufficientPods), as apimachinery's SetStatusCondition.
fn set_insufficient(conditions: &mut Vec<Value>, observed: Option<Value>, now: &str) {
    let mut wanted = json!({"type": "DisruptionAllowed", "status": "False",
        "reason": "InsufficientPods", "message": "", "lastTransitionTime": now});
    if let Some(g) = observed.filter(|g| g.as_i64().is_some_and(|g| g != 0)) {
        wanted["observedGeneration"] = g;
    }
    match conditions
        .iter_mut()
        .find(|c| c["type"] == "DisruptionAllowed")
    {
        None => conditions.push(wanted),
        Some(c) => {
            if c["status"] == "False" {
                wanted["lastTransitionTime"] = c["lastTransitionTime"].clone();
            }
            *c = wanted;
        }
    }
}

/// Upstream's addConditionAndDeletePod: the pod gets `DisruptionTarget=True`
/// (EvictionByEvictionAPI) under the delete's preconditions, then is deleted (gracefully when
/// bound to a node). A dry run only checks the preconditions.
async fn mark_and_delete(
    state: &AppState,
    ns: Option<&str>,
    name: &str,
    mut opts: DeleteOptions,
    dry_run: bool,
) -> ApiResult<()> {
    let precondition_failed = |what: &str, want: &str, have: &str| {
        ApiError::Conflict {
        resource: Qualified::new("", "Pod"),
        name: name.to_string(),
        reason: format!(
            "the {what} in the precondition ({want}) does not match the {what} in record ({have}). {}",
            if what == "UID" {
                "The object might have been deleted and then recreated"
            } else {
                "The object might have been modified"
            }
        ),
    }
    };
    let check = |pod: &Value| -> ApiResult<()> {
        let uid = object::uid(pod).unwrap_or("");
        if let Some(want) = opts.precondition_uid.as_deref().filter(|u| !u.is_empty()) {
            if want != uid {
                return Err(precondition_failed("UID", want, uid));
            }
        }
        let rv = object::resource_version(pod).unwrap_or("");
        if let Some(want) = opts.precondition_rv.as_deref().filter(|v| !v.is_empty()) {
            if want != rv {
                return Err(precondition_failed("ResourceVersion", want, rv));
            }
        }
        Ok(())
    };
    if dry_run {
        return check(&state.objects.get(pods(), ns, name)?);
    }
    let marked = state
        .objects
        .update(pods(), ns, name, |mut pod| {
            check(&pod)?;
            let now = object::timestamp(state.clock.utc());
            let condition = json!({"type": "DisruptionTarget", "status": "True",
                "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting",
                "lastProbeTime": null, "lastTransitionTime": now});
            if !set_pod_condition(&mut pod, condition) {
                return Ok(Change::Unchanged);
            }
            Ok(Change::Write(pod))
        })
        .await?
        .into_object();
    if opts.precondition_rv.is_some() {
        // The pod changed under our own hand: pin the delete to that version instead.
        opts.precondition_rv = object::resource_version(&marked).map(str::to_string);
    }
    delete_object(state, pods(), ns, name, &opts).await?;
    Ok(())
}

/// Upstream's UpdatePodCondition: add or replace the condition of its type (keeping the
/// transition time when the status is unchanged); whether anything changed.
fn set_pod_condition(pod: &mut Value, mut condition: Value) -> bool {
    let Some(map) = pod.as_object_mut() else {
        return false;
    };
    let status = map.entry("status").or_insert_with(|| json!({}));
    let Some(status) = status.as_object_mut() else {
        return false;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    let Some(list) = conditions.as_array_mut() else {
        return false;
    };
    match list.iter_mut().find(|c| c["type"] == condition["type"]) {
        None => {
            list.push(condition);
            true
        }
        Some(old) => {
            if old["status"] == condition["status"] {
                condition["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
            let same = [
                "status",
                "reason",
                "message",
                "lastProbeTime",
                "lastTransitionTime",
            ]
            .iter()
            .all(|k| {
                old.get(*k).unwrap_or(&Value::Null) == condition.get(*k).unwrap_or(&Value::Null)
            });
            *old = condition;
            !same
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The time of the test's evictions (a manual clock's reading in the server).
    fn at() -> DateTime<Utc> {
        "2030-01-02T03:04:05Z".parse().expect("a time")
    }

    fn budget(generation: i64, observed: i64, allowed: i64, pending: usize) -> Value {
        let disrupted: serde_json::Map<String, Value> = (0..pending)
            .map(|i| (format!("p{i}"), json!("2020-01-01T00:00:00Z")))
            .collect();
        json!({"metadata": {"name": "web", "generation": generation},
               "status": {"observedGeneration": observed, "disruptionsAllowed": allowed,
                          "desiredHealthy": 3, "currentHealthy": 3,
                          "disruptedPods": disrupted, "conditions": [
                              {"type": "DisruptionAllowed", "status": "True",
                               "reason": "SufficientPods", "message": "",
                               "lastTransitionTime": "2020-01-01T00:00:00Z"}]}})
    }

    fn refusal(r: ApiResult<Change>) -> (u16, String) {
        match r {
            Err(e) => {
                let s = e.status();
                (
                    e.code().as_u16(),
                    s["details"]["causes"][0]["message"]
                        .as_str()
                        .unwrap_or(s["message"].as_str().unwrap_or(""))
                        .to_string(),
                )
            }
            Ok(_) => (0, String::new()),
        }
    }

    #[test]
    fn spending_a_disruption_follows_upstream_checks() {
        let table = [
            (budget(2, 1, 1, 0), 429, "The disruption budget web is still being processed by the server."),
            (budget(1, 1, -1, 0), 403, "poddisruptionbudget.policy \"web\" is forbidden: pdb disruptions allowed is negative"),
            (budget(1, 1, 1, 2001), 403, "poddisruptionbudget.policy \"web\" is forbidden: DisruptedPods map too big - too many evictions not confirmed by PDB controller"),
            (budget(1, 1, 0, 0), 429, "The disruption budget web needs 3 healthy pods and has 3 currently"),
        ];
        for (pdb, code, message) in table {
            assert_eq!(
                refusal(spend(pdb, "web", "victim", false, at())),
                (code, message.to_string())
            );
        }
        // The last allowed disruption: spent, recorded, and the condition flips.
        let Ok(Change::Write(after)) = spend(budget(1, 1, 1, 0), "web", "victim", false, at())
        else {
            panic!("allowed");
        };
        assert_eq!(after["status"]["disruptionsAllowed"], 0);
        assert_eq!(
            after["status"]["disruptedPods"]["victim"],
            "2030-01-02T03:04:05Z"
        );
        let c = &after["status"]["conditions"][0];
        assert_eq!(
            (c["status"].as_str(), c["reason"].as_str()),
            (Some("False"), Some("InsufficientPods"))
        );
        assert_eq!(c["observedGeneration"], 1);
        assert_eq!(c["lastTransitionTime"], "2030-01-02T03:04:05Z");
        // One of two: the condition stays.
        let Ok(Change::Write(after)) = spend(budget(1, 1, 2, 0), "web", "victim", false, at())
        else {
            panic!("allowed");
        };
        assert_eq!(after["status"]["disruptionsAllowed"], 1);
        assert_eq!(after["status"]["conditions"][0]["reason"], "SufficientPods");
        // A dry run writes nothing.
        assert!(matches!(
            spend(budget(1, 1, 1, 0), "web", "victim", true, at()),
            Ok(Change::Unchanged)
        ));
    }

    #[test]
    fn budgets_guard_only_running_pods_not_being_deleted() {
        let pod = |phase: &str, deleting: bool| {
            let mut p = json!({"metadata": {"name": "p"}, "status": {"phase": phase}});
            if deleting {
                p["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
            }
            p
        };
        let table = [
            (pod("Running", false), false, true),
            (pod("Pending", false), true, true),
            (pod("Succeeded", false), true, false),
            (pod("Failed", false), true, false),
            (pod("Running", true), true, false),
            (pod("Unknown", false), false, true),
        ];
        for (p, ignore, enforce) in table {
            assert_eq!(
                (can_ignore_budget(&p), enforce_resource_version(&p)),
                (ignore, enforce),
                "{p}"
            );
        }
    }

    #[test]
    fn the_eviction_condition_keeps_its_transition_time_when_repeated() {
        let condition = |t: &str| {
            json!({"type": "DisruptionTarget", "status": "True",
            "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting",
            "lastProbeTime": null, "lastTransitionTime": t})
        };
        let mut pod = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(set_pod_condition(&mut pod, condition("t1")));
        assert!(!set_pod_condition(&mut pod, condition("t2")));
        assert_eq!(pod["status"]["conditions"][1]["lastTransitionTime"], "t1");
        assert_eq!(
            pod["status"]["conditions"].as_array().map(Vec::len),
            Some(2)
        );
    }
}
