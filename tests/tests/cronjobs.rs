//! CronJobs as the docs' "Running Automated Tasks with a CronJob" shows them: a Job started at
//! the next minute of the schedule, named after it, recorded in the CronJob's status until it
//! finishes; finished Jobs beyond the history limits deleted; `kubectl create job --from`; a
//! schedule refused with robfig/cron's message; a finished Job with a TTL deleted (foreground,
//! through the garbage collector).

use std::time::Duration;

use serde_json::Value;
use tinykube_tests::{eventually, ApiServer, ControllerManager};

const HELLO: &str = "apiVersion: batch/v1
kind: CronJob
metadata:
  name: hello
spec:
  schedule: \"* * * * *\"
  jobTemplate:
    metadata:
      labels:
        app: hello
    spec:
      template:
        spec:
          containers:
          - name: hello
            image: busybox:1.28
            imagePullPolicy: IfNotPresent
            command:
            - /bin/sh
            - -c
            - date; echo Hello from the Kubernetes cluster
          restartPolicy: OnFailure
";

fn get(server: &ApiServer, path: &str) -> Option<Value> {
    let resp = server
        .http()
        .get(format!("{}{path}", server.url))
        .send()
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    resp.json().ok()
}

fn jobs(server: &ApiServer) -> Vec<Value> {
    get(server, "/apis/batch/v1/namespaces/default/jobs")
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

fn finish(server: &ApiServer, job: &str, how: &str) {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let completion = if how == "Complete" {
        format!(",\"completionTime\":\"{now}\"")
    } else {
        String::new()
    };
    server.patch_status(
        "job",
        job,
        &format!(
            "{{\"status\":{{\"startTime\":\"{now}\"{completion},\"conditions\":[{{\"type\":\"{how}\",\"status\":\"True\",\"lastTransitionTime\":\"{now}\"}}]}}}}"
        ),
    );
}

#[test]
fn a_cronjob_starts_a_job_at_the_next_minute_and_records_it() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(&server, &["--controllers=cronjob"]).unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(HELLO))
        .ok();

    // Within a minute (and a little), the Job of the minute appears.
    let mut job = Value::Null;
    assert!(
        eventually(Duration::from_secs(75), || {
            std::thread::sleep(Duration::from_millis(250));
            match jobs(&server).into_iter().next() {
                Some(j) => {
                    job = j;
                    true
                }
                None => false,
            }
        }),
        "no job was started"
    );
    let name = job["metadata"]["name"].as_str().unwrap().to_string();
    let minutes: i64 = name.strip_prefix("hello-").unwrap().parse().unwrap();
    let stamp = job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        .as_str()
        .unwrap();
    let scheduled = chrono::DateTime::parse_from_rfc3339(stamp).unwrap();
    assert_eq!(scheduled.timestamp(), minutes * 60, "{stamp}");
    assert_eq!(job["metadata"]["labels"]["app"], "hello");
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert_eq!(job["metadata"]["ownerReferences"][0]["controller"], true);

    // The CronJob lists it as active, with the time it was scheduled for.
    let mut cj = Value::Null;
    assert!(eventually(Duration::from_secs(10), || {
        cj = get(&server, "/apis/batch/v1/namespaces/default/cronjobs/hello").unwrap();
        cj["status"]["active"][0]["name"] == name.as_str()
    }));
    let last =
        chrono::DateTime::parse_from_rfc3339(cj["status"]["lastScheduleTime"].as_str().unwrap())
            .unwrap();
    assert_eq!(last.timestamp(), minutes * 60);

    // Once the Job completes it leaves the active list, and the success is recorded.
    finish(&server, &name, "Complete");
    assert!(eventually(Duration::from_secs(10), || {
        std::thread::sleep(Duration::from_millis(100));
        let cj = get(&server, "/apis/batch/v1/namespaces/default/cronjobs/hello").unwrap();
        cj["status"]["active"].is_null() && cj["status"]["lastSuccessfulTime"].is_string()
    }));
    let events = server.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.kind=CronJob",
        "-o",
        "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}",
    ]);
    let events = events.ok();
    assert!(
        events.contains(&format!("SuccessfulCreate: Created job {name}")),
        "{events}"
    );
    assert!(
        events.contains(&format!(
            "SawCompletedJob: Saw completed job: {name}, status: Complete"
        )),
        "{events}"
    );

    // kubectl makes a Job from the CronJob's template by hand.
    server
        .kubectl(&["create", "job", "--from=cronjob/hello", "manual"])
        .ok();
    let manual = get(&server, "/apis/batch/v1/namespaces/default/jobs/manual").unwrap();
    assert_eq!(
        manual["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"],
        "manual"
    );
    assert_eq!(manual["metadata"]["ownerReferences"][0]["name"], "hello");
}

