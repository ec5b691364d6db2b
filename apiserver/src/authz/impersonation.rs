//! Impersonation, as upstream's WithImpersonation filter: the `Impersonate-User`,
//! `Impersonate-Group` (repeated), `Impersonate-Uid` and `Impersonate-Extra-KEY` headers ask to
//! act as another user. Each value asked for is authorized for the real requester with the verb
//! `impersonate` (on `users`, `groups` and `serviceaccounts` of the core group, `uids` and
//! `userextras/KEY` of authentication.k8s.io), refused with upstream's 403; the request then
//! goes on as the impersonated user, its impersonation headers removed.

use std::collections::BTreeMap;

use axum::http::HeaderMap;

use super::{decide, forbidden, Attributes};
use crate::error::ApiError;
use crate::policy::UserInfo;
use crate::state::AppState;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

const AUTHENTICATED: &str = "system:authenticated";
const UNAUTHENTICATED: &str = "system:unauthenticated";
const ANONYMOUS: &str = "system:anonymous";

/// One thing a request asks to impersonate (upstream's ObjectReferences of the filter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// `system:serviceaccount:NAMESPACE:NAME`.
    ServiceAccount {
        namespace: String,
        name: String,
    },
    User(String),
    Group(String),
    Extra {
        key: String,
        value: String,
    },
    Uid(String),
}

impl Wanted {
    /// Go's `%v` of the ObjectReference upstream builds for it (Kind, Namespace, Name, UID,
    /// APIVersion, ResourceVersion, FieldPath), for the 400 message.
    fn go_value(&self) -> String {
        const AUTHN_V1: &str = "authentication.k8s.io/v1";
        let (kind, namespace, name, api_version, field_path) = match self {
            Wanted::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Wanted::User(name) => ("User", "", name.as_str(), "", ""),
            Wanted::Group(name) => ("Group", "", name.as_str(), "", ""),
            Wanted::Extra { key, value } => {
                ("UserExtra", "", value.as_str(), AUTHN_V1, key.as_str())
            }
            Wanted::Uid(uid) => ("UID", "", uid.as_str(), AUTHN_V1, ""),
        };
        format!("{{{kind} {namespace} {name}  {api_version}  {field_path}}}")
    }

    /// The attributes authorized for the requester: verb `impersonate` on this value.
    fn attributes(&self, requester: &UserInfo) -> Attributes {
        let (group, resource, subresource, namespace, name) = match self {
            Wanted::ServiceAccount { namespace, name } => {
                ("", "serviceaccounts", "", namespace.as_str(), name.as_str())
            }
            Wanted::User(name) => ("", "users", "", "", name.as_str()),
            Wanted::Group(name) => ("", "groups", "", "", name.as_str()),
            Wanted::Extra { key, value } => (
                "authentication.k8s.io",
                "userextras",
                key.as_str(),
                "",
                value.as_str(),
            ),
            Wanted::Uid(uid) => ("authentication.k8s.io", "uids", "", "", uid.as_str()),
        };
        Attributes {
            user: requester.clone(),
            verb: "impersonate".into(),
            resource_request: true,
            group: group.into(),
            version: "v1".into(),
            namespace: namespace.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            name: name.into(),
            ..Default::default()
        }
    }
}

/// `system:serviceaccount:NS:NAME` split as upstream's SplitUsername: both parts valid names.
pub fn split_service_account(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    use tinykube_proto::names;
    let valid = names::label_errors(namespace).is_empty() && names::is_subdomain(name);
    valid.then_some((namespace, name))
}

/// `%XX` escapes decoded, as Go's url.PathUnescape (the key as sent when it does not decode).
fn unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = key
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return key.to_string(),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_string())
}

