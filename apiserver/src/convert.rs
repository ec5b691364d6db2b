//! Views of stored objects: every object carries the `kind`/`apiVersion` of the endpoint it is
//! served from, and events.k8s.io/v1 Events are the stored core/v1 Events with renamed fields.

use serde_json::{Map, Value};
use tinykube_proto::registry::{Custom, ResourceInfo};

/// Field renames between core/v1 Event (stored) and events.k8s.io/v1 Event (served).
const EVENT_RENAMES: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

fn is_events_v1(info: &ResourceInfo) -> bool {
    info.group == "events.k8s.io"
}

/// autoscaling/v1 HorizontalPodAutoscalers: the stored v2 objects through the older schema.
fn is_hpa_v1(info: &ResourceInfo) -> bool {
    info.group == "autoscaling" && info.version == "v1" && info.kind == "HorizontalPodAutoscaler"
}

fn rename(obj: Value, from_core: bool) -> Value {
    let Value::Object(map) = obj else {
        return obj;
    };
    let mut out = Map::new();
    for (k, v) in map {
        let renamed = EVENT_RENAMES.iter().find_map(|(core, ev)| {
            if from_core && k == *core {
                Some(*ev)
            } else if !from_core && k == *ev {
                Some(*core)
            } else {
                None
            }
        });
        out.insert(renamed.map(str::to_string).unwrap_or(k), v);
    }
    Value::Object(out)
}

/// A stored object as served by `info`'s endpoint.
pub fn outgoing(info: &ResourceInfo, obj: Value) -> Value {
    if let Some(custom) = &info.custom {
        return custom_outgoing(info, custom, obj);
    }
    let mut obj = if is_events_v1(info) {
        let mut o = rename(obj, true);
        if let Some(m) = o.as_object_mut() {
            // Unset counters read as absent in the new API, and null timestamps are omitted.
            for k in [
                "deprecatedFirstTimestamp",
                "deprecatedLastTimestamp",
                "eventTime",
            ] {
                if m.get(k).is_some_and(Value::is_null) {
                    m.remove(k);
                }
            }
            if m.get("deprecatedCount").and_then(Value::as_i64) == Some(0) {
                m.remove("deprecatedCount");
            }
            if m.get("deprecatedSource")
                .is_some_and(|s| s.as_object().is_some_and(Map::is_empty))
            {
                m.remove("deprecatedSource");
            }
        }
        o
    } else if is_hpa_v1(info) {
        crate::registry::autoscaling::v1::to_v1(obj)
    } else {
        obj
    };
    set_type_meta(info, &mut obj);
    obj
}

/// A custom object as served in the requested version: conversion `None` only renames its
/// apiVersion, the version's schema defaults apply on read too, and members come in the
/// sorted order upstream's unstructured encoding gives them.
fn custom_outgoing(info: &ResourceInfo, custom: &Custom, obj: Value) -> Value {
    let mut obj = sorted(obj);
    if let Some(schema) = custom.schema() {
        crate::registry::schema::apply_defaults(schema, &mut obj);
    }
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".into(), info.api_version().into());
        m.insert("kind".into(), info.kind.into());
    }
    obj
}

/// The value with every object's members in key order.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// An incoming object (already checked against `info`'s schema) in its stored form.
pub fn incoming(info: &ResourceInfo, obj: Value) -> Value {
    if let Some(custom) = &info.custom {
        let mut obj = obj;
        if let Some(m) = obj.as_object_mut() {
            m.insert(
                "apiVersion".into(),
                format!("{}/{}", info.group, custom.storage_version).into(),
            );
        }
        return obj;
    }
    if is_events_v1(info) {
        let mut o = rename(obj, false);
        if let Some(m) = o.as_object_mut() {
            m.insert("kind".into(), "Event".into());
            m.insert("apiVersion".into(), "v1".into());
        }
        o
    } else if is_hpa_v1(info) {
        crate::registry::autoscaling::v1::from_v1(obj)
    } else {
        obj
    }
}

/// Put `kind` and `apiVersion` first, as upstream encodes them.
pub fn set_type_meta(info: &ResourceInfo, obj: &mut Value) {
    let Value::Object(map) = obj else {
        return;
    };
    let mut out = Map::new();
    out.insert("kind".into(), info.kind.into());
    out.insert("apiVersion".into(), info.api_version().into());
    for (k, v) in std::mem::take(map) {
        if k != "kind" && k != "apiVersion" {
            out.insert(k, v);
        }
    }
    *map = out;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tinykube_proto::registry::builtin as lookup;

    #[test]
    fn events_round_trip_between_views() {
        let ev = lookup("events.k8s.io", "v1", "events").unwrap();
        let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p"}, "message": "hi", "count": 0, "eventTime": "2026-01-01T00:00:00.000000Z"});
        let served = outgoing(ev, core.clone());
        assert_eq!(served["apiVersion"], "events.k8s.io/v1");
        assert_eq!(served["regarding"]["name"], "p");
        assert_eq!(served["note"], "hi");
        assert!(served.get("deprecatedCount").is_none());
        let back = incoming(ev, served);
        assert_eq!(back["involvedObject"]["name"], "p");
        assert_eq!(back["apiVersion"], "v1");
    }
}
