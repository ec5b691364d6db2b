//! One pass of the root CA publisher over a namespace: create the ConfigMap, or put its data
//! and description back.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tinykube_client::{Api, ClientError};

use super::{Controller, CONFIG_MAP, DESCRIPTION, DESCRIPTION_ANNOTATION};
use crate::serviceaccount::sync::is_active;

#[derive(Debug, thiserror::Error)]
#[error("publishing {CONFIG_MAP} in {namespace}: {source}")]
pub struct SyncError {
    namespace: String,
    #[source]
    source: ClientError,
}

impl Controller {
    pub async fn sync(&self, namespace: &str) -> Result<(), SyncError> {
        let Some(ns) = self.namespaces.get(namespace) else {
            return Ok(());
        };
        if !is_active(&ns) {
            return Ok(());
        }
        let err = |source| SyncError {
            namespace: namespace.to_string(),
            source,
        };
        let data = BTreeMap::from([("ca.crt".to_string(), self.root_ca.clone())]);
        let annotations =
            BTreeMap::from([(DESCRIPTION_ANNOTATION.to_string(), DESCRIPTION.to_string())]);
        let api: Api<ConfigMap> = Api::namespaced(self.ctx.client.clone(), namespace);
        let Some(current) = self.configmaps.get(&format!("{namespace}/{CONFIG_MAP}")) else {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(CONFIG_MAP.to_string()),
                    annotations: Some(annotations),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            };
            return match api.create(&cm).await {
                Ok(_) => Ok(()),
                // The namespace went away or is terminating: nothing to retry, as upstream.
                Err(e) if e.is_not_found() || e.code() == Some(403) => Ok(()),
                Err(e) => Err(err(e)),
            };
        };
        let described = current
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
            .is_some_and(|d| !d.is_empty());
        if current.data.as_ref() == Some(&data) && described {
            return Ok(());
        }
        let mut cm = (*current).clone();
        cm.data = Some(data);
        cm.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(DESCRIPTION_ANNOTATION.to_string(), DESCRIPTION.to_string());
        match api.replace(CONFIG_MAP, &cm).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(err(e)),
        }
    }
}
