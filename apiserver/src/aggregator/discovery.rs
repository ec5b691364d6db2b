//! Discovery of the aggregated group versions, as upstream's aggregator merges them: `/apis`
//! lists every remote group (available or not) after the built-in ones, groups ordered by
//! their highest groupPriorityMinimum (CustomResourceDefinition groups count 1000), versions
//! by versionPriority; aggregated discovery (apidiscovery.k8s.io/v2) carries the resources of
//! the backend's last APIResourceList, `Current` while it answers and `Stale` once it stops.

use std::cmp::Ordering;

use serde_json::{json, Map, Value};
use tinykube_proto::registry::custom::compare_versions;

use super::Remote;

/// The group priority of CustomResourceDefinition groups (upstream's crdregistration).
const CRD_GROUP_PRIORITY: i64 = 1000;

/// The remote APIServices of `group`, the preferred version first.
pub fn versions<'a>(remotes: &'a [Remote], group: &str) -> Vec<&'a Remote> {
    let mut out: Vec<&Remote> = remotes.iter().filter(|r| r.group == group).collect();
    out.sort_by(|a, b| {
        b.version_priority
            .cmp(&a.version_priority)
            .then_with(|| compare_versions(&a.version, &b.version))
    });
    out
}

/// The order `/apis` lists groups in: `builtin` as given, then the rest (`custom` groups of
/// definitions and the remote groups) by priority, highest first, then by name.
pub fn group_order(builtin: &[&str], custom: &[&str], remotes: &[Remote]) -> Vec<String> {
    let mut out: Vec<String> = builtin.iter().map(|g| g.to_string()).collect();
    let mut rest: Vec<(i64, String)> = custom
        .iter()
        .map(|g| (CRD_GROUP_PRIORITY, g.to_string()))
        .collect();
    for r in remotes {
        if out.contains(&r.group) {
            continue;
        }
        match rest.iter_mut().find(|(_, g)| *g == r.group) {
            Some(entry) => entry.0 = entry.0.max(r.group_priority),
            None => rest.push((r.group_priority, r.group.clone())),
        }
    }
    rest.sort_by(|a, b| match b.0.cmp(&a.0) {
        Ordering::Equal => a.1.cmp(&b.1),
        other => other,
    });
    out.extend(rest.into_iter().map(|(_, g)| g));
    out
}

/// The legacy APIGroup entry of a remote group (`None`: no APIService for it).
pub fn group_entry(remotes: &[Remote], group: &str) -> Option<Value> {
    let versions: Vec<Value> = versions(remotes, group)
        .iter()
        .map(|r| json!({"groupVersion": format!("{group}/{}", r.version), "version": r.version}))
        .collect();
    let preferred = versions.first()?.clone();
    Some(json!({"name": group, "versions": versions, "preferredVersion": preferred}))
}

fn response_kind(r: &Value) -> Value {
    let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    json!({"group": text("group"), "version": text("version"), "kind": text("kind")})
}

/// A backend's APIResourceList as aggregated discovery's resources: each resource with its
/// subresources (`pods/log` entries) nested.
pub fn resources_v2(list: &Value) -> Vec<Value> {
    let entries: Vec<&Value> = list
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let mut out = Vec::new();
    for r in entries
        .iter()
        .filter(|r| !r["name"].as_str().unwrap_or("/").contains('/'))
    {
        let name = r["name"].as_str().unwrap_or("");
        let mut m = Map::new();
        m.insert("resource".into(), name.into());
        m.insert("responseKind".into(), response_kind(r));
        let scope = if r["namespaced"].as_bool().unwrap_or(false) {
            "Namespaced"
        } else {
            "Cluster"
        };
        m.insert("scope".into(), scope.into());
        m.insert(
            "singularResource".into(),
            r["singularName"].as_str().unwrap_or("").into(),
        );
        m.insert("verbs".into(), r.get("verbs").cloned().unwrap_or(json!([])));
        for k in ["shortNames", "categories"] {
            if let Some(v) = r
                .get(k)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                m.insert(k.into(), v.clone());
            }
        }
        let subs: Vec<Value> = entries
            .iter()
            .filter_map(|s| {
                let sub = s["name"].as_str()?.strip_prefix(name)?.strip_prefix('/')?;
                Some(json!({"subresource": sub, "responseKind": response_kind(s),
                            "verbs": s.get("verbs").cloned().unwrap_or(json!([]))}))
            })
            .collect();
        if !subs.is_empty() {
            m.insert("subresources".into(), subs.into());
        }
        out.push(Value::Object(m));
    }
    out
}

