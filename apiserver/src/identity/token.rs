//! ServiceAccount tokens: upstream's JWT claims (`iss`, `sub`, `aud`, `exp`, `iat`, `nbf`,
//! `jti` and the private `kubernetes.io` claim naming the namespace, the ServiceAccount and the
//! object the token is bound to), signed ES256 with the CA key; and their check as bearer
//! tokens: signature, issuer, audience, expiry (one minute of leeway, as upstream), then the
//! ServiceAccount and the bound object must still exist with the same uid; each refusal in
//! upstream's words (what TokenReview's `status.error` shows).

use jsonwebtoken::{Algorithm, Header};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tinykube_proto::registry;

use super::bearer::{
    audiences, issuer, service_account_user, signed_claims, Authenticated, Outcome, LEEWAY,
};
use super::{Keys, ISSUER};
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

/// The stored object of `plural` named `name`, if any.
fn lookup(state: &AppState, plural: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
    let info = registry::builtin("", "v1", plural)?;
    state.objects.try_get(info, namespace, name).ok().flatten()
}

/// Whether an object was deleted (its deletion timestamp passed) more than the leeway ago.
fn deleted_before(obj: &Value, now: i64) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .is_some_and(|t| t.timestamp() < now - LEEWAY)
}

/// Upstream's time checks of a token's claims (`exp`, `nbf`, one minute of leeway).
pub fn check_times(claims: &Claims, now: i64) -> Result<(), String> {
    if claims.exp + LEEWAY < now {
        return Err("service account token has expired".into());
    }
    if claims.nbf - LEEWAY > now {
        return Err("service account token is not valid yet".into());
    }
    Ok(())
}

/// A ServiceAccount JWT of this server's issuer, checked as upstream's validator: signature,
/// audiences, times, then the ServiceAccount and the bound object must still exist with the
/// same uid. The user carries the token's credential id and bound pod (and its node) as extras.
pub fn validate(state: &AppState, token: &str, requested: &[String], now: i64) -> Outcome {
    if issuer(token).as_deref() != Some(ISSUER) {
        return Outcome::NotMine;
    }
    let claims: Claims = match signed_claims(&state.keys, token) {
        Ok(c) => c,
        Err(reason) => return Outcome::Refused(reason),
    };
    match check(state, &claims, requested, now) {
        Ok(found) => Outcome::User(found),
        Err(reason) => Outcome::Refused(reason),
    }
}

fn check(
    state: &AppState,
    claims: &Claims,
    requested: &[String],
    now: i64,
) -> Result<Authenticated, String> {
    let audiences = audiences(&claims.aud, requested)?;
    check_times(claims, now)?;
    let private = &claims.kubernetes;
    let ns = Some(private.namespace.as_str());
    let account = &private.serviceaccount;
    let sa = lookup(state, "serviceaccounts", ns, &account.name)
        .ok_or_else(|| format!("serviceaccounts {:?} not found", account.name))?;
    if deleted_before(&sa, now) {
        return Err(format!(
            "service account {}/{} has been deleted",
            private.namespace, account.name
        ));
    }
    let sa_uid = crate::object::uid(&sa).unwrap_or("");
    if sa_uid != account.uid {
        return Err(format!(
            "service account UID ({sa_uid}) does not match claim ({})",
            account.uid
        ));
    }
    let invalidated = || "service account token has been invalidated".to_string();
    if let Some(secret) = &private.secret {
        let obj = lookup(state, "secrets", ns, &secret.name).ok_or_else(invalidated)?;
        if deleted_before(&obj, now) {
            return Err(invalidated());
        }
        let uid = crate::object::uid(&obj).unwrap_or("");
        if uid != secret.uid {
            return Err(format!(
                "secret UID ({uid}) does not match service account secret ref claim ({})",
                secret.uid
            ));
        }
    }
    let mut user = service_account_user(&private.namespace, &account.name, &account.uid);
    if let Some(pod) = &private.pod {
        let obj = lookup(state, "pods", ns, &pod.name).ok_or_else(invalidated)?;
        if deleted_before(&obj, now) {
            return Err(invalidated());
        }
        let uid = crate::object::uid(&obj).unwrap_or("");
        if uid != pod.uid {
            return Err(format!(
                "pod UID ({uid}) does not match service account pod ref claim ({})",
                pod.uid
            ));
        }
        user.extra
            .insert(EXTRA_POD_NAME.into(), vec![pod.name.clone()]);
        user.extra
            .insert(EXTRA_POD_UID.into(), vec![pod.uid.clone()]);
    }
    if let Some(node) = &private.node {
        user.extra
            .insert(EXTRA_NODE_NAME.into(), vec![node.name.clone()]);
        if !node.uid.is_empty() {
            user.extra
                .insert(EXTRA_NODE_UID.into(), vec![node.uid.clone()]);
        }
    }
    if !claims.jti.is_empty() {
        user.extra.insert(
            EXTRA_CREDENTIAL_ID.into(),
            vec![format!("JTI={}", claims.jti)],
        );
    }
    Ok(Authenticated { user, audiences })
}

/// Upstream's extra keys of a ServiceAccount user.
pub const EXTRA_POD_NAME: &str = "authentication.kubernetes.io/pod-name";
pub const EXTRA_POD_UID: &str = "authentication.kubernetes.io/pod-uid";
pub const EXTRA_NODE_NAME: &str = "authentication.kubernetes.io/node-name";
pub const EXTRA_NODE_UID: &str = "authentication.kubernetes.io/node-uid";
pub const EXTRA_CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::API_AUDIENCE;
    use jsonwebtoken::Validation;

    /// The claims of a token this server signed for the API audience, if it is still in date
    /// (jsonwebtoken's own checks of signature, issuer, audience and times).
    fn verify(keys: &Keys, token: &str) -> Option<Claims> {
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_audience(&[API_AUDIENCE]);
        validation.set_issuer(&[ISSUER]);
        validation.validate_nbf = true;
        jsonwebtoken::decode::<Claims>(token, &keys.verifying, &validation)
            .ok()
            .map(|data| data.claims)
    }

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
    fn times_are_checked_with_a_minute_of_leeway() {
        let now = 1_000_000;
        let cases = [
            (now - 3600, 3600, Ok(())),
            (now - 3600 - 59, 3600, Ok(())),
            (
                now - 3600 - 61,
                3600,
                Err("service account token has expired"),
            ),
            (now + 59, 3600, Ok(())),
            (
                now + 61,
                3600,
                Err("service account token is not valid yet"),
            ),
        ];
        for (iat, seconds, want) in cases {
            let claims = Claims::new("demo", account(), vec![], iat, seconds);
            assert_eq!(
                check_times(&claims, now),
                want.map_err(str::to_string),
                "{iat}"
            );
        }
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
