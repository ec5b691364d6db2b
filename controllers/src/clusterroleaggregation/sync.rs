//! One pass over an aggregated ClusterRole: the rules of the roles its selectors match (each
//! selector's roles by name, itself left out, a rule kept once), written when they differ.

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use tinykube_client::{Api, ClientError};
use tinykube_proto::labels::Selector;

use super::Controller;

#[derive(Debug, thiserror::Error)]
#[error("aggregating the rules of clusterrole {name}: {source}")]
pub struct SyncError {
    name: String,
    #[source]
    source: ClientError,
}

/// The rules `role` aggregates from `all`.
pub fn aggregated_rules(role: &ClusterRole, all: &[&ClusterRole]) -> Vec<PolicyRule> {
    let mut rules: Vec<PolicyRule> = Vec::new();
    let selectors = role
        .aggregation_rule
        .as_ref()
        .and_then(|a| a.cluster_role_selectors.as_ref())
        .into_iter()
        .flatten();
    for selector in selectors {
        // An invalid selector selects nothing (validation refuses one on write).
        let Ok(selector) = Selector::from_label_selector(selector) else {
            continue;
        };
        let mut matched: Vec<&&ClusterRole> = all
            .iter()
            .filter(|r| r.metadata.name != role.metadata.name)
            .filter(|r| selector.matches(&r.metadata.labels.clone().unwrap_or_default()))
            .collect();
        matched.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for r in matched {
            for rule in r.rules.iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    rules
}

impl Controller {
    pub async fn sync(&self, name: &str) -> Result<(), SyncError> {
        let Some(role) = self.clusterroles.get(name) else {
            return Ok(());
        };
        if role.aggregation_rule.is_none() {
            return Ok(());
        }
        let all = self.clusterroles.list();
        let refs: Vec<&ClusterRole> = all.iter().map(|r| r.as_ref()).collect();
        let rules = aggregated_rules(&role, &refs);
        if role.rules.as_deref().unwrap_or_default() == rules.as_slice() {
            return Ok(());
        }
        let mut updated = (*role).clone();
        updated.rules = Some(rules);
        let api: Api<ClusterRole> = Api::all(self.ctx.client.clone());
        match api.replace(name, &updated).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(source) => Err(SyncError {
                name: name.to_string(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(v: serde_json::Value) -> ClusterRole {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn rules_come_from_the_selected_roles_once_each() {
        let view = role(
            json!({"metadata": {"name": "view"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"aggregate-to-view": "true"}}]}}),
        );
        let b = role(
            json!({"metadata": {"name": "b", "labels": {"aggregate-to-view": "true"}},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        );
        let a = role(
            json!({"metadata": {"name": "a", "labels": {"aggregate-to-view": "true"}},
            "rules": [{"apiGroups": [""], "resources": ["services"], "verbs": ["get"]},
                      {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        );
        let other = role(json!({"metadata": {"name": "c"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}));
        let rules = aggregated_rules(&view, &[&view, &b, &a, &other]);
        let resources: Vec<String> = rules
            .iter()
            .map(|r| r.resources.clone().unwrap().join(","))
            .collect();
        assert_eq!(resources, vec!["services", "pods"]);
    }
}
