//! One pass of the ServiceAccount controller over a namespace: create each missing account.

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tinykube_client::{Api, ClientError};

use super::{Controller, ACCOUNTS};

#[derive(Debug, thiserror::Error)]
#[error("creating ServiceAccount {namespace}/{name}: {source}")]
pub struct SyncError {
    namespace: String,
    name: String,
    #[source]
    source: ClientError,
}

/// Whether a namespace takes new objects: it exists, is Active and is not being deleted.
pub fn is_active(ns: &k8s_openapi::api::core::v1::Namespace) -> bool {
    let phase = ns.status.as_ref().and_then(|s| s.phase.as_deref());
    ns.metadata.deletion_timestamp.is_none() && phase == Some("Active")
}

impl Controller {
    pub async fn sync(&self, namespace: &str) -> Result<(), SyncError> {
        let Some(ns) = self.namespaces.get(namespace) else {
            return Ok(());
        };
        if !is_active(&ns) {
            return Ok(());
        }
        let api: Api<ServiceAccount> = Api::namespaced(self.ctx.client.clone(), namespace);
        for name in ACCOUNTS {
            if self.accounts.get(&format!("{namespace}/{name}")).is_some() {
                continue;
            }
            let account = ServiceAccount {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            };
            match api.create(&account).await {
                Ok(_) => {}
                // Already there (the cache is behind), or the namespace went away or is
                // terminating: nothing to retry, as upstream.
                Err(e) if e.is_conflict() || e.is_not_found() || e.code() == Some(403) => {}
                Err(source) => {
                    return Err(SyncError {
                        namespace: namespace.to_string(),
                        name: name.to_string(),
                        source,
                    })
                }
            }
        }
        Ok(())
    }
}
