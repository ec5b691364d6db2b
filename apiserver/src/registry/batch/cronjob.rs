//! CronJob validation as upstream's ValidateCronJobCreate and ValidateCronJobUpdate: the
//! schedule (robfig's standard parser through `proto::cron`, no `TZ=` in it), the time zone,
//! the concurrency policy, the history limits, the job template (a Job spec whose selector is
//! generated), and a name short enough for the Jobs it names.

use serde_json::{json, Value};
use tinykube_proto::cron::{time_zone, Schedule};

use super::super::field::FieldError;
use super::super::names::{validate_object_meta, NameRule};
use super::super::rules::non_negative_int;
use super::at;
use super::job::validate_job_spec;

/// A CronJob's Jobs are named `NAME-TIMESTAMP` (11 more characters) and must fit 63.
const MAX_NAME: usize = 52;

/// Upstream's validTimeZoneCharacters, one path component of a zone name.
fn zone_part_ok(part: &str) -> bool {
    (1..=14).contains(&part.len())
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
        && part != "."
        && part != ".."
        && !part.starts_with('-')
}

fn validate_time_zone(zone: &str, path: &str) -> Vec<FieldError> {
    if zone.is_empty() {
        return vec![FieldError::invalid(
            path,
            zone,
            "timeZone must be nil or non-empty string",
        )];
    }
    if !zone.split('/').all(zone_part_ok) {
        return vec![FieldError::invalid(
            path,
            zone,
            format!("unknown time zone {zone}"),
        )];
    }
    let mut errs = Vec::new();
    if zone.eq_ignore_ascii_case("local") {
        errs.push(FieldError::invalid(
            path,
            zone,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if let Err(e) = time_zone(zone) {
        errs.push(FieldError::invalid(path, zone, e));
    }
    errs
}

/// The CronJob at `new` (with `old` on update).
pub fn validate(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = validate_object_meta(new, NameRule::Subdomain);
    let spec = at(new, "/spec").cloned().unwrap_or(json!({}));
    let old_spec = old.map(|o| at(o, "/spec").cloned().unwrap_or(json!({})));
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let schedule = text(&spec, "schedule").unwrap_or_default();
    let zone = at(&spec, "/timeZone").and_then(Value::as_str);
    if schedule.is_empty() {
        errs.push(FieldError::required("spec.schedule", ""));
    } else {
        if let Err(e) = Schedule::parse(&schedule) {
            errs.push(FieldError::invalid("spec.schedule", schedule.as_str(), e));
        }
        let tz_before = old_spec
            .as_ref()
            .and_then(|o| text(o, "schedule"))
            .is_some_and(|s| s.contains("TZ"));
        if schedule.contains("TZ") {
            if !tz_before {
                errs.push(FieldError::invalid(
                    "spec.schedule",
                    schedule.as_str(),
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                ));
            } else if zone.is_some() {
                errs.push(FieldError::invalid(
                    "spec.schedule",
                    schedule.as_str(),
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                ));
            }
        }
    }
    errs.extend(non_negative_int(
        "spec.startingDeadlineSeconds",
        at(&spec, "/startingDeadlineSeconds"),
    ));
    let old_zone = old_spec.as_ref().map(|o| at(o, "/timeZone").cloned());
    if old_zone.is_none_or(|z| z.as_ref().and_then(Value::as_str) != zone) {
        if let Some(z) = zone {
            errs.extend(validate_time_zone(z, "spec.timeZone"));
        }
    }
    match at(&spec, "/concurrencyPolicy")
        .and_then(Value::as_str)
        .unwrap_or("")
    {
        "Allow" | "Forbid" | "Replace" => {}
        "" => errs.push(FieldError::required("spec.concurrencyPolicy", "")),
        other => errs.push(FieldError::not_supported(
            "spec.concurrencyPolicy",
            other,
            &["Allow", "Forbid", "Replace"],
        )),
    }
    let job_spec = at(&spec, "/jobTemplate/spec").cloned().unwrap_or(json!({}));
    errs.extend(validate_job_spec(&job_spec, "spec.jobTemplate.spec"));
    if let Some(sel) = at(&job_spec, "/selector") {
        errs.push(FieldError::invalid(
            "spec.jobTemplate.spec.selector",
            sel.clone(),
            "`selector` will be auto-generated",
        ));
    }
    if at(&job_spec, "/manualSelector").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::not_supported(
            "spec.jobTemplate.spec.manualSelector",
            true,
            &["nil", "false"],
        ));
    }
    for k in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        errs.extend(non_negative_int(
            &format!("spec.{k}"),
            at(&spec, &format!("/{k}")),
        ));
    }
    let name = new
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if old.is_none() && name.len() > MAX_NAME {
        errs.push(FieldError::invalid(
            "metadata.name",
            name,
            format!("must be no more than {MAX_NAME} characters"),
        ));
    }
    errs
}
