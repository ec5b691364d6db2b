//! The create-only reviews: authorization.k8s.io/v1 SubjectAccessReview (about any user),
//! SelfSubjectAccessReview (about the requester: `kubectl auth can-i`),
//! LocalSubjectAccessReview (about any user, in the URL's namespace) and SelfSubjectRulesReview
//! (the requester's rules in a namespace: `kubectl auth can-i --list`), answered by the
//! server's authorizer and never stored; authentication.k8s.io/v1 SelfSubjectReview (the
//! requester as authenticated or impersonated: `kubectl auth whoami`) and TokenReview
//! (`tokenreview`).

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};
use tinykube_proto::registry::ResourceInfo;

use super::decode::decode_as;
use super::{json_response, Ctx};
use crate::authz::{self, Attributes};
use crate::error::{ApiError, ApiResult};
use crate::policy::UserInfo;
use crate::registry::field::FieldError;

/// Whether the resource is one of the reviews answered here.
pub fn is_review(info: &ResourceInfo) -> bool {
    matches!(info.group, "authorization.k8s.io" | "authentication.k8s.io") && info.custom.is_none()
}

/// The strings of a JSON array (none when absent or not an array).
pub(super) fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Upstream's ValidateSelfSubjectAccessReviewSpec (and, with `subject`, the user or groups a
/// SubjectAccessReview must name).
fn validate_spec(spec: &Value, subject: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (resource, non_resource) {
        (Some(_), Some(n)) => errs.push(FieldError::invalid_go(
            "spec.nonResourceAttributes",
            format!(
                "&authorization.NonResourceAttributes{{Path:{:?}, Verb:{:?}}}",
                text(n, "/path"),
                text(n, "/verb")
            ),
            "cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => errs.push(FieldError::invalid_go(
            "spec.resourceAttributes",
            "(*authorization.NonResourceAttributes)(nil)",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        _ => {}
    }
    if subject && text(spec, "/user").is_empty() && strings(spec.get("groups")).is_empty() {
        errs.push(FieldError::invalid(
            "spec.user",
            "",
            "at least one of user or group must be specified",
        ));
    }
    errs
}

/// The attributes an access review's spec asks about, for `user`.
fn review_attributes(spec: &Value, user: UserInfo) -> Attributes {
    match spec.get("resourceAttributes").filter(|v| !v.is_null()) {
        Some(r) => Attributes {
            user,
            verb: text(r, "/verb").to_string(),
            resource_request: true,
            path: String::new(),
            group: text(r, "/group").to_string(),
            version: text(r, "/version").to_string(),
            namespace: text(r, "/namespace").to_string(),
            resource: text(r, "/resource").to_string(),
            subresource: text(r, "/subresource").to_string(),
            name: text(r, "/name").to_string(),
        },
        None => Attributes {
            user,
            verb: text(spec, "/nonResourceAttributes/verb").to_string(),
            path: text(spec, "/nonResourceAttributes/path").to_string(),
            ..Default::default()
        },
    }
}

/// Answer a review: the request object with its `status`, 201 as upstream's creates.
pub fn create(ctx: Ctx, body: &[u8]) -> ApiResult<Response> {
    let info = ctx.target.info.clone();
    let mut obj = decode_as(&ctx, body, &info, info.kind)?;
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let invalid = |errs: Vec<FieldError>| ApiError::invalid(&info, "", errs);
    let status = match info.kind {
        "SelfSubjectReview" => json!({"userInfo": user_json(&ctx.user)}),
        "TokenReview" => super::tokenreview::status(&ctx, &spec)?,
        "SelfSubjectRulesReview" => {
            let namespace = text(&spec, "/namespace");
            if namespace.is_empty() {
                return Err(ApiError::BadRequest("no namespace on request".into()));
            }
            authz::rules_status(&ctx.state, &ctx.user, namespace)
        }
        kind => {
            let errs = validate_spec(&spec, kind != "SelfSubjectAccessReview");
            if !errs.is_empty() {
                return Err(invalid(errs));
            }
            let user = if kind == "SelfSubjectAccessReview" {
                ctx.user.clone()
            } else {
                UserInfo {
                    username: text(&spec, "/user").to_string(),
                    uid: text(&spec, "/uid").to_string(),
                    groups: strings(spec.get("groups")),
                    extra: spec
                        .get("extra")
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| (k.clone(), strings(Some(v))))
                        .collect(),
                }
            };
            if kind == "LocalSubjectAccessReview" {
                check_local(&ctx, &spec, &info)?;
            }
            let decision = authz::decide(&ctx.state, &review_attributes(&spec, user));
            let mut status = json!({"allowed": decision.allowed});
            if !decision.reason.is_empty() {
                status["reason"] = decision.reason.into();
            }
            status
        }
    };
    obj["status"] = status;
    if obj.get("metadata").is_none_or(Value::is_null) {
        obj["metadata"] = json!({});
    }
    if let Some(meta) = obj["metadata"].as_object_mut() {
        meta.entry("creationTimestamp").or_insert(Value::Null);
    }
    Ok(json_response(StatusCode::CREATED, &obj, ctx.pretty))
}

/// A LocalSubjectAccessReview asks about its own namespace only.
fn check_local(ctx: &Ctx, spec: &Value, info: &ResourceInfo) -> ApiResult<()> {
    let namespace = ctx.target.namespace.as_deref().unwrap_or("");
    let mut errs = Vec::new();
    match spec.get("resourceAttributes").filter(|v| !v.is_null()) {
        Some(r) if text(r, "/namespace") != namespace => errs.push(FieldError::invalid(
            "spec.resourceAttributes.namespace",
            text(r, "/namespace"),
            "must match metadata.namespace",
        )),
        Some(_) => {}
        None => errs.push(FieldError::invalid_go(
            "spec.nonResourceAttributes",
            "&authorization.NonResourceAttributes{…}",
            "disallowed on this kind of request",
        )),
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(info, "", errs))
    }
}

fn user_json(user: &UserInfo) -> Value {
    let mut out = json!({"username": user.username});
    if !user.uid.is_empty() {
        out["uid"] = user.uid.clone().into();
    }
    if !user.groups.is_empty() {
        out["groups"] = json!(user.groups);
    }
    if !user.extra.is_empty() {
        out["extra"] = json!(user.extra);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_checked_as_upstream() {
        let none = validate_spec(&json!({}), true);
        let messages: Vec<String> = none.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            vec![
                "spec.resourceAttributes: Invalid value: (*authorization.NonResourceAttributes)(nil): exactly one of nonResourceAttributes or resourceAttributes must be specified",
                "spec.user: Invalid value: \"\": at least one of user or group must be specified",
            ]
        );
        let spec = json!({"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}});
        assert!(validate_spec(&spec, false).is_empty());
        let a = review_attributes(&spec, UserInfo::anonymous());
        assert_eq!(
            (a.verb.as_str(), a.resource.as_str(), a.namespace.as_str()),
            ("list", "pods", "default")
        );
        assert!(a.resource_request);
    }
}
