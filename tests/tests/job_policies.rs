//! A Job's advanced features end to end, with the real kubectl against real binaries, as the
//! docs pages run them: suspension and resumption, activeDeadlineSeconds, the pod failure
//! policy (FailJob on an exit code, Ignore on a disruption), backoffLimitPerIndex with
//! maxFailedIndexes, the success policy, and the STATUS column of `kubectl get jobs` through
//! those states. Where a pod's end must be chosen exactly (a disruption, a pod held while
//! terminating) there is no kubelet and the test writes the pod's status as a kubelet would.
//! Long sleepers get a 1 s termination grace period: `sleep` as PID 1 ignores SIGTERM, so
//! with the default 30 s a deleted pod would terminate as slowly as on a real cluster.

use std::time::Duration;

use serde_json::Value;
use tinykube_tests::{eventually, table_rows, ApiServer, ControllerManager, Kubelet, Scheduler};

use tinykube_tests::jobs::{condition, create, is_true, json, WAIT};

fn job(server: &ApiServer, name: &str) -> Value {
    json(server, &["get", "job", name])
}

/// Wait until the Job `name` satisfies `f`; on timeout, fail showing the Job and its pods.
#[track_caller]
fn wait_job(server: &ApiServer, name: &str, what: &str, f: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    if eventually(WAIT, || {
        last = job(server, name);
        f(&last)
    }) {
        return last;
    }
    let pods = server.kubectl(&["get", "pods", "-o", "wide", "--show-labels=false"]);
    panic!("job {name} never {what}: {last}\npods:\n{}", pods.stdout);
}

/// (reason, message) of a condition.
fn why(job: &Value, ty: &str) -> (String, String) {
    let c = condition(job, ty).unwrap_or_else(|| panic!("no {ty} condition in {job}"));
    (
        c["reason"].as_str().unwrap_or("").into(),
        c["message"].as_str().unwrap_or("").into(),
    )
}

fn events(server: &ApiServer, name: &str) -> Vec<(String, String, String)> {
    let list = json(
        server,
        &[
            "get",
            "events",
            "--field-selector",
            &format!("involvedObject.kind=Job,involvedObject.name={name}"),
        ],
    );
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let f = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (f("type"), f("reason"), f("message"))
        })
        .collect()
}

fn has_event(server: &ApiServer, job: &str, ty: &str, reason: &str, message: &str) -> bool {
    events(server, job).contains(&(ty.into(), reason.into(), message.into()))
}

/// The STATUS column of `kubectl get job NAME`.
fn status_column(server: &ApiServer, name: &str) -> String {
    let rows = table_rows(server.kubectl(&["get", "job", name]).ok());
    assert_eq!(rows[0][..3], ["NAME", "STATUS", "COMPLETIONS"]);
    rows[1][1].clone()
}

/// Pods of the Job: (name, phase, being deleted).
fn job_pods(server: &ApiServer, job: &str) -> Vec<(String, String, bool)> {
    let list = json(server, &["get", "pods", "-l", &format!("job-name={job}")]);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap_or("").to_string(),
                p["status"]["phase"].as_str().unwrap_or("").to_string(),
                p["metadata"]["deletionTimestamp"].is_string(),
            )
        })
        .collect()
}

fn running_pods(server: &ApiServer, job: &str) -> Vec<String> {
    job_pods(server, job)
        .into_iter()
        .filter(|p| p.1 == "Running" && !p.2)
        .map(|p| p.0)
        .collect()
}

/// An API server, a job controller with a short failure back-off, a scheduler and a kubelet.
fn cluster() -> (ApiServer, ControllerManager, Scheduler, Kubelet) {
    cluster_with_backoff("200ms")
}

fn cluster_with_backoff(backoff: &str) -> (ApiServer, ControllerManager, Scheduler, Kubelet) {
    tinykube_tests::jobs::cluster(backoff)
}

fn control_plane(server: &ApiServer) -> ControllerManager {
    ControllerManager::start(
        server,
        &["--controllers=job", "--job-pod-failure-backoff=200ms"],
    )
    .unwrap()
}

