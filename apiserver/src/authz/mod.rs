//! Authorization: what `--authorization-mode` decides for every authenticated request, and for
//! the access reviews that ask about one. `AlwaysAllow` (the default) allows everything; `RBAC`
//! allows members of `system:masters` (upstream's privileged group) and whatever the stored
//! roles and bindings allow (`rbac`), refusing the rest with upstream's 403. `attributes` reads
//! a request as upstream's RequestInfoFactory; `bootstrap` creates upstream's default policy.

pub mod attributes;
pub mod bootstrap;
pub mod escalation;
pub mod impersonation;
pub mod rbac;

use std::str::FromStr;

use serde_json::{json, Value};

pub use attributes::Attributes;
pub use rbac::Decision;

use crate::error::{ApiError, Qualified};
use crate::policy::UserInfo;
use crate::state::AppState;

/// Upstream's privileged group: its members are always allowed.
pub(crate) const MASTERS: &str = "system:masters";

/// `--authorization-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthorizationMode {
    #[default]
    AlwaysAllow,
    Rbac,
}

impl FromStr for AuthorizationMode {
    type Err = String;

    /// `AlwaysAllow` or `RBAC`; upstream's comma lists (`Node,RBAC`) mean RBAC when they name it.
    fn from_str(s: &str) -> Result<Self, String> {
        let modes: Vec<&str> = s.split(',').map(str::trim).collect();
        if let Some(bad) = modes
            .iter()
            .find(|m| !matches!(**m, "AlwaysAllow" | "RBAC" | "Node"))
        {
            return Err(format!(
                "authorization mode {bad:?} is not supported (AlwaysAllow, RBAC)"
            ));
        }
        if modes.contains(&"RBAC") {
            Ok(AuthorizationMode::Rbac)
        } else if modes.contains(&"AlwaysAllow") {
            Ok(AuthorizationMode::AlwaysAllow)
        } else {
            Err(format!(
                "authorization mode {s:?} needs AlwaysAllow or RBAC"
            ))
        }
    }
}

/// The decision on `a` under the server's mode.
pub fn decide(state: &AppState, a: &Attributes) -> Decision {
    match state.authorization {
        AuthorizationMode::AlwaysAllow => Decision {
            allowed: true,
            reason: String::new(),
        },
        AuthorizationMode::Rbac if a.user.groups.iter().any(|g| g == MASTERS) => Decision {
            allowed: true,
            reason: String::new(),
        },
        AuthorizationMode::Rbac => rbac::authorize(&state.objects, a),
    }
}

/// Authorize one request; a refusal is upstream's 403.
pub fn check(
    state: &AppState,
    method: &str,
    path: &str,
    query: Option<&str>,
    user: &UserInfo,
) -> Result<(), ApiError> {
    if state.authorization == AuthorizationMode::AlwaysAllow {
        return Ok(());
    }
    let a = Attributes::of_request(method, path, query, user.clone());
    let decision = decide(state, &a);
    if !decision.allowed {
        return Err(forbidden(&a, &decision.reason));
    }
    // AuthorizePodWebsocketUpgradeCreatePermission (on since 1.35): a WebSocket exec, attach or
    // port-forward is a GET, yet must also be allowed to `create`, as the SPDY POST is.
    if needs_create(&a) {
        let create = Attributes {
            verb: "create".into(),
            ..a
        };
        let decision = decide(state, &create);
        if !decision.allowed {
            return Err(forbidden(&create, &decision.reason));
        }
    }
    Ok(())
}

/// A GET of a pod's exec, attach or portforward subresource.
fn needs_create(a: &Attributes) -> bool {
    a.verb == "get"
        && a.group.is_empty()
        && a.resource == "pods"
        && matches!(a.subresource.as_str(), "exec" | "attach" | "portforward")
}

