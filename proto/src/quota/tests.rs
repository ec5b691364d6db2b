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
    let charges = check(&Evaluator::Pods, &first, None, &[q], 0).unwrap();
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
    let refused = check(&Evaluator::Pods, &second, None, &[q], 0).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "exceeded quota: mem-cpu-demo, requested: requests.memory=700Mi, used: requests.memory=600Mi, limited: requests.memory=1Gi"
    );
    let bare = json!({"spec": {"containers": [{"name": "nginx"}]}});
    let q = quota("mem-cpu-demo", hard, json!({}));
    assert_eq!(
        check(&Evaluator::Pods, &bare, None, &[q], 0).unwrap_err().to_string(),
        "failed quota: mem-cpu-demo: must specify limits.cpu for: nginx; limits.memory for: nginx; requests.cpu for: nginx; requests.memory for: nginx"
    );
}

#[test]
fn docs_pod_count_quota() {
    let q = quota("pod-demo", json!({"pods": "2"}), json!({"pods": "2"}));
    let p = json!({"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c"}]}});
    assert_eq!(
        check(&Evaluator::Pods, &p, None, &[q], 0)
            .unwrap_err()
            .to_string(),
        "exceeded quota: pod-demo, requested: pods=1, used: pods=2, limited: pods=2"
    );
    let unknown = json!({"metadata": {"name": "pod-demo"}, "status": {"hard": {"pods": "2"}}});
    assert_eq!(
        check(&Evaluator::Pods, &p, None, &[unknown], 0)
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

fn service(kind: &str, ports: usize) -> Value {
    let ports: Vec<Value> = (0..ports).map(|i| json!({"port": 80 + i})).collect();
    json!({"metadata": {"name": "web"}, "spec": {"type": kind, "ports": ports}})
}

fn claim(class: &str, storage: &str) -> Value {
    json!({"metadata": {"name": "data"}, "spec": {"storageClassName": class,
           "resources": {"requests": {"storage": storage}}}})
}

#[test]
fn updates_charge_what_they_add() {
    let svc_quota = |used: Value| {
        quota(
            "svc",
            json!({"services": "5", "services.nodeports": "2", "services.loadbalancers": "1"}),
            used,
        )
    };
    let none = json!({"services": "1", "services.nodeports": "0", "services.loadbalancers": "0"});
    let gold = |used: &str| {
        quota(
            "storage",
            json!({"requests.storage": "10Gi",
                   "gold.storageclass.storage.k8s.io/requests.storage": "3Gi"}),
            json!({"requests.storage": used,
                   "gold.storageclass.storage.k8s.io/requests.storage": used}),
        )
    };
    // (evaluator, new, old, quota, charged or refusal)
    type Case = (Evaluator, Value, Value, Value, Result<Value, &'static str>);
    let cases: Vec<Case> = vec![
        (
            Evaluator::Services,
            service("NodePort", 2),
            service("ClusterIP", 2),
            svc_quota(none.clone()),
            Ok(json!({"svc": {"services.nodeports": "2"}})),
        ),
        (
            Evaluator::Services,
            service("NodePort", 3),
            service("ClusterIP", 3),
            svc_quota(none.clone()),
            Err("exceeded quota: svc, requested: services.nodeports=3, used: services.nodeports=0, limited: services.nodeports=2"),
        ),
        (
            Evaluator::Services,
            service("LoadBalancer", 1),
            service("NodePort", 1),
            svc_quota(json!({"services": "1", "services.nodeports": "1", "services.loadbalancers": "0"})),
            Ok(json!({"svc": {"services.loadbalancers": "1"}})),
        ),
        (
            Evaluator::Services,
            service("LoadBalancer", 1),
            service("ClusterIP", 1),
            svc_quota(json!({"services": "2", "services.nodeports": "0", "services.loadbalancers": "1"})),
            Err("exceeded quota: svc, requested: services.loadbalancers=1, used: services.loadbalancers=1, limited: services.loadbalancers=1"),
        ),
        // Less usage, or the same: nothing to charge, even on a full quota.
        (
            Evaluator::Services,
            service("ClusterIP", 2),
            service("NodePort", 2),
            svc_quota(json!({"services": "5", "services.nodeports": "2", "services.loadbalancers": "1"})),
            Ok(json!({})),
        ),
        (
            Evaluator::Services,
            service("NodePort", 1),
            service("NodePort", 2),
            svc_quota(json!({"services": "5", "services.nodeports": "2", "services.loadbalancers": "1"})),
            Ok(json!({})),
        ),
        (
            Evaluator::PersistentVolumeClaims,
            claim("gold", "2Gi"),
            claim("gold", "1Gi"),
            gold("1Gi"),
            Ok(json!({"storage": {"requests.storage": "1Gi",
                                  "gold.storageclass.storage.k8s.io/requests.storage": "1Gi"}})),
        ),
        (
            Evaluator::PersistentVolumeClaims,
            claim("gold", "4Gi"),
            claim("gold", "1Gi"),
            gold("1Gi"),
            Err("exceeded quota: storage, requested: gold.storageclass.storage.k8s.io/requests.storage=3Gi, used: gold.storageclass.storage.k8s.io/requests.storage=1Gi, limited: gold.storageclass.storage.k8s.io/requests.storage=3Gi"),
        ),
        (
            Evaluator::PersistentVolumeClaims,
            claim("bronze", "4Gi"),
            claim("bronze", "1Gi"),
            gold("1Gi"),
            Ok(json!({"storage": {"requests.storage": "3Gi"}})),
        ),
        // A quota that does not know its usage yet refuses any update it tracks, as upstream.
        (
            Evaluator::Services,
            service("ClusterIP", 1),
            service("ClusterIP", 1),
            json!({"metadata": {"name": "svc"}, "status": {"hard": {"services": "1"}}}),
            Err("status unknown for quota: svc, resources: services"),
        ),
    ];
    for (e, new, old, q, want) in cases {
        let got = check(&e, &new, Some(&old), std::slice::from_ref(&q), 0);
        let got = got.map(|charges| {
            let by_quota: serde_json::Map<String, Value> = charges
                .iter()
                .map(|c| (c.quota.clone(), to_json(&c.delta)))
                .collect();
            Value::Object(by_quota)
        });
        let got = got.map_err(|r| r.to_string());
        assert_eq!(got, want.map_err(str::to_string), "{new} from {old}");
    }
}

#[test]
fn which_updates_are_evaluated() {
    let cases = [
        (Evaluator::Services, "", true),
        (Evaluator::Services, "status", false),
        (Evaluator::PersistentVolumeClaims, "", true),
        (Evaluator::PersistentVolumeClaims, "status", false),
        (Evaluator::Pods, "", false),
        (Evaluator::Pods, "status", false),
        (Evaluator::Pods, "resize", true),
        (Evaluator::of("", "configmaps"), "", false),
    ];
    for (e, sub, want) in cases {
        assert_eq!(e.evaluates_update(sub), want, "{e:?} {sub:?}");
    }
}

#[test]
fn coverage_of_what_was_charged() {
    let charge = |quota: &str, delta: Value| Charge {
        quota: quota.into(),
        delta: parse_list(Some(&delta)),
    };
    let held = [charge("a", json!({"services.nodeports": "2"}))];
    let cases = [
        (vec![charge("a", json!({"services.nodeports": "1"}))], true),
        (vec![charge("a", json!({"services.nodeports": "2"}))], true),
        (vec![charge("a", json!({"services.nodeports": "3"}))], false),
        (
            vec![charge("a", json!({"services.loadbalancers": "1"}))],
            false,
        ),
        (vec![charge("b", json!({"services.nodeports": "1"}))], false),
        (vec![], true),
    ];
    for (demand, want) in cases {
        assert_eq!(covers(&held, &demand), want, "{demand:?}");
    }
}