/// What the headers ask to impersonate, in upstream's order (user, groups, extras, uid); the
/// 400 upstream answers when groups, extras or a uid come without a user.
pub fn wanted(headers: &HeaderMap) -> Result<Vec<Wanted>, ApiError> {
    let text = |v: &axum::http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let mut out = Vec::new();
    let user = headers.get(USER).map(text).filter(|u| !u.is_empty());
    if let Some(user) = &user {
        out.push(match split_service_account(user) {
            Some((namespace, name)) => Wanted::ServiceAccount {
                namespace: namespace.into(),
                name: name.into(),
            },
            None => Wanted::User(user.clone()),
        });
    }
    let groups: Vec<Wanted> = headers
        .get_all(GROUP)
        .iter()
        .map(|g| Wanted::Group(text(g)))
        .collect();
    let has_groups = !groups.is_empty();
    out.extend(groups);
    // Header names arrive lower-cased; one request per value, keys in a stable order.
    let mut extras: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers.iter() {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            extras.entry(unescape(key)).or_default().push(text(value));
        }
    }
    let has_extras = !extras.is_empty();
    for (key, values) in extras {
        out.extend(values.into_iter().map(|value| Wanted::Extra {
            key: key.clone(),
            value,
        }));
    }
    let uid = headers.get(UID).map(text).filter(|u| !u.is_empty());
    let has_uid = uid.is_some();
    out.extend(uid.map(Wanted::Uid));
    if (has_groups || has_extras || has_uid) && user.is_none() {
        let list: Vec<String> = out.iter().map(Wanted::go_value).collect();
        return Err(ApiError::BadRequest(format!(
            "requested [{}] without impersonating a user",
            list.join(" ")
        )));
    }
    Ok(out)
}

