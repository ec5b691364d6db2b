//! Upstream's ServiceAccount admission plugin for new pods: the account defaults to `default`
//! and must exist (a missing `default` is tolerated: see README), its image pull secrets are
//! copied, and unless automounting is off (pod first, then account) every container gets the
//! projected `kube-api-access-XXXXX` volume (token, `kube-root-ca.crt`, namespace) mounted
//! read-only at `/var/run/secrets/kubernetes.io/serviceaccount`. Mirror pods are left alone.

use serde_json::{json, Value};
use tinykube_proto::registry::{self, ResourceInfo};

use crate::error::{ApiError, ApiResult, Qualified};
use crate::object;
use crate::state::AppState;

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
pub const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const VOLUME_PREFIX: &str = "kube-api-access-";

/// The projected volume upstream's plugin adds.
fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ]
        }
    })
}

/// Mount the token volume in every container (init containers first) that has nothing at
/// the mount path yet; add the volume if one of them took it.
fn mount_token(spec: &mut serde_json::Map<String, Value>) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .find(|n| n.starts_with(VOLUME_PREFIX))
                .map(str::to_string)
        });
    let name = existing
        .clone()
        .unwrap_or_else(|| format!("{VOLUME_PREFIX}{}", object::random_suffix(5)));
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        let Some(Value::Array(containers)) = spec.get_mut(list) else {
            continue;
        };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            let taken = mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH));
            if !taken {
                mounts.push(json!({"name": name, "readOnly": true, "mountPath": MOUNT_PATH}));
                needed = true;
            }
        }
    }
    if existing.is_none() && needed {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(v) = volumes.as_array_mut() {
            v.push(token_volume(&name));
        }
    }
}

/// Admit a new pod as upstream's ServiceAccount plugin.
pub fn admit_pod(state: &AppState, info: &ResourceInfo, pod: &mut Value) -> ApiResult<()> {
    let mirror = pod
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(MIRROR_ANNOTATION))
        .is_some();
    if mirror {
        return Ok(());
    }
    let namespace = object::namespace(pod).unwrap_or("default").to_string();
    let pod_name = object::name(pod).to_string();
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let account_name = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_string();
    spec.insert("serviceAccountName".into(), account_name.clone().into());
    spec.insert("serviceAccount".into(), account_name.clone().into());
    let sa_info = registry::builtin("", "v1", "serviceaccounts").expect("served");
    let account = state
        .objects
        .try_get(sa_info, Some(&namespace), &account_name)?;
    if account.is_none() && account_name != "default" {
        return Err(ApiError::ForbiddenNamed {
            resource: Qualified::of(info),
            name: pod_name.clone(),
            message: format!(
                "pods {pod_name:?} is forbidden: error looking up service account {namespace}/{account_name}: serviceaccount {account_name:?} not found"
            ),
        });
    }
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            account
                .as_ref()
                .and_then(|a| a.get("automountServiceAccountToken"))
                .and_then(Value::as_bool)
        })
        .unwrap_or(true);
    if automount {
        mount_token(spec);
    }
    let no_pull_secrets = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    let inherited = account
        .as_ref()
        .and_then(|a| a.get("imagePullSecrets"))
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty());
    if let (true, Some(list)) = (no_pull_secrets, inherited) {
        let names: Vec<Value> = list
            .iter()
            .map(|s| json!({"name": s.get("name").cloned().unwrap_or(Value::Null)}))
            .collect();
        spec.insert("imagePullSecrets".into(), Value::Array(names));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_container_mounts_one_projected_volume() {
        let mut spec = json!({
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "mine", "mountPath": MOUNT_PATH}]}],
            "volumes": [{"name": "mine", "emptyDir": {}}]
        });
        mount_token(spec.as_object_mut().unwrap());
        let name = spec["volumes"][1]["name"].as_str().unwrap().to_string();
        assert!(name.starts_with(VOLUME_PREFIX) && name.len() == VOLUME_PREFIX.len() + 5);
        assert_eq!(spec["volumes"][1], token_volume(&name));
        assert_eq!(
            spec["initContainers"][0]["volumeMounts"][0]["name"],
            name.as_str()
        );
        assert_eq!(spec["containers"][0]["volumeMounts"][0]["readOnly"], true);
        assert_eq!(
            spec["containers"][1]["volumeMounts"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }
}