#[test]
fn a_suspended_job_waits_resumes_and_suspends_again() {
    let (server, _cm, _scheduler, _kubelet) = cluster();
    create(
        &server,
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: myjob
spec:
  suspend: true
  parallelism: 2
  completions: 4
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: work
        image: busybox:1.28
        command: ["sleep", "300"]
"#,
    );
    wait_job(&server, "myjob", "Suspended", |j| is_true(j, "Suspended"));
    let j = job(&server, "myjob");
    assert_eq!(
        why(&j, "Suspended"),
        ("JobSuspended".into(), "Job suspended".into())
    );
    assert!(j["status"]["startTime"].is_null(), "{j}");
    assert!(job_pods(&server, "myjob").is_empty());
    assert_eq!(status_column(&server, "myjob"), "Suspended");
    assert!(eventually(WAIT, || has_event(
        &server,
        "myjob",
        "Normal",
        "Suspended",
        "Job suspended"
    )));

    // Resumed: pods start, the condition turns False with JobResumed, startTime is set.
    server
        .kubectl(&[
            "patch",
            "job",
            "myjob",
            "--type=strategic",
            "-p",
            r#"{"spec":{"suspend":false}}"#,
        ])
        .ok();
    assert!(eventually(WAIT, || running_pods(&server, "myjob").len() == 2));
    let j = job(&server, "myjob");
    let c = condition(&j, "Suspended").unwrap();
    assert_eq!(c["status"], "False");
    assert_eq!(
        why(&j, "Suspended"),
        ("JobResumed".into(), "Job resumed".into())
    );
    let started = j["status"]["startTime"].as_str().unwrap().to_string();
    assert!(eventually(WAIT, || has_event(
        &server,
        "myjob",
        "Normal",
        "Resumed",
        "Job resumed"
    )));
    assert!(eventually(WAIT, || job(&server, "myjob")["status"]
        ["active"]
        == 2));
    assert_eq!(status_column(&server, "myjob"), "Running");

    // Suspended while running: its active pods are deleted, and not counted as failures.
    std::thread::sleep(Duration::from_millis(1100));
    server
        .kubectl(&[
            "patch",
            "job",
            "myjob",
            "--type=merge",
            "-p",
            r#"{"spec":{"suspend":true}}"#,
        ])
        .ok();
    assert!(
        eventually(WAIT, || job_pods(&server, "myjob").is_empty()),
        "{:?} {}",
        job_pods(&server, "myjob"),
        job(&server, "myjob")
    );
    assert!(eventually(WAIT, || {
        let j = job(&server, "myjob");
        is_true(&j, "Suspended") && j["status"]["active"] == 0
    }));
    let j = job(&server, "myjob");
    assert_eq!(j["status"]["failed"], 0, "suspension is no failure: {j}");
    assert_eq!(j["status"]["succeeded"], 0, "{j}");
    assert_eq!(status_column(&server, "myjob"), "Suspended");

    // Resumed again: startTime is reset to the resumption.
    server
        .kubectl(&[
            "patch",
            "job",
            "myjob",
            "--type=merge",
            "-p",
            r#"{"spec":{"suspend":false}}"#,
        ])
        .ok();
    assert!(eventually(WAIT, || running_pods(&server, "myjob").len() == 2));
    let j = job(&server, "myjob");
    let restarted = j["status"]["startTime"].as_str().unwrap();
    assert!(restarted > started.as_str(), "{started} then {restarted}");
    assert!(!is_true(&j, "Failed"), "{j}");
}

