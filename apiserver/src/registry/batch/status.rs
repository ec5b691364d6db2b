//! The rules of a Job's `/status` writes, as upstream's ValidateJobUpdateStatus with the
//! options its strategy sets (JobManagedBy on, as in v1.32): counters, uncounted pods,
//! terminal conditions that may not be undone or combined, times, and index sets. A rule on a
//! field runs only when the write changes that field, so a controller can fix an old status.

use serde_json::{json, Value};

use super::super::field::FieldError;
use super::super::rules::non_negative_int;
use super::at;
use super::job::{invalid_no_value, parse_indexes};

fn is_true(job: &Value, ty: &str) -> bool {
    condition_is(job, ty, "True")
}

/// Whether the condition `ty` of `job` is there with `status`.
fn condition_is(job: &Value, ty: &str, status: &str) -> bool {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c.get("type").and_then(Value::as_str) == Some(ty) && c["status"] == status)
}

fn finished(job: &Value) -> bool {
    is_true(job, "Complete") || is_true(job, "Failed")
}

fn int(job: &Value, pointer: &str) -> i64 {
    job.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// Parsed index intervals of a set, ignoring what does not parse.
fn intervals(text: &str, completions: i64) -> Vec<(i64, i64)> {
    text.split(',')
        .filter_map(|p| parse_indexes(p, completions).ok())
        .flat_map(|(v, _)| v)
        .collect()
}

pub fn validate_status_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let status = at(new, "/status").cloned().unwrap_or(json!({}));
    let field = |k: &str| at(&status, &format!("/{k}"));
    let old_field = |k: &str| {
        old.pointer(&format!("/status/{k}"))
            .filter(|v| !v.is_null())
    };
    let changed = |k: &str| field(k) != old_field(k);
    for k in ["active", "succeeded", "failed", "ready", "terminating"] {
        errs.extend(non_negative_int(&format!("status.{k}"), field(k)));
    }
    let mut seen = std::collections::HashSet::new();
    for list in ["succeeded", "failed"] {
        let uids = status
            .pointer(&format!("/uncountedTerminatedPods/{list}"))
            .and_then(Value::as_array);
        for (i, uid) in uids.into_iter().flatten().enumerate() {
            let uid = uid.as_str().unwrap_or("");
            let path = format!("status.uncountedTerminatedPods.{list}[{i}]");
            if uid.is_empty() {
                errs.push(FieldError::invalid(path, "", "must not be empty"));
            } else if !seen.insert(uid.to_string()) {
                errs.push(FieldError::duplicate(path, uid));
            }
        }
    }
    let (complete, failed) = (is_true(new, "Complete"), is_true(new, "Failed"));
    let complete_changed = complete != is_true(old, "Complete");
    let failed_changed = failed != is_true(old, "Failed");
    let target = is_true(new, "FailureTarget");
    let target_changed = target != is_true(old, "FailureTarget");
    let done = finished(new);
    let done_changed = done != finished(old);
    let success = is_true(new, "SuccessCriteriaMet");
    let conditions = "status.conditions";
    if (complete_changed || failed_changed) && complete && failed {
        errs.push(invalid_no_value(
            conditions,
            "cannot set Complete=True and Failed=true conditions",
        ));
    }
    if (complete_changed || target_changed) && complete && target {
        errs.push(invalid_no_value(
            conditions,
            "cannot set Complete=True and FailureTarget=true conditions",
        ));
    }
    let completion_changed = changed("completionTime");
    let start_changed = changed("startTime");
    if complete_changed || completion_changed {
        if field("completionTime").is_some() && !complete {
            errs.push(FieldError::invalid(
                "status.completionTime",
                field("completionTime").cloned().unwrap_or_default(),
                "cannot set completionTime when there is no Complete=True condition",
            ));
        }
        if field("completionTime").is_none() && complete {
            errs.push(FieldError::required(
                "status.completionTime",
                "completionTime is required for Complete jobs",
            ));
        }
    }
    if start_changed || completion_changed {
        let (s, c) = (field("startTime"), field("completionTime"));
        if let (Some(s), Some(c)) = (s.and_then(Value::as_str), c.and_then(Value::as_str)) {
            if c < s {
                errs.push(FieldError::invalid(
                    "status.completionTime",
                    c,
                    "completionTime cannot be set before startTime",
                ));
            }
        }
    }
    if (done_changed || changed("active")) && done && int(new, "/status/active") > 0 {
        errs.push(FieldError::invalid(
            "status.active",
            int(new, "/status/active"),
            "active>0 is invalid for finished job",
        ));
    }
    if (done_changed || start_changed) && done && field("startTime").is_none() {
        errs.push(FieldError::required(
            "status.startTime",
            "startTime is required for finished job",
        ));
    }
    let uncounted = field("uncountedTerminatedPods");
    let pending = ["succeeded", "failed"].iter().any(|l| {
        uncounted
            .and_then(|u| u.get(*l))
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    });
    if (done_changed || changed("uncountedTerminatedPods")) && done && pending {
        errs.push(FieldError::invalid(
            "status.uncountedTerminatedPods",
            uncounted.cloned().unwrap_or_default(),
            "uncountedTerminatedPods needs to be empty for finished job",
        ));
    }
    let completions = new.pointer("/spec/completions").and_then(Value::as_i64);
    let indexed = new.pointer("/spec/completionMode").and_then(Value::as_str) == Some("Indexed");
    let per_index = at(new, "/spec/backoffLimitPerIndex").is_some();
    let completed = field("completedIndexes")
        .and_then(Value::as_str)
        .unwrap_or("");
    let failed_indexes = field("failedIndexes").and_then(Value::as_str);
    let completed_changed = changed("completedIndexes");
    let failed_idx_changed = changed("failedIndexes");
    if let (true, Some(c)) = (completed_changed, completions) {
        if let Err(e) = parse_indexes(completed, c) {
            errs.push(FieldError::invalid(
                "status.completedIndexes",
                completed,
                format!("error parsing completedIndexes: {e}"),
            ));
        }
    }
    if let (true, Some(c), true, Some(f)) =
        (failed_idx_changed, completions, per_index, failed_indexes)
    {
        if let Err(e) = parse_indexes(f, c) {
            errs.push(FieldError::invalid(
                "status.failedIndexes",
                f,
                format!("error parsing failedIndexes: {e}"),
            ));
        }
    }
    if completed_changed && !completed.is_empty() && !indexed {
        errs.push(FieldError::invalid(
            "status.completedIndexes",
            completed,
            "cannot set non-empty completedIndexes when non-indexed completion mode",
        ));
    }
    if let (true, false, Some(f)) = (failed_idx_changed, per_index, failed_indexes) {
        errs.push(FieldError::invalid(
            "status.failedIndexes",
            f,
            "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
        ));
    }
    if let (true, Some(c), Some(f)) = (
        failed_idx_changed || completed_changed,
        completions,
        failed_indexes,
    ) {
        let done_set = intervals(completed, c);
        let overlap = intervals(f, c).into_iter().find_map(|(fx, fy)| {
            done_set
                .iter()
                .find(|(cx, cy)| *cx <= fy && fx <= *cy)
                .map(|(cx, _)| (*cx).max(fx))
        });
        if let Some(i) = overlap {
            errs.push(FieldError::invalid(
                "status.failedIndexes",
                f,
                format!("failedIndexes and completedIndexes overlap at index: {i}"),
            ));
        }
    }
    if success && failed {
        errs.push(invalid_no_value(
            conditions,
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        ));
    }
    if success && target {
        errs.push(invalid_no_value(
            conditions,
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        ));
    }
    if at(new, "/spec/successPolicy").is_some() && !success && complete {
        errs.push(invalid_no_value(
            conditions,
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        ));
    }
    // The transitions.
    for ty in ["Failed", "Complete", "FailureTarget"] {
        if is_true(old, ty) && !is_true(new, ty) {
            errs.push(invalid_no_value(
                conditions,
                format!("cannot disable the terminal {ty}=True condition"),
            ));
        }
    }
    if int(new, "/status/failed") < int(old, "/status/failed") {
        errs.push(FieldError::invalid(
            "status.failed",
            int(new, "/status/failed"),
            "cannot decrease the failed counter",
        ));
    }
    let scalable =
        indexed && completions == new.pointer("/spec/parallelism").and_then(Value::as_i64);
    if !scalable && int(new, "/status/succeeded") < int(old, "/status/succeeded") {
        errs.push(FieldError::invalid(
            "status.succeeded",
            int(new, "/status/succeeded"),
            "cannot decrease the succeeded counter",
        ));
    }
    if let (Some(n), Some(o)) = (field("completionTime"), old_field("completionTime")) {
        if n != o {
            errs.push(FieldError::invalid(
                "status.completionTime",
                n.clone(),
                "completionTime cannot be mutated",
            ));
        }
    }
    let suspended = new.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    // A resumption restarts the clock of activeDeadlineSeconds (upstream's fix #134769).
    let resuming = is_true(old, "Suspended") && condition_is(new, "Suspended", "False");
    if start_changed && old_field("startTime").is_some() && !suspended && !resuming {
        errs.push(FieldError::required(
            "status.startTime",
            "startTime cannot be removed for unsuspended job",
        ));
    }
    if is_true(old, "SuccessCriteriaMet") && !success {
        errs.push(invalid_no_value(
            conditions,
            "cannot disable the SuccessCriteriaMet=True condition",
        ));
    }
    if is_true(old, "Complete") && !is_true(old, "SuccessCriteriaMet") && success {
        errs.push(invalid_no_value(
            conditions,
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        ));
    }
    errs
}
