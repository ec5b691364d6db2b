//! The RBAC rows, as upstream's printRole/printRoleBinding: roles show when they were created
//! (RFC 3339, UTC), bindings their `Kind/name` role and, wide, their users, groups and
//! ServiceAccounts (`namespace/name`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{age, name, s};

/// Role and ClusterRole: NAME, CREATED AT.
pub fn role(obj: &Value) -> Vec<Value> {
    let created = obj
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| {
            t.with_timezone(&Utc)
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        })
        .map_or(Value::Null, Value::from);
    vec![name(obj).into(), created]
}

/// RoleBinding and ClusterRoleBinding: NAME, ROLE, AGE, USERS, GROUPS, SERVICEACCOUNTS.
pub fn binding(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let role = format!("{}/{}", s(obj, "/roleRef/kind"), s(obj, "/roleRef/name"));
    let (mut users, mut groups, mut accounts) = (Vec::new(), Vec::new(), Vec::new());
    for subject in obj
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let subject_name = s(subject, "/name").to_string();
        match s(subject, "/kind") {
            "User" => users.push(subject_name),
            "Group" => groups.push(subject_name),
            "ServiceAccount" => {
                accounts.push(format!("{}/{subject_name}", s(subject, "/namespace")))
            }
            _ => {}
        }
    }
    vec![
        name(obj).into(),
        role.into(),
        age(obj, now).into(),
        users.join(", ").into(),
        groups.join(", ").into(),
        accounts.join(", ").into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bindings_list_their_subjects_by_kind() {
        let b = json!({"metadata": {"name": "read", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                         {"kind": "Group", "name": "devs"},
                         {"kind": "ServiceAccount", "name": "default", "namespace": "web"}]});
        let now = "2026-01-01T00:01:00Z".parse().unwrap();
        assert_eq!(
            binding(&b, now),
            vec![
                json!("read"),
                json!("ClusterRole/view"),
                json!("60s"),
                json!("alice, bob"),
                json!("devs"),
                json!("web/default")
            ]
        );
        assert_eq!(role(&b), vec![json!("read"), json!("2026-01-01T00:00:00Z")]);
    }
}