#[test]
fn a_job_past_its_active_deadline_fails_and_its_pods_go() {
    let (server, _cm, _scheduler, _kubelet) = cluster();
    create(
        &server,
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: pi-with-timeout
spec:
  backoffLimit: 5
  activeDeadlineSeconds: 2
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: pi
        image: busybox:1.28
        command: ["sleep", "300"]
"#,
    );
    assert!(eventually(WAIT, || running_pods(
        &server,
        "pi-with-timeout"
    )
    .len()
        == 2));
    assert_eq!(status_column(&server, "pi-with-timeout"), "Running");
    wait_job(&server, "pi-with-timeout", "Failed", |j| {
        is_true(j, "Failed")
    });
    let j = job(&server, "pi-with-timeout");
    let want = (
        "DeadlineExceeded".to_string(),
        "Job was active longer than specified deadline".to_string(),
    );
    assert_eq!(why(&j, "Failed"), want);
    assert_eq!(why(&j, "FailureTarget"), want);
    assert_eq!(j["status"]["active"], 0, "{j}");
    assert_eq!(
        j["status"]["failed"], 2,
        "the deleted pods count as failed: {j}"
    );
    assert!(j["status"]["completionTime"].is_null());
    // Upstream's check of the deadline: failed no earlier than 2 s after the start.
    let start = j["status"]["startTime"].as_str().unwrap();
    let failed_at = condition(&j, "Failed").unwrap()["lastTransitionTime"]
        .as_str()
        .unwrap()
        .to_string();
    let secs = |t: &str| -> i64 {
        let t: k8s_openapi::jiff::Timestamp = t.parse().unwrap();
        t.as_second()
    };
    assert!(secs(&failed_at) - secs(start) >= 2, "{start} {failed_at}");
    assert_eq!(status_column(&server, "pi-with-timeout"), "Failed");
    assert!(eventually(WAIT, || job_pods(&server, "pi-with-timeout").is_empty()));
    assert!(eventually(WAIT, || has_event(
        &server,
        "pi-with-timeout",
        "Warning",
        "DeadlineExceeded",
        "Job was active longer than specified deadline"
    )));
}

#[test]
fn a_fail_job_rule_fails_the_job_on_exit_code_42() {
    let (server, _cm, _scheduler, _kubelet) = cluster();
    // The docs' job-pod-failure-policy-failjob, with busybox for bash and shorter sleeps.
    create(
        &server,
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: job-pod-failure-policy-failjob
spec:
  completions: 8
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: busybox:1.28
        command: ["sh", "-c", "echo \"Hello world! I'm going to exit with 42 to simulate a software bug.\" && sleep 1 && exit 42"]
  backoffLimit: 6
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes:
        containerName: main
        operator: In
        values: [42]
"#,
    );
    let name = "job-pod-failure-policy-failjob";
    let j = job(&server, name);
    assert_eq!(j["spec"]["podReplacementPolicy"], "Failed");
    wait_job(&server, name, "Failed", |j| is_true(j, "Failed"));
    let j = job(&server, name);
    let (reason, message) = why(&j, "Failed");
    assert_eq!(reason, "PodFailurePolicy");
    let pods = job_pods(&server, name);
    assert!(
        pods.iter().any(|p| message
            == format!(
                "Container main for pod default/{} failed with exit code 42 matching FailJob rule at index 0",
                p.0
            )),
        "{message} names none of {pods:?}"
    );
    assert_eq!(why(&j, "FailureTarget"), (reason.clone(), message.clone()));
    assert!(pods.len() <= 2, "no replacement after FailJob: {pods:?}");
    assert_eq!(j["status"]["active"], 0, "{j}");
    assert_eq!(j["status"]["succeeded"], 0, "{j}");
    assert_eq!(status_column(&server, name), "Failed");
    assert!(eventually(WAIT, || has_event(
        &server,
        name,
        "Warning",
        "PodFailurePolicy",
        &message
    )));
}

