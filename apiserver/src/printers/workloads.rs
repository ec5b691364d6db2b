//! Rows of the workload kinds: Pod (upstream's status reason logic), Deployment, ReplicaSet,
//! DaemonSet.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, age_of, i, map_string, name, or_none, s, selector_string};

pub(super) fn containers_and_images(obj: &Value) -> (String, String) {
    let list = obj
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = list.iter().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = list.iter().map(|c| s(c, "/image")).collect();
    (names.join(","), images.join(","))
}

fn arr<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The STATUS, READY and RESTARTS columns of a pod, as upstream's printer derives them (the
/// last restart's age counted up to `now`).
fn pod_status(pod: &Value, now: DateTime<Utc>) -> (String, usize, String) {
    let mut reason = s(pod, "/status/phase").to_string();
    if !s(pod, "/status/reason").is_empty() {
        reason = s(pod, "/status/reason").to_string();
    }
    for c in arr(pod, "/status/conditions") {
        if s(c, "/type") == "PodScheduled" && s(c, "/reason") == "SchedulingGated" {
            reason = "SchedulingGated".into();
        }
    }
    let mut restarts = 0;
    let mut last_restart: Option<String> = None;
    let mut note_restart = |c: &Value, restarts: &mut i64| {
        *restarts += i(c, "/restartCount");
        if let Some(t) = c
            .pointer("/lastState/terminated/finishedAt")
            .and_then(Value::as_str)
        {
            if last_restart.as_deref().is_none_or(|l| l < t) {
                last_restart = Some(t.to_string());
            }
        }
    };
    let init_specs = arr(pod, "/spec/initContainers").len();
    let mut initializing = false;
    for (n, c) in arr(pod, "/status/initContainerStatuses").iter().enumerate() {
        note_restart(c, &mut restarts);
        let terminated = c.pointer("/state/terminated");
        if terminated.is_some_and(|t| i(t, "/exitCode") == 0) {
            continue;
        }
        initializing = true;
        reason = match (terminated, c.pointer("/state/waiting")) {
            (Some(t), _) if !s(t, "/reason").is_empty() => format!("Init:{}", s(t, "/reason")),
            (Some(t), _) if i(t, "/signal") != 0 => format!("Init:Signal:{}", i(t, "/signal")),
            (Some(t), _) => format!("Init:ExitCode:{}", i(t, "/exitCode")),
            (None, Some(w))
                if !s(w, "/reason").is_empty() && s(w, "/reason") != "PodInitializing" =>
            {
                format!("Init:{}", s(w, "/reason"))
            }
            _ => format!("Init:{n}/{init_specs}"),
        };
        break;
    }
    let mut ready = 0;
    if !initializing {
        restarts = 0;
        let mut has_running = false;
        for c in arr(pod, "/status/containerStatuses").iter().rev() {
            note_restart(c, &mut restarts);
            let waiting = c.pointer("/state/waiting");
            let terminated = c.pointer("/state/terminated");
            if let Some(w) = waiting.filter(|w| !s(w, "/reason").is_empty()) {
                reason = s(w, "/reason").to_string();
            } else if let Some(t) = terminated.filter(|t| !s(t, "/reason").is_empty()) {
                reason = s(t, "/reason").to_string();
            } else if let Some(t) = terminated {
                reason = if i(t, "/signal") != 0 {
                    format!("Signal:{}", i(t, "/signal"))
                } else {
                    format!("ExitCode:{}", i(t, "/exitCode"))
                };
            } else if c.get("ready").and_then(Value::as_bool) == Some(true)
                && c.pointer("/state/running").is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = arr(pod, "/status/conditions")
                .iter()
                .any(|c| s(c, "/type") == "Ready" && s(c, "/status") == "True");
            reason = if pod_ready {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }
    if pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        reason = if s(pod, "/status/reason") == "NodeLost" {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    let restarts_text = match last_restart {
        Some(t) if restarts > 0 => {
            let ago = DateTime::parse_from_rfc3339(&t)
                .map(|t| super::human_duration(now - t.with_timezone(&Utc)))
                .unwrap_or_default();
            format!("{restarts} ({ago} ago)")
        }
        _ => restarts.to_string(),
    };
    (reason, ready, restarts_text)
}

pub fn pod(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (reason, ready, restarts) = pod_status(obj, now);
    let total = arr(obj, "/spec/containers").len();
    let gates = arr(obj, "/spec/readinessGates");
    let gates_text = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let satisfied = gates
            .iter()
            .filter(|g| {
                arr(obj, "/status/conditions")
                    .iter()
                    .any(|c| s(c, "/type") == s(g, "/conditionType") && s(c, "/status") == "True")
            })
            .count();
        format!("{satisfied}/{}", gates.len())
    };
    vec![
        name(obj).into(),
        format!("{ready}/{total}").into(),
        reason.into(),
        restarts.into(),
        age(obj, now).into(),
        or_none(s(obj, "/status/podIP")).into(),
        or_none(s(obj, "/spec/nodeName")).into(),
        or_none(s(obj, "/status/nominatedNodeName")).into(),
        gates_text.into(),
    ]
}

pub fn deployment(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (containers, images) = containers_and_images(obj);
    let desired = obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    vec![
        name(obj).into(),
        format!("{}/{desired}", i(obj, "/status/readyReplicas")).into(),
        json!(i(obj, "/status/updatedReplicas")),
        json!(i(obj, "/status/availableReplicas")),
        age(obj, now).into(),
        containers.into(),
        images.into(),
        selector_string(obj.pointer("/spec/selector")).into(),
    ]
}

pub fn replica_set(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (containers, images) = containers_and_images(obj);
    let desired = obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    vec![
        name(obj).into(),
        json!(desired),
        json!(i(obj, "/status/replicas")),
        json!(i(obj, "/status/readyReplicas")),
        age(obj, now).into(),
        containers.into(),
        images.into(),
        selector_string(obj.pointer("/spec/selector")).into(),
    ]
}

pub fn daemon_set(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (containers, images) = containers_and_images(obj);
    let node_selector = map_string(obj.pointer("/spec/template/spec/nodeSelector"));
    vec![
        name(obj).into(),
        json!(i(obj, "/status/desiredNumberScheduled")),
        json!(i(obj, "/status/currentNumberScheduled")),
        json!(i(obj, "/status/numberReady")),
        json!(i(obj, "/status/updatedNumberScheduled")),
        json!(i(obj, "/status/numberAvailable")),
        or_none(&node_selector).into(),
        age_of(obj, "/metadata/creationTimestamp", now).into(),
        containers.into(),
        images.into(),
        selector_string(obj.pointer("/spec/selector")).into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_rows_follow_upstream_reasons() {
        let now = Utc::now();
        let pending = json!({"metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"},
                             "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending"}});
        let row = pod(&pending, now);
        assert_eq!(
            row[..4],
            [json!("p"), json!("0/1"), json!("Pending"), json!("0")]
        );
        assert_eq!(
            row[5..],
            [
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        let running = json!({"metadata": {"name": "r"}, "spec": {"containers": [{"name": "c"}], "nodeName": "worker0"},
            "status": {"phase": "Running", "podIP": "10.244.1.14",
                       "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "state": {"running": {}}}]}});
        let row = pod(&running, now);
        assert_eq!(row[1..3], [json!("1/1"), json!("Running")]);
        assert_eq!(row[5..7], [json!("10.244.1.14"), json!("worker0")]);
        let creating = json!({"metadata": {"name": "c", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Pending", "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(pod(&creating, now)[2], json!("Terminating"));
    }

    #[test]
    fn workload_rows() {
        let now = Utc::now();
        let d = json!({"metadata": {"name": "anti"}, "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "anti"}},
            "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}},
            "status": {"readyReplicas": 3, "updatedReplicas": 4, "availableReplicas": 3}});
        let row = deployment(&d, now);
        assert_eq!(row[..4], [json!("anti"), json!("3/4"), json!(4), json!(3)]);
        assert_eq!(
            row[5..],
            [json!("nginx"), json!("nginx"), json!("app=anti")]
        );
        let ds = json!({"metadata": {"name": "f"}, "spec": {"selector": {"matchLabels": {"name": "f"}}, "template": {"spec": {"containers": []}}},
                        "status": {"desiredNumberScheduled": 4}});
        assert_eq!(daemon_set(&ds, now)[6], json!("<none>"));
    }
}