/// The aggregated discovery entry of a remote group: the versions whose backend gave a
/// document, `Stale` when it no longer answers (`None`: nothing to list).
pub fn group_v2(remotes: &[Remote], group: &str) -> Option<Value> {
    let versions: Vec<Value> = versions(remotes, group)
        .iter()
        .filter_map(|r| {
            let list = r.resources.as_ref()?;
            let freshness = if r.available { "Current" } else { "Stale" };
            Some(
                json!({"version": r.version, "resources": resources_v2(list),
                        "freshness": freshness}),
            )
        })
        .collect();
    if versions.is_empty() {
        return None;
    }
    Some(json!({"metadata": {"name": group}, "versions": versions}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregator::ServiceRef;

    fn remote(group: &str, version: &str, gp: i64, vp: i64) -> Remote {
        Remote {
            name: format!("{version}.{group}"),
            group: group.into(),
            version: version.into(),
            group_priority: gp,
            version_priority: vp,
            service: ServiceRef {
                namespace: "ns".into(),
                name: "svc".into(),
                port: 443,
            },
            available: true,
            resources: None,
        }
    }

    #[test]
    fn groups_and_versions_order_by_priority() {
        let remotes = vec![
            remote("metrics.k8s.io", "v1beta1", 100, 100),
            remote("custom.metrics.k8s.io", "v1beta1", 100, 100),
            remote("custom.metrics.k8s.io", "v1beta2", 100, 200),
            remote("high.example.com", "v1", 5000, 1),
        ];
        assert_eq!(
            group_order(&["apps"], &["widgets.example.com"], &remotes),
            [
                "apps",
                "high.example.com",
                "widgets.example.com",
                "custom.metrics.k8s.io",
                "metrics.k8s.io"
            ]
        );
        let v: Vec<&str> = versions(&remotes, "custom.metrics.k8s.io")
            .iter()
            .map(|r| r.version.as_str())
            .collect();
        assert_eq!(v, ["v1beta2", "v1beta1"]);
        let entry = group_entry(&remotes, "custom.metrics.k8s.io").unwrap();
        assert_eq!(
            entry["preferredVersion"]["groupVersion"],
            "custom.metrics.k8s.io/v1beta2"
        );
        assert_eq!(group_entry(&remotes, "nope"), None);
    }

    #[test]
    fn backend_documents_become_aggregated_discovery() {
        let list = json!({"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "metrics.k8s.io/v1beta1", "resources": [
            {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
            {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]},
            {"name": "pods/status", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get"]}]});
        let mut r = remote("metrics.k8s.io", "v1beta1", 100, 100);
        assert_eq!(group_v2(&[r.clone()], "metrics.k8s.io"), None);
        r.resources = Some(list);
        let g = group_v2(&[r.clone()], "metrics.k8s.io").unwrap();
        let v = &g["versions"][0];
        assert_eq!(v["freshness"], "Current");
        assert_eq!(v["resources"].as_array().unwrap().len(), 2);
        assert_eq!(v["resources"][0]["scope"], "Cluster");
        assert_eq!(v["resources"][0]["responseKind"]["kind"], "NodeMetrics");
        assert_eq!(v["resources"][1]["scope"], "Namespaced");
        assert_eq!(
            v["resources"][1]["subresources"][0]["subresource"],
            "status"
        );
        r.available = false;
        let g = group_v2(&[r], "metrics.k8s.io").unwrap();
        assert_eq!(g["versions"][0]["freshness"], "Stale");
    }
}
