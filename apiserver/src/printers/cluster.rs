//! Rows of the cluster kinds: Node, Namespace, Event, Lease, ConfigMap, ControllerRevision,
//! PodDisruptionBudget, PriorityClass.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, age_of, i, name, or_none, s};

pub fn node(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let conditions = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut status = match conditions
        .iter()
        .find(|c| s(c, "/type") == "Ready")
        .map(|c| s(c, "/status"))
    {
        // Ready=False and Ready=Unknown (a node whose kubelet stopped posting) both read
        // NotReady, as upstream; only a node without a Ready condition is Unknown.
        Some("True") => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<String> = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| {
                    if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                        (!role.is_empty()).then(|| role.to_string())
                    } else if k == "kubernetes.io/role" {
                        v.as_str().filter(|r| !r.is_empty()).map(str::to_string)
                    } else {
                        None
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    roles.sort();
    roles.dedup();
    let address = |kind: &str| {
        obj.pointer("/status/addresses")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|x| s(x, "/type") == kind))
            .map(|x| s(x, "/address").to_string())
            .unwrap_or_default()
    };
    let unknown = |v: &str| {
        if v.is_empty() {
            "<unknown>".to_string()
        } else {
            v.to_string()
        }
    };
    let kernel = s(obj, "/status/nodeInfo/kernelVersion");
    let arch = s(obj, "/status/nodeInfo/architecture");
    let kernel_text = match (kernel.is_empty(), arch.is_empty()) {
        (true, _) => "<unknown>".to_string(),
        (false, true) => kernel.to_string(),
        (false, false) => format!("{kernel} ({arch})"),
    };
    vec![
        name(obj).into(),
        status.into(),
        or_none(&roles.join(",")).into(),
        age(obj, now).into(),
        s(obj, "/status/nodeInfo/kubeletVersion").into(),
        or_none(&address("InternalIP")).into(),
        or_none(&address("ExternalIP")).into(),
        unknown(s(obj, "/status/nodeInfo/osImage")).into(),
        kernel_text.into(),
        unknown(s(obj, "/status/nodeInfo/containerRuntimeVersion")).into(),
    ]
}

pub fn namespace(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj).into(),
        s(obj, "/status/phase").into(),
        age(obj, now).into(),
    ]
}

/// Events in either view: core/v1 fields, or events.k8s.io/v1 ones (`regarding`, `note`, …).
pub fn event(obj: &Value, now: DateTime<Utc>, events_v1: bool) -> Vec<Value> {
    let f = |core: &str, v1: &str| {
        if events_v1 {
            v1.to_string()
        } else {
            core.to_string()
        }
    };
    let regarding = f("/involvedObject", "/regarding");
    let first = if obj
        .pointer(&f("/firstTimestamp", "/deprecatedFirstTimestamp"))
        .is_some_and(|v| v.is_string())
    {
        age_of(obj, &f("/firstTimestamp", "/deprecatedFirstTimestamp"), now)
    } else {
        age_of(obj, "/eventTime", now)
    };
    let last = if obj
        .pointer("/series/lastObservedTime")
        .is_some_and(|v| v.is_string())
    {
        age_of(obj, "/series/lastObservedTime", now)
    } else if obj
        .pointer(&f("/lastTimestamp", "/deprecatedLastTimestamp"))
        .is_some_and(|v| v.is_string())
    {
        age_of(obj, &f("/lastTimestamp", "/deprecatedLastTimestamp"), now)
    } else {
        first.clone()
    };
    let component = s(obj, &f("/source/component", "/deprecatedSource/component"));
    let host = s(obj, &f("/source/host", "/deprecatedSource/host"));
    let source = if !component.is_empty() {
        if host.is_empty() {
            component.to_string()
        } else {
            format!("{component}, {host}")
        }
    } else {
        let controller = s(obj, &f("/reportingComponent", "/reportingController"));
        let instance = s(obj, "/reportingInstance");
        if instance.is_empty() {
            controller.to_string()
        } else {
            format!("{controller}, {instance}")
        }
    };
    let count = obj
        .pointer("/series/count")
        .and_then(Value::as_i64)
        .or_else(|| {
            obj.pointer(&f("/count", "/deprecatedCount"))
                .and_then(Value::as_i64)
        })
        .filter(|c| *c > 0)
        .unwrap_or(1);
    let object = format!(
        "{}/{}",
        s(obj, &format!("{regarding}/kind")).to_lowercase(),
        s(obj, &format!("{regarding}/name"))
    );
    vec![
        last.into(),
        s(obj, "/type").into(),
        s(obj, "/reason").into(),
        object.into(),
        s(obj, &format!("{regarding}/fieldPath")).into(),
        source.into(),
        s(obj, &f("/message", "/note")).trim().into(),
        first.into(),
        json!(count),
        name(obj).into(),
    ]
}

