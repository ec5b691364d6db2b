//! Upstream's controller finders: from a pod's controller reference to the controller whose
//! scale (`spec.replicas`) a percentage budget counts. A ReplicaSet run by a Deployment counts
//! as the Deployment; a ReplicaSet of its own, a Deployment, StatefulSet or ReplicationController
//! named directly, counts itself.
//! Kinds tinykube does not serve, or serves without a scale subresource, are errors as
//! upstream's scale-subresource fallback reports them. Pure: the caches are lookups.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use tinykube_proto::registry;

use super::budget::{BudgetError, ControllerScale};
use crate::util::controller_ref;

/// `(group, version)` of an ownerReference's apiVersion, or upstream's parse error.
fn group_version(api_version: &str) -> Result<(&str, &str), BudgetError> {
    let parts: Vec<&str> = api_version.split('/').collect();
    match parts.as_slice() {
        [v] => Ok(("", v)),
        [g, v] => Ok((g, v)),
        _ => Err(BudgetError::Finder(format!(
            "unexpected GroupVersion string: {api_version}"
        ))),
    }
}

fn is_workload_group(group: &str) -> bool {
    matches!(group, "apps" | "extensions")
}

/// The controller `owner` names, with its scale, if the caches know it by that uid.
/// `others(kind, name)` looks up a StatefulSet or ReplicationController: its uid and replicas.
pub fn controller_scale(
    owner: &OwnerReference,
    replicaset: impl Fn(&str) -> Option<Arc<ReplicaSet>>,
    deployment: impl Fn(&str) -> Option<Arc<Deployment>>,
    others: impl Fn(&str, &str) -> Option<(String, i32)>,
) -> Result<Option<ControllerScale>, BudgetError> {
    let (group, version) = group_version(&owner.api_version)?;
    let same = |uid: Option<&String>| uid.is_some_and(|u| *u == owner.uid);
    let deployment_scale = |name: &str, uid: &str| {
        deployment(name)
            .filter(|d| d.metadata.uid.as_deref() == Some(uid))
            .map(|d| ControllerScale {
                uid: d.metadata.uid.clone().unwrap_or_default(),
                scale: d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            })
    };
    if is_workload_group(group) && owner.kind == "ReplicaSet" {
        if let Some(rs) = replicaset(&owner.name).filter(|rs| same(rs.metadata.uid.as_ref())) {
            if let Some(parent) = controller_ref(&rs.metadata) {
                let parent_group = group_version(&parent.api_version).map(|(g, _)| g);
                if parent.kind == "Deployment" && parent_group.is_ok_and(is_workload_group) {
                    if let Some(found) = deployment_scale(&parent.name, &parent.uid) {
                        return Ok(Some(found));
                    }
                }
            }
            // On its own, or its Deployment is gone: the ReplicaSet's scale.
            return Ok(Some(ControllerScale {
                uid: rs.metadata.uid.clone().unwrap_or_default(),
                scale: rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            }));
        }
    }
    if is_workload_group(group) && owner.kind == "Deployment" {
        if let Some(found) = deployment_scale(&owner.name, &owner.uid) {
            return Ok(Some(found));
        }
    }
    let own_finder = (group.is_empty() && owner.kind == "ReplicationController")
        || (group == "apps" && owner.kind == "StatefulSet");
    if own_finder {
        if let Some((uid, scale)) =
            others(&owner.kind, &owner.name).filter(|(u, _)| *u == owner.uid)
        {
            return Ok(Some(ControllerScale { uid, scale }));
        }
    }
    // Upstream's last finder reads the scale subresource of whatever kind the reference names.
    let Some(info) = registry::by_kind(group, &owner.kind).filter(|i| i.version == version) else {
        return Err(BudgetError::Finder(format!(
            "no matches for kind {:?} in version {:?}",
            owner.kind, owner.api_version
        )));
    };
    if info.subresource("scale").is_none() {
        return Err(BudgetError::Finder(format!(
            "{} does not implement the scale subresource",
            info.qualified_plural()
        )));
    }
    // A served kind with a scale subresource that is not in the caches (or has another uid).
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentSpec, ReplicaSetSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn owner(api_version: &str, kind: &str, name: &str, uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(true),
            ..Default::default()
        }
    }

    fn rs(name: &str, uid: &str, replicas: i32, parent: Option<OwnerReference>) -> Arc<ReplicaSet> {
        Arc::new(ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.into()),
                uid: Some(uid.into()),
                owner_references: parent.map(|p| vec![p]),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(replicas),
                ..Default::default()
            }),
            status: None,
        })
    }

    fn deploy(name: &str, uid: &str, replicas: i32) -> Arc<Deployment> {
        Arc::new(Deployment {
            metadata: ObjectMeta {
                name: Some(name.into()),
                uid: Some(uid.into()),
                ..Default::default()
            },
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                ..Default::default()
            }),
            status: None,
        })
    }

    fn scale(uid: &str, scale: i32) -> Result<Option<ControllerScale>, BudgetError> {
        Ok(Some(ControllerScale {
            uid: uid.into(),
            scale,
        }))
    }

    #[test]
    fn finders_follow_replicasets_to_deployments_as_upstream() {
        let by_deploy = owner("apps/v1", "Deployment", "web", "d1");
        let replicasets = [
            rs("web-1", "r1", 3, Some(by_deploy.clone())),
            rs("solo", "r2", 2, None),
            rs(
                "orphaned",
                "r3",
                5,
                Some(owner("apps/v1", "Deployment", "gone", "d9")),
            ),
        ];
        let deployments = [deploy("web", "d1", 4)];
        let find = |o: &OwnerReference| {
            controller_scale(
                o,
                |n| {
                    replicasets
                        .iter()
                        .find(|r| r.metadata.name.as_deref() == Some(n))
                        .cloned()
                },
                |n| {
                    deployments
                        .iter()
                        .find(|d| d.metadata.name.as_deref() == Some(n))
                        .cloned()
                },
                |kind, n| match (kind, n) {
                    ("StatefulSet", "web") => Some(("s1".to_string(), 3)),
                    ("ReplicationController", "old") => Some(("c1".to_string(), 2)),
                    _ => None,
                },
            )
        };
        let table = [
            (
                owner("apps/v1", "ReplicaSet", "web-1", "r1"),
                scale("d1", 4),
            ),
            (owner("apps/v1", "ReplicaSet", "solo", "r2"), scale("r2", 2)),
            (
                owner("apps/v1", "ReplicaSet", "orphaned", "r3"),
                scale("r3", 5),
            ),
            (
                owner("apps/v1", "ReplicaSet", "solo", "other-uid"),
                Ok(None),
            ),
            (owner("apps/v1", "ReplicaSet", "missing", "r4"), Ok(None)),
            (by_deploy.clone(), scale("d1", 4)),
            (
                owner("apps/v1", "DaemonSet", "fluentd", "x"),
                Err(BudgetError::Finder(
                    "daemonsets.apps does not implement the scale subresource".into(),
                )),
            ),
            (owner("apps/v1", "StatefulSet", "web", "s1"), scale("s1", 3)),
            (
                owner("v1", "ReplicationController", "old", "c1"),
                scale("c1", 2),
            ),
            // Served with a scale subresource, not in these caches.
            (owner("apps/v1", "StatefulSet", "db", "x"), Ok(None)),
            (owner("v1", "ReplicationController", "rc", "x"), Ok(None)),
            (
                owner("batch/v2", "Job", "j", "x"),
                Err(BudgetError::Finder(
                    "no matches for kind \"Job\" in version \"batch/v2\"".into(),
                )),
            ),
            (
                owner("a/b/c", "ReplicaSet", "x", "x"),
                Err(BudgetError::Finder(
                    "unexpected GroupVersion string: a/b/c".into(),
                )),
            ),
        ];
        for (o, want) in table {
            assert_eq!(find(&o), want, "{} {}", o.kind, o.name);
        }
    }
}
