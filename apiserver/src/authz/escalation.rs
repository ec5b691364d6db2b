//! Upstream's escalation prevention on RBAC writes: a Role or ClusterRole may be written only
//! with rules its author holds (or the `escalate` verb on it), a binding only to a role whose
//! rules its author holds (or the `bind` verb on it); members of `system:masters` may do
//! anything, and under AlwaysAllow the `escalate`/`bind` checks always pass. An
//! `aggregationRule` needs every permission (`*` on `*.*`).

use serde_json::{json, Value};
use tinykube_proto::registry::{ResourceInfo, RBAC};

use super::attributes::Attributes;
use super::rbac::visit_rules;
use super::{decide, AuthorizationMode, MASTERS};
use crate::error::{ApiError, Qualified};
use crate::policy::UserInfo;
use crate::state::AppState;

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// One rule split into rules of one verb, group, resource (and name) or URL (upstream's
/// BreakdownRule), as JSON rules.
fn breakdown(rule: &Value) -> Vec<Value> {
    let verbs = strings(rule, "verbs");
    let names = strings(rule, "resourceNames");
    let mut out = Vec::new();
    for group in strings(rule, "apiGroups") {
        for resource in strings(rule, "resources") {
            for verb in &verbs {
                if names.is_empty() {
                    out.push(
                        json!({"apiGroups": [group], "resources": [resource], "verbs": [verb]}),
                    );
                }
                for name in &names {
                    out.push(json!({"apiGroups": [group], "resources": [resource],
                                    "resourceNames": [name], "verbs": [verb]}));
                }
            }
        }
    }
    for url in strings(rule, "nonResourceURLs") {
        for verb in &verbs {
            out.push(json!({"nonResourceURLs": [url], "verbs": [verb]}));
        }
    }
    out
}

