//! Tables for HorizontalPodAutoscaler defaults, validation messages and the v1 view.

use serde_json::{json, Value};

use super::*;

fn hpa(spec: Value) -> Value {
    json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "php-apache", "namespace": "default"}, "spec": spec})
}

fn target() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "php-apache"})
}

fn errors(obj: &Value) -> Vec<String> {
    let mut obj = obj.clone();
    HpaStrategy.default(&mut obj);
    HpaStrategy
        .validate_create(&obj)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn defaults_as_upstream() {
    let mut plain = hpa(json!({"scaleTargetRef": target(), "maxReplicas": 10}));
    HpaStrategy.default(&mut plain);
    assert_eq!(plain["spec"]["minReplicas"], 1);
    assert_eq!(
        plain["spec"]["metrics"][0],
        json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}})
    );
    // No behavior given: none is added (the controller's flags apply).
    assert!(plain["spec"].get("behavior").is_none());

    let mut partial = hpa(json!({"scaleTargetRef": target(), "maxReplicas": 10,
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}));
    HpaStrategy.default(&mut partial);
    let b = &partial["spec"]["behavior"];
    assert_eq!(b["scaleUp"]["stabilizationWindowSeconds"], 0);
    assert_eq!(b["scaleUp"]["selectPolicy"], "Max");
    assert_eq!(b["scaleUp"]["policies"].as_array().unwrap().len(), 2);
    assert_eq!(b["scaleDown"]["stabilizationWindowSeconds"], 60);
    assert_eq!(
        b["scaleDown"]["policies"],
        json!([{"type": "Percent", "value": 100, "periodSeconds": 15}])
    );
}

#[test]
fn validation_as_upstream() {
    let cpu = |u: Value| {
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": u}}}])
    };
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"scaleTargetRef": target(), "maxReplicas": 10}), vec![]),
        (
            json!({"scaleTargetRef": target(), "minReplicas": 0, "maxReplicas": 10}),
            vec![
                "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
            ],
        ),
        (
            json!({"scaleTargetRef": target(), "minReplicas": 5, "maxReplicas": 2}),
            vec!["spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"],
        ),
        (
            json!({"scaleTargetRef": target()}),
            vec![
                "spec.maxReplicas: Invalid value: 0: must be greater than 0",
                "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
            ],
        ),
        (
            json!({"scaleTargetRef": {"apiVersion": "apps/v1"}, "maxReplicas": 3}),
            vec![
                "spec.scaleTargetRef.kind: Required value",
                "spec.scaleTargetRef.name: Required value",
            ],
        ),
        (
            json!({"scaleTargetRef": target(), "maxReplicas": 3, "metrics": cpu(json!(0))}),
            vec!["spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"],
        ),
        (
            json!({"scaleTargetRef": target(), "maxReplicas": 3, "metrics": [
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "-1Mi"}}}]}),
            vec!["spec.metrics[0].resource.target.averageValue: Invalid value: -1Mi: must be positive"],
        ),
        (
            json!({"scaleTargetRef": target(), "maxReplicas": 3, "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]}),
            vec!["spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization"],
        ),
        (
            json!({"scaleTargetRef": target(), "maxReplicas": 3, "metrics": [{"type": "Pods", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}]}),
            // Only one source is given, so none is forbidden (upstream counts them).
            vec!["spec.metrics[0].pods: Required value: must populate information for the given metric source"],
        ),
        (
            json!({"scaleTargetRef": target(), "maxReplicas": 3, "metrics": [{"type": "Magic"}]}),
            vec![
                "spec.metrics[0].type: Unsupported value: \"Magic\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
            ],
        ),
        (
            json!({"scaleTargetRef": target(), "maxReplicas": 3, "behavior": {"scaleUp": {
                "stabilizationWindowSeconds": 4000, "selectPolicy": "Most",
                "policies": [{"type": "Nodes", "value": 0, "periodSeconds": 2000}]}}}),
            vec![
                "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
                "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Most\": supported values: \"Disabled\", \"Max\", \"Min\"",
                "spec.behavior.scaleUp.policies[0].type: Unsupported value: \"Nodes\": supported values: \"Percent\", \"Pods\"",
                "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
                "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 2000: must be less than or equal to 1800",
            ],
        ),
    ];
    for (spec, want) in cases {
        let mut got = errors(&hpa(spec.clone()));
        got.dedup();
        assert_eq!(got, want, "{spec}");
    }
    let bad_name = json!({"metadata": {"name": "Bad_Name", "namespace": "default"},
        "spec": {"scaleTargetRef": target(), "maxReplicas": 1}});
    assert!(errors(&bad_name)[0].starts_with("metadata.name: Invalid value: \"Bad_Name\""));
}

