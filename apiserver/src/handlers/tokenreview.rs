//! authentication.k8s.io/v1 TokenReview, as upstream's tokenreview REST storage: `spec.token`
//! goes through the same bearer-token authenticators as requests (`identity::bearer`), for
//! `spec.audiences` (the API's audience when none), and the answer is `status.authenticated`,
//! `status.user` and `status.audiences`, or `status.error` in upstream's words. Never stored.

use serde_json::{json, Value};

use super::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::identity::bearer;

/// The status of a TokenReview whose spec is `spec`.
pub fn status(ctx: &Ctx, spec: &Value) -> ApiResult<Value> {
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::BadRequest(
            "token is required for TokenReview in authentication".into(),
        ));
    }
    let audiences = super::review::strings(spec.get("audiences"));
    Ok(answer(bearer::authenticate(&ctx.state, token, &audiences)))
}

/// The status for an authenticator's verdict: upstream leaves `authenticated: false` out (Go's
/// omitempty) but always writes `user`, empty when nobody was found.
fn answer(verdict: Result<bearer::Authenticated, String>) -> Value {
    match verdict {
        Ok(found) => json!({
            "authenticated": true,
            "user": found.user.to_json(),
            "audiences": found.audiences,
        }),
        Err(reason) => json!({"user": {}, "error": reason}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::UserInfo;

    #[test]
    fn answers_are_shaped_as_upstreams() {
        let user = UserInfo {
            username: "system:serviceaccount:default:robot".into(),
            uid: "u1".into(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:authenticated".into(),
            ],
            extra: [(
                "authentication.kubernetes.io/credential-id".to_string(),
                vec!["JTI=j1".to_string()],
            )]
            .into(),
        };
        let cases = [
            (
                Ok(bearer::Authenticated {
                    user,
                    audiences: vec!["vault".into()],
                }),
                json!({"authenticated": true, "audiences": ["vault"], "user": {
                    "username": "system:serviceaccount:default:robot", "uid": "u1",
                    "groups": ["system:serviceaccounts", "system:authenticated"],
                    "extra": {"authentication.kubernetes.io/credential-id": ["JTI=j1"]}}}),
            ),
            (
                Err("invalid bearer token".to_string()),
                json!({"user": {}, "error": "invalid bearer token"}),
            ),
        ];
        for (verdict, want) in cases {
            assert_eq!(answer(verdict), want);
        }
    }
}
