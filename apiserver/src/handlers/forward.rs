//! Forwarding one HTTP request to a backend over plain HTTP/1.1 (a kubelet, an aggregated API
//! server) and streaming its answer back, as upstream's upgrade-aware proxy does for plain
//! requests: the method, path, query and body go as they came, end-to-end headers with them
//! (never the client's credentials, hop-by-hop headers or a client's own `X-Remote-*`
//! identity headers), plus the headers the caller adds; the backend's status, headers and body
//! come back untouched.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request};
use axum::response::Response;

/// How long a backend may take to answer with its status line and headers (the body then
/// streams for as long as it lasts).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Headers that belong to one connection, never forwarded either way.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// Whether a client's request header goes on to the backend.
fn forwarded_request_header(name: &HeaderName) -> bool {
    let n = name.as_str();
    !HOP_BY_HOP.contains(&n)
        && name != header::AUTHORIZATION
        && !n.starts_with("x-remote-")
        && !n.starts_with("impersonate-")
}

/// Why a backend could not be reached; the text is Go's, for the callers' messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreachable(pub String);

/// Send `method path_and_query` with the client's `headers` and `body` to `addr`, adding
/// `extra` headers; the backend's answer, streamed.
pub async fn forward(
    addr: SocketAddr,
    method: Method,
    path_and_query: &str,
    headers: &HeaderMap,
    extra: &[(HeaderName, HeaderValue)],
    body: Body,
) -> Result<Response, Unreachable> {
    let mut req = Request::builder()
        .method(method)
        .uri(path_and_query)
        .header(header::HOST, addr.to_string());
    for (name, value) in headers.iter() {
        if forwarded_request_header(name) {
            req = req.header(name, value);
        }
    }
    for (name, value) in extra {
        req = req.header(name, value);
    }
    let req = req
        .body(body)
        .map_err(|e| Unreachable(format!("building the request: {e}")))?;
    let resp = match tokio::time::timeout(ANSWER_TIMEOUT, super::proxy::send(addr, req)).await {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => return Err(Unreachable(e)),
        Err(_) => return Err(Unreachable(format!("dial tcp {addr}: i/o timeout"))),
    };
    let (parts, body) = resp.into_parts();
    let mut out = Response::new(Body::new(body));
    *out.status_mut() = parts.status;
    for (name, value) in parts.headers.iter() {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            out.headers_mut().append(name, value.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_connection_headers_stay_behind() {
        let cases = [
            ("accept", true),
            ("content-type", true),
            ("user-agent", true),
            ("authorization", false),
            ("connection", false),
            ("transfer-encoding", false),
            ("host", false),
            ("x-remote-user", false),
            ("x-remote-group", false),
            ("impersonate-user", false),
        ];
        for (name, kept) in cases {
            let name = HeaderName::from_static(name);
            assert_eq!(forwarded_request_header(&name), kept, "{name}");
        }
    }
}
