//! Table tests of the JSONPath dialect against one object, cases after client-go's own.

use serde_json::{json, Value};

use super::{JsonPath, JsonPathError};

fn object() -> Value {
    json!({
        "kind": "CronTab",
        "metadata": {
            "name": "my-new-cron-object",
            "labels": {"app.kubernetes.io/name": "cron", "tier": "web"},
            "annotations": {"a.b": "dotted"},
        },
        "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "replicas": 3,
                 "ratio": 1.5, "enabled": true, "nothing": null},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "count": 2},
                {"type": "Synced", "status": "False", "count": 7, "reason": "Backoff"},
                {"type": "Degraded", "status": "Unknown", "count": 10},
            ],
            "nested": {"name": "inner", "deeper": {"name": "deepest"}},
        },
    })
}

/// Each template's results (all actions flattened), or the error's kind.
fn run(template: &str) -> Result<Vec<Value>, String> {
    let path = JsonPath::parse(template).map_err(|e| match e {
        JsonPathError::Parse(m) => format!("parse: {m}"),
        JsonPathError::Eval(m) => format!("eval: {m}"),
    })?;
    let data = object();
    let found = path.find(&data).map_err(|e| format!("eval: {e}"))?;
    Ok(found
        .into_iter()
        .flatten()
        .map(|v| v.into_owned())
        .collect())
}

#[test]
fn selections() {
    let cases: &[(&str, Value)] = &[
        ("{.spec.replicas}", json!([3])),
        ("{.spec.cronSpec}", json!(["* * * * */5"])),
        ("{$.spec.image}", json!(["my-awesome-cron-image"])),
        ("{.spec.missing}", json!([])),
        ("{.nope.deeper.still}", json!([])),
        ("{.spec.nothing}", json!([null])),
        ("{.metadata.annotations.a\\.b}", json!(["dotted"])),
        ("{.metadata.annotations['a\\.b']}", json!(["dotted"])),
        // A dict key is re-read as a field path: an unescaped dot splits it, as in kubectl.
        ("{.metadata.annotations['a.b']}", json!([])),
        ("{.metadata['labels']['tier']}", json!(["web"])),
        ("{.status.conditions[0].type}", json!(["Ready"])),
        ("{.status.conditions[-1].type}", json!(["Degraded"])),
        (
            "{.status.conditions[1:].type}",
            json!(["Synced", "Degraded"]),
        ),
        ("{.status.conditions[0:2].type}", json!(["Ready", "Synced"])),
        (
            "{.status.conditions[::2].type}",
            json!(["Ready", "Degraded"]),
        ),
        ("{.status.conditions[-2:].count}", json!([7, 10])),
        (
            "{.status.conditions[*].status}",
            json!(["True", "False", "Unknown"]),
        ),
        (
            "{.status.conditions[0,2].type}",
            json!(["Ready", "Degraded"]),
        ),
        ("{.metadata.labels.*}", json!(["cron", "web"])),
        ("{.metadata.labels['tier','nope']}", json!(["web"])),
        (
            "{..name}",
            json!(["my-new-cron-object", "inner", "deepest"]),
        ),
        ("{.status..name}", json!(["inner", "deepest"])),
        ("{.status.nested.deeper.name}", json!(["deepest"])),
        ("{.status.conditions[2:2]}", json!([])),
        ("{.spec.replicas} replicas", json!([3, " replicas"])),
    ];
    for (template, want) in cases {
        assert_eq!(
            run(template),
            Ok(want.as_array().unwrap().clone()),
            "{template}"
        );
    }
}

#[test]
fn filters() {
    let cases: &[(&str, Value)] = &[
        (
            r#"{.status.conditions[?(@.type=="Ready")].status}"#,
            json!(["True"]),
        ),
        (
            r#"{.status.conditions[?(@.type == 'Synced')].status}"#,
            json!(["False"]),
        ),
        (
            r#"{.status.conditions[?(@.type!="Ready")].type}"#,
            json!(["Synced", "Degraded"]),
        ),
        (
            "{.status.conditions[?(@.count>5)].type}",
            json!(["Synced", "Degraded"]),
        ),
        ("{.status.conditions[?(@.count<7)].type}", json!(["Ready"])),
        (
            "{.status.conditions[?(@.count>=7)].type}",
            json!(["Synced", "Degraded"]),
        ),
        (
            "{.status.conditions[?(@.count<=7)].type}",
            json!(["Ready", "Synced"]),
        ),
        (
            "{.status.conditions[?(@.count>2.5)].type}",
            json!(["Synced", "Degraded"]),
        ),
        ("{.status.conditions[?(@.reason)].type}", json!(["Synced"])),
        (
            r#"{.status.conditions[?(@.type=="Gone")].status}"#,
            json!([]),
        ),
        // Strings order bytewise; a string never equals a number.
        (
            r#"{.status.conditions[?(@.type<"S")].type}"#,
            json!(["Ready", "Degraded"]),
        ),
        (r#"{.status.conditions[?(@.count=="2")].type}"#, json!([])),
        (
            r#"{.status.conditions[?(@.count!="2")].type}"#,
            json!(["Ready", "Synced", "Degraded"]),
        ),
    ];
    for (template, want) in cases {
        assert_eq!(
            run(template),
            Ok(want.as_array().unwrap().clone()),
            "{template}"
        );
    }
}

#[test]
fn errors() {
    let cases: &[(&str, &str)] = &[
        ("{.spec.replicas", "parse: unclosed action"),
        ("{.status.conditions[0}", "parse: unterminated array"),
        ("{.status.conditions[x]}", "parse: invalid array index x"),
        ("{.a....b}", "parse: invalid multiple recursive descent"),
        ("{#}", "parse: unrecognized character in action: U+0023 '#'"),
        (
            "{.status.conditions[9]}",
            "eval: array index out of bounds: index 9, length 3",
        ),
        (
            "{.status.conditions[2:1]}",
            "eval: starting index 2 is greater than ending index 1",
        ),
        ("{.status.conditions[0:2:0]}", "eval: step must be > 0"),
        ("{.spec.image[0]}", "eval: string is not array or slice"),
        ("{range .items[*]}", "eval: unrecognized identifier range"),
    ];
    for (template, want) in cases {
        assert_eq!(run(template), Err(want.to_string()), "{template}");
    }
}

#[test]
fn text_outside_actions_is_kept() {
    assert_eq!(run("plain"), Ok(vec![json!("plain")]));
    assert_eq!(run("{'lit'}"), Ok(vec![json!("lit")]));
}
