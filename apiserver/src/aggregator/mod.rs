//! The API aggregation layer, as upstream's kube-aggregator inside kube-apiserver: the
//! APIServices that name a backend `spec.service` ("remote" ones) take over their group
//! version: every request under `/apis/GROUP/VERSION[/...]` goes to that backend (after
//! authentication and authorization, before the server's own routing), and discovery lists
//! the group with the resources the backend reports. The "Local" APIServices of every group
//! version the server serves itself are kept by `local`; the Available condition of every
//! APIService by `available`, which also caches each backend's APIResourceList.
//!
//! Backends are reached over plain HTTP/1.1 at the first ready address of the Service's
//! Endpoints on the APIService's port, or at the `HOST:PORT` those Endpoints publish in the
//! `aggregator.tinykube.io/address` annotation (tinykube's aggregated servers live on
//! loopback, which Endpoints may not hold; there is no TLS to them, so `caBundle` and
//! `insecureSkipTLSVerify` are accepted and not used).

mod available;
pub mod discovery;
mod local;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tinykube_proto::registry::{self, ResourceInfo};

use crate::handlers::forward;
use crate::policy::UserInfo;
use crate::state::AppState;

pub use available::resolve;

/// The APIService resource.
pub fn info() -> &'static ResourceInfo {
    registry::builtin("apiregistration.k8s.io", "v1", "apiservices")
        .expect("apiservices are served")
}

/// Where a remote APIService's backend is: `spec.service`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub port: i64,
}

/// One APIService with a backend, as the proxy and discovery use it.
#[derive(Debug, Clone, PartialEq)]
pub struct Remote {
    pub name: String,
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    pub service: ServiceRef,
    /// Whether the last check passed (its Available condition is True).
    pub available: bool,
    /// The backend's APIResourceList of the group version, from the last check that got one.
    pub resources: Option<Value>,
}

impl Remote {
    /// The remote view of a stored APIService; `None` for a Local one.
    pub fn of(obj: &Value) -> Option<Remote> {
        let spec = obj.get("spec")?;
        let service = spec.get("service").filter(|s| !s.is_null())?;
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let available = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Available" && c["status"] == "True");
        Some(Remote {
            name: text(obj.get("metadata")?, "name"),
            group: text(spec, "group"),
            version: text(spec, "version"),
            group_priority: spec["groupPriorityMinimum"].as_i64().unwrap_or(0),
            version_priority: spec["versionPriority"].as_i64().unwrap_or(0),
            service: ServiceRef {
                namespace: text(service, "namespace"),
                name: text(service, "name"),
                port: service["port"].as_i64().unwrap_or(443),
            },
            available,
            resources: None,
        })
    }
}

/// The remote APIServices now: a snapshot readers take cheaply, replaced whole by the
/// availability controller.
#[derive(Debug, Default)]
pub struct Aggregator {
    current: RwLock<Arc<Vec<Remote>>>,
}

impl Aggregator {
    pub fn snapshot(&self) -> Arc<Vec<Remote>> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn publish(&self, remotes: Vec<Remote>) {
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(remotes);
    }

    /// The remote APIService serving `group/version`, if any.
    pub fn find(&self, group: &str, version: &str) -> Option<Remote> {
        self.snapshot()
            .iter()
            .find(|r| r.group == group && r.version == version)
            .cloned()
    }
}

/// Create the Local APIServices and start the availability controller.
pub async fn start(state: AppState) {
    if let Err(e) = local::ensure_builtin(&state).await {
        tracing::warn!(error = %e, "creating the Local APIServices");
    }
    available::start(state);
}

/// Go's http.Error: a plain-text answer, as upstream's aggregator gives when it cannot proxy.
fn plain_error(code: StatusCode, message: &str) -> Response {
    let mut resp = (code, format!("{message}\n")).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// The identity headers a backend reads (upstream's requestheader convention): the user, one
/// `X-Remote-Group` per group, and the extra fields as `X-Remote-Extra-KEY`.
pub fn identity_headers(user: &UserInfo) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    if let Ok(v) = HeaderValue::from_str(&user.username) {
        out.push((HeaderName::from_static("x-remote-user"), v));
    }
    for g in &user.groups {
        if let Ok(v) = HeaderValue::from_str(g) {
            out.push((HeaderName::from_static("x-remote-group"), v));
        }
    }
    for (key, values) in &user.extra {
        let Ok(name) =
            HeaderName::from_bytes(format!("x-remote-extra-{}", path_escape(key)).as_bytes())
        else {
            continue;
        };
        for value in values {
            if let Ok(v) = HeaderValue::from_str(value) {
                out.push((name.clone(), v));
            }
        }
    }
    out
}

/// Go's url.PathEscape, with which upstream escapes an extra's key into a header name.
fn path_escape(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~$&+=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Proxy one request (`target`: path and query) of `remote`'s group version to its backend: 503 `service unavailable`
/// while it is not Available or cannot be resolved; the dial error, as a 503, when the
/// backend does not answer.
pub async fn proxy(
    state: &AppState,
    remote: &Remote,
    method: Method,
    target: &str,
    headers: &HeaderMap,
    user: &UserInfo,
    body: Body,
) -> Response {
    const UNAVAILABLE: &str = "service unavailable";
    if !remote.available {
        return plain_error(StatusCode::SERVICE_UNAVAILABLE, UNAVAILABLE);
    }
    let addr: SocketAddr = match resolve(state, &remote.service) {
        Ok(addr) => addr,
        Err(e) => {
            tracing::debug!(apiservice = %remote.name, error = %e.message, "resolving the backend");
            return plain_error(StatusCode::SERVICE_UNAVAILABLE, UNAVAILABLE);
        }
    };
    let extra = identity_headers(user);
    match forward(addr, method, target, headers, &extra, body).await {
        Ok(resp) => resp,
        Err(e) => plain_error(StatusCode::SERVICE_UNAVAILABLE, &e.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn remote_views_of_api_services() {
        let metrics = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"},
            "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                     "versionPriority": 100, "service": {"namespace": "kube-system", "name": "metrics-server"}},
            "status": {"conditions": [{"type": "Available", "status": "True"}]}});
        let r = Remote::of(&metrics).unwrap();
        assert_eq!(
            (r.group.as_str(), r.version.as_str()),
            ("metrics.k8s.io", "v1beta1")
        );
        assert_eq!(r.service.port, 443);
        assert!(r.available);
        let local =
            json!({"metadata": {"name": "v1.apps"}, "spec": {"group": "apps", "version": "v1"}});
        assert_eq!(Remote::of(&local), None);
    }

    #[test]
    fn backends_learn_who_asks() {
        let user = UserInfo {
            username: "alice".into(),
            uid: String::new(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: [("example.com/scopes".to_string(), vec!["view".to_string()])].into(),
        };
        let got: Vec<(String, String)> = identity_headers(&user)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        assert_eq!(
            got,
            [
                ("x-remote-user".to_string(), "alice".to_string()),
                ("x-remote-group".into(), "dev".into()),
                ("x-remote-group".into(), "system:authenticated".into()),
                ("x-remote-extra-example.com%2fscopes".into(), "view".into()),
            ]
        );
    }
}
