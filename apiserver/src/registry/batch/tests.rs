//! Tables of the batch rules against upstream's behaviour and wording.

use serde_json::{json, Value};

use super::*;

fn job() -> Value {
    json!({"metadata": {"name": "pi", "namespace": "default", "uid": "u-1"},
           "spec": {"template": {"spec": {"restartPolicy": "Never",
               "containers": [{"name": "pi", "image": "perl:5.34.0"}]}}}})
}

/// A created Job: defaults and create preparation applied.
fn created(mut obj: Value) -> Value {
    JobStrategy.default(&mut obj);
    JobStrategy.prepare_for_create(&mut obj);
    obj
}

/// Apply (JSON pointer, value; null removes) changes, creating parents as needed.
fn with(mut obj: Value, changes: &[(&str, Value)]) -> Value {
    for (pointer, v) in changes {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let mut target = &mut obj;
        for part in parent.split('/').skip(1) {
            if target.get(part).is_none() {
                target[part] = json!({});
            }
            target = target.get_mut(part).unwrap();
        }
        let m = target.as_object_mut().unwrap();
        match v {
            Value::Null => m.remove(key),
            v => m.insert(key.to_string(), v.clone()),
        };
    }
    obj
}

/// Changes to an object (JSON pointer, value; null removes).
type Changes<'a> = Vec<(&'a str, Value)>;
/// A parsed index set: its intervals and how many indexes they hold.
type Parsed = (Vec<(i64, i64)>, i64);

