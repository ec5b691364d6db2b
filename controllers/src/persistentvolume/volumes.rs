//! One pass over a volume (upstream's syncVolume): Available without a claim, Bound with its
//! claim, given back when its claim went to another volume, and reclaimed when its claim is
//! gone: Released, then kept (Retain), deleted (Delete, for the built-in provisioner's volumes)
//! or Failed (a reclaim no plugin here can do), with upstream's events.

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use tinykube_client::events::EventType;
use tinykube_client::Api;
use tinykube_proto::storage::{BOUND_BY_CONTROLLER, PROVISIONED_BY};

use super::claims::SyncError;
use super::provision::PROVISIONER;
use super::Controller;
use crate::util::object_ref;

/// What becomes of a volume whose claim is gone.
#[derive(Debug, PartialEq, Eq)]
pub enum Reclaim {
    Keep,
    Delete,
    /// Failed, with the warning's reason and message.
    Fail(&'static str, String),
}

/// Upstream's reclaimVolume decision for a Released volume.
pub fn reclaim(volume: &PersistentVolume) -> Reclaim {
    let name = volume.metadata.name.as_deref().unwrap_or("");
    let ours = volume
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(PROVISIONED_BY))
        .is_some_and(|p| p == PROVISIONER);
    match volume
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
        .unwrap_or("Retain")
    {
        "Delete" if ours => Reclaim::Delete,
        "Delete" => Reclaim::Fail(
            "VolumeFailedDelete",
            format!("error getting deleter volume plugin for volume {name:?}: no deletable volume plugin matched"),
        ),
        "Recycle" => Reclaim::Fail("VolumeFailedRecycle", "No recycler plugin found for the volume!".into()),
        _ => Reclaim::Keep,
    }
}

impl Controller {
    pub async fn sync_volume(&self, name: &str) -> Result<(), SyncError> {
        let Some(volume) = self.volumes.get(name) else {
            return Ok(());
        };
        let volume = (*volume).clone();
        if volume.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let Some(r) = volume.spec.as_ref().and_then(|s| s.claim_ref.clone()) else {
            return self.volume_phase(volume, "Available", None).await.map(drop);
        };
        let (ns, cname) = (
            r.namespace.clone().unwrap_or_default(),
            r.name.clone().unwrap_or_default(),
        );
        let ref_uid = r.uid.clone().unwrap_or_default();
        if ref_uid.is_empty() {
            // Pre-bound by the user: the claim's sync binds it.
            self.claim_queue.add(&format!("{ns}/{cname}"));
            return self.volume_phase(volume, "Available", None).await.map(drop);
        }
        let mut claim = self
            .claims
            .get(&format!("{ns}/{cname}"))
            .map(|c| (*c).clone());
        if claim
            .as_ref()
            .is_none_or(|c| c.metadata.uid.as_deref() != Some(&ref_uid))
        {
            // The cache may be behind: ask the API server before releasing, as upstream.
            let api: Api<PersistentVolumeClaim> = Api::namespaced(self.ctx.client.clone(), &ns);
            claim = api
                .get_opt(&cname)
                .await
                .map_err(|source| SyncError::Volume {
                    volume: name.to_string(),
                    source,
                })?;
        }
        match claim.filter(|c| c.metadata.uid.as_deref() == Some(&ref_uid)) {
            None => self.release(volume).await,
            Some(claim) => {
                let bound_to = claim
                    .spec
                    .as_ref()
                    .and_then(|s| s.volume_name.clone())
                    .unwrap_or_default();
                if bound_to.is_empty() {
                    self.claim_queue.add(&format!("{ns}/{cname}"));
                    Ok(())
                } else if bound_to == name {
                    self.volume_phase(volume, "Bound", None).await.map(drop)
                } else {
                    self.unbind(volume).await
                }
            }
        }
    }

    /// The claim is gone: Released, then reclaimed by policy.
    async fn release(&self, volume: PersistentVolume) -> Result<(), SyncError> {
        let phase = volume.status.as_ref().and_then(|s| s.phase.clone());
        if phase.as_deref() == Some("Failed") {
            return Ok(());
        }
        let volume = self.volume_phase(volume, "Released", None).await?;
        let Some(volume) = volume else { return Ok(()) };
        let name = volume.metadata.name.clone().unwrap_or_default();
        match reclaim(&volume) {
            Reclaim::Keep => Ok(()),
            Reclaim::Delete => {
                let api: Api<PersistentVolume> = Api::all(self.ctx.client.clone());
                match api.delete(&name, None).await {
                    Ok(_) => Ok(()),
                    Err(e) if e.is_not_found() => Ok(()),
                    Err(source) => Err(SyncError::Volume {
                        volume: name,
                        source,
                    }),
                }
            }
            Reclaim::Fail(reason, message) => {
                self.recorder.record(
                    &object_ref::<PersistentVolume>(&volume.metadata),
                    EventType::Warning,
                    reason,
                    message.clone(),
                );
                self.volume_phase(volume, "Failed", Some(message))
                    .await
                    .map(drop)
            }
        }
    }

    /// The claim went to another volume: a volume the controller bound is given back.
    async fn unbind(&self, mut volume: PersistentVolume) -> Result<(), SyncError> {
        let ours = volume
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(BOUND_BY_CONTROLLER));
        if ours {
            let name = volume.metadata.name.clone().unwrap_or_default();
            if let Some(spec) = volume.spec.as_mut() {
                spec.claim_ref = None;
            }
            if let Some(a) = volume.metadata.annotations.as_mut() {
                a.remove(BOUND_BY_CONTROLLER);
            }
            let api: Api<PersistentVolume> = Api::all(self.ctx.client.clone());
            volume = api
                .replace(&name, &volume)
                .await
                .map_err(|source| SyncError::Volume {
                    volume: name,
                    source,
                })?;
        }
        self.volume_phase(volume, "Available", None).await.map(drop)
    }

    /// Set a volume's phase (and message); the volume as it is now, or None if it is gone.
    async fn volume_phase(
        &self,
        mut volume: PersistentVolume,
        phase: &str,
        message: Option<String>,
    ) -> Result<Option<PersistentVolume>, SyncError> {
        let status = volume.status.get_or_insert_with(Default::default);
        if status.phase.as_deref() == Some(phase) && status.message == message {
            return Ok(Some(volume));
        }
        status.phase = Some(phase.into());
        status.message = message;
        let name = volume.metadata.name.clone().unwrap_or_default();
        let api: Api<PersistentVolume> = Api::all(self.ctx.client.clone());
        match api.replace_status(&name, &volume).await {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(source) => Err(SyncError::Volume {
                volume: name,
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reclaim_follows_the_policy() {
        let pv = |policy: &str, ours: bool| -> PersistentVolume {
            let annotations = if ours {
                json!({PROVISIONED_BY: PROVISIONER})
            } else {
                json!({})
            };
            serde_json::from_value(
                json!({"metadata": {"name": "v", "annotations": annotations},
                "spec": {"persistentVolumeReclaimPolicy": policy}}),
            )
            .unwrap()
        };
        assert_eq!(reclaim(&pv("Retain", true)), Reclaim::Keep);
        assert_eq!(reclaim(&pv("Delete", true)), Reclaim::Delete);
        assert_eq!(
            reclaim(&pv("Delete", false)),
            Reclaim::Fail(
                "VolumeFailedDelete",
                "error getting deleter volume plugin for volume \"v\": no deletable volume plugin matched".into()
            )
        );
        assert!(matches!(
            reclaim(&pv("Recycle", false)),
            Reclaim::Fail("VolumeFailedRecycle", _)
        ));
    }
}
