//! PodDisruptionBudgets as DefaultPreemption weighs them: which potential victims a budget
//! does not allow to go.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use tinykube_proto::labels::Selector;

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// Split `pods` (most important first) into those whose eviction would violate a
/// PodDisruptionBudget and the others, as upstream's filterPodsWithPDBViolation: each pod spends
/// one of `status.disruptionsAllowed` of every budget of its namespace whose selector matches
/// it, and violates once a budget is overspent; a pod the budget lists in `disruptedPods`
/// (being evicted already) spends nothing, and a budget with an empty selector matches nothing.
pub fn split_by_pdb(
    pods: Vec<Arc<Pod>>,
    pdbs: &[Arc<PodDisruptionBudget>],
) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
    let mut budgets: Vec<(&PodDisruptionBudget, Selector, i32)> = pdbs
        .iter()
        .filter_map(|pdb| {
            let selector = pdb.spec.as_ref()?.selector.as_ref()?;
            let selector = Selector::from_label_selector(selector).ok()?;
            let allowed = pdb
                .status
                .as_ref()
                .map_or(0, |s| s.disruptions_allowed.unwrap_or(0));
            (!selector.is_everything()).then_some((pdb.as_ref(), selector, allowed))
        })
        .collect();
    let (mut violating, mut others) = (Vec::new(), Vec::new());
    for pod in pods {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let mut violates = false;
        // A pod without labels matches no budget.
        let labels = pod.metadata.labels.as_ref().filter(|l| !l.is_empty());
        for (pdb, selector, allowed) in labels.map_or(&mut [][..], |_| &mut budgets[..]) {
            let labels = labels.unwrap_or(&NO_LABELS);
            if pdb.metadata.namespace != pod.metadata.namespace || !selector.matches(labels) {
                continue;
            }
            let disrupted = pdb
                .status
                .as_ref()
                .and_then(|s| s.disrupted_pods.as_ref())
                .is_some_and(|d: &BTreeMap<_, _>| d.contains_key(name));
            if disrupted {
                continue;
            }
            *allowed -= 1;
            violates |= *allowed < 0;
        }
        if violates {
            violating.push(pod);
        } else {
            others.push(pod);
        }
    }
    (violating, others)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ns: &str, name: &str, app: Option<&str>) -> Arc<Pod> {
        let labels = app.map(|a| json!({"app": a})).unwrap_or(json!({}));
        Arc::new(
            serde_json::from_value(
                json!({"metadata": {"name": name, "namespace": ns, "labels": labels}}),
            )
            .unwrap(),
        )
    }

    fn pdb(
        selector: serde_json::Value,
        allowed: i32,
        disrupted: &[&str],
    ) -> Arc<PodDisruptionBudget> {
        let disrupted: serde_json::Map<String, serde_json::Value> = disrupted
            .iter()
            .map(|p| (p.to_string(), json!("2026-01-01T00:00:00Z")))
            .collect();
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "budget", "namespace": "default"},
                "spec": {"selector": selector},
                "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted,
                           "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn budgets_spend_their_allowed_disruptions_pod_by_pod() {
        let db = json!({"matchLabels": {"app": "db"}});
        let cases = [
            // (what, pods as (namespace, name, app), budgets, violating names)
            (
                "no budgets",
                vec![("default", "a", Some("db"))],
                vec![],
                vec![],
            ),
            (
                "none allowed",
                vec![("default", "a", Some("db"))],
                vec![pdb(db.clone(), 0, &[])],
                vec!["a"],
            ),
            (
                "one allowed, two pods: the second overspends",
                vec![("default", "a", Some("db")), ("default", "b", Some("db"))],
                vec![pdb(db.clone(), 1, &[])],
                vec!["b"],
            ),
            (
                "a pod being evicted spends nothing",
                vec![("default", "a", Some("db")), ("default", "b", Some("db"))],
                vec![pdb(db.clone(), 1, &["a"])],
                vec![],
            ),
            (
                "another namespace",
                vec![("prod", "a", Some("db"))],
                vec![pdb(db.clone(), 0, &[])],
                vec![],
            ),
            (
                "no labels",
                vec![("default", "a", None)],
                vec![pdb(
                    json!({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}),
                    0,
                    &[],
                )],
                vec![],
            ),
            (
                "an empty selector matches nothing",
                vec![("default", "a", Some("db"))],
                vec![pdb(json!({}), 0, &[])],
                vec![],
            ),
            (
                "another app",
                vec![("default", "a", Some("web"))],
                vec![pdb(db.clone(), 0, &[])],
                vec![],
            ),
        ];
        for (what, pods, pdbs, want) in cases {
            let pods: Vec<Arc<Pod>> = pods.into_iter().map(|(ns, n, a)| pod(ns, n, a)).collect();
            let total = pods.len();
            let (violating, others) = split_by_pdb(pods, &pdbs);
            let names: Vec<&str> = violating
                .iter()
                .map(|p| p.metadata.name.as_deref().unwrap_or_default())
                .collect();
            assert_eq!(names, want, "{what}");
            assert_eq!(violating.len() + others.len(), total, "{what}");
        }
    }
}