pub fn lease(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj).into(),
        s(obj, "/spec/holderIdentity").into(),
        age(obj, now).into(),
    ]
}

pub fn config_map(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let count = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_object)
            .map(|m| m.len())
            .unwrap_or(0)
    };
    vec![
        name(obj).into(),
        json!(count("/data") + count("/binaryData")),
        age(obj, now).into(),
    ]
}

pub fn controller_revision(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let controller = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|refs| {
            refs.iter()
                .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        })
        .map(|r| {
            let group = s(r, "/apiVersion")
                .split_once('/')
                .map(|(g, _)| g)
                .unwrap_or("");
            let kind = s(r, "/kind").to_lowercase();
            let qualified = if group.is_empty() {
                kind
            } else {
                format!("{kind}.{group}")
            };
            format!("{qualified}/{}", s(r, "/name"))
        })
        .unwrap_or_else(|| "<none>".into());
    vec![
        name(obj).into(),
        controller.into(),
        json!(i(obj, "/revision")),
        age(obj, now).into(),
    ]
}

fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "N/A".into(),
    }
}

pub fn pdb(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj).into(),
        int_or_string(obj.pointer("/spec/minAvailable")).into(),
        int_or_string(obj.pointer("/spec/maxUnavailable")).into(),
        json!(i(obj, "/status/disruptionsAllowed")),
        age(obj, now).into(),
    ]
}

pub fn priority_class(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj).into(),
        json!(i(obj, "/value")),
        json!(obj
            .get("globalDefault")
            .and_then(Value::as_bool)
            .unwrap_or(false)),
        age(obj, now).into(),
        or_none(s(obj, "/preemptionPolicy")).into(),
    ]
}

pub fn runtime_class(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(obj).into(),
        s(obj, "/handler").into(),
        age(obj, now).into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_rows() {
        let now = Utc::now();
        let n = json!({"metadata": {"name": "master0", "labels": {"node-role.kubernetes.io/master": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "192.168.10.5"}],
                       "nodeInfo": {"kubeletVersion": "v1.36.2", "osImage": "Ubuntu 24.04.1 LTS", "kernelVersion": "6.8.0-45-generic",
                                    "architecture": "amd64", "containerRuntimeVersion": "containerd://1.7.22"}}});
        let row = node(&n, now);
        assert_eq!(
            row[1..3],
            [json!("Ready,SchedulingDisabled"), json!("master")]
        );
        assert_eq!(
            row[4..],
            [
                json!("v1.36.2"),
                json!("192.168.10.5"),
                json!("<none>"),
                json!("Ubuntu 24.04.1 LTS"),
                json!("6.8.0-45-generic (amd64)"),
                json!("containerd://1.7.22")
            ]
        );
        let bare = node(&json!({"metadata": {"name": "w"}}), now);
        assert_eq!(bare[1..3], [json!("Unknown"), json!("<none>")]);
        let silent = node(
            &json!({"metadata": {"name": "w"},
                    "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}),
            now,
        );
        assert_eq!(silent[1], json!("NotReady"));
    }

    #[test]
    fn event_rows_in_both_views() {
        let now = Utc::now();
        let core = json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "web"},
            "reason": "Scheduled", "message": "assigned", "type": "Normal",
            "reportingComponent": "default-scheduler", "reportingInstance": "default-scheduler-vm",
            "eventTime": "2026-01-01T00:00:00.000000Z", "source": {}});
        let row = event(&core, now, false);
        assert_eq!(
            row[1..7],
            [
                json!("Normal"),
                json!("Scheduled"),
                json!("pod/web"),
                json!(""),
                json!("default-scheduler, default-scheduler-vm"),
                json!("assigned")
            ]
        );
        assert_eq!(row[8], json!(1));
    }
}
