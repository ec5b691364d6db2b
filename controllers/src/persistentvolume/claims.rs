//! One pass over a claim (upstream's syncClaim): an unbound claim is bound to the best
//! matching volume, waits for its first consumer, is provisioned, or stays Pending with
//! FailedBinding; a bound claim has its binding completed on both sides, or is Lost when its
//! volume is gone or bound elsewhere.

use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus,
};
use tinykube_client::events::EventType;
use tinykube_client::{Api, ClientError};
use tinykube_proto::storage::{
    claim_class, find_best_match, BIND_COMPLETED, BOUND_BY_CONTROLLER, SELECTED_NODE,
};

use super::Controller;
use crate::util::object_ref;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("binding volume {volume} to claim {claim}: {source}")]
    BindVolume {
        volume: String,
        claim: String,
        #[source]
        source: ClientError,
    },
    #[error("updating claim {claim}: {source}")]
    Claim {
        claim: String,
        #[source]
        source: ClientError,
    },
    #[error("updating volume {volume}: {source}")]
    Volume {
        volume: String,
        #[source]
        source: ClientError,
    },
    #[error("provisioning a volume for claim {claim}: {source}")]
    Provision {
        claim: String,
        #[source]
        source: ClientError,
    },
}

/// `"yes"` under `key` in an object's annotations.
pub(super) fn annotate(
    annotations: &mut Option<std::collections::BTreeMap<String, String>>,
    key: &str,
) {
    annotations
        .get_or_insert_with(Default::default)
        .insert(key.to_string(), "yes".to_string());
}

pub(super) fn claim_key(claim: &PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        claim.metadata.namespace.as_deref().unwrap_or(""),
        claim.metadata.name.as_deref().unwrap_or("")
    )
}

/// The reference a volume's `claimRef` holds.
pub(super) fn claim_ref(claim: &PersistentVolumeClaim) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("PersistentVolumeClaim".into()),
        name: claim.metadata.name.clone(),
        namespace: claim.metadata.namespace.clone(),
        uid: claim.metadata.uid.clone(),
        resource_version: claim.metadata.resource_version.clone(),
        ..Default::default()
    }
}

impl Controller {
    pub(super) fn claims_api(&self, claim: &PersistentVolumeClaim) -> Api<PersistentVolumeClaim> {
        Api::namespaced(
            self.ctx.client.clone(),
            claim.metadata.namespace.as_deref().unwrap_or("default"),
        )
    }

    pub(super) fn event(
        &self,
        claim: &PersistentVolumeClaim,
        kind: EventType,
        reason: &'static str,
        msg: String,
    ) {
        self.recorder.record(
            &object_ref::<PersistentVolumeClaim>(&claim.metadata),
            kind,
            reason,
            msg,
        );
    }

