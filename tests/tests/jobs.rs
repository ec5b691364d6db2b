//! Jobs as the docs run them, with the real kubectl: the pi Job (busybox standing in for
//! perl) runs on a kubelet to COMPLETIONS 1/1 and Complete, `kubectl logs job/pi` reads its pod;
//! an Indexed Job gives each pod its JOB_COMPLETION_INDEX and ends with completedIndexes 0-2; a
//! failing Job stops at its backoffLimit with upstream's condition and event; a controller
//! manager killed mid-Job neither creates an extra pod nor loses a completion; and the API
//! refuses what upstream refuses.

use serde_json::Value;
use tinykube_tests::{eventually, table_rows, ApiServer, ControllerManager, Kubelet, Scheduler};

use tinykube_tests::jobs::{create, is_true, json, WAIT};

/// The Job's condition `ty` when it is True.
fn condition(job: &Value, ty: &str) -> Option<Value> {
    tinykube_tests::jobs::condition(job, ty).filter(|_| is_true(job, ty))
}

fn events(server: &ApiServer, name: &str) -> Vec<(String, String)> {
    let list = json(
        server,
        &[
            "get",
            "events",
            "--field-selector",
            &format!("involvedObject.name={name}"),
        ],
    );
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["reason"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// An API server, a job controller, a scheduler and one kubelet that runs the pods.
fn cluster() -> (ApiServer, ControllerManager, Scheduler, Kubelet) {
    tinykube_tests::jobs::cluster("100ms")
}

const PI: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      containers:
      - name: pi
        image: busybox:1.28
        command: ["sh", "-c", "echo 3.14159265358979"]
      restartPolicy: Never
  backoffLimit: 4
"#;

#[test]
fn the_pi_job_runs_to_completion() {
    let (server, _cm, _scheduler, _kubelet) = cluster();
    create(&server, PI);
    let job = json(&server, &["get", "job", "pi"]);
    let uid = job["metadata"]["uid"].as_str().unwrap().to_string();
    assert_eq!(
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid.as_str()
    );
    assert_eq!(job["metadata"]["labels"]["job-name"], "pi");
    assert_eq!(job["spec"]["completionMode"], "NonIndexed");
    assert!(eventually(WAIT, || condition(
        &json(&server, &["get", "job", "pi"]),
        "Complete"
    )
    .is_some()));
    let job = json(&server, &["get", "job", "pi"]);
    assert_eq!(job["status"]["succeeded"], 1);
    assert!(job["status"]["completionTime"].is_string());
    let met = condition(&job, "SuccessCriteriaMet").expect("SuccessCriteriaMet");
    assert_eq!(met["reason"], "CompletionsReached");
    assert_eq!(
        condition(&job, "Complete").unwrap()["message"],
        "Reached expected number of succeeded pods"
    );
    let rows = table_rows(server.kubectl(&["get", "jobs"]).ok());
    assert_eq!(
        rows[0],
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    );
    assert_eq!(&rows[1][..3], ["pi", "Complete", "1/1"]);
    let wide = table_rows(server.kubectl(&["get", "jobs", "-o", "wide"]).ok());
    assert_eq!(wide[0][5..], ["CONTAINERS", "IMAGES", "SELECTOR"]);
    assert_eq!(
        wide[1][7],
        format!("batch.kubernetes.io/controller-uid={uid}")
    );
    // One pod, counted: no tracking finalizer left; its log through the Job.
    let pods = json(&server, &["get", "pods", "-l", "job-name=pi"]);
    let pods = pods["items"].as_array().unwrap();
    assert_eq!(pods.len(), 1);
    assert!(pods[0]["metadata"]["finalizers"].is_null());
    let pod = pods[0]["metadata"]["name"].as_str().unwrap();
    assert!(pod.starts_with("pi-"));
    assert_eq!(
        server.kubectl(&["logs", "job/pi"]).ok().trim(),
        "3.14159265358979"
    );
    assert!(eventually(WAIT, || {
        let e = events(&server, "pi");
        e.contains(&("SuccessfulCreate".into(), format!("Created pod: {pod}")))
            && e.contains(&("Completed".into(), "Job completed".into()))
    }));
    server
        .kubectl(&["wait", "--for=condition=complete", "job/pi", "--timeout=5s"])
        .ok();
}

#[test]
fn an_indexed_job_gives_each_pod_its_index() {
    let (server, _cm, _scheduler, _kubelet) = cluster();
    create(
        &server,
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: indexed
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: worker
        image: busybox:1.28
        command: ["sh", "-c", "echo index=$JOB_COMPLETION_INDEX"]
"#,
    );
    assert!(eventually(WAIT, || condition(
        &json(&server, &["get", "job", "indexed"]),
        "Complete"
    )
    .is_some()));
    let job = json(&server, &["get", "job", "indexed"]);
    assert_eq!(job["status"]["completedIndexes"], "0-2");
    assert_eq!(job["status"]["succeeded"], 3);
    let pods = json(&server, &["get", "pods", "-l", "job-name=indexed"]);
    let pods = pods["items"].as_array().unwrap();
    assert_eq!(pods.len(), 3);
    for p in pods {
        let index = p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            .as_str()
            .unwrap();
        let name = p["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with(&format!("indexed-{index}-")), "{name}");
        assert_eq!(
            p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"],
            index
        );
        assert_eq!(p["spec"]["hostname"], format!("indexed-{index}"));
        let log = server.kubectl(&["logs", name]).ok().trim().to_string();
        assert_eq!(log, format!("index={index}"));
    }
}

#[test]
fn a_failing_job_stops_at_its_backoff_limit() {
    let (server, _cm, _scheduler, _kubelet) = cluster();
    create(
        &server,
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: broken
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: fail
        image: busybox:1.28
        command: ["sh", "-c", "exit 3"]
"#,
    );
    assert!(eventually(WAIT, || condition(
        &json(&server, &["get", "job", "broken"]),
        "Failed"
    )
    .is_some()));
    let job = json(&server, &["get", "job", "broken"]);
    let failed = condition(&job, "Failed").unwrap();
    assert_eq!(failed["reason"], "BackoffLimitExceeded");
    assert_eq!(
        failed["message"],
        "Job has reached the specified backoff limit"
    );
    assert!(condition(&job, "FailureTarget").is_some());
    assert_eq!(job["status"]["failed"], 2);
    assert_eq!(job["status"]["active"], 0);
    assert!(job["status"]["completionTime"].is_null());
    let rows = table_rows(server.kubectl(&["get", "job", "broken"]).ok());
    assert_eq!(&rows[1][..3], ["broken", "Failed", "0/1"]);
    let pods = json(&server, &["get", "pods", "-l", "job-name=broken"]);
    assert_eq!(pods["items"].as_array().unwrap().len(), 2);
    assert!(eventually(WAIT, || events(&server, "broken").contains(&(
        "BackoffLimitExceeded".into(),
        "Job has reached the specified backoff limit".into()
    ))));
}

/// Pods of the Job, by name, with their phase.
fn job_pods(server: &ApiServer, job: &str) -> Vec<(String, String)> {
    let list = json(server, &["get", "pods", "-l", &format!("job-name={job}")]);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap_or("").to_string(),
                p["status"]["phase"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn succeed(server: &ApiServer, pod: &str) {
    server.patch_status("pod", pod, r#"{"status":{"phase":"Succeeded"}}"#);
}

#[test]
fn a_restarted_controller_manager_creates_no_extra_pod_and_loses_no_completion() {
    let server = ApiServer::start().unwrap();
    let mut cm = ControllerManager::start(&server, &["--controllers=job"]).unwrap();
    create(
        &server,
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: work
spec:
  completions: 4
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: w
        image: busybox:1.28
"#,
    );
    assert!(eventually(WAIT, || job_pods(&server, "work").len() == 2));
    let first = job_pods(&server, "work");
    // One pod finishes and the manager dies at once; another finishes while it is down.
    succeed(&server, &first[0].0);
    cm.kill9();
    succeed(&server, &first[1].0);
    cm.restart().unwrap();
    assert!(eventually(WAIT, || {
        let pods = job_pods(&server, "work");
        pods.len() == 4 && pods.iter().filter(|p| p.1 == "Succeeded").count() == 2
    }));
    let job = json(&server, &["get", "job", "work"]);
    assert!(eventually(WAIT, || json(&server, &["get", "job", "work"])
        ["status"]["succeeded"]
        == 2));
    assert_eq!(job["status"]["active"], 2);
    // Again, killed while the last two finish.
    let rest: Vec<String> = job_pods(&server, "work")
        .into_iter()
        .filter(|p| p.1 != "Succeeded")
        .map(|p| p.0)
        .collect();
    succeed(&server, &rest[0]);
    cm.kill9();
    cm.restart().unwrap();
    succeed(&server, &rest[1]);
    assert!(eventually(WAIT, || condition(
        &json(&server, &["get", "job", "work"]),
        "Complete"
    )
    .is_some()));
    let job = json(&server, &["get", "job", "work"]);
    assert_eq!(job["status"]["succeeded"], 4);
    assert_eq!(
        job["status"]["uncountedTerminatedPods"],
        serde_json::json!({})
    );
    assert_eq!(job_pods(&server, "work").len(), 4, "no extra pod");
    let pods = json(&server, &["get", "pods", "-l", "job-name=work"]);
    for p in pods["items"].as_array().unwrap() {
        assert!(p["metadata"]["finalizers"].is_null(), "{p}");
    }
}

#[test]
fn batch_objects_are_validated_as_upstream() {
    let server = ApiServer::start().unwrap();
    let out = server.kubectl_stdin(
        &["create", "-f", "-"],
        Some(
            r#"apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      containers:
      - name: pi
        image: perl:5.34.0
"#,
        ),
    );
    assert!(
        out.fails().contains(
            r#"The Job "pi" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#
        ),
        "{}",
        out.stderr
    );
    server
        .kubectl(&[
            "create",
            "job",
            "hello",
            "--image=busybox:1.28",
            "--",
            "echo",
            "hi",
        ])
        .ok();
    let out = server.kubectl(&[
        "patch",
        "job",
        "hello",
        "--type=merge",
        "-p",
        r#"{"spec":{"completions":3}}"#,
    ]);
    assert!(
        out.fails()
            .contains("spec.completions: Invalid value: 3: field is immutable"),
        "{}",
        out.stderr
    );
    let out = server.kubectl(&[
        "create",
        "cronjob",
        "bad",
        "--image=busybox",
        "--schedule=61 * * * *",
    ]);
    assert!(
        out.fails()
            .contains(r#"spec.schedule: Invalid value: "61 * * * *""#),
        "{}",
        out.stderr
    );
    server
        .kubectl(&[
            "create",
            "cronjob",
            "hello",
            "--image=busybox:1.28",
            "--schedule=*/1 * * * *",
            "--",
            "date",
        ])
        .ok();
    let cj = json(&server, &["get", "cronjob", "hello"]);
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(cj["spec"]["successfulJobsHistoryLimit"], 3);
    let rows = table_rows(server.kubectl(&["get", "cronjobs"]).ok());
    assert_eq!(
        rows[0],
        ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    );
    assert_eq!(
        &rows[1][..10],
        ["hello", "*/1", "*", "*", "*", "*", "<none>", "False", "0", "<none>"]
    );
}

#[test]
fn a_job_with_only_a_generated_name_is_labelled_with_it() {
    let server = ApiServer::start().unwrap();
    let out = server.kubectl_stdin(
        &["create", "-f", "-", "-o", "jsonpath={.metadata.name} {.metadata.labels.job-name} {.spec.template.metadata.labels.batch\\.kubernetes\\.io/job-name}"],
        Some(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: batch-\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n",
        ),
    );
    let printed: Vec<&str> = out.ok().split_whitespace().collect();
    assert_eq!(printed.len(), 3, "{printed:?}");
    assert!(printed[0].starts_with("batch-") && printed[0].len() == "batch-".len() + 5);
    assert_eq!(printed[1], printed[0]);
    assert_eq!(printed[2], printed[0]);
}
