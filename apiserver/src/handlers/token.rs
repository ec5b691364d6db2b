//! `serviceaccounts/token` (authentication.k8s.io/v1 TokenRequest, what `kubectl create token`
//! sends): defaults (`expirationSeconds` 3600, the API audience), upstream's validation (at
//! least 10 minutes), the bound object (a Pod or a Secret of the namespace, uid checked), then a
//! token signed for the ServiceAccount.

use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use k8s_openapi::api::authentication::v1::TokenRequest;
use serde_json::{json, Value};
use tinykube_proto::registry;

use super::decode::object_format;
use super::options::{self, Verb};
use super::{json_response, Ctx};
use crate::error::{ApiError, ApiResult, Qualified};
use crate::identity::token::{self, Claims, Ref};
use crate::identity::API_AUDIENCE;
use crate::object;
use crate::registry::field::FieldError;
use crate::request::decode_object_body;

const MIN_SECONDS: i64 = 10 * 60;
const MAX_SECONDS: i64 = 1 << 32;
const GROUP: &str = "authentication.k8s.io";

fn bad_request(message: String) -> ApiError {
    ApiError::BadRequest(message)
}

/// Upstream's ValidateTokenRequest.
fn validate(seconds: i64) -> Vec<FieldError> {
    let field = "spec.expirationSeconds";
    if seconds < MIN_SECONDS {
        vec![FieldError::invalid(
            field,
            seconds,
            "may not specify a duration less than 10 minutes",
        )]
    } else if seconds > MAX_SECONDS {
        vec![FieldError::invalid(
            field,
            seconds,
            "may not specify a duration larger than 2^32 seconds",
        )]
    } else {
        vec![]
    }
}

/// The object a token is bound to, looked up in the account's namespace.
fn bound_object(
    ctx: &Ctx,
    account: &str,
    namespace: &str,
    reference: &Value,
) -> ApiResult<(&'static str, Ref, Value)> {
    let kind = reference.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = reference
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = reference.get("name").and_then(Value::as_str).unwrap_or("");
    let plural = match (api_version, kind) {
        ("v1", "Pod") => "pods",
        ("v1", "Secret") => "secrets",
        _ => {
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
            return Err(bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )));
        }
    };
    let info = registry::builtin("", "v1", plural).expect("served");
    let obj = ctx.state.objects.get(info, Some(namespace), name)?;
    if plural == "pods"
        && obj
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
            != Some(account)
    {
        return Err(bad_request(format!(
            "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
        )));
    }
    let uid = object::uid(&obj).unwrap_or("").to_string();
    let wanted = reference.get("uid").and_then(Value::as_str).unwrap_or("");
    if !wanted.is_empty() && wanted != uid {
        return Err(ApiError::Conflict {
            resource: Qualified::new("", kind),
            name: name.to_string(),
            reason: format!("the UID in the bound object reference ({wanted}) does not match the UID in record. The object might have been deleted and then recreated"),
        });
    }
    let r = Ref {
        name: name.to_string(),
        uid,
    };
    Ok((plural, r, obj))
}

/// POST `/api/v1/namespaces/NS/serviceaccounts/NAME/token`.
pub async fn create_token(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    options::check(&ctx, Verb::Create)?;
    let namespace = ctx.target.namespace.clone().unwrap_or_default();
    let name = ctx.target.name.clone().unwrap_or_default();
    let format = object_format(&ctx, "application/json, application/yaml")?;
    let raw = decode_object_body(body, format, "TokenRequest")?;
    let request: TokenRequest = serde_json::from_value(raw.clone())
        .map_err(|e| bad_request(format!("decoding the TokenRequest: {e}")))?;
    let account = ctx
        .state
        .objects
        .get(&ctx.target.info, Some(&namespace), &name)?;
    let spec = request.spec.unwrap_or_default();
    let seconds = spec.expiration_seconds.unwrap_or(3600);
    let errors = validate(seconds);
    if !errors.is_empty() {
        return Err(ApiError::Invalid {
            kind: "TokenRequest".into(),
            group: GROUP.into(),
            name,
            errors,
        });
    }
    let audiences = spec
        .audiences
        .clone()
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| vec![API_AUDIENCE.to_string()]);
    let now = Utc::now();
    let account_ref = Ref {
        name: name.clone(),
        uid: object::uid(&account).unwrap_or("").to_string(),
    };
    let mut claims = Claims::new(
        &namespace,
        account_ref,
        audiences.clone(),
        now.timestamp(),
        seconds,
    );
    let bound = raw
        .pointer("/spec/boundObjectRef")
        .filter(|r| r.is_object())
        .cloned();
    if let Some(reference) = &bound {
        let (plural, r, obj) = bound_object(&ctx, &name, &namespace, reference)?;
        if plural == "pods" {
            claims.kubernetes.pod = Some(r);
            claims.kubernetes.node = pod_node(&ctx, &obj);
        } else {
            claims.kubernetes.secret = Some(r);
        }
    }
    let token =
        token::sign(&ctx.state.keys, &claims).map_err(|e| ApiError::Internal(e.to_string()))?;
    let expires = now + chrono::Duration::seconds(seconds);
    let mut spec =
        json!({"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": null});
    if let Some(reference) = bound {
        spec["boundObjectRef"] = reference;
    }
    let answer = json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace,
                     "creationTimestamp": object::timestamp(now)},
        "spec": spec,
        "status": {"token": token, "expirationTimestamp": object::timestamp(expires)},
    });
    Ok(json_response(StatusCode::CREATED, &answer, ctx.pretty))
}

/// The node a bound pod runs on, recorded in its token as upstream does.
fn pod_node(ctx: &Ctx, pod: &Value) -> Option<Ref> {
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str)?;
    let info = registry::builtin("", "v1", "nodes")?;
    let obj = ctx.state.objects.try_get(info, None, node).ok()??;
    Some(Ref {
        name: node.to_string(),
        uid: object::uid(&obj).unwrap_or("").to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_under_ten_minutes_are_refused() {
        assert!(validate(600).is_empty());
        assert_eq!(
            validate(599)[0].to_string(),
            "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
        );
        assert!(!validate(1 << 33).is_empty());
    }
}
