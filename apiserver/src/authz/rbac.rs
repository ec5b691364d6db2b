//! Upstream's RBAC authorizer over the stored objects: the ClusterRoleBindings, then the
//! RoleBindings of the request's namespace, each applying to the user when one of its subjects
//! names the user, one of the user's groups or the user's ServiceAccount; the rules of its role
//! allow the request when verb, API group, resource (with `*/subresource`), resource name or
//! non-resource URL (with a trailing `*`) match. Read from the store on every request, so a
//! change applies to the next one.

use serde_json::Value;
use tinykube_proto::registry::{builtin, RBAC};

use super::attributes::Attributes;
use crate::policy::UserInfo;
use crate::storage::Objects;

/// What an authorizer decided, with upstream's reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn has(list: &[String], wanted: &str) -> bool {
    list.iter().any(|s| s == "*" || s == wanted)
}

/// Whether `rule` allows the request (upstream's RuleAllows).
pub fn rule_allows(a: &Attributes, rule: &Value) -> bool {
    if !has(&strings(rule, "verbs"), &a.verb) {
        return false;
    }
    if !a.resource_request {
        return strings(rule, "nonResourceURLs").iter().any(|url| {
            url == "*"
                || *url == a.path
                || url
                    .strip_suffix('*')
                    .is_some_and(|prefix| a.path.starts_with(prefix))
        });
    }
    if !has(&strings(rule, "apiGroups"), &a.group) {
        return false;
    }
    let combined = a.combined_resource();
    let resource_ok = strings(rule, "resources").iter().any(|r| {
        r == "*"
            || *r == combined
            || (!a.subresource.is_empty() && r.strip_prefix("*/") == Some(a.subresource.as_str()))
    });
    let names = strings(rule, "resourceNames");
    resource_ok && (names.is_empty() || names.contains(&a.name))
}

/// Whether a binding's subject names `user` (a ServiceAccount without namespace is one of the
/// binding's own namespace).
fn applies(subject: &Value, user: &UserInfo, binding_namespace: &str) -> bool {
    let name = text(subject, "/name");
    match text(subject, "/kind") {
        "User" => user.username == name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let ns = match text(subject, "/namespace") {
                "" => binding_namespace,
                ns => ns,
            };
            !ns.is_empty() && user.username == format!("system:serviceaccount:{ns}:{name}")
        }
        _ => false,
    }
}

/// How upstream names a subject in a reason: `User "alice"`, `ServiceAccount "default/web"`.
fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let kind = text(subject, "/kind");
    let name = text(subject, "/name");
    if kind == "ServiceAccount" {
        let ns = match text(subject, "/namespace") {
            "" => binding_namespace,
            ns => ns,
        };
        format!("{kind} {:?}", format!("{name}/{ns}"))
    } else {
        format!("{kind} {name:?}")
    }
}

/// The rules of a binding's role, or upstream's lister error when it is missing.
fn role_rules(objects: &Objects, role_ref: &Value, namespace: &str) -> Result<Vec<Value>, String> {
    let name = text(role_ref, "/name");
    let (plural, singular, ns) = match text(role_ref, "/kind") {
        "Role" => ("roles", "role", Some(namespace)),
        _ => ("clusterroles", "clusterrole", None),
    };
    let info = builtin(RBAC, "v1", plural).expect("RBAC kinds are served");
    match objects.try_get(info, ns, name) {
        Ok(Some(role)) => Ok(role
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()),
        Ok(None) => Err(format!("{singular}.{RBAC} {name:?} not found")),
        Err(e) => Err(e.to_string()),
    }
}

