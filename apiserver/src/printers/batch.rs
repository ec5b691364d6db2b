//! Rows of the batch kinds, as upstream's printJob and printCronJob: a Job's status (from its
//! true conditions), completions (`1/3`, or `0/1 of 4` for a work queue), duration; a
//! CronJob's schedule, time zone, suspension, active Jobs and last schedule.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, age_of, human_duration, i, name, or_none, s, selector_string};

fn containers_and_images(spec: Option<&Value>) -> (String, String) {
    let list = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array);
    let list = list.map(Vec::as_slice).unwrap_or_default();
    let names: Vec<&str> = list.iter().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = list.iter().map(|c| s(c, "/image")).collect();
    (names.join(","), images.join(","))
}

fn has_condition(obj: &Value, ty: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| s(c, "/type") == ty && s(c, "/status") == "True")
}

/// The STATUS column of a Job.
fn job_status(obj: &Value) -> &'static str {
    if has_condition(obj, "Complete") {
        "Complete"
    } else if has_condition(obj, "Failed") {
        "Failed"
    } else if obj.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if has_condition(obj, "Suspended") {
        "Suspended"
    } else if has_condition(obj, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
}

fn time(obj: &Value, pointer: &str) -> Option<DateTime<Utc>> {
    let t = obj.pointer(pointer).and_then(Value::as_str)?;
    DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

pub fn job(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let succeeded = i(obj, "/status/succeeded");
    let completions = match obj.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match i(obj, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = time(obj, "/status/startTime");
    let duration = match (start, time(obj, "/status/completionTime")) {
        (None, _) => String::new(),
        (Some(st), None) => human_duration(now - st),
        (Some(st), Some(done)) => human_duration(done - st),
    };
    let (containers, images) = containers_and_images(obj.pointer("/spec/template/spec"));
    vec![
        name(obj).into(),
        job_status(obj).into(),
        completions.into(),
        duration.into(),
        age(obj, now).into(),
        containers.into(),
        images.into(),
        or_none(&selector_string(obj.pointer("/spec/selector"))).into(),
    ]
}

pub fn cron_job(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let last = match obj.pointer("/status/lastScheduleTime") {
        Some(Value::String(_)) => age_of(obj, "/status/lastScheduleTime", now),
        _ => "<none>".into(),
    };
    let suspend = match obj.pointer("/spec/suspend").and_then(Value::as_bool) {
        // Upstream's printBoolPtr.
        Some(true) => "True".to_string(),
        Some(false) => "False".to_string(),
        None => "<unset>".into(),
    };
    let active = obj
        .pointer("/status/active")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let (containers, images) =
        containers_and_images(obj.pointer("/spec/jobTemplate/spec/template/spec"));
    vec![
        name(obj).into(),
        s(obj, "/spec/schedule").into(),
        or_none(s(obj, "/spec/timeZone")).into(),
        suspend.into(),
        json!(active),
        last.into(),
        age(obj, now).into(),
        containers.into(),
        images.into(),
        or_none(&selector_string(
            obj.pointer("/spec/jobTemplate/spec/selector"),
        ))
        .into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2024-01-01T00:10:00Z".parse().unwrap()
    }

    #[test]
    fn job_rows_as_upstream() {
        let base = json!({"metadata": {"name": "pi", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"completions": 1, "parallelism": 1,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                "template": {"spec": {"containers": [{"name": "pi", "image": "perl:5.34.0"}]}}}});
        let with = |patch: Value| tinykube_proto::patch::merge_patch(&base, &patch);
        let cases: Vec<(Value, [&str; 4])> = vec![
            (json!({}), ["pi", "Running", "0/1", ""]),
            (
                json!({"status": {"startTime": "2024-01-01T00:00:00Z", "active": 1}}),
                ["pi", "Running", "0/1", "10m"],
            ),
            (
                json!({"status": {"startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:00:05Z", "succeeded": 1,
                    "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}}),
                ["pi", "Complete", "1/1", "5s"],
            ),
            (
                json!({"status": {"conditions": [{"type": "FailureTarget", "status": "True"}]}}),
                ["pi", "FailureTarget", "0/1", ""],
            ),
            (
                json!({"status": {"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}]}}),
                ["pi", "Running", "0/1", ""],
            ),
            (
                json!({"status": {"conditions": [{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}]}}),
                ["pi", "Failed", "0/1", ""],
            ),
            (
                json!({"spec": {"suspend": true}, "status": {"conditions": [{"type": "Suspended", "status": "True"}]}}),
                ["pi", "Suspended", "0/1", ""],
            ),
            (
                json!({"spec": {"completions": null, "parallelism": 4}, "status": {"succeeded": 2}}),
                ["pi", "Running", "2/1 of 4", ""],
            ),
            (
                json!({"spec": {"completions": 3}, "status": {"succeeded": 2}}),
                ["pi", "Running", "2/3", ""],
            ),
            (
                json!({"metadata": {"deletionTimestamp": "2024-01-01T00:09:00Z"}}),
                ["pi", "Terminating", "0/1", ""],
            ),
        ];
        for (patch, want) in cases {
            let row = job(&with(patch.clone()), now());
            let got: Vec<&str> = row[..4].iter().map(|v| v.as_str().unwrap()).collect();
            assert_eq!(got, want, "{patch}");
            assert_eq!(row[4], "10m");
            assert_eq!(row[7], "batch.kubernetes.io/controller-uid=u");
        }
    }

    #[test]
    fn cron_job_rows_as_upstream() {
        let c = json!({"metadata": {"name": "hello", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"schedule": "*/1 * * * *", "suspend": false,
                "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "hello", "image": "busybox:1.28"}]}}}}},
            "status": {"active": [{"name": "hello-1"}], "lastScheduleTime": "2024-01-01T00:09:00Z"}});
        assert_eq!(
            cron_job(&c, now()),
            vec![
                json!("hello"),
                json!("*/1 * * * *"),
                json!("<none>"),
                json!("False"),
                json!(1),
                json!("60s"),
                json!("10m"),
                json!("hello"),
                json!("busybox:1.28"),
                json!("<none>")
            ]
        );
        let fresh = json!({"metadata": {"name": "x", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"schedule": "@daily", "timeZone": "Europe/Paris"}});
        let row = cron_job(&fresh, now());
        assert_eq!(row[2], "Europe/Paris");
        assert_eq!(row[3], "<unset>");
        assert_eq!(row[4], 0);
        assert_eq!(row[5], "<none>");
    }
}
