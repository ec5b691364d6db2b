//! Provisioning (upstream's provisionClaim, and the external provisioner kind runs,
//! `rancher.io/local-path`, built in): a claim of a class is annotated with its provisioner
//! and gets ExternalProvisioning; when the provisioner is the built-in one, the volume is made
//! here, named `pvc-<claim uid>` so a restart never makes two, with a hostPath directory of its
//! own (`/var/local-path-provisioner/pvc-<uid>_<namespace>_<name>`) and, for a
//! WaitForFirstConsumer claim, node affinity to the node the scheduler selected.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tinykube_client::events::EventType;
use tinykube_client::Api;
use tinykube_proto::storage::{
    BETA_STORAGE_PROVISIONER, PROVISIONED_BY, SELECTED_NODE, STORAGE_PROVISIONER,
};

use super::claims::{claim_key, claim_ref, SyncError};
use super::Controller;
use crate::util::object_ref;

/// The provisioner built into this controller.
pub const PROVISIONER: &str = "rancher.io/local-path";
/// Where its volumes live on a node.
pub const BASE_DIR: &str = "/var/local-path-provisioner";
/// The annotation local-path-provisioner puts on its volumes.
const LOCAL_PATH_NODE: &str = "local.path.provisioner/selected-node";

/// The volume name of a claim's dynamically provisioned volume.
pub fn volume_name(claim: &PersistentVolumeClaim) -> String {
    format!("pvc-{}", claim.metadata.uid.as_deref().unwrap_or(""))
}

/// The volume the built-in provisioner makes for `claim` of `class` (on `node`, if given).
pub fn new_volume(
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    node: Option<&str>,
) -> PersistentVolume {
    let name = volume_name(claim);
    let spec = claim.spec.clone().unwrap_or_default();
    let dir = format!(
        "{BASE_DIR}/{name}_{}_{}",
        claim.metadata.namespace.as_deref().unwrap_or(""),
        claim.metadata.name.as_deref().unwrap_or("")
    );
    let mut annotations = BTreeMap::from([(PROVISIONED_BY.to_string(), PROVISIONER.to_string())]);
    let node_affinity = node.map(|n| {
        annotations.insert(LOCAL_PATH_NODE.into(), n.into());
        VolumeNodeAffinity {
            required: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(vec![NodeSelectorRequirement {
                        key: "kubernetes.io/hostname".into(),
                        operator: "In".into(),
                        values: Some(vec![n.into()]),
                    }]),
                    match_fields: None,
                }],
            }),
        }
    });
    let storage = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .cloned();
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            access_modes: spec.access_modes.clone(),
            capacity: storage.map(|s| BTreeMap::from([("storage".to_string(), s)])),
            claim_ref: Some(claim_ref(claim)),
            host_path: Some(HostPathVolumeSource {
                path: dir,
                type_: Some("DirectoryOrCreate".into()),
            }),
            node_affinity,
            persistent_volume_reclaim_policy: Some(
                class
                    .reclaim_policy
                    .clone()
                    .unwrap_or_else(|| "Delete".into()),
            ),
            storage_class_name: class.metadata.name.clone(),
            volume_mode: spec.volume_mode.clone(),
            mount_options: class.mount_options.clone(),
            ..Default::default()
        }),
        status: None,
    }
}

impl Controller {
    /// Upstream's provisionClaim for `claim` of class `class_name`.
    pub(super) async fn provision_claim(
        &self,
        claim: PersistentVolumeClaim,
        class_name: &str,
    ) -> Result<(), SyncError> {
        let Some(class) = self.classes.get(class_name) else {
            self.event(
                &claim,
                EventType::Warning,
                "ProvisioningFailed",
                format!("storageclass.storage.k8s.io {class_name:?} not found"),
            );
            return Ok(());
        };
        let claim = self.set_provisioner(claim, &class.provisioner).await?;
        self.event(
            &claim,
            EventType::Normal,
            "ExternalProvisioning",
            format!(
                "Waiting for a volume to be created either by the external provisioner '{}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.",
                class.provisioner
            ),
        );
        if class.provisioner != PROVISIONER {
            return Ok(());
        }
        self.provision(&claim, &class).await
    }