/// Whether an owner's rule covers one broken-down rule (upstream's ruleCovers).
fn covers(owner: &Value, sub: &Value) -> bool {
    let has_all = |key: &str| {
        let own = strings(owner, key);
        own.iter().any(|s| s == "*") || strings(sub, key).iter().all(|s| own.contains(s))
    };
    let own_resources = strings(owner, "resources");
    let resources = strings(sub, "resources").iter().all(|r| {
        own_resources.iter().any(|o| o == "*" || o == r)
            || r.split_once('/')
                .is_some_and(|(_, sub)| own_resources.contains(&format!("*/{sub}")))
    });
    let own_urls = strings(owner, "nonResourceURLs");
    let urls = strings(sub, "nonResourceURLs").iter().all(|u| {
        own_urls.iter().any(|o| {
            o == u
                || o.strip_suffix('*')
                    .is_some_and(|prefix| u.starts_with(prefix))
        })
    });
    let own_names = strings(owner, "resourceNames");
    let names = if strings(sub, "resourceNames").is_empty() {
        own_names.is_empty()
    } else {
        own_names.is_empty() || has_all("resourceNames")
    };
    has_all("verbs") && has_all("apiGroups") && resources && urls && names
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_q(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// Upstream's CompactString of a rule.
fn compact_string(rule: &Value) -> String {
    let parts: Vec<String> = [
        ("apiGroups", "APIGroups"),
        ("resources", "Resources"),
        ("nonResourceURLs", "NonResourceURLs"),
        ("resourceNames", "ResourceNames"),
        ("verbs", "Verbs"),
    ]
    .iter()
    .filter_map(|(key, label)| {
        let list = strings(rule, key);
        (!list.is_empty()).then(|| format!("{label}:{}", go_q(&list)))
    })
    .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Missing rules with one group and resource and no names merged, their verbs joined (upstream's
/// CompactRules).
fn compact(missing: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for rule in missing {
        let simple = strings(&rule, "resourceNames").is_empty()
            && strings(&rule, "nonResourceURLs").is_empty();
        let same = |r: &Value| {
            strings(r, "resourceNames").is_empty()
                && r.get("apiGroups") == rule.get("apiGroups")
                && r.get("resources") == rule.get("resources")
        };
        match out.iter_mut().find(|r| simple && same(r)) {
            Some(r) => {
                for verb in strings(&rule, "verbs") {
                    if !strings(r, "verbs").contains(&verb) {
                        r["verbs"].as_array_mut().expect("verbs").push(verb.into());
                    }
                }
            }
            None => out.push(rule),
        }
    }
    out
}

/// Upstream's ConfirmNoEscalation: the author's rules in `namespace` cover `rules`.
fn confirm_no_escalation(
    state: &AppState,
    user: &UserInfo,
    namespace: &str,
    rules: &[Value],
) -> Result<(), String> {
    let mut owned = Vec::new();
    let errors = visit_rules(&state.objects, user, namespace, &mut |_, rule| {
        owned.push(rule.clone());
        true
    });
    let missing: Vec<Value> = rules
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owned.iter().any(|o| covers(o, sub)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut lines: Vec<String> = compact(missing).iter().map(compact_string).collect();
    lines.sort();
    lines.dedup();
    let mut msg = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.username,
        go_q(&user.groups),
        lines.join("\n")
    );
    if !errors.is_empty() {
        msg = format!("{msg}; resolution errors: [{}]", errors.join(" "));
    }
    Err(msg)
}

fn allowed_verb(
    state: &AppState,
    user: &UserInfo,
    verb: &str,
    plural: &str,
    ns: &str,
    name: &str,
) -> bool {
    let a = Attributes {
        user: user.clone(),
        verb: verb.into(),
        resource_request: true,
        group: RBAC.into(),
        version: "v1".into(),
        namespace: ns.into(),
        resource: plural.into(),
        name: name.into(),
        ..Default::default()
    };
    decide(state, &a).allowed
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Check a create (`old` None) or update of an RBAC object by `user`.
pub fn check(
    state: &AppState,
    user: &UserInfo,
    info: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if info.group != RBAC
        || info.custom.is_some()
        || state.authorization == AuthorizationMode::AlwaysAllow
        || user.groups.iter().any(|g| g == MASTERS)
    {
        return Ok(());
    }
    let name = text(obj, "/metadata/name");
    let ns = text(obj, "/metadata/namespace");
    let forbidden = |message: String| ApiError::ForbiddenNamed {
        resource: Qualified::new(RBAC, info.plural),
        name: name.to_string(),
        message: format!("{}.{RBAC} {name:?} is forbidden: {message}", info.plural),
    };
    let rules = |v: &Value| v.get("rules").cloned().unwrap_or(Value::Null);
    match info.kind {
        "Role" | "ClusterRole" => {
            let aggregation =
                |v: &Value| v.get("aggregationRule").filter(|a| !a.is_null()).cloned();
            if old.is_some_and(|o| rules(o) == rules(obj) && aggregation(o) == aggregation(obj)) {
                return Ok(());
            }
            if allowed_verb(state, user, "escalate", info.plural, ns, name) {
                return Ok(());
            }
            let list: Vec<Value> = obj
                .get("rules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            confirm_no_escalation(state, user, ns, &list).map_err(&forbidden)?;
            let aggregated =
                aggregation(obj).is_some() || old.is_some_and(|o| aggregation(o).is_some());
            if aggregated {
                let everything = [
                    json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
                    json!({"nonResourceURLs": ["*"], "verbs": ["*"]}),
                ];
                if confirm_no_escalation(state, user, ns, &everything).is_err() {
                    return Err(forbidden(
                        "must have cluster-admin privileges to use the aggregationRule".into(),
                    ));
                }
            }
            Ok(())
        }
        _ => {
            if old.is_some_and(|o| {
                o.get("subjects") == obj.get("subjects") && o.get("roleRef") == obj.get("roleRef")
            }) {
                return Ok(());
            }
            let (kind, role) = (text(obj, "/roleRef/kind"), text(obj, "/roleRef/name"));
            let (plural, singular) = if kind == "Role" {
                ("roles", "role")
            } else {
                ("clusterroles", "clusterrole")
            };
            if allowed_verb(state, user, "bind", plural, ns, role) {
                return Ok(());
            }
            let role_info = tinykube_proto::registry::builtin(RBAC, "v1", plural)
                .expect("RBAC kinds are served");
            let role_ns = (kind == "Role").then_some(ns);
            let Some(stored) = state.objects.try_get(role_info, role_ns, role)? else {
                return Err(ApiError::NotFound {
                    resource: Qualified::new(RBAC, singular),
                    name: role.to_string(),
                });
            };
            let list: Vec<Value> = stored
                .get("rules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            confirm_no_escalation(state, user, ns, &list).map_err(&forbidden)
        }
    }
}

/// Whether `rules` hold everything `wanted` asks.
#[cfg(test)]
fn holds(rules: &[Value], wanted: &Value) -> bool {
    breakdown(wanted)
        .iter()
        .all(|sub| rules.iter().any(|o| covers(o, sub)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_and_messages_are_upstreams() {
        let view = [
            json!({"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]}),
            json!({"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get"]}),
            json!({"nonResourceURLs": ["/apis/*"], "verbs": ["get"]}),
        ];
        assert!(holds(
            &view,
            &json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]})
        ));
        assert!(holds(
            &view,
            &json!({"apiGroups": [""], "resources": ["pods"], "resourceNames": ["web"], "verbs": ["get"]})
        ));
        assert!(holds(
            &view,
            &json!({"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get"]})
        ));
        assert!(holds(
            &view,
            &json!({"nonResourceURLs": ["/apis/apps"], "verbs": ["get"]})
        ));
        assert!(!holds(
            &view,
            &json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]})
        ));
        assert!(!holds(
            &view,
            &json!({"apiGroups": ["*"], "resources": ["pods"], "verbs": ["get"]})
        ));
        let missing = compact(breakdown(
            &json!({"apiGroups": [""], "resources": ["pods", "secrets"], "verbs": ["delete", "create"]}),
        ));
        let lines: Vec<String> = missing.iter().map(compact_string).collect();
        assert_eq!(
            lines,
            vec![
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["delete" "create"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["delete" "create"]}"#,
            ]
        );
    }
}