fn strings(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn job_defaults_and_generated_selector_as_upstream() {
    let j = created(job());
    let spec = &j["spec"];
    assert_eq!(spec["completions"], 1);
    assert_eq!(spec["parallelism"], 1);
    assert_eq!(spec["backoffLimit"], 6);
    assert_eq!(spec["completionMode"], "NonIndexed");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["manualSelector"], false);
    assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
    assert_eq!(
        spec["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
    );
    let labels = json!({"batch.kubernetes.io/controller-uid": "u-1", "batch.kubernetes.io/job-name": "pi",
        "controller-uid": "u-1", "job-name": "pi"});
    assert_eq!(spec["template"]["metadata"]["labels"], labels);
    assert_eq!(j["metadata"]["labels"], labels);
    assert_eq!(spec["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    assert_eq!(j["status"], json!({}));
    assert!(JobStrategy.validate_create(&j).is_empty());

    // Only parallelism given: completions stays unset (a work queue).
    let q = created(with(job(), &[("/spec/parallelism", json!(3))]));
    assert!(q["spec"].get("completions").is_none());
    // backoffLimitPerIndex: backoffLimit is max int32; a failure policy: replacement Failed.
    let per_index = created(with(job(), &[("/spec/backoffLimitPerIndex", json!(1))]));
    assert_eq!(per_index["spec"]["backoffLimit"], i32::MAX);
    let pfp =
        json!({"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]});
    let p = created(with(job(), &[("/spec/podFailurePolicy", pfp)]));
    assert_eq!(p["spec"]["podReplacementPolicy"], "Failed");
    assert_eq!(
        p["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
        "True"
    );
    // A Job with labels of its own keeps them.
    let own = created(with(job(), &[("/metadata/labels", json!({"team": "a"}))]));
    assert_eq!(own["metadata"]["labels"], json!({"team": "a"}));
}

#[test]
fn job_validation_as_upstream() {
    let cases: Vec<(Changes, Vec<&str>)> = vec![
        (vec![], vec![]),
        (
            vec![("/spec/template/spec/restartPolicy", Value::Null)],
            vec!["spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""],
        ),
        (vec![("/spec/template/spec/restartPolicy", json!("OnFailure"))], vec![]),
        (vec![("/spec/parallelism", json!(-1))], vec!["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"]),
        (vec![("/spec/backoffLimit", json!(-2))], vec!["spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0"]),
        (
            vec![("/spec/completionMode", json!("Sometimes"))],
            vec!["spec.completionMode: Unsupported value: \"Sometimes\": supported values: \"NonIndexed\", \"Indexed\""],
        ),
        (
            vec![("/spec/backoffLimitPerIndex", json!(1))],
            vec!["spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"],
        ),
        (
            vec![("/spec/completionMode", json!("Indexed")), ("/spec/completions", json!(3)), ("/spec/maxFailedIndexes", json!(1))],
            vec!["spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"],
        ),
        (
            vec![("/spec/completionMode", json!("Indexed")), ("/spec/completions", json!(3)), ("/spec/backoffLimitPerIndex", json!(1)), ("/spec/maxFailedIndexes", json!(4))],
            vec!["spec.maxFailedIndexes: Invalid value: 4: must be less than or equal to completions"],
        ),
        (
            vec![("/spec/selector", json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "other"}}))],
            vec!["spec.selector: Invalid value: {\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":\"other\"}}: `selector` not auto-generated",
                 "spec.template.metadata.labels: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"u-1\",\"batch.kubernetes.io/job-name\":\"pi\",\"controller-uid\":\"u-1\",\"job-name\":\"pi\"}: `selector` does not match template `labels`"],
        ),
        (
            vec![("/spec/manualSelector", json!(true)), ("/spec/selector", json!({"matchLabels": {"app": "x"}})), ("/spec/template/metadata/labels", json!({"app": "x"}))],
            vec![],
        ),
        (
            vec![("/spec/manualSelector", json!(true))],
            vec!["spec.selector: Required value"],
        ),
        (
            vec![("/spec/podReplacementPolicy", json!("Always"))],
            vec!["spec.podReplacementPolicy: Unsupported value: \"Always\": supported values: \"Failed\", \"TerminatingOrFailed\""],
        ),
        (
            vec![("/spec/podFailurePolicy", json!({"rules": [{"action": "Explode", "onExitCodes": {"operator": "In", "values": [0, 3, 2, 3]}}]}))],
            vec![
                "spec.podFailurePolicy.rules[0].action: Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[3]: Duplicate value: 3",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{0, 3, 2, 3}: must be ordered",
            ],
        ),
        (
            vec![("/spec/podFailurePolicy", json!({"rules": [{"action": "FailJob"}]})), ("/spec/template/spec/restartPolicy", json!("OnFailure"))],
            vec![
                "spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
                "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified",
            ],
        ),
        (
            vec![("/spec/podFailurePolicy", json!({"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1], "containerName": "nope"}}]}))],
            vec![
                "spec.podFailurePolicy.rules[0].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set",
                "spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: \"nope\": must be one of the container or initContainer names in the pod template",
            ],
        ),
        (
            vec![("/spec/successPolicy", json!({"rules": [{"succeededCount": 1}]}))],
            vec!["spec.successPolicy: Invalid value: {\"rules\":[{\"succeededCount\":1}]}: requires indexed completion mode"],
        ),
        (
            vec![("/spec/completionMode", json!("Indexed")), ("/spec/completions", json!(3)),
                 ("/spec/successPolicy", json!({"rules": [{"succeededIndexes": "0-1,5", "succeededCount": 4}, {}]}))],
            vec![
                "spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"0-1,5\": error parsing succeededIndexes: too large index: \"5\"",
                "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of specified completions)",
                "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)",
                "spec.successPolicy.rules[1]: Required value: at least one of succeededCount or succeededIndexes must be specified",
            ],
        ),
        (
            vec![("/metadata/name", json!("a-very-long-job-name-that-is-long-enough-to-overflow-a-label-x")), ("/spec/completionMode", json!("Indexed")), ("/spec/completions", json!(100))],
            vec!["metadata.name: Invalid value: \"a-very-long-job-name-that-is-long-enough-to-overflow-a-label-x\": will not able to create pod with invalid DNS label: a-very-long-job-name-that-is-long-enough-to-overflow-a-label-x-99"],
        ),
    ];
    for (changes, want) in cases {
        let obj = created(with(job(), &changes));
        let got = strings(super::super::field::dedup(
            JobStrategy.validate_create(&obj),
        ));
        assert_eq!(got, want, "{changes:?}");
    }
}

#[test]
fn job_updates_as_upstream() {
    let old = created(job());
    let cases: Vec<(Changes, Vec<&str>)> = vec![
        (vec![("/spec/parallelism", json!(4))], vec![]),
        (vec![("/spec/suspend", json!(true))], vec![]),
        (
            vec![("/spec/completions", json!(2))],
            vec!["spec.completions: Invalid value: 2: field is immutable"],
        ),
        (
            vec![("/spec/completionMode", json!("Indexed"))],
            vec!["spec.completionMode: Invalid value: \"Indexed\": field is immutable"],
        ),
        (
            vec![("/spec/template/spec/nodeSelector", json!({"zone": "a"}))],
            vec!["spec.template: Invalid value: "],
        ),
    ];
    for (changes, want) in cases {
        let new = with(old.clone(), &changes);
        let got = strings(JobStrategy.validate_update(&new, &old));
        assert_eq!(got.len(), want.len(), "{changes:?}: {got:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!(g.starts_with(w), "{changes:?}: {g}");
        }
    }
    // A suspended Job that never started may change its scheduling directives.
    let suspended = with(old.clone(), &[("/spec/suspend", json!(true))]);
    let moved = with(
        suspended.clone(),
        &[("/spec/template/spec/nodeSelector", json!({"zone": "a"}))],
    );
    assert!(JobStrategy.validate_update(&moved, &suspended).is_empty());
    let started = with(
        suspended,
        &[("/status/startTime", json!("2024-01-01T00:00:00Z"))],
    );
    assert_eq!(JobStrategy.validate_update(&moved, &started).len(), 1);
    // An Indexed Job scales completions with parallelism.
    let indexed = created(with(
        job(),
        &[
            ("/spec/completionMode", json!("Indexed")),
            ("/spec/completions", json!(3)),
            ("/spec/parallelism", json!(3)),
        ],
    ));
    let both = with(
        indexed.clone(),
        &[
            ("/spec/completions", json!(5)),
            ("/spec/parallelism", json!(5)),
        ],
    );
    assert!(JobStrategy.validate_update(&both, &indexed).is_empty());
    let alone = with(indexed.clone(), &[("/spec/completions", json!(5))]);
    assert_eq!(
        strings(JobStrategy.validate_update(&alone, &indexed)),
        vec!["spec.completions: Invalid value: 5: can only be modified in tandem with spec.parallelism"]
    );
}

#[test]
fn index_sets_parse_as_upstream() {
    let cases: Vec<(&str, i64, Result<Parsed, &str>)> = vec![
        ("", 3, Ok((vec![], 0))),
        ("0-2", 3, Ok((vec![(0, 2)], 3))),
        ("1,3-5,7", 8, Ok((vec![(1, 1), (3, 5), (7, 7)], 5))),
        ("0-2-3", 5, Err("the fragment \"0-2-3\" violates the requirement that an index interval can have at most two parts separated by '-'")),
        ("a", 5, Err("cannot convert string to integer for index: \"a\"")),
        ("3", 3, Err("too large index: \"3\"")),
        ("2-1", 3, Err("non-increasing order, previous: 2, current: 1")),
        ("1,1", 3, Err("non-increasing order, previous: 1, current: 1")),
    ];
    for (text, completions, want) in cases {
        let got = parse_indexes(text, completions).map_err(|e| e.to_string());
        assert_eq!(got, want.map_err(str::to_string), "{text}");
    }
}

fn status(v: Value) -> Value {
    with(created(job()), &[("/status", v)])
}

#[test]
fn status_writes_as_upstream() {
    let old = status(json!({"active": 1, "startTime": "2024-01-01T00:00:00Z"}));
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"active": 1, "startTime": "2024-01-01T00:00:00Z", "ready": 0}), vec![]),
        (json!({"active": -1, "startTime": "2024-01-01T00:00:00Z"}), vec!["status.active: Invalid value: -1: must be greater than or equal to 0"]),
        (
            json!({"startTime": "2024-01-01T00:00:00Z", "succeeded": 1, "completionTime": "2024-01-01T00:00:05Z",
                   "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}),
            vec![],
        ),
        (
            json!({"startTime": "2024-01-01T00:00:00Z", "conditions": [{"type": "Complete", "status": "True"}]}),
            vec!["status.completionTime: Required value: completionTime is required for Complete jobs"],
        ),
        (
            json!({"active": 1, "startTime": "2024-01-01T00:00:00Z", "uncountedTerminatedPods": {"succeeded": ["a"], "failed": ["a", ""]}}),
            vec!["status.uncountedTerminatedPods.failed[0]: Duplicate value: \"a\"", "status.uncountedTerminatedPods.failed[1]: Invalid value: \"\": must not be empty"],
        ),
        (
            json!({"active": 1, "startTime": "2024-01-01T00:00:00Z", "completedIndexes": "0"}),
            vec!["status.completedIndexes: Invalid value: \"0\": cannot set non-empty completedIndexes when non-indexed completion mode"],
        ),
        (
            json!({"active": 1}),
            vec!["status.startTime: Required value: startTime cannot be removed for unsuspended job"],
        ),
        (
            json!({"active": 1, "startTime": "2024-01-01T00:01:00Z"}),
            vec!["status.startTime: Required value: startTime cannot be removed for unsuspended job"],
        ),
    ];
    for (new_status, want) in cases {
        let new = with(old.clone(), &[("/status", new_status.clone())]);
        let got = strings(JobStrategy.validate_status_update(&new, &old));
        assert_eq!(got, want, "{new_status}");
    }
    // Resumed (Suspended True → False): the controller restarts the clock.
    let suspended = status(json!({"startTime": "2024-01-01T00:00:00Z",
        "conditions": [{"type": "Suspended", "status": "True"}]}));
    let resumed = with(
        suspended.clone(),
        &[(
            "/status",
            json!({"startTime": "2024-01-01T00:01:00Z",
                "conditions": [{"type": "Suspended", "status": "False"}]}),
        )],
    );
    assert!(strings(JobStrategy.validate_status_update(&resumed, &suspended)).is_empty());
    let failed = status(json!({"startTime": "2024-01-01T00:00:00Z", "failed": 2,
        "conditions": [{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}]}));
    let undone = with(
        failed.clone(),
        &[(
            "/status",
            json!({"startTime": "2024-01-01T00:00:00Z", "failed": 1}),
        )],
    );
    assert_eq!(
        strings(JobStrategy.validate_status_update(&undone, &failed)),
        vec![
            "status.conditions: Invalid value: cannot disable the terminal Failed=True condition",
            "status.conditions: Invalid value: cannot disable the terminal FailureTarget=True condition",
            "status.failed: Invalid value: 1: cannot decrease the failed counter",
        ]
    );
}

fn cronjob() -> Value {
    json!({"metadata": {"name": "hello", "namespace": "default"},
           "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
               "restartPolicy": "OnFailure", "containers": [{"name": "hello", "image": "busybox:1.28"}]}}}}}})
}

#[test]
fn cronjob_defaults_and_validation_as_upstream() {
    let mut c = cronjob();
    CronJobStrategy.default(&mut c);
    assert_eq!(c["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(c["spec"]["suspend"], false);
    assert_eq!(c["spec"]["successfulJobsHistoryLimit"], 3);
    assert_eq!(c["spec"]["failedJobsHistoryLimit"], 1);
    // The job template gets pod defaults only, no Job defaults.
    assert!(c["spec"]["jobTemplate"]["spec"]
        .get("backoffLimit")
        .is_none());
    assert_eq!(
        c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["schedulerName"],
        "default-scheduler"
    );
    let long = "a".repeat(53);
    let cases: Vec<(Changes, Vec<String>)> = vec![
        (vec![], vec![]),
        (vec![("/spec/schedule", json!(""))], vec!["spec.schedule: Required value".into()]),
        (vec![("/spec/schedule", json!("@daily"))], vec![]),
        (vec![("/spec/schedule", json!("*/5 1-3 * JAN-MAR MON"))], vec![]),
        (
            vec![("/spec/schedule", json!("TZ=UTC 0 0 * * *"))],
            vec!["spec.schedule: Invalid value: \"TZ=UTC 0 0 * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead".into()],
        ),
        (vec![("/spec/timeZone", json!("Europe/Paris"))], vec![]),
        (
            vec![("/spec/timeZone", json!("Mars/Olympus"))],
            vec!["spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus".into()],
        ),
        (
            vec![("/spec/concurrencyPolicy", json!("Sometimes"))],
            vec!["spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"".into()],
        ),
        (
            vec![("/spec/jobTemplate/spec/template/spec/restartPolicy", json!("Always"))],
            vec!["spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"".into()],
        ),
        (
            vec![("/spec/jobTemplate/spec/selector", json!({"matchLabels": {"a": "b"}}))],
            vec!["spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated".into()],
        ),
        (vec![("/spec/successfulJobsHistoryLimit", json!(-1))], vec!["spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0".into()]),
        (vec![("/metadata/name", json!(long))], vec![format!("metadata.name: Invalid value: \"{long}\": must be no more than 52 characters")]),
    ];
    for (changes, want) in cases {
        let mut obj = with(cronjob(), &changes);
        CronJobStrategy.default(&mut obj);
        assert_eq!(
            strings(CronJobStrategy.validate_create(&obj)),
            want,
            "{changes:?}"
        );
    }
    // A bad schedule says what robfig says.
    let mut bad = with(cronjob(), &[("/spec/schedule", json!("61 * * * *"))]);
    CronJobStrategy.default(&mut bad);
    let errs = strings(CronJobStrategy.validate_create(&bad));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with("spec.schedule: Invalid value: \"61 * * * *\": "),
        "{errs:?}"
    );
    // Long names stay updatable.
    let mut old = with(cronjob(), &[("/metadata/name", json!("a".repeat(60)))]);
    CronJobStrategy.default(&mut old);
    assert!(CronJobStrategy.validate_update(&old, &old).is_empty());
}