#[test]
fn updates_may_keep_scale_to_zero_and_status_is_not_negative() {
    let old = hpa(
        json!({"scaleTargetRef": target(), "minReplicas": 0, "maxReplicas": 3,
        "metrics": [{"type": "External", "external": {"metric": {"name": "queue"},
            "target": {"type": "Value", "value": "10"}}}]}),
    );
    assert!(HpaStrategy.validate_update(&old, &old).is_empty());
    let bad = json!({"status": {"currentReplicas": -1, "desiredReplicas": 2}});
    let shown: Vec<String> = HpaStrategy
        .validate_status_update(&bad, &bad)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        shown,
        ["status.currentReplicas: Invalid value: -1: must be greater than or equal to 0"]
    );
}

#[test]
fn v1_shows_the_cpu_target_and_keeps_the_rest_in_annotations() {
    let stored = json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
        "spec": {"scaleTargetRef": target(), "minReplicas": 1, "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
            ],
            "behavior": {"scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}},
        "status": {"currentReplicas": 2, "desiredReplicas": 3,
            "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 250, "averageValue": "250m"}}}],
            "conditions": [{"type": "AbleToScale", "status": "True", "reason": "SucceededRescale", "message": "m"}]},
    });
    let view = v1::to_v1(stored.clone());
    assert_eq!(view["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(view["status"]["currentCPUUtilizationPercentage"], 250);
    assert_eq!(view["status"]["currentReplicas"], 2);
    let annotations = view["metadata"]["annotations"].as_object().unwrap();
    let keys: Vec<&str> = annotations.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            v1::BEHAVIOR,
            v1::CONDITIONS,
            v1::CURRENT_METRICS,
            v1::METRICS,
            "team"
        ]
    );
    assert_eq!(
        annotations[v1::METRICS],
        r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"100Mi"}}]"#
    );
    assert_eq!(
        annotations[v1::CURRENT_METRICS],
        r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":250,"currentAverageValue":"250m"}}]"#
    );
    assert!(annotations[v1::BEHAVIOR]
        .as_str()
        .unwrap()
        .starts_with(r#"{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":1,"PeriodSeconds":60}]}}"#));

    // Written back through v1, nothing is lost and the annotations are consumed.
    let back = v1::from_v1(view);
    assert_eq!(back["apiVersion"], "autoscaling/v2");
    assert_eq!(back["spec"]["metrics"], stored["spec"]["metrics"]);
    assert_eq!(back["spec"]["behavior"], stored["spec"]["behavior"]);
    assert_eq!(
        back["status"]["currentMetrics"][0]["resource"]["current"],
        stored["status"]["currentMetrics"][0]["resource"]["current"]
    );
    assert_eq!(back["status"]["conditions"], stored["status"]["conditions"]);
    assert_eq!(back["metadata"]["annotations"], json!({"team": "a"}));
}

#[test]
fn v1_without_a_target_gets_the_80_percent_default() {
    let v1_obj = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"}, "spec": {"scaleTargetRef": target(), "maxReplicas": 4}});
    let stored = v1::from_v1(v1_obj);
    assert_eq!(
        stored["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    let view = v1::to_v1(stored);
    assert_eq!(view["spec"]["targetCPUUtilizationPercentage"], 80);
    assert!(view["metadata"].get("annotations").is_none());
    assert_eq!(
        view["status"],
        json!({"currentReplicas": 0, "desiredReplicas": 0})
    );
}
