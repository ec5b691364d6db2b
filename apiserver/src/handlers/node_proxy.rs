//! `nodes/NAME/proxy` and `nodes/NAME/proxy/PATH`: any method, forwarded to the kubelet the
//! Node publishes in its `kubelet.tinykube.io/address` annotation, path and query kept, with
//! the header `Tinykube-Node: NAME` (one kubelet process simulates many nodes on one port; the
//! header says which one the request is about). The kubelet's status, headers and body come
//! back as they are, as upstream's node proxy (`kubectl get --raw
//! /api/v1/nodes/worker0/proxy/stats/summary`). A node that is not there is a 404; a kubelet
//! that cannot be reached is upstream's 503 `error trying to reach service: dial tcp …`.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
use axum::response::Response;
use tinykube_proto::registry;

use super::forward::forward;
use super::proxy::kubelet_of;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The header naming the node a request to a kubelet is about.
pub const NODE_HEADER: &str = "tinykube-node";

/// The kubelet path a proxy path asks for: what follows `/proxy`, `/` when nothing does (a
/// trailing slash is kept, as upstream's JoinPreservingTrailingSlash).
pub fn kubelet_path(rest: &str) -> String {
    if rest.is_empty() {
        "/".to_string()
    } else if rest.starts_with('/') {
        rest.to_string()
    } else {
        format!("/{rest}")
    }
}

/// Upstream's answer when the kubelet cannot be dialled.
fn unreachable(why: &str) -> ApiError {
    ApiError::Unavailable(format!("error trying to reach service: {why}"))
}

/// Serve one request for `nodes/NODE/proxy` + `rest` (`rest` empty or starting with `/`).
pub async fn proxy(
    state: &AppState,
    method: Method,
    node: &str,
    rest: &str,
    raw_query: Option<&str>,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let nodes = registry::builtin("", "v1", "nodes").expect("nodes are served");
    let obj = state.objects.get(nodes, None, node)?;
    let addr = kubelet_of(&obj).map_err(|why| unreachable(&why))?;
    let mut target = kubelet_path(rest);
    if let Some(q) = raw_query.filter(|q| !q.is_empty()) {
        target = format!("{target}?{q}");
    }
    let node_header = HeaderValue::from_str(node)
        .map_err(|_| ApiError::BadRequest(format!("invalid node name {node:?}")))?;
    let extra = [(HeaderName::from_static(NODE_HEADER), node_header)];
    forward(addr, method, &target, headers, &extra, body)
        .await
        .map_err(|e| unreachable(&e.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[test]
    fn proxy_paths_map_to_kubelet_paths() {
        for (rest, want) in [
            ("", "/"),
            ("/", "/"),
            ("/stats/summary", "/stats/summary"),
            ("/metrics/resource", "/metrics/resource"),
            ("/pods/", "/pods/"),
            ("healthz", "/healthz"),
        ] {
            assert_eq!(kubelet_path(rest), want, "{rest:?}");
        }
    }

    #[test]
    fn unreachable_kubelets_are_503s_as_upstream() {
        let e = unreachable("dial tcp 127.0.0.1:1: connect: connection refused");
        assert_eq!(e.code(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            e.to_string(),
            "error trying to reach service: dial tcp 127.0.0.1:1: connect: connection refused"
        );
    }
}
