//! Bearer tokens, as upstream's union of token authenticators: the token file's users
//! (audience-agnostic: they serve the API's audience only), ServiceAccount JWTs (`token`) and
//! legacy ServiceAccount token Secrets' JWTs (`legacy`). What the request path and TokenReview
//! share: the first that knows the token decides; when none accepts it, the error is upstream's
//! aggregate (`invalid bearer token`, then each authenticator's reason).

use jsonwebtoken::{Algorithm, Validation};
use serde::de::DeserializeOwned;

use super::{legacy, token, Keys, API_AUDIENCE};
use crate::policy::UserInfo;
use crate::state::AppState;

/// One minute, upstream's (go-jose's) leeway on `exp` and `nbf`.
pub const LEEWAY: i64 = 60;

/// What one token authenticator says of a token.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Not a token of this authenticator (another may know it).
    NotMine,
    /// Its user, and the audiences it was accepted for.
    User(Authenticated),
    /// Refused, with upstream's reason.
    Refused(String),
}

/// An accepted token: the user it stands for and the audiences it is valid for.
#[derive(Debug, Clone, PartialEq)]
pub struct Authenticated {
    pub user: UserInfo,
    pub audiences: Vec<String>,
}

/// The issuer a JWT claims, read without checking anything (upstream's hasCorrectIssuer).
pub fn issuer(token: &str) -> Option<String> {
    use base64::Engine;
    let token = token.trim();
    if token.starts_with('{') {
        return None;
    }
    let parts: Vec<&str> = token.split('.').collect();
    let [_, payload, _] = parts.as_slice() else {
        return None;
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("iss")?.as_str().map(str::to_string)
}

/// The claims of a token signed with the CA key; only the signature is checked (times and
/// audiences are the caller's, to word their failures as upstream).
pub fn signed_claims<C: DeserializeOwned>(keys: &Keys, token: &str) -> Result<C, String> {
    let mut validation = Validation::new(Algorithm::ES256);
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    jsonwebtoken::decode::<C>(token, &keys.verifying, &validation)
        .map(|data| data.claims)
        .map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidSignature
            | jsonwebtoken::errors::ErrorKind::InvalidAlgorithm => {
                "square/go-jose: error in cryptographic primitive".to_string()
            }
            _ => format!("square/go-jose: {e}"),
        })
}

/// Go's `%q` of a string slice: `["a" "b"]`.
pub fn go_quoted(list: &[String]) -> String {
    let items: Vec<String> = list
        .iter()
        .map(|s| serde_json::Value::String(s.clone()).to_string())
        .collect();
    format!("[{}]", items.join(" "))
}

/// The token's audiences that were asked for (upstream's Audiences.Intersect), or upstream's
/// refusal when there are none.
pub fn audiences(token_auds: &[String], requested: &[String]) -> Result<Vec<String>, String> {
    let both: Vec<String> = requested
        .iter()
        .filter(|a| token_auds.contains(a))
        .cloned()
        .collect();
    if both.is_empty() {
        return Err(format!(
            "token audiences {} is invalid for the target audiences {}",
            go_quoted(token_auds),
            go_quoted(requested)
        ));
    }
    Ok(both)
}

/// The ServiceAccount user upstream's ServiceAccountInfo makes (`system:authenticated` is the
/// union's to add).
pub fn service_account_user(namespace: &str, name: &str, uid: &str) -> UserInfo {
    UserInfo {
        username: format!("system:serviceaccount:{namespace}:{name}"),
        uid: uid.to_string(),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        extra: Default::default(),
    }
}

/// The token file's user of `token`, for the API's audience only.
fn token_file(state: &AppState, token: &str, requested: &[String]) -> Outcome {
    let Some(user) = state.tokens.as_ref().and_then(|t| t.get(token)) else {
        return Outcome::NotMine;
    };
    let api = [API_AUDIENCE.to_string()];
    let auds: Vec<String> = requested
        .iter()
        .filter(|a| api.contains(a))
        .cloned()
        .collect();
    if auds.is_empty() {
        return Outcome::NotMine;
    }
    Outcome::User(Authenticated {
        user: user.clone(),
        audiences: auds,
    })
}

/// Upstream's aggregate error message of a refused token.
fn refusal(reasons: Vec<String>) -> String {
    let mut all = vec!["invalid bearer token".to_string()];
    for r in reasons {
        if !all.contains(&r) {
            all.push(r);
        }
    }
    if all.len() == 1 {
        all.remove(0)
    } else {
        format!("[{}]", all.join(", "))
    }
}

/// Authenticate `token` for `requested` audiences (the API's when empty): its user with
/// `system:authenticated` added, or why it was refused, worded as upstream.
pub fn authenticate(
    state: &AppState,
    token: &str,
    requested: &[String],
) -> Result<Authenticated, String> {
    let default = [API_AUDIENCE.to_string()];
    let requested = if requested.is_empty() {
        &default[..]
    } else {
        requested
    };
    let now = chrono::Utc::now().timestamp();
    let mut reasons = Vec::new();
    for source in 0..3 {
        let outcome = match source {
            0 => token_file(state, token, requested),
            1 => token::validate(state, token, requested, now),
            _ => legacy::validate(state, token, requested),
        };
        match outcome {
            Outcome::NotMine => {}
            Outcome::User(mut found) => {
                if !found
                    .user
                    .groups
                    .iter()
                    .any(|g| g == "system:authenticated")
                {
                    found.user.groups.push("system:authenticated".into());
                }
                return Ok(found);
            }
            Outcome::Refused(reason) => reasons.push(reason),
        }
    }
    Err(refusal(reasons))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_as_upstreams_aggregate() {
        let cases = [
            (vec![], "invalid bearer token"),
            (
                vec!["service account token has expired".to_string()],
                "[invalid bearer token, service account token has expired]",
            ),
            (
                vec!["a".to_string(), "a".to_string(), "b".to_string()],
                "[invalid bearer token, a, b]",
            ),
        ];
        for (reasons, want) in cases {
            assert_eq!(refusal(reasons), want);
        }
    }

    #[test]
    fn audiences_intersect_or_are_refused_as_upstream() {
        let api = vec![API_AUDIENCE.to_string()];
        let cases = [
            (vec!["vault".to_string(), API_AUDIENCE.to_string()], api.clone(), Ok(api.clone())),
            (
                vec!["vault".to_string()],
                api.clone(),
                Err("token audiences [\"vault\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\"]".to_string()),
            ),
            (api.clone(), vec!["a".to_string(), "b".to_string()], Err(format!("token audiences [\"{API_AUDIENCE}\"] is invalid for the target audiences [\"a\" \"b\"]"))),
        ];
        for (token_auds, requested, want) in cases {
            assert_eq!(audiences(&token_auds, &requested), want);
        }
    }

    #[test]
    fn issuers_are_read_from_unverified_payloads() {
        use base64::Engine;
        let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let jwt = |payload: &str| format!("{}.{}.sig", enc("{}"), enc(payload));
        let cases = [
            (
                jwt(r#"{"iss":"kubernetes/serviceaccount"}"#),
                Some("kubernetes/serviceaccount"),
            ),
            (jwt(r#"{"sub":"x"}"#), None),
            ("s3cret".to_string(), None),
            ("a.b".to_string(), None),
            (format!("{{.{}.c", enc(r#"{"iss":"x"}"#)), None),
        ];
        for (token, want) in cases {
            assert_eq!(issuer(&token).as_deref(), want, "{token}");
        }
    }
}
