//! The "Local" APIServices upstream keeps for the group versions the server itself serves:
//! one per built-in group version in upstream's priority table (kube-apiserver's
//! apiVersionPriorities; labelled `kube-aggregator.kubernetes.io/automanaged: onstart` and
//! created at start when missing), and one per group version of an established
//! CustomResourceDefinition (priority 1000/100 as upstream's crdregistration controller;
//! labelled `automanaged: true`, created and removed as definitions come and go).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::apiregistration::local_condition;
use crate::state::AppState;
use crate::storage::Change;

use super::info;

/// The label upstream's autoregister controller marks its APIServices with.
pub const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// Upstream's group and version priorities of the built-in group versions (kube-apiserver's
/// apiVersionPriorities merged with the generic ones): group, version, groupPriorityMinimum,
/// versionPriority. A group version not here gets no APIService, as upstream.
pub const PRIORITIES: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2", 17500, 30),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("resource.k8s.io", "v1", 16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
];

/// The group and version priorities of CustomResourceDefinition group versions.
const CRD_PRIORITIES: (i64, i64) = (1000, 100);

/// `VERSION.GROUP`, an APIService's name.
pub fn name_of(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// A Local APIService object, created at `now`.
pub fn local_api_service(
    group: &str,
    version: &str,
    priorities: (i64, i64),
    automanaged: &str,
    now: &str,
) -> Value {
    json!({
        "kind": "APIService", "apiVersion": "apiregistration.k8s.io/v1",
        "metadata": {
            "name": name_of(group, version),
            "uid": uuid::Uuid::new_v4().to_string(),
            "creationTimestamp": now,
            "labels": {AUTOMANAGED: automanaged},
        },
        "spec": {"group": group, "version": version,
                 "groupPriorityMinimum": priorities.0, "versionPriority": priorities.1},
        "status": {"conditions": [local_condition(now)]},
    })
}

/// The built-in group versions served that have an upstream priority.
fn builtin_group_versions() -> Vec<(&'static str, &'static str, i64, i64)> {
    PRIORITIES
        .iter()
        .filter(|(g, v, _, _)| {
            tinykube_proto::registry::group_version(g, v)
                .next()
                .is_some()
        })
        .copied()
        .collect()
}

/// The group versions of the served CustomResourceDefinitions.
pub fn crd_group_versions(crds: &[Value]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for crd in crds {
        let group = crd
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("");
        let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
        for v in versions.into_iter().flatten() {
            if v["served"].as_bool().unwrap_or(false) {
                if let Some(name) = v["name"].as_str() {
                    out.insert((group.to_string(), name.to_string()));
                }
            }
        }
    }
    out
}

async fn create_if_missing(state: &AppState, obj: &Value) -> ApiResult<()> {
    if state
        .objects
        .try_get(info(), None, object::name(obj))?
        .is_some()
    {
        return Ok(());
    }
    match state.objects.create(info(), obj).await {
        Ok(_) | Err(ApiError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Create the Local APIServices of the built-in group versions that are missing.
pub async fn ensure_builtin(state: &AppState) -> ApiResult<()> {
    let now = object::timestamp(state.clock.utc());
    for (group, version, gp, vp) in builtin_group_versions() {
        let obj = local_api_service(group, version, (gp, vp), "onstart", &now);
        create_if_missing(state, &obj).await?;
    }
    Ok(())
}

/// Keep one Local APIService per group version of the served definitions: create the missing
/// ones, remove the automanaged ones no definition serves any more.
pub async fn sync_crds(state: &AppState) -> ApiResult<()> {
    let served = state.kinds.snapshot();
    let wanted = crd_group_versions(served.crds());
    let builtin: BTreeSet<String> = builtin_group_versions()
        .iter()
        .map(|(g, v, _, _)| name_of(g, v))
        .collect();
    let now = object::timestamp(state.clock.utc());
    for (group, version) in &wanted {
        if builtin.contains(&name_of(group, version)) {
            continue;
        }
        let obj = local_api_service(group, version, CRD_PRIORITIES, "true", &now);
        create_if_missing(state, &obj).await?;
    }
    let page = state.objects.list(info(), None, None, None)?;
    for obj in page.items {
        let managed = obj
            .pointer(&format!(
                "/metadata/labels/{}",
                AUTOMANAGED.replace('/', "~1")
            ))
            .and_then(Value::as_str);
        let gv = (
            obj.pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            obj.pointer("/spec/version")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        );
        if managed == Some("true") && !wanted.contains(&gv) {
            let result = state
                .objects
                .update(info(), None, object::name(&obj), |_| Ok(Change::Delete))
                .await;
            match result {
                Ok(_) | Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_api_services_are_upstreams() {
        let obj = local_api_service("", "v1", (18000, 1), "onstart", "2026-01-01T00:00:00Z");
        assert_eq!(obj["metadata"]["name"], "v1.");
        assert_eq!(obj["spec"]["groupPriorityMinimum"], 18000);
        assert_eq!(obj["status"]["conditions"][0]["reason"], "Local");
        let strategy = crate::registry::strategy(info());
        assert!(strategy.validate_create(&obj).is_empty(), "{obj}");
        let names: Vec<String> = builtin_group_versions()
            .iter()
            .map(|(g, v, _, _)| name_of(g, v))
            .collect();
        for want in ["v1.", "v1.apps", "v1.apiregistration.k8s.io"] {
            assert_eq!(
                names.contains(&want.to_string()),
                want != "v1.apiregistration.k8s.io",
                "{want}"
            );
        }
        // Every built-in group version has its priority.
        for r in tinykube_proto::registry::RESOURCES {
            let listed = PRIORITIES
                .iter()
                .any(|(g, v, _, _)| *g == r.group && *v == r.version);
            assert!(
                listed || r.group == "apiregistration.k8s.io",
                "{}/{}",
                r.group,
                r.version
            );
        }
    }

    #[test]
    fn definitions_give_their_served_group_versions() {
        let crds = vec![json!({"spec": {"group": "example.com", "versions": [
            {"name": "v1", "served": true}, {"name": "v1beta1", "served": false}]}})];
        let got: Vec<(String, String)> = crd_group_versions(&crds).into_iter().collect();
        assert_eq!(got, [("example.com".to_string(), "v1".to_string())]);
    }
}