/// Upstream's forbidden message: `pods "x" is forbidden: User "alice" cannot delete resource
/// "pods" in API group "" in the namespace "default"` (`: REASON` when the authorizer gave one).
pub fn forbidden(a: &Attributes, reason: &str) -> ApiError {
    let user = &a.user.username;
    let mut what = if !a.resource_request {
        format!("User {user:?} cannot {} path {:?}", a.verb, a.path)
    } else if a.namespace.is_empty() {
        format!(
            "User {user:?} cannot {} resource {:?} in API group {:?} at the cluster scope",
            a.verb,
            a.combined_resource(),
            a.group
        )
    } else {
        format!(
            "User {user:?} cannot {} resource {:?} in API group {:?} in the namespace {:?}",
            a.verb,
            a.combined_resource(),
            a.group,
            a.namespace
        )
    };
    if !reason.is_empty() {
        what = format!("{what}: {reason}");
    }
    let resource = Qualified::new(&a.group, &a.resource);
    let message = if !a.resource_request {
        format!("forbidden: {what}")
    } else if a.name.is_empty() {
        format!("{} is forbidden: {what}", resource.display())
    } else {
        format!("{} {:?} is forbidden: {what}", resource.display(), a.name)
    };
    ApiError::ForbiddenNamed {
        resource,
        name: a.name.clone(),
        message,
    }
}

/// The rules `user` has in `namespace` as a SelfSubjectRulesReview's status: resource rules,
/// non-resource rules, whether the list is incomplete, and the evaluation error.
pub fn rules_status(state: &AppState, user: &UserInfo, namespace: &str) -> Value {
    if state.authorization == AuthorizationMode::AlwaysAllow {
        return json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        });
    }
    let (mut resource_rules, mut non_resource_rules) = (Vec::new(), Vec::new());
    let errors = rbac::visit_rules(&state.objects, user, namespace, &mut |_, rule| {
        let pick = |keys: &[&str]| {
            let mut out = serde_json::Map::new();
            for k in keys {
                if let Some(v) = rule
                    .get(*k)
                    .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
                {
                    out.insert((*k).into(), v.clone());
                }
            }
            Value::Object(out)
        };
        let has = |k: &str| {
            rule.get(k)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        };
        if has("resources") {
            resource_rules.push(pick(&["verbs", "apiGroups", "resources", "resourceNames"]));
        }
        if has("nonResourceURLs") {
            non_resource_rules.push(pick(&["verbs", "nonResourceURLs"]));
        }
        true
    });
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": !errors.is_empty(),
    });
    if !errors.is_empty() {
        status["evaluationError"] = rbac::aggregate(&errors).into();
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_messages_are_upstreams() {
        let user = UserInfo {
            username: "alice".into(),
            uid: String::new(),
            groups: vec![],
            extra: Default::default(),
        };
        let cases = [
            ("DELETE", "/api/v1/namespaces/default/pods/x", "pods \"x\" is forbidden: User \"alice\" cannot delete resource \"pods\" in API group \"\" in the namespace \"default\""),
            ("GET", "/api/v1/namespaces/default/pods", "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""),
            ("GET", "/api/v1/nodes", "nodes is forbidden: User \"alice\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"),
            ("GET", "/apis/apps/v1/namespaces/a/deployments/web/scale", "deployments.apps \"web\" is forbidden: User \"alice\" cannot get resource \"deployments/scale\" in API group \"apps\" in the namespace \"a\""),
            ("GET", "/version", "forbidden: User \"alice\" cannot get path \"/version\""),
        ];
        for (method, path, want) in cases {
            let a = Attributes::of_request(method, path, None, user.clone());
            assert_eq!(forbidden(&a, "").to_string(), want);
        }
        assert!("Node,RBAC".parse::<AuthorizationMode>() == Ok(AuthorizationMode::Rbac));
        assert!("ABAC".parse::<AuthorizationMode>().is_err());
    }

    #[test]
    fn websocket_connects_also_need_create() {
        let cases = [
            ("GET", "/api/v1/namespaces/d/pods/p/exec", true),
            ("GET", "/api/v1/namespaces/d/pods/p/attach", true),
            ("GET", "/api/v1/namespaces/d/pods/p/portforward", true),
            ("POST", "/api/v1/namespaces/d/pods/p/exec", false),
            ("GET", "/api/v1/namespaces/d/pods/p/log", false),
            ("GET", "/apis/x.io/v1/namespaces/d/pods/p/exec", false),
        ];
        for (method, path, want) in cases {
            let a = Attributes::of_request(method, path, None, UserInfo::anonymous());
            assert_eq!(needs_create(&a), want, "{method} {path}");
        }
    }
}
