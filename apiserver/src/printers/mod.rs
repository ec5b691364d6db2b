//! Server-side printing: the Table columns and rows `kubectl get` shows for each served kind,
//! as upstream's printers define them. Column definitions (names, types, descriptions,
//! priorities) are upstream's, kept as data in `columns.json`.

mod admission;
mod apiregistration;
mod autoscaling;
mod batch;
mod cluster;
mod config;
mod controllers;
pub mod custom;
mod quota;
mod rbac;
mod services;
mod storage;
mod workloads;

use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Value};

/// One column of a Table.
#[derive(Debug, Clone, Deserialize)]
pub struct Column {
    pub name: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i32,
}

impl Column {
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "type": self.type_, "format": self.format,
               "description": self.description, "priority": self.priority})
    }
}

fn all_columns() -> &'static HashMap<String, Vec<Column>> {
    static COLUMNS: OnceLock<HashMap<String, Vec<Column>>> = OnceLock::new();
    COLUMNS.get_or_init(|| {
        let mut all: HashMap<String, Vec<Column>> =
            serde_json::from_str(include_str!("columns.json")).unwrap_or_default();
        let more: HashMap<String, Vec<Column>> =
            serde_json::from_str(include_str!("config_networking.json")).unwrap_or_default();
        all.extend(more);
        let rbac: HashMap<String, Vec<Column>> =
            serde_json::from_str(include_str!("rbac.json")).unwrap_or_default();
        all.extend(rbac);
        let storage: HashMap<String, Vec<Column>> =
            serde_json::from_str(include_str!("storage.json")).unwrap_or_default();
        all.extend(storage);
        all.insert("APIService".into(), apiregistration::columns());
        let autoscaling: HashMap<String, Vec<Column>> =
            serde_json::from_str(include_str!("autoscaling.json")).unwrap_or_default();
        all.extend(autoscaling);
        all
    })
}

/// Which printer serves a kind.
fn printer_key(group: &str, kind: &str) -> &'static str {
    match (group, kind) {
        ("", "Node") => "Node",
        ("", "Pod") => "Pod",
        ("", "Namespace") => "Namespace",
        ("", "Event") | ("events.k8s.io", "Event") => "Event",
        ("", "ConfigMap") => "ConfigMap",
        ("", "ResourceQuota") => "ResourceQuota",
        ("", "Secret") => "Secret",
        ("", "ServiceAccount") => "ServiceAccount",
        ("networking.k8s.io", "Ingress") => "Ingress",
        ("networking.k8s.io", "IngressClass") => "IngressClass",
        ("networking.k8s.io", "NetworkPolicy") => "NetworkPolicy",
        ("", "Service") => "Service",
        ("", "Endpoints") => "Endpoints",
        ("discovery.k8s.io", "EndpointSlice") => "EndpointSlice",
        ("apps", "Deployment") => "Deployment",
        ("apps", "ReplicaSet") => "ReplicaSet",
        ("apps", "DaemonSet") => "DaemonSet",
        ("apps", "StatefulSet") => "StatefulSet",
        ("", "ReplicationController") => "ReplicationController",
        ("apps", "ControllerRevision") => "ControllerRevision",
        ("batch", "Job") => "Job",
        ("batch", "CronJob") => "CronJob",
        ("coordination.k8s.io", "Lease") => "Lease",
        ("policy", "PodDisruptionBudget") => "PodDisruptionBudget",
        ("autoscaling", "HorizontalPodAutoscaler") => "HorizontalPodAutoscaler",
        ("scheduling.k8s.io", "PriorityClass") => "PriorityClass",
        ("node.k8s.io", "RuntimeClass") => "RuntimeClass",
        ("", "PersistentVolume") => "PersistentVolume",
        ("", "PersistentVolumeClaim") => "PersistentVolumeClaim",
        ("storage.k8s.io", "StorageClass") => "StorageClass",
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            "ValidatingAdmissionPolicy"
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            "ValidatingAdmissionPolicyBinding"
        }
        ("apiregistration.k8s.io", "APIService") => "APIService",
        ("rbac.authorization.k8s.io", "Role") => "Role",
        ("rbac.authorization.k8s.io", "ClusterRole") => "ClusterRole",
        ("rbac.authorization.k8s.io", "RoleBinding") => "RoleBinding",
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => "ClusterRoleBinding",
        _ => "Default",
    }
}

