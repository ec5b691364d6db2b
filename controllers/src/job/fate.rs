//! What a Job comes to, pure: its conditions (stamped, set as upstream's
//! ensureJobConditionStatus), and the decision of its fate from what a sync counted, in
//! upstream's order: pod failure policy, backoff limit, failed indexes, deadline, then success
//! policy and completions.

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::indexes::{self, Indexes};

/// A condition of a Job, stamped now.
pub fn condition(
    ty: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> JobCondition {
    JobCondition {
        type_: ty.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// Whether `ty` is a true condition of `status`.
pub fn is_true(status: &JobStatus, ty: &str) -> bool {
    status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == ty && c.status == "True")
}

/// Put `c` in `status` (upstream's ensureJobConditionStatus): a condition already in that
/// state is left alone. Whether anything changed.
pub fn set_condition(status: &mut JobStatus, c: JobCondition) -> bool {
    let list = status.conditions.get_or_insert_with(Vec::new);
    match list.iter_mut().find(|x| x.type_ == c.type_) {
        Some(x) if x.status == c.status => false,
        Some(x) => {
            *x = c;
            true
        }
        None => {
            list.push(c);
            true
        }
    }
}

/// The Job's fate: which finishing condition it reached, with reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fate {
    /// `FailureTarget` or `SuccessCriteriaMet`.
    pub target: &'static str,
    pub reason: String,
    pub message: String,
}

impl Fate {
    fn failure(reason: &str, message: &str) -> Self {
        Fate {
            target: "FailureTarget",
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// The terminal condition that follows.
    pub fn terminal(&self) -> &'static str {
        if self.target == "FailureTarget" {
            "Failed"
        } else {
            "Complete"
        }
    }
}

/// What a sync counted of the Job's pods, the input of [`decide`].
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub active: i64,
    pub succeeded: i64,
    pub failed: i64,
    pub completed: Indexes,
    pub failed_indexes: Indexes,
    /// A pod failure policy rule with FailJob matched: its message.
    pub fail_job: Option<String>,
    pub now: Option<Timestamp>,
}

/// Upstream's order of the finishing decisions: failure policy, backoff limit, failed
/// indexes, deadline, then success (success policy, completions).
pub fn decide(job: &Job, c: &Counts) -> Option<Fate> {
    let spec = job.spec.as_ref()?;
    let status = job.status.clone().unwrap_or_default();
    let indexed = spec.completion_mode.as_deref() == Some("Indexed");
    let completions = spec.completions.map(i64::from);
    if let Some(message) = &c.fail_job {
        return Some(Fate::failure("PodFailurePolicy", message));
    }
    let per_index = spec.backoff_limit_per_index.is_some();
    if !per_index && c.failed > i64::from(spec.backoff_limit.unwrap_or(6)) {
        return Some(Fate::failure(
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        ));
    }
    if let Some(max) = spec.max_failed_indexes.filter(|_| per_index) {
        if c.failed_indexes.len() as i64 > i64::from(max) {
            return Some(Fate::failure(
                "MaxFailedIndexesExceeded",
                "Job has exceeded the specified maximal number of failed indexes",
            ));
        }
    }
    if let (Some(deadline), Some(start), Some(now)) = (
        spec.active_deadline_seconds,
        status.start_time.as_ref(),
        c.now,
    ) {
        if spec.suspend != Some(true) && start.0 + SignedDuration::from_secs(deadline) <= now {
            return Some(Fate::failure(
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            ));
        }
    }
    if indexed {
        if let Some(rules) = spec.success_policy.as_ref().map(|p| &p.rules) {
            for (i, rule) in rules.iter().enumerate() {
                let n = completions.unwrap_or(0);
                let (hit, count) = match &rule.succeeded_indexes {
                    Some(text) => {
                        let wanted = indexes::parse(text, n);
                        let hit = wanted.intersection(&c.completed).count() as i64;
                        (
                            hit,
                            rule.succeeded_count.map_or(wanted.len() as i64, i64::from),
                        )
                    }
                    None => (
                        c.completed.len() as i64,
                        rule.succeeded_count.map_or(i64::MAX, i64::from),
                    ),
                };
                if hit >= count {
                    return Some(Fate {
                        target: "SuccessCriteriaMet",
                        reason: "SuccessPolicy".into(),
                        message: format!("Matched rules at index {i}"),
                    });
                }
            }
        }
        let n = completions.unwrap_or(0);
        if (c.completed.len() + c.failed_indexes.len()) as i64 >= n {
            if !c.failed_indexes.is_empty() {
                return Some(Fate::failure("FailedIndexes", "Job has failed indexes"));
            }
            return Some(completed());
        }
        return None;
    }
    let done = match completions {
        Some(n) => c.succeeded >= n,
        None => c.succeeded > 0 && c.active == 0,
    };
    done.then(completed)
}

fn completed() -> Fate {
    Fate {
        target: "SuccessCriteriaMet",
        reason: "CompletionsReached".into(),
        message: "Reached expected number of succeeded pods".into(),
    }
}

/// The finishing condition a Job already has, if any.
pub fn recorded_fate(status: &JobStatus) -> Option<Fate> {
    let c = status.conditions.iter().flatten().find(|c| {
        c.status == "True" && matches!(c.type_.as_str(), "FailureTarget" | "SuccessCriteriaMet")
    })?;
    Some(Fate {
        target: if c.type_ == "FailureTarget" {
            "FailureTarget"
        } else {
            "SuccessCriteriaMet"
        },
        reason: c.reason.clone().unwrap_or_default(),
        message: c.message.clone().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(spec: serde_json::Value) -> Job {
        serde_json::from_value(json!({"metadata": {"name": "j"}, "spec": spec,
            "status": {"startTime": "2024-01-01T00:00:00Z"}}))
        .unwrap()
    }

    #[test]
    fn fates_as_upstream() {
        let t0: Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
        let base = json!({"template": {}, "backoffLimit": 2, "completions": 3});
        let with = |k: &str, v: serde_json::Value| {
            let mut s = base.clone();
            s[k] = v;
            s
        };
        let counts = |succeeded: i64, failed: i64| Counts {
            succeeded,
            failed,
            now: Some(t0 + SignedDuration::from_secs(30)),
            ..Default::default()
        };
        // (spec, counts) → (condition, reason, message)
        type Want<'a> = Option<(&'a str, &'a str, &'a str)>;
        let cases: Vec<(serde_json::Value, Counts, Want)> = vec![
            (base.clone(), counts(1, 2), None),
            (
                base.clone(),
                counts(1, 3),
                Some((
                    "FailureTarget",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                )),
            ),
            (
                base.clone(),
                counts(3, 0),
                Some((
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                )),
            ),
            (
                with("activeDeadlineSeconds", json!(10)),
                counts(0, 0),
                Some((
                    "FailureTarget",
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                )),
            ),
            (with("activeDeadlineSeconds", json!(60)), counts(0, 0), None),
            (
                with("completions", serde_json::Value::Null),
                counts(1, 0),
                Some((
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                )),
            ),
            (
                json!({"template": {}, "completions": 3, "completionMode": "Indexed", "successPolicy": {"rules": [{"succeededIndexes": "0", "succeededCount": 1}]}}),
                Counts {
                    completed: [0].into(),
                    ..counts(1, 0)
                },
                Some((
                    "SuccessCriteriaMet",
                    "SuccessPolicy",
                    "Matched rules at index 0",
                )),
            ),
            (
                json!({"template": {}, "completions": 2, "completionMode": "Indexed", "backoffLimitPerIndex": 0}),
                Counts {
                    completed: [0].into(),
                    failed_indexes: [1].into(),
                    ..counts(1, 1)
                },
                Some(("FailureTarget", "FailedIndexes", "Job has failed indexes")),
            ),
            (
                json!({"template": {}, "completions": 4, "completionMode": "Indexed", "backoffLimitPerIndex": 0, "maxFailedIndexes": 0}),
                Counts {
                    failed_indexes: [1].into(),
                    ..counts(0, 1)
                },
                Some((
                    "FailureTarget",
                    "MaxFailedIndexesExceeded",
                    "Job has exceeded the specified maximal number of failed indexes",
                )),
            ),
            (
                base.clone(),
                Counts {
                    fail_job: Some("m".into()),
                    ..counts(0, 1)
                },
                Some(("FailureTarget", "PodFailurePolicy", "m")),
            ),
        ];
        for (spec, c, want) in cases {
            let got = decide(&job(spec.clone()), &c);
            let got = got
                .as_ref()
                .map(|f| (f.target, f.reason.as_str(), f.message.as_str()));
            assert_eq!(got, want, "{spec}");
        }
    }

    #[test]
    fn conditions_change_only_when_their_status_does() {
        let t0: Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
        let mut status = JobStatus::default();
        assert!(set_condition(
            &mut status,
            condition("Suspended", "True", "JobSuspended", "Job suspended", t0)
        ));
        assert!(!set_condition(
            &mut status,
            condition("Suspended", "True", "JobSuspended", "Job suspended", t0)
        ));
        assert!(is_true(&status, "Suspended"));
        assert!(set_condition(
            &mut status,
            condition("Suspended", "False", "JobResumed", "Job resumed", t0)
        ));
        assert!(!is_true(&status, "Suspended"));
        assert_eq!(status.conditions.as_ref().unwrap().len(), 1);
    }
}
