//! Upstream's bootstrap policy (`bootstrap.yaml`, from its bootstrappolicy testdata): the
//! ClusterRoles and ClusterRoleBindings created at every start when missing, each labelled
//! `kubernetes.io/bootstrapping: rbac-defaults` and annotated for auto-update as upstream's.
//! Aggregated roles (`admin`, `edit`, `view`) start without rules: the clusterrole-aggregation
//! controller fills them.

use serde::Deserialize;
use serde_json::{json, Map, Value};
use tinykube_clock::Clock;
use tinykube_proto::registry::{builtin, RBAC};

use crate::error::ApiError;
use crate::object;
use crate::storage::Objects;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Policy {
    cluster_roles: Vec<Role>,
    cluster_role_bindings: Vec<Binding>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Role {
    name: String,
    #[serde(default)]
    labels: Map<String, Value>,
    #[serde(default)]
    rules: Vec<Value>,
    aggregation_rule: Option<Value>,
}

#[derive(Deserialize)]
struct Binding {
    name: String,
    role: Option<String>,
    /// `Kind:name`.
    subjects: Vec<String>,
}

fn metadata(name: &str, extra_labels: &Map<String, Value>, clock: &Clock) -> Value {
    let mut labels = Map::new();
    labels.insert("kubernetes.io/bootstrapping".into(), json!("rbac-defaults"));
    labels.extend(extra_labels.clone());
    json!({
        "name": name,
        "uid": uuid::Uuid::new_v4().to_string(),
        "creationTimestamp": object::timestamp(clock.utc()),
        "labels": labels,
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

/// The bootstrap ClusterRoles and ClusterRoleBindings as objects, created at `clock`'s now.
pub fn objects(clock: &Clock) -> (Vec<Value>, Vec<Value>) {
    let policy: Policy =
        serde_yaml_ng::from_str(include_str!("bootstrap.yaml")).expect("bootstrap.yaml parses");
    let roles = policy
        .cluster_roles
        .iter()
        .map(|r| {
            let mut role = json!({
                "kind": "ClusterRole", "apiVersion": format!("{RBAC}/v1"),
                "metadata": metadata(&r.name, &r.labels, clock),
            });
            match &r.aggregation_rule {
                Some(rule) => role["aggregationRule"] = rule.clone(),
                None => role["rules"] = Value::Array(r.rules.clone()),
            }
            role
        })
        .collect();
    let bindings = policy
        .cluster_role_bindings
        .iter()
        .map(|b| {
            let subjects: Vec<Value> = b
                .subjects
                .iter()
                .filter_map(|s| s.split_once(':'))
                .map(|(kind, name)| json!({"kind": kind, "apiGroup": RBAC, "name": name}))
                .collect();
            json!({
                "kind": "ClusterRoleBinding", "apiVersion": format!("{RBAC}/v1"),
                "metadata": metadata(&b.name, &Map::new(), clock),
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole",
                            "name": b.role.as_deref().unwrap_or(&b.name)},
                "subjects": subjects,
            })
        })
        .collect();
    (roles, bindings)
}

/// Create whatever of the bootstrap policy is missing.
pub async fn ensure(objects_store: &Objects, clock: &Clock) -> Result<(), ApiError> {
    let (roles, bindings) = objects(clock);
    for (plural, list) in [("clusterroles", roles), ("clusterrolebindings", bindings)] {
        let info = builtin(RBAC, "v1", plural).expect("RBAC kinds are served");
        for obj in list {
            if objects_store
                .try_get(info, None, object::name(&obj))?
                .is_some()
            {
                continue;
            }
            match objects_store.create(info, &obj).await {
                Ok(_) | Err(ApiError::AlreadyExists { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::strategy;

    #[test]
    fn the_policy_is_upstreams_and_valid() {
        let (roles, bindings) = objects(&Clock::real());
        let names: Vec<&str> = roles.iter().map(object::name).collect();
        for want in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:discovery",
            "system:basic-user",
            "system:public-info-viewer",
            "system:kube-scheduler",
            "system:kube-controller-manager",
            "system:node",
            "system:kubelet-api-admin",
            "system:kube-aggregator",
        ] {
            assert!(names.contains(&want), "{want}");
        }
        let role_info = builtin(RBAC, "v1", "clusterroles").unwrap();
        for r in &roles {
            assert!(strategy(role_info).validate_create(r).is_empty(), "{r}");
        }
        let binding_info = builtin(RBAC, "v1", "clusterrolebindings").unwrap();
        for b in &bindings {
            assert!(strategy(binding_info).validate_create(b).is_empty(), "{b}");
            assert!(
                names.contains(&b["roleRef"]["name"].as_str().unwrap()),
                "{b}"
            );
        }
        let admin = bindings
            .iter()
            .find(|b| object::name(b) == "cluster-admin")
            .unwrap();
        assert_eq!(admin["subjects"][0]["name"], "system:masters");
        assert_eq!(admin["subjects"][0]["kind"], "Group");
    }
}
