//! A Job's pods: how one is made from the template (generated name, controller reference, the
//! tracking finalizer; for an Indexed Job the completion index as annotation, label, hostname
//! and `JOB_COMPLETION_INDEX`), and what the controller reads of one (index, finalizer, failed
//! or not, when it finished, which failure policy rule it matches).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::{Job, PodFailurePolicy};
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::util::{new_controller_ref, pod_from_template};

/// The finalizer that keeps a pod until the Job counted it.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The completion index of a pod of an Indexed Job (annotation and label).
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// How often the index of a pod failed before it (backoffLimitPerIndex).
pub const INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
/// How many failures of the index of a pod the pod failure policy ignored before it.
pub const INDEX_IGNORED_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-ignored-failure-count";
/// The environment variable the completion index reaches containers through.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// How often an index failed before one of its pods: failures counted against
/// backoffLimitPerIndex, and failures a pod failure policy ignored (its two annotations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexFailures {
    pub counted: i64,
    pub ignored: i64,
}

/// A new pod of `job`; `index` is the completion index and its earlier failures.
pub fn new_pod(job: &Job, index: Option<(i64, IndexFailures)>) -> Pod {
    let name = job.metadata.name.clone().unwrap_or_default();
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let template = job
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let mut pod = pod_from_template(
        &template,
        &ns,
        &name,
        new_controller_ref::<Job>(&job.metadata),
    );
    pod.metadata
        .finalizers
        .get_or_insert_with(Vec::new)
        .push(TRACKING_FINALIZER.into());
    let Some((i, failures)) = index else {
        return pod;
    };
    pod.metadata.generate_name = Some(format!("{name}-{i}-"));
    let annotations = pod
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    annotations.insert(COMPLETION_INDEX.into(), i.to_string());
    if job
        .spec
        .as_ref()
        .and_then(|s| s.backoff_limit_per_index)
        .is_some()
    {
        annotations.insert(INDEX_FAILURE_COUNT.into(), failures.counted.to_string());
        if failures.ignored > 0 {
            annotations.insert(
                INDEX_IGNORED_FAILURE_COUNT.into(),
                failures.ignored.to_string(),
            );
        }
    }
    pod.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(COMPLETION_INDEX.into(), i.to_string());
    if let Some(spec) = pod.spec.as_mut() {
        if spec.hostname.as_deref().unwrap_or("").is_empty() {
            spec.hostname = Some(format!("{name}-{i}"));
        }
        let env = EnvVar {
            name: INDEX_ENV.into(),
            value: None,
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    api_version: None,
                    field_path: format!("metadata.annotations['{COMPLETION_INDEX}']"),
                }),
                ..Default::default()
            }),
        };
        let init = spec.init_containers.iter_mut().flatten();
        for c in spec.containers.iter_mut().chain(init) {
            let list = c.env.get_or_insert_with(Vec::new);
            if !list.iter().any(|e| e.name == INDEX_ENV) {
                list.push(env.clone());
            }
        }
    }
    pod
}

/// The completion index of a pod, if it has a valid one.
pub fn completion_index(pod: &Pod) -> Option<i64> {
    let text = pod.metadata.annotations.as_ref()?.get(COMPLETION_INDEX)?;
    text.parse().ok().filter(|i: &i64| *i >= 0)
}

/// Earlier counted failures of the index of `pod` (its annotation).
pub fn index_failures(pod: &Pod) -> i64 {
    index_failure_counts(pod).counted
}

/// Earlier failures of the index of `pod`, from its annotations; what does not parse as a
/// non-negative int32 is 0, as upstream.
pub fn index_failure_counts(pod: &Pod) -> IndexFailures {
    let read = |key: &str| {
        pod.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .and_then(|v| v.parse::<i32>().ok())
            .filter(|v| *v >= 0)
            .map_or(0, i64::from)
    };
    IndexFailures {
        counted: read(INDEX_FAILURE_COUNT),
        ignored: read(INDEX_IGNORED_FAILURE_COUNT),
    }
}

/// The failed pod of each index that its replacement follows (upstream's pod with delayed
/// deletion): the one with the most failures before it, the last to finish among equals.
pub fn last_failed_per_index(pods: &[Arc<Pod>], only_failed: bool) -> BTreeMap<i64, &Arc<Pod>> {
    let mut last: BTreeMap<i64, &Arc<Pod>> = BTreeMap::new();
    for p in pods.iter().filter(|p| failed(p, only_failed)) {
        let Some(i) = completion_index(p) else {
            continue;
        };
        let rank = |p: &Pod| {
            let c = index_failure_counts(p);
            (c.counted + c.ignored, finish_time(p))
        };
        if last.get(&i).is_none_or(|q| rank(p) >= rank(q)) {
            last.insert(i, p);
        }
    }
    last
}

