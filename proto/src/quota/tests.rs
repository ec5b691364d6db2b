//! Table tests of quota accounting with the upstream docs' objects and messages.

use serde_json::{json, Value};

use super::*;

fn pod(name: &str, requests: Value, limits: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": {"containers": [
        {"name": format!("{name}-ctr"), "resources": {"requests": requests, "limits": limits}}
    ]}})
}

fn quota(name: &str, hard: Value, used: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": {"hard": hard},
           "status": {"hard": hard, "used": used}})
}

#[test]
fn docs_memory_and_cpu_quota() {
    let hard = json!({"requests.cpu": "1", "requests.memory": "1Gi",
                      "limits.cpu": "2", "limits.memory": "2Gi"});
    let zero = json!({"requests.cpu": "0", "requests.memory": "0",
                      "limits.cpu": "0", "limits.memory": "0"});
    let first = pod(
        "quota-mem-cpu-demo",
        json!({"memory": "600Mi", "cpu": "400m"}),
        json!({"memory": "800Mi", "cpu": "800m"}),
    );
    let q = quota("mem-cpu-demo", hard.clone(), zero);
    let charges = check(&Evaluator::Pods, &first, &[q], 0).unwrap();
    assert_eq!(charges.len(), 1);
    let used = to_json(&charges[0].delta);
    assert_eq!(
        used,
        json!({"limits.cpu": "800m", "limits.memory": "800Mi",
               "requests.cpu": "400m", "requests.memory": "600Mi"})
    );
    let second = pod(
        "quota-mem-cpu-demo-2",
        json!({"memory": "700Mi", "cpu": "400m"}),
        json!({"memory": "1Gi", "cpu": "800m"}),
    );
    let q = quota("mem-cpu-demo", hard.clone(), used);
    let refused = check(&Evaluator::Pods, &second, &[q], 0).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "exceeded quota: mem-cpu-demo, requested: requests.memory=700Mi, used: requests.memory=600Mi, limited: requests.memory=1Gi"
    );
    let bare = json!({"spec": {"containers": [{"name": "nginx"}]}});
    let q = quota("mem-cpu-demo", hard, json!({}));
    assert_eq!(
        check(&Evaluator::Pods, &bare, &[q], 0).unwrap_err().to_string(),
        "failed quota: mem-cpu-demo: must specify limits.cpu for: nginx; limits.memory for: nginx; requests.cpu for: nginx; requests.memory for: nginx"
    );
}

#[test]
fn docs_pod_count_quota() {
    let q = quota("pod-demo", json!({"pods": "2"}), json!({"pods": "2"}));
    let p = json!({"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c"}]}});
    assert_eq!(
        check(&Evaluator::Pods, &p, &[q], 0)
            .unwrap_err()
            .to_string(),
        "exceeded quota: pod-demo, requested: pods=1, used: pods=2, limited: pods=2"
    );
    let unknown = json!({"metadata": {"name": "pod-demo"}, "status": {"hard": {"pods": "2"}}});
    assert_eq!(
        check(&Evaluator::Pods, &p, &[unknown], 0)
            .unwrap_err()
            .to_string(),
        "status unknown for quota: pod-demo, resources: pods"
    );
}

#[test]
fn usage_by_evaluator() {
    let cases: Vec<(Evaluator, Value, Value)> = vec![
        (
            Evaluator::of("", "configmaps"),
            json!({}),
            json!({"configmaps": "1", "count/configmaps": "1"}),
        ),
        (
            Evaluator::of("apps", "deployments"),
            json!({}),
            json!({"count/deployments.apps": "1"}),
        ),
        (
            Evaluator::Services,
            json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]}}),
            json!({"count/services": "1", "services": "1", "services.loadbalancers": "0",
                   "services.nodeports": "2"}),
        ),
        (
            Evaluator::Pods,
            json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Succeeded"}}),
            json!({"count/pods": "1"}),
        ),
        (
            Evaluator::Pods,
            json!({"spec": {
                "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
                "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m",
                    "example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}}]}}),
            json!({"count/pods": "1", "cpu": "2", "pods": "1", "requests.cpu": "2",
                   "requests.example.com/gpu": "1"}),
        ),
    ];
    for (e, obj, want) in cases {
        assert_eq!(to_json(&e.usage(&obj, 0)), want, "{e:?} {obj}");
    }
}

#[test]
fn scopes_as_upstream() {
    let best_effort = json!({"spec": {"containers": [{"name": "a"}]}});
    let burstable = pod("b", json!({"cpu": "1"}), json!({}));
    let terminating = json!({"spec": {"activeDeadlineSeconds": 10, "containers": [{"name": "a"}]}});
    let scoped = |scopes: Value| json!({"spec": {"scopes": scopes}});
    let cases = [
        (scoped(json!(["BestEffort"])), &best_effort, true),
        (scoped(json!(["BestEffort"])), &burstable, false),
        (scoped(json!(["NotBestEffort"])), &burstable, true),
        (scoped(json!(["Terminating"])), &terminating, true),
        (scoped(json!(["NotTerminating"])), &terminating, false),
        (
            json!({"spec": {"scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}}),
            &best_effort,
            false,
        ),
    ];
    for (q, p, want) in cases {
        assert_eq!(
            Evaluator::Pods.matches_scopes(&quota_scopes(&q), p, 0),
            want,
            "{q} {p}"
        );
    }
    let cm = Evaluator::of("", "configmaps");
    assert!(!cm.matches_scopes(&quota_scopes(&scoped(json!(["BestEffort"]))), &json!({}), 0));
}

#[test]
fn timestamps_and_stuck_pods() {
    assert_eq!(unix_seconds("1970-01-02T00:00:01Z"), Some(86_401));
    assert_eq!(unix_seconds("2000-03-01T00:00:00Z"), Some(951_868_800));
    let stuck = json!({"metadata": {"deletionTimestamp": "1970-01-01T00:01:00Z",
                                    "deletionGracePeriodSeconds": 30},
                       "spec": {"containers": [{"name": "a"}]}});
    assert!(Evaluator::Pods.usage(&stuck, 60).contains_key("pods"));
    assert!(!Evaluator::Pods.usage(&stuck, 91).contains_key("pods"));
}
