//! The docs' LimitRange tasks through the plugin's functions.

use serde_json::{json, Value};

use super::*;

fn container_range(item: Value) -> Value {
    let mut item = item;
    item["type"] = json!("Container");
    json!({"spec": {"limits": [item]}})
}

fn pod(resources: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "nginx", "resources": resources}]}})
}

#[test]
fn defaults_and_annotation() {
    let lr = container_range(json!({"default": {"memory": "512Mi", "cpu": "1"},
                                    "defaultRequest": {"memory": "256Mi", "cpu": "500m"}}));
    let mut p = pod(json!({}));
    assert!(default_pod(&lr, &mut p));
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"limits": {"memory": "512Mi", "cpu": "1"}, "requests": {"memory": "256Mi", "cpu": "500m"}})
    );
    assert_eq!(
        p["metadata"]["annotations"][ANNOTATION],
        "LimitRanger plugin set: cpu, memory request for container nginx; cpu, memory limit for container nginx"
    );
    let mut given = pod(
        json!({"limits": {"memory": "1Gi", "cpu": "1"}, "requests": {"memory": "1Gi", "cpu": "1"}}),
    );
    assert!(!default_pod(&lr, &mut given));
    assert!(given["metadata"].get("annotations").is_none());
}

#[test]
fn docs_cpu_constraints() {
    let lr = container_range(json!({"max": {"cpu": "800m"}, "min": {"cpu": "200m"},
                                    "default": {"cpu": "800m"}, "defaultRequest": {"cpu": "800m"}}));
    let cases = [
        (
            json!({"limits": {"cpu": "800m"}, "requests": {"cpu": "500m"}}),
            None,
        ),
        (
            json!({"limits": {"cpu": "1.5"}, "requests": {"cpu": "500m"}}),
            Some("maximum cpu usage per Container is 800m, but limit is 1500m"),
        ),
        (
            json!({"limits": {"cpu": "800m"}, "requests": {"cpu": "100m"}}),
            Some("minimum cpu usage per Container is 200m, but request is 100m"),
        ),
        (
            json!({"requests": {"cpu": "500m"}}),
            Some("maximum cpu usage per Container is 800m.  No limit is specified"),
        ),
    ];
    for (resources, want) in cases {
        assert_eq!(
            validate_pod(&lr, &pod(resources.clone())).as_deref(),
            want,
            "{resources}"
        );
    }
}

#[test]
fn pod_limits_and_ratios() {
    let lr = json!({"spec": {"limits": [
        {"type": "Pod", "max": {"memory": "1Gi"}},
        {"type": "Container", "maxLimitRequestRatio": {"memory": "2"}}
    ]}});
    let two = json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "a", "resources": {"limits": {"memory": "800Mi"}, "requests": {"memory": "200Mi"}}},
        {"name": "b", "resources": {"limits": {"memory": "400Mi"}, "requests": {"memory": "400Mi"}}}
    ]}});
    assert_eq!(
        validate_pod(&lr, &two).as_deref(),
        Some("[maximum memory usage per Pod is 1Gi, but limit is 1200Mi, memory max limit to request ratio per Container is 2, but provided ratio is 4.000000]")
    );
}

#[test]
fn claims_within_storage_bounds() {
    let lr = json!({"spec": {"limits": [{"type": "PersistentVolumeClaim",
                                         "min": {"storage": "1Gi"}, "max": {"storage": "2Gi"}}]}});
    let claim = |s: &str| json!({"spec": {"resources": {"requests": {"storage": s}}}});
    assert_eq!(validate_claim(&lr, &claim("1Gi")), None);
    assert_eq!(
        validate_claim(&lr, &claim("5Gi")).as_deref(),
        Some("maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi")
    );
}
