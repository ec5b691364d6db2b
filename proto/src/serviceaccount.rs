//! The vocabulary of legacy ServiceAccount token Secrets, shared by the tokens controller that
//! fills them and the API server that accepts their tokens: the Secret type, its annotations and
//! data keys, and the claims of upstream's legacy JWT (issuer `kubernetes/serviceaccount`).

use serde::{Deserialize, Serialize};

/// `type` of a ServiceAccount token Secret.
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming the Secret's ServiceAccount.
pub const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
/// The annotation holding that ServiceAccount's uid.
pub const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";
/// The data keys the tokens controller fills.
pub const TOKEN_KEY: &str = "token";
pub const CA_KEY: &str = "ca.crt";
pub const NAMESPACE_KEY: &str = "namespace";

/// Upstream's LegacyIssuer.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// The claims of a legacy token: upstream's legacyPrivateClaims with `iss` and `sub`, in the
/// order a Go JWT library serializes them (alphabetical). No audience, no expiry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyClaims {
    #[serde(default)]
    pub iss: String,
    #[serde(rename = "kubernetes.io/serviceaccount/namespace", default)]
    pub namespace: String,
    #[serde(rename = "kubernetes.io/serviceaccount/secret.name", default)]
    pub secret_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.name", default)]
    pub service_account_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.uid", default)]
    pub service_account_uid: String,
    #[serde(default)]
    pub sub: String,
}

impl LegacyClaims {
    /// The claims of the token of Secret `secret` for ServiceAccount `account` (uid `uid`) in
    /// `namespace`.
    pub fn new(namespace: &str, account: &str, uid: &str, secret: &str) -> LegacyClaims {
        LegacyClaims {
            iss: LEGACY_ISSUER.into(),
            namespace: namespace.into(),
            secret_name: secret.into(),
            service_account_name: account.into(),
            service_account_uid: uid.into(),
            sub: format!("system:serviceaccount:{namespace}:{account}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_upstreams() {
        let claims = LegacyClaims::new("default", "build-robot", "u1", "build-robot-secret");
        assert_eq!(
            serde_json::to_string(&claims).unwrap(),
            r#"{"iss":"kubernetes/serviceaccount","kubernetes.io/serviceaccount/namespace":"default","kubernetes.io/serviceaccount/secret.name":"build-robot-secret","kubernetes.io/serviceaccount/service-account.name":"build-robot","kubernetes.io/serviceaccount/service-account.uid":"u1","sub":"system:serviceaccount:default:build-robot"}"#
        );
    }
}
