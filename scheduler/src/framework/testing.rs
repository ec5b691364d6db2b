//! Pods and nodes for the scheduler's unit tests.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{json, Value};

use super::NodeInfo;

pub fn pod(spec: Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec}))
        .unwrap()
}

pub fn node(name: &str, labels: Value, spec: Value) -> NodeInfo {
    let n: Node = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    }))
    .unwrap();
    NodeInfo::new(Arc::new(n), Vec::new())
}