/// The failures the replacement of `failed` inherits: one more, counted unless the pod
/// failure policy ignores it (upstream's getNewIndexFailureCounts).
pub fn replacement_failures(job: &Job, failed: Option<&Pod>) -> IndexFailures {
    let Some(pod) = failed else {
        return IndexFailures::default();
    };
    let mut c = index_failure_counts(pod);
    let policy = job
        .spec
        .as_ref()
        .and_then(|s| s.pod_failure_policy.as_ref());
    let ignored = policy
        .and_then(|p| match_failure_policy(p, pod))
        .is_some_and(|(action, _)| action == "Ignore");
    if ignored {
        c.ignored += 1;
    } else {
        c.counted += 1;
    }
    c
}

pub fn has_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == TRACKING_FINALIZER)
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

pub fn succeeded(pod: &Pod) -> bool {
    phase(pod) == "Succeeded"
}

/// Upstream's isPodFailed: phase Failed, or (unless only failed pods are replaced) a pod
/// being deleted before it succeeded.
pub fn failed(pod: &Pod, only_failed: bool) -> bool {
    if phase(pod) == "Failed" {
        return true;
    }
    !only_failed && pod.metadata.deletion_timestamp.is_some() && phase(pod) != "Succeeded"
}

/// Running or pending, not being deleted.
pub fn active(pod: &Pod) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && pod.metadata.deletion_timestamp.is_none()
}

/// Being deleted, not finished yet.
pub fn terminating(pod: &Pod) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && pod.metadata.deletion_timestamp.is_some()
}

pub fn ready(pod: &Pod) -> bool {
    crate::util::is_pod_ready(pod)
}

/// When a pod finished, as upstream's getFinishedTime: its containers' last termination, else
/// when it became not ready, else when it was deleted (less its grace period), else when it
/// was created.
pub fn finish_time(pod: &Pod) -> Option<Timestamp> {
    let status = pod.status.as_ref();
    let statuses = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten();
    let finished = statuses
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .map(|t| t.0)
        .max();
    let not_ready = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Ready" && c.status == "False")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0);
    let deleted = pod.metadata.deletion_timestamp.as_ref().map(|t| {
        let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
        t.0 - SignedDuration::from_secs(grace)
    });
    let created = pod.metadata.creation_timestamp.as_ref().map(|t| t.0);
    finished.or(not_ready).or(deleted).or(created)
}