#[test]
fn finished_jobs_beyond_the_history_limits_are_deleted() {
    let server = ApiServer::start().unwrap();
    // A schedule far away: only the Jobs made here exist.
    let yearly = HELLO.replace("\"* * * * *\"", "\"@yearly\"").replace(
        "  jobTemplate:",
        "  successfulJobsHistoryLimit: 1\n  failedJobsHistoryLimit: 1\n  jobTemplate:",
    );
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&yearly))
        .ok();
    let uid = server
        .kubectl(&["get", "cronjob", "hello", "-o", "jsonpath={.metadata.uid}"])
        .ok()
        .to_string();
    for name in ["old", "newer", "newest", "failed-1", "failed-2"] {
        let job = format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  ownerReferences:\n  - apiVersion: batch/v1\n    kind: CronJob\n    name: hello\n    uid: {uid}\n    controller: true\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n"
        );
        server.kubectl_stdin(&["apply", "-f", "-"], Some(&job)).ok();
        let how = if name.starts_with("failed") {
            "Failed"
        } else {
            "Complete"
        };
        finish(&server, name, how);
        // Start times a second apart order them.
        std::thread::sleep(Duration::from_millis(1100));
    }
    let _cm = ControllerManager::start(&server, &["--controllers=cronjob"]).unwrap();
    assert!(
        eventually(Duration::from_secs(15), || {
            std::thread::sleep(Duration::from_millis(100));
            let mut names: Vec<String> = jobs(&server)
                .iter()
                .filter_map(|j| j["metadata"]["name"].as_str().map(String::from))
                .collect();
            names.sort();
            names == ["failed-2", "newest"]
        }),
        "{:?}",
        jobs(&server)
            .iter()
            .map(|j| j["metadata"]["name"].clone())
            .collect::<Vec<_>>()
    );
    let events = server
        .kubectl(&[
            "get",
            "events",
            "-o",
            "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}",
        ])
        .ok()
        .to_string();
    assert!(
        events.contains("SuccessfulDelete: Deleted job old"),
        "{events}"
    );
    assert!(
        events.contains("SuccessfulDelete: Deleted job failed-1"),
        "{events}"
    );
}

#[test]
fn a_bad_schedule_is_refused_with_upstreams_message() {
    let server = ApiServer::start().unwrap();
    let out = server.kubectl(&[
        "create",
        "cronjob",
        "bad",
        "--image=busybox",
        "--schedule=61 * * * *",
    ]);
    let err = out.fails();
    assert!(
        err.contains("spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"),
        "{err}"
    );
    server.kubectl(&["get", "cronjob", "bad"]).fails();
}

#[test]
fn a_finished_job_with_a_ttl_is_deleted_when_it_expires() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(
        &server,
        &["--controllers=ttl-after-finished,garbagecollector"],
    )
    .unwrap();
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: pi-with-ttl\nspec:\n  ttlSecondsAfterFinished: 4\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: pi\n        image: perl\n";
    server.kubectl_stdin(&["apply", "-f", "-"], Some(job)).ok();
    std::thread::sleep(Duration::from_millis(500));
    // Still running: kept.
    assert!(get(
        &server,
        "/apis/batch/v1/namespaces/default/jobs/pi-with-ttl"
    )
    .is_some());
    finish(&server, "pi-with-ttl", "Complete");
    std::thread::sleep(Duration::from_millis(1000));
    assert!(get(
        &server,
        "/apis/batch/v1/namespaces/default/jobs/pi-with-ttl"
    )
    .is_some());
    assert!(eventually(Duration::from_secs(10), || {
        std::thread::sleep(Duration::from_millis(100));
        get(
            &server,
            "/apis/batch/v1/namespaces/default/jobs/pi-with-ttl",
        )
        .is_none()
    }));
}
