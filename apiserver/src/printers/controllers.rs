//! Rows of StatefulSets and ReplicationControllers, as upstream's printStatefulSet and
//! printReplicationController.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::workloads::containers_and_images;
use super::{age, i, map_string, name};

pub fn stateful_set(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (containers, images) = containers_and_images(obj);
    let desired = i(obj, "/spec/replicas");
    vec![
        name(obj).into(),
        format!("{}/{desired}", i(obj, "/status/readyReplicas")).into(),
        age(obj, now).into(),
        containers.into(),
        images.into(),
    ]
}

pub fn replication_controller(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (containers, images) = containers_and_images(obj);
    let selector = map_string(obj.pointer("/spec/selector"));
    vec![
        name(obj).into(),
        json!(i(obj, "/spec/replicas")),
        json!(i(obj, "/status/replicas")),
        json!(i(obj, "/status/readyReplicas")),
        age(obj, now).into(),
        containers.into(),
        images.into(),
        // labels.FormatLabels: `<none>` for an empty selector.
        if selector.is_empty() {
            "<none>".into()
        } else {
            selector.into()
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_as_upstream() {
        let now = Utc::now();
        let sts = json!({"metadata": {"name": "web"}, "spec": {"replicas": 2,
            "template": {"spec": {"containers": [{"name": "nginx", "image": "registry.k8s.io/nginx-slim:0.24"}]}}},
            "status": {"readyReplicas": 1}});
        let row = stateful_set(&sts, now);
        assert_eq!(row[..2], [json!("web"), json!("1/2")]);
        assert_eq!(
            row[3..],
            [json!("nginx"), json!("registry.k8s.io/nginx-slim:0.24")]
        );
        let rc = json!({"metadata": {"name": "nginx"}, "spec": {"replicas": 3, "selector": {"app": "nginx", "tier": "web"},
            "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}},
            "status": {"replicas": 3, "readyReplicas": 2}});
        let row = replication_controller(&rc, now);
        assert_eq!(row[..4], [json!("nginx"), json!(3), json!(3), json!(2)]);
        assert_eq!(
            row[5..],
            [json!("nginx"), json!("nginx"), json!("app=nginx,tier=web")]
        );
    }
}