    pub async fn sync_claim(&self, key: &str) -> Result<(), SyncError> {
        let Some(claim) = self.claims.get(key) else {
            return Ok(());
        };
        let claim = (*claim).clone();
        if claim.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let volume_name = claim
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.clone())
            .unwrap_or_default();
        if volume_name.is_empty() {
            self.sync_unbound(claim).await
        } else {
            self.sync_bound(claim, &volume_name).await
        }
    }

    /// Whether the claim's class binds only once a pod uses it.
    pub(super) fn delays_binding(&self, claim: &PersistentVolumeClaim) -> bool {
        let class = claim_class(claim);
        !class.is_empty()
            && self
                .classes
                .get(class)
                .is_some_and(|c| c.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"))
    }

    async fn sync_unbound(&self, claim: PersistentVolumeClaim) -> Result<(), SyncError> {
        let delay = self.delays_binding(&claim);
        let volumes = self.volumes.list();
        if let Some(v) = find_best_match(&claim, volumes.iter().map(|v| &**v), delay, None) {
            return self.bind(v.clone(), claim).await;
        }
        let selected = claim
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(SELECTED_NODE));
        let class = claim_class(&claim).to_string();
        if delay && !selected {
            self.event(
                &claim,
                EventType::Normal,
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding".into(),
            );
        } else if !class.is_empty() {
            return self.provision_claim(claim, &class).await;
        } else {
            self.event(
                &claim,
                EventType::Normal,
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set".into(),
            );
        }
        self.claim_phase(&claim, "Pending").await
    }

    async fn sync_bound(
        &self,
        claim: PersistentVolumeClaim,
        volume_name: &str,
    ) -> Result<(), SyncError> {
        let Some(volume) = self.volumes.get(volume_name) else {
            if claim.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Lost") {
                self.event(
                    &claim,
                    EventType::Warning,
                    "ClaimLost",
                    "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!".into(),
                );
            }
            return self.claim_phase(&claim, "Lost").await;
        };
        let bound_here = match volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) {
            None => true,
            Some(r) => {
                r.name == claim.metadata.name
                    && r.namespace == claim.metadata.namespace
                    && (r.uid.as_deref().unwrap_or("").is_empty() || r.uid == claim.metadata.uid)
            }
        };
        if bound_here {
            return self.bind((*volume).clone(), claim).await;
        }
        if claim.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Lost") {
            self.event(
                &claim,
                EventType::Warning,
                "ClaimMisbound",
                "Two claims are bound to the same volume, this one is bound incorrectly".into(),
            );
        }
        self.claim_phase(&claim, "Lost").await
    }

    /// Set a claim's phase (nothing when it has it already).
    async fn claim_phase(
        &self,
        claim: &PersistentVolumeClaim,
        phase: &str,
    ) -> Result<(), SyncError> {
        if claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(phase) {
            return Ok(());
        }
        let mut c = claim.clone();
        c.status.get_or_insert_with(Default::default).phase = Some(phase.into());
        self.claims_api(claim)
            .replace_status(claim.metadata.name.as_deref().unwrap_or(""), &c)
            .await
            .map(drop)
            .map_err(|source| SyncError::Claim {
                claim: claim_key(claim),
                source,
            })
    }

    /// Upstream's bind: the volume's claimRef, the volume Bound, the claim's volumeName and
    /// annotations, the claim Bound with the volume's capacity and access modes. Each step is
    /// skipped when done, so a restart in between finishes the binding.
    pub(super) async fn bind(
        &self,
        mut volume: PersistentVolume,
        mut claim: PersistentVolumeClaim,
    ) -> Result<(), SyncError> {
        let vname = volume.metadata.name.clone().unwrap_or_default();
        let pv_api: Api<PersistentVolume> = Api::all(self.ctx.client.clone());
        let vol_err = |source| SyncError::BindVolume {
            volume: vname.clone(),
            claim: claim_key(&claim),
            source,
        };
        let spec = volume.spec.get_or_insert_with(Default::default);
        let ref_uid = spec
            .claim_ref
            .as_ref()
            .and_then(|r| r.uid.clone())
            .unwrap_or_default();
        if ref_uid.is_empty() {
            if spec.claim_ref.is_none() {
                annotate(&mut volume.metadata.annotations, BOUND_BY_CONTROLLER);
            }
            let spec = volume.spec.get_or_insert_with(Default::default);
            spec.claim_ref = Some(claim_ref(&claim));
            volume = pv_api.replace(&vname, &volume).await.map_err(vol_err)?;
        }
        if volume.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Bound") {
            volume.status.get_or_insert_with(Default::default).phase = Some("Bound".into());
            volume = pv_api
                .replace_status(&vname, &volume)
                .await
                .map_err(vol_err)?;
        }
        let cname = claim.metadata.name.clone().unwrap_or_default();
        let ckey = claim_key(&claim);
        let claim_err = |source| SyncError::Claim {
            claim: ckey.clone(),
            source,
        };
        let cspec = claim.spec.get_or_insert_with(Default::default);
        let completed = claim
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.get(BIND_COMPLETED).map(String::as_str) == Some("yes"));
        if cspec.volume_name.as_deref() != Some(&vname) || !completed {
            if cspec.volume_name.as_deref().unwrap_or("").is_empty() {
                cspec.volume_name = Some(vname.clone());
                annotate(&mut claim.metadata.annotations, BOUND_BY_CONTROLLER);
            }
            annotate(&mut claim.metadata.annotations, BIND_COMPLETED);
            claim = self
                .claims_api(&claim)
                .replace(&cname, &claim)
                .await
                .map_err(claim_err)?;
        }
        let vspec = volume.spec.clone().unwrap_or_default();
        let want = PersistentVolumeClaimStatus {
            phase: Some("Bound".into()),
            access_modes: vspec.access_modes.clone(),
            capacity: vspec.capacity.clone(),
            ..claim.status.clone().unwrap_or_default()
        };
        if claim.status.as_ref() != Some(&want) {
            claim.status = Some(want);
            self.claims_api(&claim)
                .replace_status(&cname, &claim)
                .await
                .map_err(|source| SyncError::Claim {
                    claim: claim_key(&claim),
                    source,
                })?;
        }
        Ok(())
    }
}
