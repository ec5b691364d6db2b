//! One pass of the tokens controller over a token Secret: delete it when its ServiceAccount is
//! gone, else fill what it lacks (token, ca.crt, namespace) and record the account's uid.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::ByteString;
use serde_json::json;
use tinykube_client::{Api, ClientError};
use tinykube_proto::serviceaccount::{
    LegacyClaims, CA_KEY, NAMESPACE_KEY, NAME_ANNOTATION, TOKEN_KEY, UID_ANNOTATION,
};

use super::{account_of, Controller};

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("looking up ServiceAccount {namespace}/{name}: {source}")]
    Account {
        namespace: String,
        name: String,
        #[source]
        source: ClientError,
    },
    #[error("deleting token Secret {key}: {source}")]
    Delete {
        key: String,
        #[source]
        source: ClientError,
    },
    #[error("signing the token of Secret {key}: {source}")]
    Sign {
        key: String,
        #[source]
        source: jsonwebtoken::errors::Error,
    },
    #[error("populating token Secret {key}: {source}")]
    Update {
        key: String,
        #[source]
        source: ClientError,
    },
}

/// What a token Secret lacks, as upstream's secretUpdateNeeded: the CA (when one is
/// configured and differs), the namespace, the token.
pub fn needs(secret: &Secret, root_ca: &str) -> (bool, bool, bool) {
    let data = secret.data.as_ref();
    let value = |k: &str| {
        data.and_then(|d| d.get(k))
            .map(|b| b.0.as_slice())
            .unwrap_or(&[])
    };
    let needs_ca = !root_ca.is_empty() && value(CA_KEY) != root_ca.as_bytes();
    let needs_namespace = value(NAMESPACE_KEY).is_empty();
    let needs_token = value(TOKEN_KEY).is_empty();
    (needs_ca, needs_namespace, needs_token)
}

/// Whether `sa` is the account a Secret annotated with `uid` (empty: any) names.
fn same_account(sa: &ServiceAccount, uid: &str) -> bool {
    uid.is_empty() || sa.metadata.uid.as_deref() == Some(uid)
}