#[test]
fn an_ignored_disruption_does_not_count_against_the_backoff_limit() {
    let server = ApiServer::start().unwrap();
    let _cm = control_plane(&server);
    // The docs' job-pod-failure-policy-ignore; pods end as the test says (no kubelet).
    create(
        &server,
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: job-pod-failure-policy-ignore
spec:
  completions: 1
  parallelism: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.28
        command: ["sleep", "90"]
  backoffLimit: 0
  podFailurePolicy:
    rules:
    - action: Ignore
      onPodConditions:
      - type: DisruptionTarget
"#,
    );
    let name = "job-pod-failure-policy-ignore";
    assert!(eventually(WAIT, || job_pods(&server, name).len() == 1));
    let first = job_pods(&server, name)[0].0.clone();
    // Evicted: the pod fails with the DisruptionTarget condition.
    server.patch_status(
        "pod",
        &first,
        r#"{"status":{"phase":"Failed","conditions":[{"type":"DisruptionTarget","status":"True","reason":"EvictionByEvictionAPI","message":"Eviction API: evicting"}]}}"#,
    );
    // A replacement, and no failure counted.
    assert!(eventually(WAIT, || {
        let pods = job_pods(&server, name);
        pods.len() == 2 && pods.iter().any(|p| p.0 != first && p.1 == "Pending")
    }));
    assert!(eventually(WAIT, || {
        let j = job(&server, name);
        j["status"]["active"] == 1
            && j["status"]["uncountedTerminatedPods"] == serde_json::json!({})
    }));
    let j = job(&server, name);
    assert_eq!(j["status"]["failed"], 0, "{j}");
    assert!(
        !is_true(&j, "Failed") && !is_true(&j, "FailureTarget"),
        "{j}"
    );
    // The ignored pod lost its tracking finalizer all the same.
    let p = json(&server, &["get", "pod", &first]);
    assert!(p["metadata"]["finalizers"].is_null(), "{p}");

    // An ordinary failure of the replacement counts, and backoffLimit 0 is reached.
    let second = job_pods(&server, name)
        .into_iter()
        .find(|p| p.0 != first)
        .unwrap()
        .0;
    server.patch_status(
        "pod",
        &second,
        r#"{"status":{"phase":"Failed","containerStatuses":[{"name":"main","image":"busybox:1.28","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":1,"reason":"Error"}}}]}}"#,
    );
    wait_job(&server, name, "Failed", |j| is_true(j, "Failed"));
    let j = job(&server, name);
    assert_eq!(
        why(&j, "Failed"),
        (
            "BackoffLimitExceeded".into(),
            "Job has reached the specified backoff limit".into()
        )
    );
    assert_eq!(j["status"]["failed"], 1, "{j}");
}

const PER_INDEX: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: NAME
spec:
  completions: 10
  parallelism: 3
  completionMode: Indexed
  backoffLimitPerIndex: 1
  maxFailedIndexes: MAX
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: example
        image: busybox:1.28
        command: ["sh", "-c", "echo Hello world; if [ $((JOB_COMPLETION_INDEX % 2)) -eq 0 ]; then exit 1; fi"]
"#;

