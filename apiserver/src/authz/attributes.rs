//! What a request asks to do, as upstream's RequestInfoFactory reads it from the method, path
//! and query: a resource request (verb, API group, namespace, resource, subresource, name) under
//! `/api/v1/…` or `/apis/GROUP/VERSION/…`, anything else a non-resource path with the
//! lower-cased method as its verb.

use crate::policy::UserInfo;

/// One request's authorization attributes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attributes {
    pub user: UserInfo,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`; a
    /// non-resource request's lower-cased method.
    pub verb: String,
    pub resource_request: bool,
    /// The request path (non-resource requests are matched by it).
    pub path: String,
    pub group: String,
    pub version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
}

/// Namespace subresources: `/namespaces/NAME/status` is the namespace's, not a resource.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

fn query_param<'a>(query: Option<&'a str>, key: &str) -> Option<&'a str> {
    query?
        .split('&')
        .filter_map(|p| p.split_once('=').or(Some((p, ""))))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// The name a list or watch selects with `fieldSelector=metadata.name=NAME` (upstream
/// authorizes such a request as one on that name).
fn selected_name(query: Option<&str>) -> Option<String> {
    let raw = query_param(query, "fieldSelector")?;
    let decoded: String = form_urlencoded::parse(format!("s={raw}").as_bytes())
        .map(|(_, v)| v.into_owned())
        .next()?;
    decoded
        .split(',')
        .find_map(|term| {
            term.strip_prefix("metadata.name==")
                .or_else(|| term.strip_prefix("metadata.name="))
        })
        .filter(|name| !name.is_empty() && !name.contains('/') && !name.contains('%'))
        .map(str::to_string)
}

impl Attributes {
    /// The attributes of `method path?query` sent by `user`.
    pub fn of_request(method: &str, path: &str, query: Option<&str>, user: UserInfo) -> Self {
        let non_resource = Attributes {
            user: user.clone(),
            verb: method.to_ascii_lowercase(),
            path: path.to_string(),
            ..Default::default()
        };
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let rest = match parts.as_slice() {
            ["api", version, rest @ ..] if !rest.is_empty() => ("", *version, rest),
            ["apis", group, version, rest @ ..] if !rest.is_empty() => (*group, *version, rest),
            _ => return non_resource,
        };
        let (group, version, mut rest) = rest;
        let mut verb = match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        }
        .to_string();
        let mut namespace = String::new();
        if rest[0] == "namespaces" && rest.len() > 1 {
            namespace = rest[1].to_string();
            if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
                rest = &rest[2..];
            }
        }
        let resource = rest[0].to_string();
        let name = rest.get(1).map(|s| s.to_string()).unwrap_or_default();
        let subresource = rest.get(2).map(|s| s.to_string()).unwrap_or_default();
        let mut attrs = Attributes {
            user,
            verb: String::new(),
            resource_request: true,
            path: path.to_string(),
            group: group.to_string(),
            version: version.to_string(),
            namespace,
            resource,
            subresource,
            name,
        };
        if attrs.name.is_empty() && verb == "get" {
            let watch = matches!(query_param(query, "watch"), Some("true" | "1"));
            verb = if watch { "watch" } else { "list" }.into();
            attrs.name = selected_name(query).unwrap_or_default();
        } else if attrs.name.is_empty() && verb == "delete" {
            verb = "deletecollection".into();
        }
        attrs.verb = verb;
        attrs
    }

    /// `pods` or `pods/log`, as rules name it.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(
        method: &str,
        path: &str,
        query: Option<&str>,
    ) -> (String, String, String, String, String, String) {
        let a = Attributes::of_request(method, path, query, UserInfo::anonymous());
        (
            a.verb,
            a.group,
            a.namespace,
            a.resource,
            a.subresource,
            a.name,
        )
    }

    fn t(v: [&str; 6]) -> (String, String, String, String, String, String) {
        let [a, b, c, d, e, f] = v.map(str::to_string);
        (a, b, c, d, e, f)
    }

    #[test]
    fn requests_map_to_attributes_as_upstream() {
        let cases = [
            (
                "GET",
                "/api/v1/namespaces/default/pods",
                None,
                ["list", "", "default", "pods", "", ""],
            ),
            (
                "GET",
                "/api/v1/pods",
                Some("watch=true"),
                ["watch", "", "", "pods", "", ""],
            ),
            (
                "GET",
                "/api/v1/namespaces/default/pods",
                Some("fieldSelector=metadata.name%3Dweb&watch=1"),
                ["watch", "", "default", "pods", "", "web"],
            ),
            (
                "GET",
                "/api/v1/namespaces/default/pods/web/log",
                None,
                ["get", "", "default", "pods", "log", "web"],
            ),
            (
                "DELETE",
                "/api/v1/namespaces/default/pods/web",
                None,
                ["delete", "", "default", "pods", "", "web"],
            ),
            (
                "DELETE",
                "/api/v1/namespaces/default/pods",
                None,
                ["deletecollection", "", "default", "pods", "", ""],
            ),
            (
                "POST",
                "/apis/apps/v1/namespaces/kube-system/deployments",
                None,
                ["create", "apps", "kube-system", "deployments", "", ""],
            ),
            (
                "PATCH",
                "/apis/apps/v1/namespaces/a/deployments/web/scale",
                None,
                ["patch", "apps", "a", "deployments", "scale", "web"],
            ),
            (
                "GET",
                "/api/v1/namespaces/kube-system",
                None,
                ["get", "", "kube-system", "namespaces", "", "kube-system"],
            ),
            (
                "PUT",
                "/api/v1/namespaces/gone/finalize",
                None,
                ["update", "", "gone", "namespaces", "finalize", "gone"],
            ),
            (
                "GET",
                "/api/v1/nodes/n1",
                None,
                ["get", "", "", "nodes", "", "n1"],
            ),
            (
                "GET",
                "/api/v1/nodes",
                Some("fieldSelector=spec.unschedulable%3Dfalse,metadata.name%3Dn1"),
                ["list", "", "", "nodes", "", "n1"],
            ),
            (
                "GET",
                "/api/v1/namespaces/a/pods/web",
                Some("watch=true"),
                ["get", "", "a", "pods", "", "web"],
            ),
        ];
        for (method, path, query, want) in cases {
            assert_eq!(of(method, path, query), t(want), "{method} {path}");
        }
        for path in [
            "/api",
            "/api/v1",
            "/apis/apps/v1",
            "/version",
            "/openapi/v3",
        ] {
            let a = Attributes::of_request("GET", path, None, UserInfo::anonymous());
            assert!(!a.resource_request, "{path}");
            assert_eq!(a.verb, "get");
        }
    }
}