impl Controller {
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let Some(secret) = self.secrets.get(key) else {
            return Ok(());
        };
        let Some(account) = account_of(&secret) else {
            return Ok(());
        };
        let namespace = secret.metadata.namespace.clone().unwrap_or_default();
        let uid = secret
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(UID_ANNOTATION))
            .cloned()
            .unwrap_or_default();
        match self.account(&namespace, account, &uid).await? {
            None => self.delete(&secret, key).await,
            Some(sa) => self.populate(&sa, &secret, key).await,
        }
    }

    /// The account from the cache, else from the API server (upstream's fetchOnCacheMiss), if it
    /// exists with the given uid.
    async fn account(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<Option<ServiceAccount>, SyncError> {
        if let Some(sa) = self.accounts.get(&format!("{namespace}/{name}")) {
            if same_account(&sa, uid) {
                return Ok(Some((*sa).clone()));
            }
        }
        let api: Api<ServiceAccount> = Api::namespaced(self.ctx.client.clone(), namespace);
        let live = api
            .get_opt(name)
            .await
            .map_err(|source| SyncError::Account {
                namespace: namespace.into(),
                name: name.into(),
                source,
            })?;
        Ok(live.filter(|sa| same_account(sa, uid)))
    }

    /// Delete the Secret, only if it is still this one (a uid precondition).
    async fn delete(&self, secret: &Secret, key: &str) -> Result<(), SyncError> {
        let namespace = secret.metadata.namespace.as_deref().unwrap_or("");
        let name = secret.metadata.name.as_deref().unwrap_or("");
        let api: Api<Secret> = Api::namespaced(self.ctx.client.clone(), namespace);
        let options = secret
            .metadata
            .uid
            .as_ref()
            .map(|uid| json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}}));
        tracing::debug!(
            secret = key,
            "its service account does not exist, deleting the token"
        );
        match api.delete(name, options.as_ref()).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
            Err(source) => Err(SyncError::Delete {
                key: key.into(),
                source,
            }),
        }
    }

    /// Fill what the Secret lacks, on the live copy when the cache's is current.
    async fn populate(
        &self,
        sa: &ServiceAccount,
        cached: &Secret,
        key: &str,
    ) -> Result<(), SyncError> {
        if needs(cached, &self.root_ca) == (false, false, false) {
            return Ok(());
        }
        let namespace = cached.metadata.namespace.as_deref().unwrap_or("");
        let name = cached.metadata.name.as_deref().unwrap_or("");
        let api: Api<Secret> = Api::namespaced(self.ctx.client.clone(), namespace);
        let update = |source| SyncError::Update {
            key: key.into(),
            source,
        };
        let Some(mut live) = api.get_opt(name).await.map_err(update)? else {
            return Ok(());
        };
        if live.metadata.resource_version != cached.metadata.resource_version {
            // The cache is behind: the newer version's notification brings the Secret back.
            return Ok(());
        }
        let (needs_ca, needs_namespace, needs_token) = needs(&live, &self.root_ca);
        let account = sa.metadata.name.clone().unwrap_or_default();
        let uid = sa.metadata.uid.clone().unwrap_or_default();
        let data = live.data.get_or_insert_with(BTreeMap::new);
        if needs_ca {
            data.insert(CA_KEY.into(), ByteString(self.root_ca.as_bytes().to_vec()));
        }
        if needs_namespace {
            data.insert(
                NAMESPACE_KEY.into(),
                ByteString(namespace.as_bytes().to_vec()),
            );
        }
        if needs_token {
            let claims = LegacyClaims::new(namespace, &account, &uid, name);
            let token = self
                .signer
                .sign(&claims)
                .map_err(|source| SyncError::Sign {
                    key: key.into(),
                    source,
                })?;
            data.insert(TOKEN_KEY.into(), ByteString(token.into_bytes()));
        }
        let annotations = live.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(NAME_ANNOTATION.into(), account);
        annotations.insert(UID_ANNOTATION.into(), uid);
        match api.replace(name, &live).await {
            Ok(_) => Ok(()),
            // Changed or deleted meanwhile: its notification brings it back, as upstream.
            Err(e) if e.is_conflict() || e.is_not_found() => Ok(()),
            Err(e) => Err(update(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(data: &[(&str, &str)]) -> Secret {
        Secret {
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn what_a_token_secret_needs_is_upstreams() {
        let cases = [
            (secret(&[]), "CA", (true, true, true)),
            (secret(&[]), "", (false, true, true)),
            (
                secret(&[("ca.crt", "CA"), ("namespace", "d"), ("token", "t")]),
                "CA",
                (false, false, false),
            ),
            (
                secret(&[("ca.crt", "old"), ("namespace", "d"), ("token", "t")]),
                "CA",
                (true, false, false),
            ),
            (
                secret(&[("ca.crt", "CA"), ("namespace", "d"), ("token", "")]),
                "CA",
                (false, false, true),
            ),
            (Secret::default(), "CA", (true, true, true)),
        ];
        for (s, ca, want) in cases {
            assert_eq!(needs(&s, ca), want, "{s:?}");
        }
    }

    #[test]
    fn only_annotated_token_secrets_name_an_account() {
        let annotated = |type_: &str, name: Option<&str>| Secret {
            type_: Some(type_.into()),
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                annotations: name
                    .map(|n| BTreeMap::from([(NAME_ANNOTATION.to_string(), n.to_string())])),
                ..Default::default()
            },
            ..Default::default()
        };
        let cases = [
            (
                annotated("kubernetes.io/service-account-token", Some("build-robot")),
                Some("build-robot"),
            ),
            (
                annotated("kubernetes.io/service-account-token", Some("")),
                None,
            ),
            (annotated("kubernetes.io/service-account-token", None), None),
            (annotated("Opaque", Some("build-robot")), None),
        ];
        for (s, want) in cases {
            assert_eq!(account_of(&s), want);
        }
        let sa = ServiceAccount {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                uid: Some("u1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(same_account(&sa, "") && same_account(&sa, "u1") && !same_account(&sa, "u2"));
    }
}