/// Call `visit(source, rule)` for every rule that applies to `user` in `namespace` (cluster-wide
/// ones only when it is empty) until it returns false; the errors met on the way.
pub fn visit_rules(
    objects: &Objects,
    user: &UserInfo,
    namespace: &str,
    visit: &mut dyn FnMut(&str, &Value) -> bool,
) -> Vec<String> {
    let mut errors = Vec::new();
    let mut scopes = vec![("clusterrolebindings", None)];
    if !namespace.is_empty() {
        scopes.push(("rolebindings", Some(namespace)));
    }
    for (plural, ns) in scopes {
        let info = builtin(RBAC, "v1", plural).expect("RBAC kinds are served");
        let bindings = match objects.list(info, ns, None, None) {
            Ok(page) => page.items,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        for binding in &bindings {
            let binding_ns = ns.unwrap_or("");
            let Some(subject) = binding
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|s| applies(s, user, binding_ns))
            else {
                continue;
            };
            let rules = match role_rules(objects, &binding["roleRef"], binding_ns) {
                Ok(rules) => rules,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            let name = text(binding, "/metadata/name");
            let source = format!(
                "{} {:?} of {} {:?} to {}",
                if ns.is_some() {
                    "RoleBinding"
                } else {
                    "ClusterRoleBinding"
                },
                if ns.is_some() {
                    format!("{name}/{binding_ns}")
                } else {
                    name.to_string()
                },
                text(binding, "/roleRef/kind"),
                text(binding, "/roleRef/name"),
                describe_subject(subject, binding_ns)
            );
            for rule in &rules {
                if !visit(&source, rule) {
                    return errors;
                }
            }
        }
    }
    errors
}

/// Upstream's aggregate of errors: one alone, several in brackets.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The RBAC decision on a request.
pub fn authorize(objects: &Objects, a: &Attributes) -> Decision {
    let mut allowed_by = None;
    let errors = visit_rules(objects, &a.user, &a.namespace, &mut |source, rule| {
        if rule_allows(a, rule) {
            allowed_by = Some(format!("RBAC: allowed by {source}"));
            false
        } else {
            true
        }
    });
    match allowed_by {
        Some(reason) => Decision {
            allowed: true,
            reason,
        },
        None if errors.is_empty() => Decision {
            allowed: false,
            reason: String::new(),
        },
        None => Decision {
            allowed: false,
            reason: format!("RBAC: {}", aggregate(&errors)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attrs(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn rules_match_as_upstream() {
        let view =
            json!({"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]});
        let star_sub = json!({"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["*"]});
        let named = json!({"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cfg"], "verbs": ["get"]});
        let urls = json!({"nonResourceURLs": ["/healthz", "/apis/*"], "verbs": ["get"]});
        let cases = [
            (&view, attrs("list", "", "pods", "", ""), true),
            (&view, attrs("delete", "", "pods", "", "x"), false),
            (&view, attrs("get", "", "pods", "log", "x"), true),
            (&view, attrs("get", "", "pods", "exec", "x"), false),
            (&view, attrs("get", "apps", "pods", "", "x"), false),
            (
                &star_sub,
                attrs("patch", "apps", "deployments", "scale", "web"),
                true,
            ),
            (
                &star_sub,
                attrs("patch", "apps", "deployments", "", "web"),
                false,
            ),
            (&named, attrs("get", "", "configmaps", "", "cfg"), true),
            (&named, attrs("get", "", "configmaps", "", "other"), false),
            (&named, attrs("list", "", "configmaps", "", ""), false),
        ];
        for (rule, a, want) in cases {
            assert_eq!(rule_allows(&a, rule), want, "{a:?}");
        }
        let path = |p: &str| Attributes {
            verb: "get".into(),
            path: p.into(),
            ..Default::default()
        };
        assert!(rule_allows(&path("/healthz"), &urls));
        assert!(rule_allows(&path("/apis/apps/v1"), &urls));
        assert!(!rule_allows(&path("/healthz/etcd"), &urls));
        assert!(!rule_allows(&attrs("get", "", "pods", "", ""), &urls));
    }

    #[test]
    fn subjects_apply_and_are_described_as_upstream() {
        let user = UserInfo {
            username: "system:serviceaccount:web:builder".into(),
            uid: String::new(),
            groups: vec!["system:serviceaccounts".into()],
            extra: Default::default(),
        };
        let sa = json!({"kind": "ServiceAccount", "name": "builder"});
        assert!(applies(&sa, &user, "web"));
        assert!(!applies(&sa, &user, ""));
        assert_eq!(
            describe_subject(&sa, "web"),
            "ServiceAccount \"builder/web\""
        );
        let group = json!({"kind": "Group", "name": "system:serviceaccounts"});
        assert!(applies(&group, &user, ""));
        assert_eq!(
            describe_subject(&group, ""),
            "Group \"system:serviceaccounts\""
        );
    }
}
