//! Columns and cells of the upstream docs' CronTab, and of columns of every type.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{json, Value};

use super::{cells_at, columns, go_float};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap()
}

/// The CronTab version of "Extend the Kubernetes API with CustomResourceDefinitions", with its
/// additionalPrinterColumns example.
fn crontab_v1() -> Value {
    json!({
        "name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object"}},
        "additionalPrinterColumns": [
            {"name": "Spec", "type": "string",
             "description": "The cron spec defining the interval a CronJob is run",
             "jsonPath": ".spec.cronSpec"},
            {"name": "Replicas", "type": "integer",
             "description": "The number of jobs launched by the CronJob",
             "jsonPath": ".spec.replicas"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
    })
}

fn crontab() -> Value {
    json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "my-new-cron-object", "namespace": "default",
                     "creationTimestamp": "2026-01-01T11:59:53Z"},
        "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "replicas": 1},
    })
}

#[test]
fn crontab_columns_are_upstreams() {
    let cols: Vec<Value> = columns(&crontab_v1()).iter().map(|c| c.to_json()).collect();
    assert_eq!(
        cols.iter().map(|c| c["name"].clone()).collect::<Vec<_>>(),
        vec!["Name", "Spec", "Replicas", "Age"]
    );
    assert_eq!(cols[0]["format"], "name");
    assert!(cols[0]["description"]
        .as_str()
        .unwrap()
        .starts_with("Name must be unique within a namespace."));
    assert_eq!(
        cols[2],
        json!({"name": "Replicas", "type": "integer", "format": "",
               "description": "The number of jobs launched by the CronJob", "priority": 0})
    );
    assert_eq!(
        cols[3],
        json!({"name": "Age", "type": "date", "format": "",
               "description": "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp",
               "priority": 0})
    );
}

#[test]
fn crontab_cells() {
    assert_eq!(
        cells_at(&crontab_v1(), &crontab(), now()),
        vec![
            json!("my-new-cron-object"),
            json!("* * * * */5"),
            json!(1),
            json!("7s")
        ]
    );
    // A missing field is null (kubectl prints <none>).
    let mut bare = crontab();
    bare["spec"] = json!({});
    assert_eq!(
        cells_at(&crontab_v1(), &bare, now()),
        vec![
            json!("my-new-cron-object"),
            Value::Null,
            Value::Null,
            json!("7s")
        ]
    );
}

#[test]
fn default_columns_are_name_and_age() {
    let version = json!({"name": "v1", "served": true, "storage": true});
    let cols = columns(&version);
    assert_eq!(cols.len(), 2);
    assert_eq!(
        (cols[1].name.as_str(), cols[1].type_.as_str()),
        ("Age", "date")
    );
    assert!(cols[1]
        .description
        .starts_with("CreationTimestamp is a timestamp"));
    assert_eq!(
        cells_at(&version, &crontab(), now()),
        vec![json!("my-new-cron-object"), json!("7s")]
    );
}

#[test]
fn cells_by_type() {
    let obj = json!({
        "metadata": {"name": "x"},
        "spec": {"int": 3, "float": 2.5, "whole": 4.0, "flag": true, "text": "a<b",
                 "list": [1, "two", {"b": 1, "a": 0.5}], "map": {"z": "&", "a": 1e-7},
                 "nothing": null, "when": "2025-12-31T12:00:00Z", "bad": "yesterday",
                 "zero": "0001-01-01T00:00:00Z", "big": 1e21},
        "status": {"conditions": [{"type": "Ready", "status": "True"},
                                  {"type": "Synced", "status": "False"}]},
    });
    let cases: &[(&str, &str, Value)] = &[
        ("integer", ".spec.int", json!(3)),
        ("integer", ".spec.float", json!(2)),
        ("integer", ".spec.text", Value::Null),
        ("number", ".spec.int", json!(3)),
        ("number", ".spec.float", json!(2.5)),
        ("boolean", ".spec.flag", json!(true)),
        ("boolean", ".spec.text", Value::Null),
        ("string", ".spec.text", json!("a<b")),
        ("string", ".spec.int", json!("3")),
        ("string", ".spec.whole", json!("4")),
        ("string", ".spec.big", json!("1e+21")),
        ("string", ".spec.flag", json!("true")),
        ("string", ".spec.nothing", json!("<no value>")),
        ("string", ".spec.missing", Value::Null),
        (
            "string",
            ".spec.list",
            json!(r#"[1,"two",{"a":0.5,"b":1}]"#),
        ),
        ("string", ".spec.map", json!(r#"{"a":1e-7,"z":"\u0026"}"#)),
        // Several results: the first one, as upstream.
        ("string", ".status.conditions[*].type", json!("Ready")),
        (
            "string",
            r#".status.conditions[?(@.type=="Synced")].status"#,
            json!("False"),
        ),
        ("date", ".spec.when", json!("24h")),
        ("date", ".spec.bad", json!("<invalid>")),
        ("date", ".spec.zero", json!("<unknown>")),
        ("date", ".spec.int", Value::Null),
        ("integer", ".status.conditions[5]", Value::Null),
        ("weird", ".spec.int", Value::Null),
    ];
    for (type_, path, want) in cases {
        let version = json!({"additionalPrinterColumns": [
            {"name": "C", "type": type_, "jsonPath": path}]});
        let got = cells_at(&version, &obj, now());
        assert_eq!(&got[1], want, "{type_} {path}");
    }
}

#[test]
fn priority_format_and_a_broken_path() {
    let version = json!({"additionalPrinterColumns": [
        {"name": "Wide", "type": "integer", "format": "int32", "priority": 1, "jsonPath": ".spec.int"},
        {"name": "Broken", "type": "string", "jsonPath": ".spec[oops"},
        {"name": "After", "type": "string", "jsonPath": ".spec.int"},
    ]});
    let cols = columns(&version);
    assert_eq!(
        cols.len(),
        2,
        "columns stop at the path that does not parse"
    );
    assert_eq!((cols[1].priority, cols[1].format.as_str()), (1, "int32"));
    let obj = json!({"metadata": {"name": "x"}, "spec": {"int": 9}});
    assert_eq!(cells_at(&version, &obj, now()), vec![json!("x"), json!(9)]);
}

#[test]
fn floats_print_as_go() {
    let cases: &[(f64, &str, &str)] = &[
        (0.0, "0", "0"),
        (1.5, "1.5", "1.5"),
        (100.0, "100", "100"),
        (1e20, "100000000000000000000", "100000000000000000000"),
        (1e21, "1e+21", "1e+21"),
        (0.0001, "0.0001", "0.0001"),
        (0.00001, "1e-05", "0.00001"),
        (1e-7, "1e-07", "1e-7"),
        (-2.5e-8, "-2.5e-08", "-2.5e-8"),
    ];
    for (f, fmt_v, json) in cases {
        assert_eq!(go_float(*f, -4, 21, false), *fmt_v, "%v of {f}");
        assert_eq!(go_float(*f, -6, 21, true), *json, "json of {f}");
    }
}
