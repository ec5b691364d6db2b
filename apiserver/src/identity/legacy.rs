//! Legacy ServiceAccount tokens: the JWTs the controller manager's tokens controller writes into
//! Secrets of type `kubernetes.io/service-account-token` (issuer `kubernetes/serviceaccount`,
//! no audience or expiry, claims naming the namespace, the Secret and the ServiceAccount), checked
//! as upstream's legacy validator: signed with the CA key, valid for the API's audience only, and
//! only while the Secret still holds this very token and the ServiceAccount keeps its uid. A
//! use is recorded, once a day, in the Secret's `kubernetes.io/legacy-token-last-used` label.

use serde_json::Value;
use tinykube_proto::registry;
use tinykube_proto::serviceaccount::{LegacyClaims, LEGACY_ISSUER as ISSUER, TOKEN_KEY};

use super::bearer::{
    audiences, issuer, service_account_user, signed_claims, Authenticated, Outcome,
};
use super::API_AUDIENCE;
use crate::state::AppState;
use crate::storage::Change;

/// Upstream's checks of the claims themselves, before any lookup.
pub fn check_claims(c: &LegacyClaims) -> Result<(), String> {
    let missing = [
        (c.sub.is_empty(), "sub claim is missing"),
        (c.namespace.is_empty(), "namespace claim is missing"),
        (c.secret_name.is_empty(), "secretName claim is missing"),
        (
            c.service_account_name.is_empty(),
            "serviceAccountName claim is missing",
        ),
        (
            c.service_account_uid.is_empty(),
            "serviceAccountUID claim is missing",
        ),
    ];
    if let Some((_, message)) = missing.iter().find(|(is, _)| *is) {
        return Err(message.to_string());
    }
    match crate::authz::impersonation::split_service_account(&c.sub) {
        Some((ns, name)) if ns == c.namespace && name == c.service_account_name => Ok(()),
        _ => Err("sub claim is invalid".into()),
    }
}

fn lookup(state: &AppState, plural: &str, namespace: &str, name: &str) -> Option<Value> {
    let info = registry::builtin("", "v1", plural)?;
    state
        .objects
        .try_get(info, Some(namespace), name)
        .ok()
        .flatten()
}

/// A legacy token, checked as upstream's legacy validator (with lookups).
pub fn validate(state: &AppState, token: &str, requested: &[String]) -> Outcome {
    if issuer(token).as_deref() != Some(ISSUER) {
        return Outcome::NotMine;
    }
    let claims: LegacyClaims = match signed_claims(&state.keys, token) {
        Ok(c) => c,
        Err(reason) => return Outcome::Refused(reason),
    };
    match check(state, token, &claims, requested) {
        Ok(found) => Outcome::User(found),
        Err(reason) => Outcome::Refused(reason),
    }
}

fn check(
    state: &AppState,
    token: &str,
    c: &LegacyClaims,
    requested: &[String],
) -> Result<Authenticated, String> {
    // A legacy token names no audience: it is the API's.
    let audiences = audiences(&[API_AUDIENCE.to_string()], requested)?;
    check_claims(c)?;
    let invalidated = || "Token has been invalidated".to_string();
    let secret = lookup(state, "secrets", &c.namespace, &c.secret_name).ok_or_else(invalidated)?;
    if secret.pointer("/metadata/deletionTimestamp").is_some() {
        return Err(invalidated());
    }
    if stored_token(&secret).as_deref() != Some(token) {
        return Err("Token does not match server's copy".into());
    }
    let sa = lookup(
        state,
        "serviceaccounts",
        &c.namespace,
        &c.service_account_name,
    )
    .ok_or_else(|| format!("serviceaccounts {:?} not found", c.service_account_name))?;
    if sa.pointer("/metadata/deletionTimestamp").is_some() {
        return Err(format!(
            "ServiceAccount {}/{} has been deleted",
            c.namespace, c.service_account_name
        ));
    }
    let uid = crate::object::uid(&sa).unwrap_or("");
    if uid != c.service_account_uid {
        return Err(format!(
            "ServiceAccount UID ({uid}) does not match claim ({})",
            c.service_account_uid
        ));
    }
    track_use(state, &secret, &c.namespace, &c.secret_name);
    Ok(Authenticated {
        user: service_account_user(
            &c.namespace,
            &c.service_account_name,
            &c.service_account_uid,
        ),
        audiences,
    })
}

/// Upstream's LegacyServiceAccountTokenTracking: the day (UTC) a legacy token was last used.
pub const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";

/// The Secret's last-used label.
fn last_used(secret: &Value) -> Option<&str> {
    secret
        .pointer("/metadata/labels")?
        .get(LAST_USED_LABEL)?
        .as_str()
}

/// Record today in the Secret's last-used label, once a day, in the background (a failed
/// write is only logged, as upstream's).
fn track_use(state: &AppState, secret: &Value, namespace: &str, name: &str) {
    let today = state.clock.utc().format("%Y-%m-%d").to_string();
    if last_used(secret) == Some(today.as_str()) {
        return;
    }
    let Some(info) = registry::builtin("", "v1", "secrets") else {
        return;
    };
    let (state, namespace, name) = (state.clone(), namespace.to_string(), name.to_string());
    tokio::spawn(async move {
        let written = state
            .objects
            .update(info, Some(&namespace), &name, |mut obj| {
                if last_used(&obj) == Some(today.as_str()) {
                    return Ok(Change::Unchanged);
                }
                let meta = &mut obj["metadata"];
                if !meta.get("labels").is_some_and(Value::is_object) {
                    meta["labels"] = serde_json::json!({});
                }
                meta["labels"][LAST_USED_LABEL] = today.clone().into();
                Ok(Change::Write(obj))
            })
            .await;
        if let Err(e) = written {
            tracing::warn!(secret = %format!("{namespace}/{name}"), error = %e, "recording the legacy token's last use");
        }
    });
}

/// The token a Secret holds (`data.token`, base64).
fn stored_token(secret: &Value) -> Option<String> {
    use base64::Engine;
    let b64 = secret.get("data")?.get(TOKEN_KEY)?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> LegacyClaims {
        LegacyClaims::new("default", "build-robot", "u1", "build-robot-secret")
    }

    /// A change to the claims and the verdict on them.
    type Case = (fn(&mut LegacyClaims), Result<(), &'static str>);

    #[test]
    fn claims_are_checked_as_upstreams_legacy_validator() {
        let cases: Vec<Case> = vec![
            (|_| {}, Ok(())),
            (|c| c.sub.clear(), Err("sub claim is missing")),
            (|c| c.namespace.clear(), Err("namespace claim is missing")),
            (
                |c| c.secret_name.clear(),
                Err("secretName claim is missing"),
            ),
            (
                |c| c.service_account_name.clear(),
                Err("serviceAccountName claim is missing"),
            ),
            (
                |c| c.service_account_uid.clear(),
                Err("serviceAccountUID claim is missing"),
            ),
            (
                |c| c.sub = "system:serviceaccount:other:build-robot".into(),
                Err("sub claim is invalid"),
            ),
            (
                |c| c.sub = "build-robot".into(),
                Err("sub claim is invalid"),
            ),
        ];
        for (change, want) in cases {
            let mut c = claims();
            change(&mut c);
            assert_eq!(check_claims(&c), want.map_err(str::to_string), "{c:?}");
        }
    }

    #[test]
    fn the_stored_token_is_read_from_data() {
        let secret = serde_json::json!({"data": {"token": "YWJj"}});
        assert_eq!(stored_token(&secret).as_deref(), Some("abc"));
    }
}