#[test]
fn backoff_limit_per_index_fails_only_the_failing_indexes() {
    let (server, _cm, _scheduler, _kubelet) = cluster();
    // The docs' job-backoff-limit-per-index-example: the even indexes fail twice each.
    let name = "job-backoff-limit-per-index-example";
    create(
        &server,
        &PER_INDEX.replace("NAME", name).replace("MAX", "5"),
    );
    wait_job(&server, name, "Failed", |j| is_true(j, "Failed"));
    let j = job(&server, name);
    assert_eq!(
        why(&j, "Failed"),
        ("FailedIndexes".into(), "Job has failed indexes".into())
    );
    let pods = json(&server, &["get", "pods", "-l", &format!("job-name={name}")]);
    let pods = pods["items"].as_array().unwrap();
    let summary: Vec<String> = pods
        .iter()
        .map(|p| {
            let a = &p["metadata"]["annotations"];
            format!(
                "{} {} {} {} {}",
                p["metadata"]["name"],
                a["batch.kubernetes.io/job-completion-index"],
                a["batch.kubernetes.io/job-index-failure-count"],
                p["status"]["phase"],
                p["metadata"]["creationTimestamp"]
            )
        })
        .collect();
    assert_eq!(j["status"]["completedIndexes"], "1,3,5,7,9", "{j}");
    assert_eq!(j["status"]["failedIndexes"], "0,2,4,6,8", "{j}");
    assert_eq!(j["status"]["succeeded"], 5, "{j}");
    assert_eq!(j["status"]["failed"], 10, "{j} {summary:#?}");
    assert_eq!(status_column(&server, name), "Failed");
    // Each failing index ran twice, the second pod knowing of the first failure.
    assert_eq!(pods.len(), 15, "{summary:#?}");
    for index in ["0", "2", "4", "6", "8"] {
        let mut counts: Vec<&str> = pods
            .iter()
            .filter(|p| {
                p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == index
            })
            .map(|p| {
                p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        counts.sort();
        assert_eq!(counts, ["0", "1"], "index {index}");
    }
    assert!(eventually(WAIT, || has_event(
        &server,
        name,
        "Warning",
        "FailedIndexes",
        "Job has failed indexes"
    )));
}

#[test]
fn each_index_backs_off_on_its_own() {
    // A 1 s back-off: four indexes failing at once each retry about 1 s later, where one
    // back-off for the whole Job would wait 8 s (1 s doubled for each of 4 failures).
    let (server, _cm, _scheduler, _kubelet) = cluster_with_backoff("1s");
    let name = "per-index-backoff";
    create(
        &server,
        &format!(
            r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  completions: 4
  parallelism: 4
  completionMode: Indexed
  backoffLimitPerIndex: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.28
        command: ["sh", "-c", "exit 1"]
"#
        ),
    );
    let j = wait_job(&server, name, "Failed", |j| is_true(j, "Failed"));
    assert_eq!(
        why(&j, "Failed"),
        ("FailedIndexes".into(), "Job has failed indexes".into())
    );
    assert_eq!(j["status"]["failedIndexes"], "0-3", "{j}");
    assert_eq!(j["status"]["failed"], 8, "{j}");
    let pods = json(&server, &["get", "pods", "-l", &format!("job-name={name}")]);
    let created = |count: &str| -> Vec<i64> {
        pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| {
                p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"] == count
            })
            .map(|p| {
                let t = p["metadata"]["creationTimestamp"].as_str().unwrap();
                t.parse::<k8s_openapi::jiff::Timestamp>()
                    .unwrap()
                    .as_second()
            })
            .collect()
    };
    let (first, second) = (created("0"), created("1"));
    assert_eq!((first.len(), second.len()), (4, 4), "{pods}");
    let start = first.iter().min().unwrap();
    let retried = second.iter().max().unwrap();
    assert!(
        retried - start <= 4,
        "the retries came {}s after the first pods",
        retried - start
    );
}

#[test]
fn too_many_failed_indexes_fail_the_job_early() {
    let (server, _cm, _scheduler, _kubelet) = cluster();
    let name = "max-failed";
    create(
        &server,
        &PER_INDEX.replace("NAME", name).replace("MAX", "1"),
    );
    wait_job(&server, name, "Failed", |j| is_true(j, "Failed"));
    let j = job(&server, name);
    assert_eq!(
        why(&j, "Failed"),
        (
            "MaxFailedIndexesExceeded".into(),
            "Job has exceeded the specified maximal number of failed indexes".into()
        )
    );
    let failed = j["status"]["failedIndexes"].as_str().unwrap();
    assert!(failed.split(',').count() >= 2, "{j}");
    assert_eq!(j["status"]["active"], 0, "{j}");
    assert!(eventually(WAIT, || has_event(
        &server,
        name,
        "Warning",
        "MaxFailedIndexesExceeded",
        "Job has exceeded the specified maximal number of failed indexes"
    )));
}

#[test]
fn a_success_policy_completes_the_job_when_the_leader_succeeds() {
    let (server, _cm, _scheduler, _kubelet) = cluster();
    // The leader (index 0) finishes; the workers would run on, and are terminated.
    create(
        &server,
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: job-success
spec:
  parallelism: 3
  completions: 3
  completionMode: Indexed
  successPolicy:
    rules:
    - succeededIndexes: "0"
      succeededCount: 1
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: busybox:1.28
        command: ["sh", "-c", "if [ \"$JOB_COMPLETION_INDEX\" = 0 ]; then sleep 1; exit 0; fi; sleep 300"]
"#,
    );
    let name = "job-success";
    wait_job(&server, name, "Complete", |j| is_true(j, "Complete"));
    let j = job(&server, name);
    let want = (
        "SuccessPolicy".to_string(),
        "Matched rules at index 0".to_string(),
    );
    assert_eq!(why(&j, "SuccessCriteriaMet"), want);
    assert_eq!(why(&j, "Complete"), want);
    assert_eq!(j["status"]["completedIndexes"], "0", "{j}");
    assert_eq!(j["status"]["succeeded"], 1, "{j}");
    assert_eq!(j["status"]["active"], 0, "{j}");
    assert!(j["status"]["completionTime"].is_string());
    assert_eq!(status_column(&server, name), "Complete");
    let rows = table_rows(server.kubectl(&["get", "job", name]).ok());
    assert_eq!(rows[1][2], "1/3");
    assert!(eventually(WAIT, || job_pods(&server, name)
        .iter()
        .all(|p| p.1 == "Succeeded" || p.1 == "Failed")));
    assert!(eventually(WAIT, || has_event(
        &server,
        name,
        "Normal",
        "Completed",
        "Job completed"
    )));
}

#[test]
fn the_status_column_follows_the_interim_conditions() {
    let server = ApiServer::start().unwrap();
    let _cm = control_plane(&server);
    // Two workers of an Indexed Job; the one of index 1 is held terminating by a finalizer of
    // its own, so the interim conditions stay visible.
    create(
        &server,
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: interim
spec:
  completions: 2
  parallelism: 2
  completionMode: Indexed
  backoffLimit: 0
  successPolicy:
    rules:
    - succeededIndexes: "0"
  template:
    metadata:
      finalizers: ["example.com/hold"]
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.28
"#,
    );
    assert!(eventually(WAIT, || job_pods(&server, "interim").len() == 2));
    assert_eq!(status_column(&server, "interim"), "Running");
    let pods = job_pods(&server, "interim");
    let of = |i: &str| {
        pods.iter()
            .find(|p| p.0.starts_with(&format!("interim-{i}-")))
            .unwrap()
            .0
            .clone()
    };
    let (leader, worker) = (of("0"), of("1"));
    server.patch_status("pod", &leader, r#"{"status":{"phase":"Succeeded"}}"#);
    // SuccessCriteriaMet while the worker terminates: upstream's printer says Running.
    wait_job(&server, "interim", "SuccessCriteriaMet", |j| {
        is_true(j, "SuccessCriteriaMet")
    });
    assert!(eventually(WAIT, || job_pods(&server, "interim")
        .iter()
        .any(|p| p.0 == worker && p.2)));
    let j = job(&server, "interim");
    assert!(!is_true(&j, "Complete"), "{j}");
    assert_eq!(status_column(&server, "interim"), "Running");
    // Released: the Job completes.
    for pod in [&leader, &worker] {
        server
            .kubectl(&[
                "patch",
                "pod",
                pod,
                "--type=json",
                "-p",
                r#"[{"op":"remove","path":"/metadata/finalizers/0"}]"#,
            ])
            .ok();
    }
    wait_job(&server, "interim", "Complete", |j| is_true(j, "Complete"));
    assert_eq!(status_column(&server, "interim"), "Complete");

    // FailureTarget while a failed Job's pods terminate.
    create(
        &server,
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: failing
spec:
  completions: 2
  parallelism: 2
  backoffLimit: 0
  template:
    metadata:
      finalizers: ["example.com/hold"]
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.28
"#,
    );
    assert!(eventually(WAIT, || job_pods(&server, "failing").len() == 2));
    let pods = job_pods(&server, "failing");
    server.patch_status("pod", &pods[0].0, r#"{"status":{"phase":"Failed"}}"#);
    wait_job(&server, "failing", "FailureTarget", |j| {
        is_true(j, "FailureTarget")
    });
    assert!(eventually(WAIT, || job_pods(&server, "failing")
        .iter()
        .any(|p| p.0 == pods[1].0 && p.2)));
    assert_eq!(status_column(&server, "failing"), "FailureTarget");
    assert!(!is_true(&job(&server, "failing"), "Failed"));
    for pod in &pods {
        server
            .kubectl(&[
                "patch",
                "pod",
                &pod.0,
                "--type=json",
                "-p",
                r#"[{"op":"remove","path":"/metadata/finalizers/0"}]"#,
            ])
            .ok();
    }
    wait_job(&server, "failing", "Failed", |j| is_true(j, "Failed"));
    assert_eq!(status_column(&server, "failing"), "Failed");
}
