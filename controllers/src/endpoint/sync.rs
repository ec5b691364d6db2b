//! Reconcile one Service's Endpoints: deleted with the Service, left alone without a
//! selector, otherwise written when its subsets or labels differ from what the pods say, with
//! the `endpoints.kubernetes.io/last-change-trigger-time` annotation of the change.

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tinykube_client::{Api, ClientError};

use super::{subsets, Controller};
use crate::podaddress::{
    inherited_labels, pods_of, selector, time_text, trigger_time, TRIGGER_TIME,
};
use crate::util::split_key;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("deleting endpoints: {0}")]
    Delete(#[source] ClientError),
    #[error("creating endpoints: {0}")]
    Create(#[source] ClientError),
    #[error("updating endpoints: {0}")]
    Update(#[source] ClientError),
}

/// Upstream's over-capacity marker, dropped from the endpoints it writes.
const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";

impl Controller {
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let (ns, name) = split_key(key);
        let api: Api<Endpoints> = Api::namespaced(self.ctx.client.clone(), ns);
        let Some(svc) = self.services.get(key) else {
            if self.endpoints.get(key).is_some() {
                match api.delete(name, None).await {
                    Ok(_) => {}
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(SyncError::Delete(e)),
                }
            }
            return Ok(());
        };
        if selector(&svc).is_none() {
            return Ok(());
        }
        let pods = pods_of(&self.pods, &svc);
        let want = subsets::desired(&svc, &pods);
        let labels = inherited_labels(&svc);
        let current = self.endpoints.get(key);
        if let Some(cur) = &current {
            let have = cur.subsets.clone().unwrap_or_default();
            let have_labels = cur.metadata.labels.clone().unwrap_or_default();
            if have == want && have_labels == labels {
                return Ok(());
            }
        }
        let mut annotations = current
            .as_ref()
            .and_then(|c| c.metadata.annotations.clone())
            .unwrap_or_default();
        annotations.remove(OVER_CAPACITY);
        if let Some(t) = trigger_time(&svc, &pods).and_then(|t| time_text(&t)) {
            annotations.insert(TRIGGER_TIME.into(), t);
        }
        let endpoints = Endpoints {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(ns.to_string()),
                labels: Some(labels),
                annotations: (!annotations.is_empty()).then_some(annotations),
                resource_version: current
                    .as_ref()
                    .and_then(|c| c.metadata.resource_version.clone()),
                ..Default::default()
            },
            subsets: Some(want),
        };
        match current {
            None => api
                .create(&endpoints)
                .await
                .map(|_| ())
                .map_err(SyncError::Create),
            Some(_) => api
                .replace(name, &endpoints)
                .await
                .map(|_| ())
                .map_err(SyncError::Update),
        }
    }
}
