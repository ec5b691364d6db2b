//! batch/v1 Jobs and CronJobs, as upstream's pkg/apis/batch/v1 defaults and
//! pkg/registry/batch/{job,cronjob} strategies: defaults, the generated selector and template
//! labels of a Job, status cleared on create, and the validation of `job` (specs and updates),
//! `status` (the `/status` writes) and `cronjob`.

mod cronjob;
mod job;
mod policies;
mod status;

use serde_json::{json, Map, Value};

use super::field::FieldError;
use super::names::label_errors;
use super::workloads::{default_pod_template, default_to, object_at};
use super::Strategy;

pub use job::{parse_indexes, IndexError};

/// The label of the Job's name on its pods (and the legacy unprefixed one).
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
pub const LEGACY_JOB_NAME_LABEL: &str = "job-name";
/// The label of the Job's uid on its pods (and the legacy unprefixed one).
pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
pub const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";

/// A field of `v` at a JSON pointer, `null` read as absent.
fn at<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    v.pointer(pointer).filter(|v| !v.is_null())
}

/// Upstream's SetDefaults_Job on a JobSpec object.
fn default_job_spec(spec: &mut Map<String, Value>) {
    let unset = |m: &Map<String, Value>, k: &str| m.get(k).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    default_to(spec, "parallelism", json!(1));
    let backoff = if unset(spec, "backoffLimitPerIndex") {
        json!(6)
    } else {
        json!(i32::MAX)
    };
    default_to(spec, "backoffLimit", backoff);
    default_to(spec, "completionMode", json!("NonIndexed"));
    default_to(spec, "suspend", json!(false));
    let has_failure_policy = !unset(spec, "podFailurePolicy");
    if let Some(rules) = spec
        .get_mut("podFailurePolicy")
        .and_then(|p| p.get_mut("rules"))
        .and_then(Value::as_array_mut)
    {
        let patterns = rules
            .iter_mut()
            .filter_map(|r| r.get_mut("onPodConditions"))
            .filter_map(Value::as_array_mut)
            .flatten()
            .filter_map(Value::as_object_mut);
        for pattern in patterns {
            default_to(pattern, "status", json!("True"));
        }
    }
    let replacement = if has_failure_policy {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    default_to(spec, "podReplacementPolicy", json!(replacement));
    default_to(spec, "manualSelector", json!(false));
}

/// Upstream's generateSelector: the job-name and controller-uid labels (prefixed and legacy) on
/// the template unless already there, and the prefixed controller-uid in the selector.
fn generate_selector(obj: &mut Value) {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let template = object_at(spec, "template");
    let labels = object_at(object_at(template, "metadata"), "labels");
    for key in [LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL] {
        labels.entry(key).or_insert_with(|| json!(name));
    }
    for key in [LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL] {
        labels.entry(key).or_insert_with(|| json!(uid));
    }
    // Sorted, as upstream serializes a Go map.
    let mut sorted: Vec<(String, Value)> = std::mem::take(labels).into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    labels.extend(sorted);
    let selector = object_at(object_at(spec, "selector"), "matchLabels");
    selector
        .entry(CONTROLLER_UID_LABEL)
        .or_insert_with(|| json!(uid));
}

/// Upstream's SetDefaults_Job: a Job without labels of its own takes its template's.
fn labels_from_template(obj: &mut Value) {
    let template = obj.pointer("/spec/template/metadata/labels").cloned();
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let own = meta.get("labels").and_then(Value::as_object);
    if let (Some(t), true) = (template, own.is_none_or(Map::is_empty)) {
        if t.is_object() {
            meta.insert("labels".into(), t);
        }
    }
}

fn manual_selector(obj: &Value) -> bool {
    obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true)
}

/// Upstream's warning for a Job or CronJob name that is no DNS label (pods and hostnames are
/// made of it).
fn name_warning(obj: &Value) -> Vec<String> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let problems = label_errors(name);
    if name.is_empty() || problems.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [{}]",
        problems.join(" ")
    )]
}

pub struct JobStrategy;

impl Strategy for JobStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            default_job_spec(spec);
        }
        default_pod_template(obj, "/spec/template/spec");
        labels_from_template(obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if !manual_selector(obj) {
            generate_selector(obj);
        }
        // Read back from storage, upstream's defaults give the Job its template's labels,
        // generated ones included.
        labels_from_template(obj);
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({}));
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        job::validate_job(obj, None)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = job::validate_job(new, Some(old));
        errs.extend(job::validate_update(new, old));
        errs
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        status::validate_status_update(new, old)
    }

    fn warnings(&self, obj: &Value) -> Vec<String> {
        let mut out = name_warning(obj);
        out.extend(super::deprecated_master_warnings(
            obj.pointer("/spec/template/spec"),
            "spec.template.spec",
        ));
        out
    }
}

pub struct CronJobStrategy;

impl Strategy for CronJobStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            default_to(spec, "concurrencyPolicy", json!("Allow"));
            default_to(spec, "suspend", json!(false));
            default_to(spec, "successfulJobsHistoryLimit", json!(3));
            default_to(spec, "failedJobsHistoryLimit", json!(1));
        }
        default_pod_template(obj, "/spec/jobTemplate/spec/template/spec");
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), json!({}));
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        cronjob::validate(obj, None)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        cronjob::validate(new, Some(old))
    }

    fn warnings(&self, obj: &Value) -> Vec<String> {
        let mut out = name_warning(obj);
        out.extend(super::deprecated_master_warnings(
            obj.pointer("/spec/jobTemplate/spec/template/spec"),
            "spec.jobTemplate.spec.template.spec",
        ));
        out
    }
}

#[cfg(test)]
mod tests;