    /// The claim annotated with the provisioner expected to provision it.
    async fn set_provisioner(
        &self,
        mut claim: PersistentVolumeClaim,
        provisioner: &str,
    ) -> Result<PersistentVolumeClaim, SyncError> {
        let a = claim
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        if a.get(STORAGE_PROVISIONER).map(String::as_str) == Some(provisioner)
            && a.get(BETA_STORAGE_PROVISIONER).map(String::as_str) == Some(provisioner)
        {
            return Ok(claim);
        }
        a.insert(STORAGE_PROVISIONER.into(), provisioner.into());
        a.insert(BETA_STORAGE_PROVISIONER.into(), provisioner.into());
        let name = claim.metadata.name.clone().unwrap_or_default();
        self.claims_api(&claim)
            .replace(&name, &claim)
            .await
            .map_err(|source| SyncError::Claim {
                claim: claim_key(&claim),
                source,
            })
    }

    /// The built-in provisioner: create the claim's volume unless it exists.
    async fn provision(
        &self,
        claim: &PersistentVolumeClaim,
        class: &StorageClass,
    ) -> Result<(), SyncError> {
        let name = volume_name(claim);
        if self.volumes.get(&name).is_some() {
            return Ok(());
        }
        let node = claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SELECTED_NODE))
            .cloned();
        if node.is_none() && self.delays_binding(claim) {
            return Ok(());
        }
        let regarding = object_ref::<PersistentVolumeClaim>(&claim.metadata);
        self.provisioner.record(
            &regarding,
            EventType::Normal,
            "Provisioning",
            format!(
                "External provisioner is provisioning volume for claim {:?}",
                claim_key(claim)
            ),
        );
        let volume = new_volume(claim, class, node.as_deref());
        let api: Api<PersistentVolume> = Api::all(self.ctx.client.clone());
        match api.create(&volume).await {
            Ok(_) => {}
            // Made before a restart (or by a twin sync): the same name, the same volume.
            Err(e) if e.is_conflict() || e.code() == Some(409) => return Ok(()),
            Err(source) => {
                return Err(SyncError::Provision {
                    claim: claim_key(claim),
                    source,
                })
            }
        }
        self.provisioner.record(
            &regarding,
            EventType::Normal,
            "ProvisioningSucceeded",
            format!("Successfully provisioned volume {name}"),
        );
        self.claim_queue.add(&claim_key(claim));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn provisioned_volumes_are_named_and_pinned_as_local_path_makes_them() {
        let claim: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": "data", "namespace": "default", "uid": "1234"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "standard", "volumeMode": "Filesystem"}})).unwrap();
        let class: StorageClass = serde_json::from_value(json!({"metadata": {"name": "standard"},
            "provisioner": PROVISIONER, "reclaimPolicy": "Delete"}))
        .unwrap();
        let v = serde_json::to_value(new_volume(&claim, &class, Some("worker0"))).unwrap();
        assert_eq!(v["metadata"]["name"], "pvc-1234");
        assert_eq!(v["metadata"]["annotations"][PROVISIONED_BY], PROVISIONER);
        assert_eq!(
            v["spec"]["hostPath"],
            json!({"path": "/var/local-path-provisioner/pvc-1234_default_data", "type": "DirectoryOrCreate"})
        );
        assert_eq!(v["spec"]["capacity"], json!({"storage": "1Gi"}));
        assert_eq!(v["spec"]["claimRef"]["uid"], "1234");
        assert_eq!(v["spec"]["persistentVolumeReclaimPolicy"], "Delete");
        assert_eq!(
            v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
                ["values"],
            json!(["worker0"])
        );
        let anywhere = serde_json::to_value(new_volume(&claim, &class, None)).unwrap();
        assert!(anywhere["spec"].get("nodeAffinity").is_none());
    }
}