/// Columns for a kind; `group` is "" for core.
pub fn columns(group: &str, kind: &str) -> &'static [Column] {
    all_columns()
        .get(printer_key(group, kind))
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Cells of one object's row (same length as the columns).
pub fn cells(group: &str, kind: &str, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    match printer_key(group, kind) {
        "Node" => cluster::node(obj, now),
        "Pod" => workloads::pod(obj, now),
        "Namespace" => cluster::namespace(obj, now),
        "Event" => cluster::event(obj, now, group == "events.k8s.io"),
        "ConfigMap" => cluster::config_map(obj, now),
        "ResourceQuota" => quota::resource_quota(obj, now),
        "Secret" => config::secret(obj, now),
        "ServiceAccount" => config::service_account(obj, now),
        "Ingress" => config::ingress(obj, now),
        "IngressClass" => config::ingress_class(obj, now),
        "NetworkPolicy" => config::network_policy(obj, now),
        "Service" => services::service(obj, now),
        "Endpoints" => services::endpoints(obj, now),
        "EndpointSlice" => services::endpoint_slice(obj, now),
        "Deployment" => workloads::deployment(obj, now),
        "ReplicaSet" => workloads::replica_set(obj, now),
        "DaemonSet" => workloads::daemon_set(obj, now),
        "StatefulSet" => controllers::stateful_set(obj, now),
        "ReplicationController" => controllers::replication_controller(obj, now),
        "ControllerRevision" => cluster::controller_revision(obj, now),
        "Job" => batch::job(obj, now),
        "CronJob" => batch::cron_job(obj, now),
        "Lease" => cluster::lease(obj, now),
        "PodDisruptionBudget" => cluster::pdb(obj, now),
        "HorizontalPodAutoscaler" => autoscaling::horizontal_pod_autoscaler(obj, now),
        "PriorityClass" => cluster::priority_class(obj, now),
        "RuntimeClass" => cluster::runtime_class(obj, now),
        "PersistentVolume" => storage::persistent_volume(obj, now),
        "PersistentVolumeClaim" => storage::persistent_volume_claim(obj, now),
        "StorageClass" => storage::storage_class(obj, now),
        "ValidatingAdmissionPolicy" => admission::validating_admission_policy(obj, now),
        "ValidatingAdmissionPolicyBinding" => {
            admission::validating_admission_policy_binding(obj, now)
        }
        "APIService" => apiregistration::api_service(obj, now),
        "Role" | "ClusterRole" => rbac::role(obj),
        "RoleBinding" | "ClusterRoleBinding" => rbac::binding(obj, now),
        _ => vec![
            name(obj).into(),
            obj.pointer("/metadata/creationTimestamp")
                .cloned()
                .unwrap_or(Value::Null),
        ],
    }
}

/// Upstream's human duration as AGE columns show it (`25s`, `3m4s`, `5h`, `2d3h`, `2y45d`).
pub fn human_duration(d: chrono::Duration) -> String {
    let secs = d.num_seconds();
    if secs < -1 {
        return "<invalid>".into();
    }
    let secs = secs.max(0);
    let (minutes, hours, days) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 60 * 2 {
        format!("{secs}s")
    } else if minutes < 10 {
        let s = secs % 60;
        if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        }
    } else if minutes < 60 * 3 {
        format!("{minutes}m")
    } else if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        }
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        let y = days / 365;
        let dy = days % 365;
        if dy == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{dy}d")
        }
    } else {
        format!("{}y", days / 365)
    }
}

pub(crate) fn name(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub(crate) fn s<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn i(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// `<none>` for an empty string, as printers show missing values.
pub(crate) fn or_none(v: &str) -> String {
    if v.is_empty() {
        "<none>".into()
    } else {
        v.to_string()
    }
}

/// Age of a timestamp field, `<unknown>` when missing.
pub(crate) fn age_of(obj: &Value, pointer: &str, now: DateTime<Utc>) -> String {
    match obj
        .pointer(pointer)
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
    {
        Some(t) => human_duration(now - t.with_timezone(&Utc)),
        None => "<unknown>".into(),
    }
}

pub(crate) fn age(obj: &Value, now: DateTime<Utc>) -> String {
    age_of(obj, "/metadata/creationTimestamp", now)
}

/// `k=v,k2=v2` of a string map, sorted.
pub(crate) fn map_string(m: Option<&Value>) -> String {
    let Some(Value::Object(m)) = m else {
        return String::new();
    };
    let mut pairs: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// A LabelSelector as its string form.
pub(crate) fn selector_string(sel: Option<&Value>) -> String {
    let Some(sel) = sel else { return String::new() };
    match serde_json::from_value(sel.clone())
        .ok()
        .and_then(|s| tinykube_proto::labels::Selector::from_label_selector(&s).ok())
    {
        Some(s) => s.to_string(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_kubectl() {
        for (secs, want) in [
            (25, "25s"),
            (119, "119s"),
            (184, "3m4s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (9 * 3600, "9h"),
            (3 * 86400 + 3600, "3d1h"),
            (10 * 86400, "10d"),
            (800 * 86400, "2y70d"),
        ] {
            assert_eq!(
                human_duration(chrono::Duration::seconds(secs)),
                want,
                "{secs}"
            );
        }
    }

    #[test]
    fn every_served_kind_has_columns() {
        for r in tinykube_proto::registry::RESOURCES {
            assert!(!columns(r.group, r.kind).is_empty(), "{}", r.kind);
            assert_eq!(columns("", "Pod")[0].name, "Name");
        }
    }
}
