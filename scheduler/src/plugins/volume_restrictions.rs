//! VolumeRestrictions: a claim with the ReadWriteOncePod access mode is used by one pod at a
//! time, so a pod naming one that a scheduled pod already uses is Unschedulable (preempting
//! that pod may help). The inline-disk conflicts upstream also checks (GCE PD, EBS, RBD,
//! iSCSI) have no simulated disks here.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};

use super::volume_binding::pod_claims;
use crate::framework::handle::Lister;
use crate::framework::{CycleState, NodeInfo, Plugin, Status};

pub const NAME: &str = "VolumeRestrictions";
pub const RWOP_CONFLICT: &str =
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode";

pub struct VolumeRestrictions {
    pub claims: Arc<dyn Lister<PersistentVolumeClaim>>,
}

/// The pod's claims (namespace/name) that have the ReadWriteOncePod access mode.
fn rwop_claims(pod: &Pod, claims: &dyn Lister<PersistentVolumeClaim>) -> Vec<String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    pod_claims(pod)
        .into_iter()
        .map(|c| format!("{ns}/{c}"))
        .filter(|key| {
            claims.get(key).is_some_and(|c| {
                c.spec
                    .as_ref()
                    .and_then(|s| s.access_modes.as_ref())
                    .is_some_and(|m| m.iter().any(|m| m == "ReadWriteOncePod"))
            })
        })
        .collect()
}

/// The claims (namespace/name) a pod uses.
fn used_by(pod: &Pod) -> Vec<String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    pod_claims(pod)
        .into_iter()
        .map(|c| format!("{ns}/{c}"))
        .collect()
}

impl Plugin for VolumeRestrictions {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, pod: &Pod, nodes: &[Arc<NodeInfo>], state: &mut CycleState) -> Status {
        let mine = rwop_claims(pod, &*self.claims);
        if mine.is_empty() {
            return Status::Skip;
        }
        let conflict = nodes.iter().flat_map(|n| n.pods.iter()).any(|other| {
            other.metadata.uid != pod.metadata.uid
                && used_by(other).iter().any(|c| mine.contains(c))
        });
        state.put(NAME, mine);
        if conflict {
            return Status::unschedulable(RWOP_CONFLICT);
        }
        Status::Success
    }

    fn filter(&self, pod: &Pod, node: &NodeInfo, state: &CycleState) -> Status {
        let Some(mine) = state.get::<Vec<String>>(NAME) else {
            return Status::Success;
        };
        let conflict = node.pods.iter().any(|other| {
            other.metadata.uid != pod.metadata.uid
                && used_by(other).iter().any(|c| mine.contains(c))
        });
        if conflict {
            Status::unschedulable(RWOP_CONFLICT)
        } else {
            Status::Success
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::handle::Fixed;
    use serde_json::json;

    fn claim(name: &str, mode: &str) -> PersistentVolumeClaim {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
            "spec": {"accessModes": [mode]}}))
        .unwrap()
    }

    fn user(name: &str, claim: &str) -> Arc<Pod> {
        Arc::new(serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"containers": [], "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]}}))
        .unwrap())
    }

    #[test]
    fn a_read_write_once_pod_claim_has_one_user() {
        let plugin = VolumeRestrictions {
            claims: Arc::new(Fixed::new([
                claim("solo", "ReadWriteOncePod"),
                claim("shared", "ReadWriteOnce"),
            ])),
        };
        let node: k8s_openapi::api::core::v1::Node =
            serde_json::from_value(json!({"metadata": {"name": "w0"}})).unwrap();
        let busy = Arc::new(NodeInfo::new(
            Arc::new(node),
            vec![user("a", "solo"), user("b", "shared")],
        ));
        let table = [
            ("solo", Status::unschedulable(RWOP_CONFLICT)),
            ("shared", Status::Skip),
        ];
        for (c, want) in table {
            let mut state = CycleState::default();
            assert_eq!(
                plugin.pre_filter(&user("new", c), std::slice::from_ref(&busy), &mut state),
                want,
                "{c}"
            );
        }
        let mut state = CycleState::default();
        assert_eq!(
            plugin.pre_filter(&user("a", "solo"), std::slice::from_ref(&busy), &mut state),
            Status::Success
        );
        assert!(plugin
            .filter(&user("a", "solo"), &busy, &state)
            .is_success());
    }
}
