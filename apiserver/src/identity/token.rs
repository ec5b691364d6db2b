//! ServiceAccount tokens: upstream's JWT claims (`iss`, `sub`, `aud`, `exp`, `iat`, `nbf`,
//! `jti` and the private `kubernetes.io` claim naming the namespace, the ServiceAccount and the
//! object the token is bound to), signed ES256 with the CA key; and their check as bearer
//! tokens: signature, issuer, audience, expiry (one minute of leeway, as upstream), then the
//! ServiceAccount and the bound object must still exist with the same uid.

use jsonwebtoken::{Algorithm, Header, Validation};
use serde::{Deserialize, Serialize};
use tinykube_proto::registry;

use super::{Keys, API_AUDIENCE, ISSUER};
use crate::policy::UserInfo;
use crate::state::AppState;

/// A named object with its uid, as the private claim records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ref {
    pub name: String,
    pub uid: String,
}

/// The private `kubernetes.io` claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Private {
    pub namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Ref>,
    pub serviceaccount: Ref,
}

/// Every claim of a token, in the order upstream's tokens print them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    pub aud: Vec<String>,
    pub exp: i64,
    pub iat: i64,
    pub iss: String,
    pub jti: String,
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: Private,
    pub nbf: i64,
    pub sub: String,
}

impl Claims {
    /// The claims of a token for `account` in `namespace`, valid from `now` for `seconds`.
    pub fn new(
        namespace: &str,
        account: Ref,
        audiences: Vec<String>,
        now: i64,
        seconds: i64,
    ) -> Claims {
        Claims {
            aud: audiences,
            exp: now + seconds,
            iat: now,
            iss: ISSUER.to_string(),
            jti: uuid::Uuid::new_v4().to_string(),
            sub: format!("system:serviceaccount:{namespace}:{}", account.name),
            kubernetes: Private {
                namespace: namespace.to_string(),
                node: None,
                pod: None,
                secret: None,
                serviceaccount: account,
            },
            nbf: now,
        }
    }
}

/// Why a token was not issued.
#[derive(Debug, thiserror::Error)]
#[error("signing the token: {0}")]
pub struct SignError(#[from] jsonwebtoken::errors::Error);

/// Sign `claims` with the CA key.
pub fn sign(keys: &Keys, claims: &Claims) -> Result<String, SignError> {
    // Upstream's header names the algorithm only (no `typ`).
    let header = Header {
        typ: None,
        ..Header::new(Algorithm::ES256)
    };
    Ok(jsonwebtoken::encode(&header, claims, &keys.signing)?)
}

/// The claims of a token this server signed for the API audience, if it is still in date.
pub fn verify(keys: &Keys, token: &str) -> Option<Claims> {
    let mut validation = Validation::new(Algorithm::ES256);
    validation.set_audience(&[API_AUDIENCE]);
    validation.set_issuer(&[ISSUER]);
    validation.validate_nbf = true;
    jsonwebtoken::decode::<Claims>(token, &keys.verifying, &validation)
        .ok()
        .map(|data| data.claims)
}

/// Whether the object of `plural` named in `r` still exists with the same uid.
fn still_there(state: &AppState, plural: &str, namespace: Option<&str>, r: &Ref) -> bool {
    let Some(info) = registry::builtin("", "v1", plural) else {
        return false;
    };
    matches!(
        state.objects.try_get(info, namespace, &r.name),
        Ok(Some(obj)) if crate::object::uid(&obj) == Some(r.uid.as_str())
    )
}

/// The user of a valid ServiceAccount token whose account (and bound object) still exist.
pub fn authenticate(state: &AppState, token: &str) -> Option<UserInfo> {
    let claims = verify(&state.keys, token)?;
    let private = &claims.kubernetes;
    let ns = Some(private.namespace.as_str());
    if !still_there(state, "serviceaccounts", ns, &private.serviceaccount) {
        return None;
    }
    if let Some(pod) = &private.pod {
        if !still_there(state, "pods", ns, pod) {
            return None;
        }
    }
    if let Some(secret) = &private.secret {
        if !still_there(state, "secrets", ns, secret) {
            return None;
        }
    }
    Some(UserInfo {
        username: claims.sub.clone(),
        uid: private.serviceaccount.uid.clone(),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{}", private.namespace),
            "system:authenticated".into(),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> (tempfile::TempDir, Keys) {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::load_or_create(dir.path()).unwrap();
        (dir, keys)
    }

    fn account() -> Ref {
        Ref {
            name: "default".into(),
            uid: "u1".into(),
        }
    }

    #[test]
    fn tokens_carry_upstreams_claims_and_verify() {
        let (_dir, keys) = keys();
        let now = chrono::Utc::now().timestamp();
        let claims = Claims::new("demo", account(), vec![API_AUDIENCE.into()], now, 3600);
        let token = sign(&keys, &claims).unwrap();
        let back = verify(&keys, &token).unwrap();
        assert_eq!(back, claims);
        assert_eq!(back.sub, "system:serviceaccount:demo:default");
        assert_eq!(back.exp - back.iat, 3600);
        let payload = token.split('.').nth(1).unwrap();
        use base64::Engine;
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap();
        let text = String::from_utf8(json).unwrap();
        assert!(
            text.starts_with(
                "{\"aud\":[\"https://kubernetes.default.svc.cluster.local\"],\"exp\":"
            ),
            "{text}"
        );
        assert!(text.contains("\"kubernetes.io\":{\"namespace\":\"demo\",\"serviceaccount\":{\"name\":\"default\",\"uid\":\"u1\"}}"), "{text}");
    }

    #[test]
    fn expired_foreign_and_other_audience_tokens_are_refused() {
        let (_dir, keys) = keys();
        let (_other_dir, other) = self::keys();
        let now = chrono::Utc::now().timestamp();
        let expired = Claims::new(
            "demo",
            account(),
            vec![API_AUDIENCE.into()],
            now - 7200,
            3600,
        );
        assert!(verify(&keys, &sign(&keys, &expired).unwrap()).is_none());
        let fresh = Claims::new("demo", account(), vec![API_AUDIENCE.into()], now, 3600);
        assert!(verify(&keys, &sign(&other, &fresh).unwrap()).is_none());
        let vault = Claims::new("demo", account(), vec!["vault".into()], now, 3600);
        assert!(verify(&keys, &sign(&keys, &vault).unwrap()).is_none());
        assert!(verify(&keys, "not-a-token").is_none());
    }
}