/// The user `wanted` makes, once each value was allowed: a ServiceAccount gets its groups
/// unless groups were given; `system:authenticated` is added unless the groups name it or
/// `system:unauthenticated` (`system:anonymous` gets `system:unauthenticated` instead).
pub fn impersonated(wanted: &[Wanted], groups_given: bool) -> UserInfo {
    let mut user = UserInfo::default();
    for w in wanted {
        match w {
            Wanted::ServiceAccount { namespace, name } => {
                user.username = format!("system:serviceaccount:{namespace}:{name}");
                if !groups_given {
                    user.groups = vec![
                        "system:serviceaccounts".into(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
            }
            Wanted::User(name) => user.username = name.clone(),
            Wanted::Group(group) => user.groups.push(group.clone()),
            Wanted::Extra { key, value } => user
                .extra
                .entry(key.clone())
                .or_default()
                .push(value.clone()),
            Wanted::Uid(uid) => user.uid = uid.clone(),
        }
    }
    let has = |g: &str| user.groups.iter().any(|x| x == g);
    if user.username != ANONYMOUS {
        if !has(AUTHENTICATED) && !has(UNAUTHENTICATED) {
            user.groups.push(AUTHENTICATED.into());
        }
    } else if !has(UNAUTHENTICATED) {
        user.groups.push(UNAUTHENTICATED.into());
    }
    user
}

/// The user a request acts as: `requester` itself when it asks to impersonate no one, else the
/// impersonated user once the requester may impersonate every value asked for. The
/// impersonation headers are removed either way.
pub fn apply(
    state: &AppState,
    headers: &mut HeaderMap,
    requester: UserInfo,
) -> Result<UserInfo, ApiError> {
    let asked = wanted(headers)?;
    let groups_given = headers.contains_key(GROUP);
    strip(headers);
    if asked.is_empty() {
        return Ok(requester);
    }
    for w in &asked {
        let a = w.attributes(&requester);
        let decision = decide(state, &a);
        if !decision.allowed {
            return Err(forbidden(&a, &decision.reason));
        }
    }
    let user = impersonated(&asked, groups_given);
    tracing::debug!(requester = %requester.username, user = %user.username, "impersonating");
    Ok(user)
}

/// Remove every impersonation header, so nothing downstream sees them.
fn strip(headers: &mut HeaderMap) {
    let names: Vec<_> = headers
        .keys()
        .filter(|n| n.as_str().starts_with("impersonate-"))
        .cloned()
        .collect();
    for name in names {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn headers_become_the_impersonated_user() {
        let cases: Vec<(Vec<(&str, &str)>, UserInfo)> = vec![
            (
                vec![("Impersonate-User", "jane")],
                user("jane", &[AUTHENTICATED]),
            ),
            (
                vec![
                    ("Impersonate-User", "jane"),
                    ("Impersonate-Group", "devs"),
                    ("Impersonate-Group", "ops"),
                ],
                user("jane", &["devs", "ops", AUTHENTICATED]),
            ),
            (
                vec![
                    ("Impersonate-User", "jane"),
                    ("Impersonate-Group", AUTHENTICATED),
                ],
                user("jane", &[AUTHENTICATED]),
            ),
            (
                vec![
                    ("Impersonate-User", "jane"),
                    ("Impersonate-Group", UNAUTHENTICATED),
                ],
                user("jane", &[UNAUTHENTICATED]),
            ),
            (
                vec![("Impersonate-User", "system:serviceaccount:default:foo")],
                user(
                    "system:serviceaccount:default:foo",
                    &[
                        "system:serviceaccounts",
                        "system:serviceaccounts:default",
                        AUTHENTICATED,
                    ],
                ),
            ),
            (
                vec![
                    ("Impersonate-User", "system:serviceaccount:default:foo"),
                    ("Impersonate-Group", "devs"),
                ],
                user(
                    "system:serviceaccount:default:foo",
                    &["devs", AUTHENTICATED],
                ),
            ),
            // Not a valid ServiceAccount name: an ordinary user.
            (
                vec![("Impersonate-User", "system:serviceaccount:Bad:foo")],
                user("system:serviceaccount:Bad:foo", &[AUTHENTICATED]),
            ),
            (
                vec![("Impersonate-User", ANONYMOUS)],
                user(ANONYMOUS, &[UNAUTHENTICATED]),
            ),
            (
                vec![
                    ("Impersonate-User", "jane"),
                    ("Impersonate-Uid", "1234"),
                    ("Impersonate-Extra-Scopes", "view"),
                    ("Impersonate-Extra-Scopes", "edit"),
                    ("Impersonate-Extra-example.com%2Fteam", "a"),
                ],
                UserInfo {
                    username: "jane".into(),
                    uid: "1234".into(),
                    groups: vec![AUTHENTICATED.into()],
                    extra: BTreeMap::from([
                        ("example.com/team".to_string(), vec!["a".to_string()]),
                        (
                            "scopes".to_string(),
                            vec!["view".to_string(), "edit".to_string()],
                        ),
                    ]),
                },
            ),
        ];
        for (pairs, want) in cases {
            let h = headers(&pairs);
            let asked = wanted(&h).unwrap();
            assert_eq!(
                impersonated(&asked, h.contains_key(GROUP)),
                want,
                "{pairs:?}"
            );
        }
        assert!(wanted(&headers(&[("Accept", "x")])).unwrap().is_empty());
    }

    #[test]
    fn groups_extras_or_uid_without_a_user_are_refused_as_upstream() {
        let cases = [
            (vec![("Impersonate-Group", "devs")], "requested [{Group  devs    }] without impersonating a user"),
            (
                vec![("Impersonate-Group", "devs"), ("Impersonate-Group", "ops")],
                "requested [{Group  devs    } {Group  ops    }] without impersonating a user",
            ),
            (
                vec![("Impersonate-Extra-Scopes", "view")],
                "requested [{UserExtra  view  authentication.k8s.io/v1  scopes}] without impersonating a user",
            ),
            (
                vec![("Impersonate-Uid", "1234")],
                "requested [{UID  1234  authentication.k8s.io/v1  }] without impersonating a user",
            ),
        ];
        for (pairs, want) in cases {
            match wanted(&headers(&pairs)) {
                Err(ApiError::BadRequest(m)) => assert_eq!(m, want),
                other => panic!("{pairs:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn each_value_is_authorized_as_upstream_names_it() {
        let bob = user("bob", &[AUTHENTICATED]);
        let cases = [
            (
                Wanted::User("jane".into()),
                "users \"jane\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope",
            ),
            (
                Wanted::Group("devs".into()),
                "groups \"devs\" is forbidden: User \"bob\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope",
            ),
            (
                Wanted::ServiceAccount { namespace: "default".into(), name: "foo".into() },
                "serviceaccounts \"foo\" is forbidden: User \"bob\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"default\"",
            ),
            (
                Wanted::Extra { key: "scopes".into(), value: "view".into() },
                "userextras.authentication.k8s.io \"view\" is forbidden: User \"bob\" cannot impersonate resource \"userextras/scopes\" in API group \"authentication.k8s.io\" at the cluster scope",
            ),
            (
                Wanted::Uid("1234".into()),
                "uids.authentication.k8s.io \"1234\" is forbidden: User \"bob\" cannot impersonate resource \"uids\" in API group \"authentication.k8s.io\" at the cluster scope",
            ),
        ];
        for (w, want) in cases {
            assert_eq!(forbidden(&w.attributes(&bob), "").to_string(), want);
        }
    }

    #[test]
    fn impersonation_headers_are_stripped() {
        let mut h = headers(&[
            ("Impersonate-User", "jane"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Extra-Scopes", "view"),
            ("Accept", "application/json"),
        ]);
        strip(&mut h);
        let left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        assert_eq!(left, ["accept"]);
        assert_eq!(unescape("a%2Fb"), "a/b");
        assert_eq!(unescape("bad%zz"), "bad%zz");
    }
}