/// The first rule of `policy` a failed pod matches: its action and upstream's message.
pub fn match_failure_policy(policy: &PodFailurePolicy, pod: &Pod) -> Option<(String, String)> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let status = pod.status.as_ref()?;
    for (i, rule) in policy.rules.iter().enumerate() {
        if let Some(req) = &rule.on_exit_codes {
            // Containers first, then init containers, as upstream's matchOnExitCodes.
            let statuses = status
                .container_statuses
                .iter()
                .flatten()
                .chain(status.init_container_statuses.iter().flatten());
            for c in statuses {
                if req.container_name.as_ref().is_some_and(|n| *n != c.name) {
                    continue;
                }
                let Some(code) = c
                    .state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .map(|t| t.exit_code)
                else {
                    continue;
                };
                if code == 0 {
                    continue;
                }
                let listed = req.values.contains(&code);
                if listed == (req.operator == "In") {
                    let message = format!(
                        "Container {} for pod {ns}/{name} failed with exit code {code} matching {} rule at index {i}",
                        c.name, rule.action
                    );
                    return Some((rule.action.clone(), message));
                }
            }
        }
        for pattern in rule.on_pod_conditions.iter().flatten() {
            let want = pattern.status.as_deref().unwrap_or("True");
            let hit = status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == pattern.type_ && c.status == want);
            if hit {
                let message = format!(
                    "Pod {ns}/{name} has condition {} matching {} rule at index {i}",
                    pattern.type_, rule.action
                );
                return Some((rule.action.clone(), message));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(indexed: bool) -> Job {
        serde_json::from_value(json!({"metadata": {"name": "pi", "namespace": "default", "uid": "u"},
            "spec": {"completionMode": if indexed { "Indexed" } else { "NonIndexed" }, "completions": 3,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                "template": {"metadata": {"labels": {"job-name": "pi"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}))
        .unwrap()
    }

    #[test]
    fn pods_carry_the_finalizer_and_their_index() {
        let plain = new_pod(&job(false), None);
        assert_eq!(plain.metadata.generate_name.as_deref(), Some("pi-"));
        assert!(has_finalizer(&plain));
        assert_eq!(completion_index(&plain), None);
        let owner = &plain.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.controller), ("Job", Some(true)));

        let indexed = new_pod(&job(true), Some((2, IndexFailures::default())));
        assert_eq!(indexed.metadata.generate_name.as_deref(), Some("pi-2-"));
        assert_eq!(completion_index(&indexed), Some(2));
        assert_eq!(
            indexed.metadata.labels.as_ref().unwrap()[COMPLETION_INDEX],
            "2"
        );
        let spec = indexed.spec.unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("pi-2"));
        let env = &spec.containers[0].env.as_ref().unwrap()[0];
        assert_eq!(env.name, INDEX_ENV);
        assert_eq!(
            env.value_from
                .as_ref()
                .unwrap()
                .field_ref
                .as_ref()
                .unwrap()
                .field_path,
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        );
    }

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn failure_policy_rules_match_as_upstream() {
        let policy: PodFailurePolicy = serde_json::from_value(json!({"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1]}},
        ]}))
        .unwrap();
        let failed_with = |code: i32| {
            pod(
                json!({"metadata": {"name": "p", "namespace": "ns"}, "status": {"phase": "Failed",
                "containerStatuses": [{"name": "main", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": code}}}]}}),
            )
        };
        let cases: Vec<(Pod, Option<(&str, &str)>)> = vec![
            (failed_with(42), Some(("FailJob", "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"))),
            (failed_with(3), Some(("Count", "Container main for pod ns/p failed with exit code 3 matching Count rule at index 2"))),
            (failed_with(1), None),
            (
                pod(json!({"metadata": {"name": "p", "namespace": "ns"}, "status": {"phase": "Failed",
                    "conditions": [{"type": "DisruptionTarget", "status": "True"}]}})),
                Some(("Ignore", "Pod ns/p has condition DisruptionTarget matching Ignore rule at index 0")),
            ),
        ];
        for (p, want) in cases {
            let got = match_failure_policy(&policy, &p);
            assert_eq!(got.as_ref().map(|(a, m)| (a.as_str(), m.as_str())), want);
        }
    }

    #[test]
    fn a_replacement_inherits_the_failures_of_its_index() {
        let failed = |name: &str, index: &str, counts: (&str, &str), exit: i32, at: &str| {
            Arc::new(pod(
                json!({"metadata": {"name": name, "namespace": "ns", "annotations": {
                    COMPLETION_INDEX: index, INDEX_FAILURE_COUNT: counts.0, INDEX_IGNORED_FAILURE_COUNT: counts.1}},
                "status": {"phase": "Failed", "containerStatuses": [{"name": "main", "image": "i", "imageID": "",
                    "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": exit, "finishedAt": at}}}]}}),
            ))
        };
        let pods = vec![
            failed("a0", "0", ("0", "0"), 1, "2024-01-01T00:00:01Z"),
            failed("b0", "0", ("1", "0"), 1, "2024-01-01T00:00:02Z"),
            failed("c1", "1", ("0", "0"), 1, "2024-01-01T00:00:05Z"),
            failed("d1", "1", ("0", "x"), 7, "2024-01-01T00:00:09Z"),
            failed("e2", "2", ("0", "1"), 7, "2024-01-01T00:00:03Z"),
        ];
        let mut j = job(true);
        j.spec.as_mut().unwrap().pod_failure_policy = serde_json::from_value(json!({"rules": [
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}}]}))
        .unwrap();
        let last = last_failed_per_index(&pods, false);
        let names: Vec<(i64, &str)> = last
            .iter()
            .map(|(i, p)| (*i, p.metadata.name.as_deref().unwrap()))
            .collect();
        // The most failures first, then the latest; an unreadable count is 0.
        assert_eq!(names, [(0, "b0"), (1, "d1"), (2, "e2")]);
        // index → (counted, ignored) of its replacement
        let cases = [(0, (2, 0)), (1, (0, 1)), (2, (0, 2))];
        for (i, (counted, ignored)) in cases {
            let got = replacement_failures(&j, last.get(&i).map(|p| p.as_ref()));
            assert_eq!(got, IndexFailures { counted, ignored }, "index {i}");
        }
        assert_eq!(replacement_failures(&j, None), IndexFailures::default());
        let next = new_pod(
            &j,
            Some((
                2,
                IndexFailures {
                    counted: 0,
                    ignored: 2,
                },
            )),
        );
        let a = next.metadata.annotations.unwrap();
        assert_eq!(a.get(INDEX_FAILURE_COUNT), None, "no backoffLimitPerIndex");
        let mut per_index = j.clone();
        per_index.spec.as_mut().unwrap().backoff_limit_per_index = Some(1);
        let next = new_pod(
            &per_index,
            Some((
                2,
                IndexFailures {
                    counted: 0,
                    ignored: 2,
                },
            )),
        );
        let a = next.metadata.annotations.unwrap();
        assert_eq!(
            (
                a[INDEX_FAILURE_COUNT].as_str(),
                a[INDEX_IGNORED_FAILURE_COUNT].as_str()
            ),
            ("0", "2")
        );
    }

    #[test]
    fn failed_pods_as_upstream() {
        let deleting = pod(
            json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}, "status": {"phase": "Running"}}),
        );
        assert!(failed(&deleting, false));
        assert!(!failed(&deleting, true));
        assert!(terminating(&deleting) && !active(&deleting));
        let done = pod(
            json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}, "status": {"phase": "Succeeded"}}),
        );
        assert!(!failed(&done, false) && succeeded(&done));
    }
}
